import type { AnalysisSignals, Breach } from '../api/types.generated.ts';
import type { ObservedComponents } from './component-skew.ts';
import type { ObservedRunning } from './zpages.ts';
import type { ObservedCoverage, ObservedFlagProof, ObservedKubeadm, ObservedTrust } from './observed-preflight.ts';

/**
 * What the shell observed of the fleet, handed to the pure planner. The planner never fetches: everything
 * it decides on is here, so a table of (status, observation) cases covers it.
 */
export interface ObservedPeer {
  identity: string;
  hostname: string;
  address?: string;
  /** gitVersion from the server's own /version; absent when it did not answer. */
  version?: string;
  ready: boolean;
  proxyGate: 'on' | 'off' | 'unknown';
  holderIdentity?: string;
  /**
   * `process_start_time_seconds` from the server's /metrics, read where the Lease holder does not tell one process
   * from the next (before 1.35: process-identity.ts); absent elsewhere or when not read.
   */
  processStart?: number;
  /**
   * The start time is the one an earlier look read, carried over: this look did not read it (start-time-reads.ts).
   * It names the process it was read from; a restart since is not known.
   */
  processStartKept?: true;
  lastRenew?: string;
  /** The identity Lease was not renewed for several renew periods: a crashed server's lingering lease. */
  stale: boolean;
  /**
   * The version the server emulates, "1.35" (`/version` emulationMajor.emulationMinor, KEP-4330); absent when
   * it did not say. A server without --emulated-version emulates its own minor.
   */
  emulation?: string;
  /**
   * The CoordinatedLeaderElection gate from `kubernetes_feature_enabled` on the server's /metrics (docs/version-skew.md);
   * unknown when the page did not say, absent when not read.
   */
  coordinatedLeaderElection?: 'on' | 'off' | 'unknown';
}

export interface ObservedAnalysis {
  /** When the signals were computed; a new time means a new check for failureLimit counting. */
  time: string;
  verdict: 'Healthy' | 'Breach' | 'Inconclusive';
  signals: AnalysisSignals;
  breaches: Breach[];
}

/** The storage version hashes of one version, read completely from one up server of it. */
export interface ObservedStorage {
  version: string;
  /** The emulated version of the server read ("1.35"), when it reported one: hashes differ by emulation. */
  emulation?: string;
  server: string;
  /** `group/version/resource` -> storageVersionHash. */
  hashes: Record<string, string>;
  /** `group/version/resource` -> kind. */
  kinds: Record<string, string>;
}

/** One server's own (`nopeer`) discovery: the group/version/resources it serves itself. */
export interface ObservedOwnDiscovery {
  server: string;
  version: string;
  emulation?: string;
  resources: string[];
}

/** Objects of one resource that only the target version serves: a rollback below it orphans them. */
export interface ObservedOrphans {
  /** group/version/resource */
  resource: string;
  count: number;
  /** Up to 20 names (namespace/name for namespaced objects). */
  names: string[];
}

/** A server's answer that exceeded a cap (src/runtime/body-limits.ts); src/plan/body-caps.ts says what it means. */
export interface ObservedBodyCap {
  /** Hostname of the server (its address when no identity Lease names it). */
  server: string;
  /** Which answer: `discovery`, `metrics`, `storage` (legacy discovery), `version`, `readyz`. */
  body: string;
  /** The cap and its value, e.g. "https://10.0.0.9:6443/apis: larger than 4194304 bytes". */
  message: string;
}

export interface Observation {
  peers: ObservedPeer[];
  /** Answers of this observation that exceeded a cap, per server; absent or empty: none. */
  bodyCaps?: ObservedBodyCap[];
  discovery?: { converged: boolean; message: string; own?: ObservedOwnDiscovery[] };
  /**
   * Objects of resources served by the target version's own discovery but not by the from-version's, when
   * the settings asked for them (a rollback across the API change is being considered). Absent: not read.
   */
  orphans?: ObservedOrphans[];
  analysis?: ObservedAnalysis;
  /**
   * Storage hashes per version of the servers up now; a version appears only when every legacy discovery
   * document of one of its servers was read (a partial read is no verdict).
   */
  storage?: ObservedStorage[];
  /**
   * Read only while preflight runs (src/observe/trust.ts): each server's flags, its serving certificate as a
   * peer sees it and whether its peer address answers. Absent: not read (no trust report is written).
   */
  trust?: ObservedTrust;
  /** The APIServices, read with `trust` for the coverage report (src/plan/coverage.ts). Absent: not read. */
  coverage?: ObservedCoverage;
  /**
   * The facts of the preflight checks for kubeadm clusters (src/observe/kubeadm.ts, src/plan/kubeadm-preflight.ts),
   * read with `trust`. Absent: not read (no kubeadm report is written).
   */
  kubeadm?: ObservedKubeadm;
  /**
   * The flag proof's facts (src/controller/flag-proof-reads.ts, src/plan/flag-proof-gate.ts): each node's command line
   * to prove and the upgrade's proof Jobs, read for the static Pod driver until the last call. Absent: not read.
   */
  flagProof?: ObservedFlagProof;
  /**
   * Every kube-controller-manager and kube-scheduler Pod in kube-system with the version its image names
   * (src/observe/components.ts), read at every observation by the operator's observer. Absent: not read.
   */
  components?: ObservedComponents;
  /** The facts of spec.gates, read when the planner asked for them (src/plan/reconcile.ts). Absent: not read. */
  gates?: ObservedGates;
  /**
   * The /flagz and /statusz of each server with a call in flight, by hostname (src/controller/running-reads.ts,
   * src/plan/running-process.ts). Absent: this observer does not read them (nothing is held on them); a server
   * missing from it is unknown (its call is held).
   */
  running?: Readonly<Record<string, ObservedRunning>>;
}

/** One PromQL gate's answer: its samples, or why there are none (the query failed, Prometheus did not answer). */
export interface ObservedGateQuery {
  name: string;
  samples?: { labels: Record<string, string>; value: number }[];
  error?: string;
}

/** What spec.gates needs read (src/observe/gates.ts): each query's answer, and the control-plane Nodes when asked. */
export interface ObservedGates {
  queries: ObservedGateQuery[];
  /** The Nodes labelled node-role.kubernetes.io/control-plane with their Ready condition; absent: not asked. */
  controlPlaneNodes?: { name: string; ready: boolean }[] | { error: string };
}

/** What the shell reads for spec.gates. */
export interface GateReads {
  prometheus?: { address: string; caBundle?: string };
  queries: { name: string; query: string }[];
  controlPlaneNodes: boolean;
}

// What the shell asks the observer to read (src/plan/reconcile.ts decides it, src/observe/fleet.ts reads it).

/** What one observation reads and how it judges the analysis. */
export interface AnalysisSettings {
  intervalMs: number;
  /**
   * Whether the planner wants a new check now (src/plan/analysis.ts analysisDue, from status, so the cadence
   * survives a restart). Absent: this observer's own clock decides.
   */
  due?: boolean;
  proxyErrorRatio: number;
  errorRatio: number;
  latencyP99Seconds: number;
  /** spec.analysis.thresholds of the named signals (src/observe/signals.ts); absent: their defaults. */
  unavailableAPIServices?: number;
  webhookErrorRatio?: number;
  webhookMinCalls?: number;
  /** spec.analysis.prometheus when spec.analysis.source is Prometheus: the checks come from the `analysisSource`. */
  prometheus?: PrometheusSettings;
  /**
   * Asks for `Observation.orphans`: the objects of resources the target version serves itself and the
   * from-version does not (src/observe/orphans.ts says which servers speak for each side). Absent: not read.
   */
  orphansOf?: OrphansOf;
  /**
   * The servers whose process start time this look reads where their Lease holder does not tell a restart (before
   * 1.35; src/plan/start-time-reads.ts). Absent: every such server, at every look.
   */
  startTimes?: StartTimeReads;
}

/** Which servers' process start times a look reads: all of them, or those hostnames. */
export interface StartTimeReads {
  all: boolean;
  servers: string[];
}

/** `spec.analysis.prometheus`, resolved (the CRD defaults the selector to `job="apiserver"`). */
export interface PrometheusSettings {
  /** Base URL of the HTTP API, e.g. `http://prometheus.monitoring:9090` (a path prefix is kept). */
  address: string;
  /** Label matchers of the kube-apiserver series, without braces: `job="apiserver"`. */
  selector: string;
  /** Base64 of a PEM bundle that verifies an https address. */
  caBundle?: string;
  /** `spec.analysis.prometheus.window`: the range of one check (default 60 s). */
  windowMs?: number;
}

/** The two sides of the orphan listing (src/observe/orphans.ts). */
export interface OrphansOf {
  /** The version a rollback would return to ("v1.35.4"). */
  fromVersion: string;
  /** The version being upgraded to ("v1.36.3"). */
  targetVersion: string;
  /**
   * The from-version's stored resources (`group/version/resource`), as recorded at preflight (status.plan.fromStorage):
   * the from side once no up server speaks for it — phase two after the last batch lifted the emulation.
   */
  fromStored?: readonly string[];
}
