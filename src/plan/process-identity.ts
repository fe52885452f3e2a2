import type { ObservedPeer } from './observation.ts';
import { leaseHolderSurvivesRestart } from './version-facts.ts';

/**
 * What tells one process of a server from the next: its identity Lease's holder, which each process writes anew
 * from 1.35; before 1.35 a restarted server keeps the old holder (version-facts.ts), so the process start time
 * (`process_start_time_seconds` on /metrics) is added. Undefined without a holder (a server with no Lease), and
 * for a server before 1.35 whose start time was never read: no identity to compare. A call's `holderBefore` records this value; a call has landed when it changed.
 */
export function processIdentity(p: Pick<ObservedPeer, 'holderIdentity' | 'version' | 'processStart'> | undefined): string | undefined {
  if (p?.holderIdentity === undefined) return undefined;
  if (!leaseHolderSurvivesRestart(p.version)) return p.holderIdentity;
  // Unknown start where the holder cannot tell: no identity (fails closed: a call waiting on a change is not landed).
  return p.processStart === undefined ? undefined : `${p.holderIdentity}@${p.processStart}`;
}

/**
 * Whether a server's process identity can be recorded now: from 1.35 its Lease holder is enough; before, its
 * start time must have been read by this look (absent or kept from an earlier look: a restart since is unknown).
 * A server whose `/version` did not answer this look has no page to read either: its call (a Rollback to a server
 * that is down, say) is not held back, and records no identity, as for a server without a Lease.
 */
export function startTimeFresh(p: Pick<ObservedPeer, 'holderIdentity' | 'version' | 'processStart' | 'processStartKept'> | undefined): boolean {
  if (p?.holderIdentity === undefined || p.version === undefined || !leaseHolderSurvivesRestart(p.version)) return true;
  return p.processStart !== undefined && p.processStartKept !== true;
}
