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

export interface Observation {
  peers: ObservedPeer[];
  discovery?: { converged: boolean; message: string };
  analysis?: ObservedAnalysis;
  /** Whether going back from the new version to the old is safe, from storageVersionHash. */
  rollback?: { safe: boolean; blocking: string[]; message: string };
}
