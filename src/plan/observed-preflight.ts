import type { NodeProof } from './flag-proof.ts';

/**
 * The shapes of the facts read only at preflight (src/observe/trust.ts, coverage.ts, kubeadm.ts read them; the
 * checks in src/plan/trust.ts, coverage.ts and kubeadm-preflight.ts judge them). Types only, at the bottom of
 * src/plan/ beside observation.ts, so that the observation never imports a phase's file.
 */

// The trust checks (src/plan/trust.ts, docs/trust.md).

/** Where one server's flags came from. */
export type ObservedFlags =
  | { source: 'MirrorPod' | 'Webhook'; values: Record<string, string> }
  | { source: 'Unknown'; why: string };

/** A TLS handshake from the operator to a server's peer address, with SNI kubernetes.default.svc (the proxy's ServerName). */
export type ObservedHandshake =
  | { ok: true; dnsNames: string[]; notBefore?: string; notAfter?: string }
  | { ok: false; error: string };

/** What the shell read of one server for the trust checks (src/observe/trust.ts). */
export interface ObservedServerTrust {
  hostname: string;
  flags: ObservedFlags;
  /** The address peers use: the identity Lease's peer-advertise annotation, else the address the driver will advertise. */
  peerAddress?: string;
  /** How peerAddress was found (the inventory's address source). */
  addressSource?: string;
  /** Absent: no address to try. */
  handshake?: ObservedHandshake;
}

export interface ObservedTrust {
  servers: ObservedServerTrust[];
}

// The coverage report (src/plan/coverage.ts).

/** An APIService as the coverage report needs it (src/observe/coverage.ts reads them). */
export interface ObservedAPIService {
  name: string;
  group: string;
  version: string;
  /** namespace/name of spec.service: set for an aggregated API. */
  service?: string;
  /** The `kube-aggregator.kubernetes.io/automanaged` label: `onstart` for built-in group/versions, `true` for CRDs'. */
  automanaged?: string;
}

/** What the shell read for the report: the APIServices, or why they could not be listed. */
export type ObservedCoverage = { apiServices: ObservedAPIService[] } | { error: string };

// The preflight checks for kubeadm clusters (src/plan/kubeadm-preflight.ts).

/** A sample of apiserver_requested_deprecated_apis (value 1: requested since the server started). */
export interface ObservedDeprecatedApi {
  group: string;
  version: string;
  resource: string;
  subresource: string;
  /** "1.36"; empty: deprecated without a planned removal. */
  removedRelease: string;
}

export interface ObservedKubeadmServer {
  hostname: string;
  /** GET /readyz/etcd on the server itself. */
  etcd: { status: number; body: string } | { error: string };
  /** The serving certificate of the server's own address (a TLS handshake from the operator); absent: no address. */
  certificate?: ObservedHandshake;
  deprecated: ObservedDeprecatedApi[] | { error: string };
  /**
   * The server's kube-apiserver mirror Pod (namespace/name and spec.nodeName) and the image its kube-apiserver container
   * runs (the container of that name, or the only one; absent: none); undefined: no mirror Pod found (or ambiguous).
   */
  mirrorPod?: { name: string; nodeName: string; image?: string };
}

export interface ObservedNode {
  name: string;
  kubeletVersion?: string;
  hostnameLabel?: string;
}

export interface ObservedKubeadm {
  /** kube-system/kubeadm-config: there, not there, or not readable (why). */
  configMap: 'present' | 'absent' | { error: string };
  /** Absent: the rest was not read (not a kubeadm cluster and not the static Pod driver). */
  nodes?: ObservedNode[] | { error: string };
  servers?: ObservedKubeadmServer[];
}

// The flag proof (src/plan/flag-proof-gate.ts, docs/flag-proof.md).

/**
 * What one node's call would prove, as the shell built it from the node's mirror Pod (src/controller/flag-proof-reads.ts:
 * proofCommand under the call's flag edit, proofKey): the proof's key, the target image and the command line (the
 * sentinel last); or why there is none (no mirror Pod, a command that cannot be proven).
 */
export type ObservedProofWant =
  | {
    hostname: string; key: string; image: string; command: string[];
    /** The call's edit the command line was built for (ProofRequest's): a want built for another call is stale. */
    gate?: boolean; emulatedVersion?: string;
  }
  | { hostname: string; error: string };

/** One proof Job of the upgrade, as read: its key, its node, and the proof its Pod gives (undefined: still running). */
export interface ObservedProofJob {
  key: string;
  hostname: string;
  name: string;
  proof?: NodeProof;
}

/** The flag proof's facts, or why they could not be read (fail closed: a read that failed proves nothing). */
export type ObservedFlagProof = { wants: ObservedProofWant[]; jobs: ObservedProofJob[] } | { error: string };
