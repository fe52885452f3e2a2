import type { PeerStatus } from '../api/types.generated.ts';
import type { ObservedPeer } from './observation.ts';
import { peerRowFrom } from './peers.ts';

/**
 * How long a server preflight has seen may go without an identity Lease before preflight counts it removed.
 * A kube-apiserver deletes its own Lease when it starts (v1.35: "Deleting old lease on startup") and when it stops
 * gracefully, and writes a new one seconds to minutes later (a static Pod restarted by its kubelet, an image pulled):
 * in that gap the fleet looks one server smaller than it is. Past this bound the server is taken as removed; should
 * it come back, it is a joiner and the upgrade pauses MembershipChanged.
 */
export const MISSING_SERVER_GRACE_MS = 5 * 60_000;

export interface MissingServer {
  hostname: string;
  since: string;
}

export interface PreflightRoster {
  /** status.peers while preflight runs: every server seen since it began, observed or missing. */
  rows: PeerStatus[];
  /** Servers seen by an earlier look that have no identity Lease now, within the grace. */
  missing: MissingServer[];
  /** Servers missing for longer than the grace: dropped from the roster. */
  dropped: MissingServer[];
}

/**
 * The servers preflight has seen, kept in status so that a server whose Lease is briefly gone (restarting) is
 * still counted after an operator restart: the fleet an upgrade starts from is every server seen, not the
 * servers one look happened to find.
 */
export function preflightRoster(previous: readonly PeerStatus[] | undefined, observed: readonly ObservedPeer[], now: Date): PreflightRoster {
  const rows: PeerStatus[] = [];
  const missing: MissingServer[] = [];
  const dropped: MissingServer[] = [];
  for (const p of observed) {
    const before = previous?.find((r) => r.hostname === p.hostname);
    const row: PeerStatus = { ...peerRowFrom(p, before), state: 'Pending' };
    if (before?.missingSince !== undefined) delete row.message;
    rows.push(row);
  }
  for (const before of previous ?? []) {
    if (observed.some((p) => p.hostname === before.hostname)) continue;
    const since = validTime(before.missingSince, now) ?? now.toISOString();
    const gone = { hostname: before.hostname, since };
    if (now.getTime() - Date.parse(since) > MISSING_SERVER_GRACE_MS) {
      dropped.push(gone);
      continue;
    }
    missing.push(gone);
    rows.push({
      ...before,
      ready: false,
      state: 'Pending',
      missingSince: since,
      message: `no identity Lease since ${since}: restarting (a kube-apiserver deletes its Lease when it starts or stops) or removed; counted as removed after ${MISSING_SERVER_GRACE_MS / 60_000} minutes`,
    });
  }
  rows.sort((a, b) => a.hostname.localeCompare(b.hostname));
  return { rows, missing, dropped };
}

/** A stored time as an ISO string, no later than now; undefined when absent or unreadable (then the clock starts now: the later bound). */
function validTime(t: string | undefined, now: Date): string | undefined {
  if (t === undefined) return undefined;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? undefined : new Date(Math.min(ms, now.getTime())).toISOString();
}
