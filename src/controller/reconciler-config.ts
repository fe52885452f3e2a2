import type { ResolvedSpec } from '../api/defaults.ts';
import type { FleetObserver } from '../observe/fleet.ts';
import type { ListFn } from '../runtime/cached-list.ts';
import type { KubeClient, EventSource } from '../runtime/kube.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Driver } from '../drivers/driver.ts';
import type { OperatorMetrics } from './metrics.ts';
import type { Policy } from '../plan/policy.ts';
import type { UpgradeReads } from '../runtime/upgrade-cache.ts';
import type { ObservedKubeadm } from '../plan/kubeadm-preflight.ts';
import type { GateReads, Observation, ObservedGates, ObservedPeer } from '../plan/observation.ts';
import type { ObservedFlagProof } from '../plan/observed-preflight.ts';
import type { ObservedRunning } from '../plan/zpages.ts';
import type { ApiServerUpgrade } from '../api/types.generated.ts';

/**
 * What the reconciler is wired to. src/main.ts gives every part; a part left out means the operator runs without
 * it, decided once by `configureReconciler` (the reconcile itself never branches on a missing part).
 */
export interface ReconcilerDeps {
  kube: KubeClient;
  observer: FleetObserver;
  driverFor: (spec: ResolvedSpec, upgradeName: string) => Promise<Driver>;
  metrics: OperatorMetrics;
  log: Logger;
  events: EventSource;
  now?: () => Date;
  /** The operator's policy (--policy-file), read once per reconcile; absent: the operator runs without one and allows every spec. */
  policy?: () => Policy | undefined;
  /** Where upgrades are read (src/runtime/upgrade-cache.ts: the informer's cache); absent: `kube`, a GET and a LIST per reconcile. */
  upgrades?: UpgradeReads;
  /**
   * Read the trust and coverage facts at preflight (docs/trust.md): the kube-apiserver mirror Pods, the
   * APIServices, a TLS handshake with each server and the driver's Describe. main.ts turns it on; absent: not read.
   */
  preflightFacts?: boolean;
  /** LISTs of the preflight facts (mirror Pods, APIServices), answered from informers where main.ts has them; absent: the API. */
  list?: ListFn;
  /**
   * Reads the facts of the preflight checks for kubeadm clusters (src/observe/kubeadm.ts) with the other preflight
   * facts; `always`: read them even without a kubeadm-config (the static Pod driver). Absent: not read.
   */
  kubeadmFacts?: (peers: readonly ObservedPeer[], always: boolean) => Promise<ObservedKubeadm>;
  /**
   * Brings kube-system/kubeadm-config in line once an upgrade Succeeded or RolledBack (src/plan/kubeadm-config.ts,
   * docs/kubeadm-runbook.md). main.ts turns it on; absent: never read nor written.
   */
  keepKubeadmConfig?: boolean;
  /**
   * With keepKubeadmConfig: write the edit (the chart's kubeadmConfig.write, --kubeadm-config-write). Absent or false:
   * kubeadm-config is read, never written, and what to set by hand is reported (docs/security.md).
   */
  writeKubeadmConfig?: boolean;
  /**
   * Reads the facts of spec.gates (src/observe/gates.ts) when the plan asks. Absent: every gate reads as not
   * evaluated, so an upgrade with gates waits (unknown is unsafe).
   */
  gates?: (reads: GateReads) => Promise<ObservedGates>;
  /**
   * Reads the flag proof's facts when the plan asks (src/controller/flag-proof-reads.ts readFlagProof, the default:
   * the mirror Pods through `list`, the proof Jobs and their Pods through `kube`).
   */
  flagProof?: (u: ApiServerUpgrade, spec: ResolvedSpec, obs: Observation) => Promise<ObservedFlagProof>;
  /**
   * Reads /flagz and /statusz of the servers with a call in flight (src/observe/running.ts), so a call lands only when
   * the running process agrees with it (src/plan/running-process.ts). Absent: not read, and no call is held on them.
   */
  running?: (peers: readonly ObservedPeer[], hostnames: readonly string[]) => Promise<Record<string, ObservedRunning>>;
}

/** The wiring with every optional part decided (kubeadmFacts, flagProof and running stay optional: absent, kubeadm's are not read, the flag proof's are read by readFlagProof and the running process's pages are not read). */
export type ReconcilerConfig = Required<Omit<ReconcilerDeps, 'kubeadmFacts' | 'flagProof' | 'running'>> & Pick<ReconcilerDeps, 'kubeadmFacts' | 'flagProof' | 'running'>;

export function configureReconciler(d: ReconcilerDeps): ReconcilerConfig {
  return {
    ...d,
    now: d.now ?? (() => new Date()),
    policy: d.policy ?? (() => undefined),
    upgrades: d.upgrades ?? d.kube,
    preflightFacts: d.preflightFacts ?? false,
    list: d.list ?? (<T>(path: string): Promise<T> => d.kube.request<T>('GET', path)),
    keepKubeadmConfig: d.keepKubeadmConfig ?? false,
    writeKubeadmConfig: d.writeKubeadmConfig ?? false,
    gates: d.gates ?? ((r: GateReads): Promise<ObservedGates> => Promise.resolve({ queries: r.queries.map((q) => ({ name: q.name, error: 'this operator is wired to read no gates' })), ...(r.controlPlaneNodes ? { controlPlaneNodes: { error: 'this operator is wired to read no Nodes' } } : {}) })),
  };
}
