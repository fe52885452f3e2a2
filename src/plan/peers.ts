import type { PeerStatus, ProxyGateState } from '../api/types.generated.ts';
import type { ObservedPeer } from './observation.ts';

const GATE: Record<ObservedPeer['proxyGate'], ProxyGateState> = { on: 'Enabled', off: 'Disabled', unknown: 'Unknown' };

/** The status row of an observed server; the fleet's membership is fixed at preflight, keyed by hostname. */
export function peerRowFrom(p: ObservedPeer, previous?: PeerStatus): PeerStatus {
  const row: PeerStatus = {
    identity: p.identity,
    hostname: p.hostname,
    ready: p.ready,
    proxyGate: GATE[p.proxyGate],
    ...(p.address === undefined ? {} : { address: p.address }),
    ...(p.version === undefined ? {} : { version: p.version }),
    ...(p.holderIdentity === undefined ? {} : { holderIdentity: p.holderIdentity }),
    ...(p.lastRenew === undefined ? {} : { lastRenew: p.lastRenew }),
  };
  if (previous?.state !== undefined) row.state = previous.state;
  if (previous?.batch !== undefined) row.batch = previous.batch;
  if (previous?.message !== undefined) row.message = previous.message;
  // The gate as last read: a look that did not read it (no /metrics scrape) keeps the reading before; never read, absent.
  const cle = p.coordinatedLeaderElection === undefined ? previous?.coordinatedLeaderElection : GATE[p.coordinatedLeaderElection];
  if (cle !== undefined) row.coordinatedLeaderElection = cle;
  if (previous?.running !== undefined) row.running = previous.running;
  return row;
}

/**
 * Refreshes the recorded rows from what was observed. A server missing from the observation is mid-restart
 * (its Lease is deleted at graceful stop) or gone: it stays in the table, marked not ready.
 */
export function refreshPeers(rows: PeerStatus[] | undefined, observed: ObservedPeer[]): PeerStatus[] {
  return (rows ?? []).map((row) => {
    const p = observed.find((o) => o.hostname === row.hostname);
    if (p) return peerRowFrom(p, row);
    return { ...row, ready: false };
  });
}

/** A server counts as up when it answers /readyz, its lease is fresh and it reports a version. */
export function isUp(p: ObservedPeer | undefined): p is ObservedPeer & { version: string } {
  return p !== undefined && p.ready && !p.stale && p.version !== undefined;
}
