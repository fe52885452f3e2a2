import type { AnalysisSignals, Breach } from '../api/types.generated.ts';

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
  lastRenew?: string;
  /** The identity Lease was not renewed for several renew periods: a crashed server's lingering lease. */
  stale: boolean;
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
  server: string;
  /** `group/version/resource` -> storageVersionHash. */
  hashes: Record<string, string>;
  /** `group/version/resource` -> kind. */
  kinds: Record<string, string>;
}

export interface Observation {
  peers: ObservedPeer[];
  discovery?: { converged: boolean; message: string };
  analysis?: ObservedAnalysis;
  /**
   * Storage hashes per version of the servers up now; a version appears only when every legacy discovery
   * document of one of its servers was read (a partial read is no verdict).
   */
  storage?: ObservedStorage[];
}
