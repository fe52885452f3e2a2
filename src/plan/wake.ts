import type { ApiServerUpgrade } from '../api/types.generated.ts';
import { isFinished } from './admission.ts';

/** The fields of a kube-apiserver identity Lease that say which server runs where. */
export interface IdentityLeaseFacts {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { holderIdentity?: string };
}

const sameRecord = (a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean => {
  const x = Object.entries(a ?? {});
  const y = b ?? {};
  return x.length === Object.keys(y).length && x.every(([k, v]) => y[k] === v);
};

/**
 * Whether an identity Lease event tells of a change in the fleet: a server came (add), left (delete) or
 * restarted (a new holder identity: each kube-apiserver process holds its Lease under a fresh one), or its
 * labels or annotations (hostname, peer-advertise address) changed. A renewal (renewTime, resourceVersion,
 * managedFields) does not: every server renews every 10 s, and waking on those reconciled every upgrade
 * several times a minute. Staleness of a Lease that stops renewing is read at the next requeue of an upgrade
 * under way (the planner requeues every active upgrade within its analysis interval).
 * `old` undefined: an add; `cur` undefined: a delete.
 */
export function leaseEventWakes(old: IdentityLeaseFacts | undefined, cur: IdentityLeaseFacts | undefined): boolean {
  if (old === undefined || cur === undefined) return true;
  if ((old.spec?.holderIdentity ?? '') !== (cur.spec?.holderIdentity ?? '')) return true;
  return !sameRecord(old.metadata?.labels, cur.metadata?.labels) || !sameRecord(old.metadata?.annotations, cur.metadata?.annotations);
}

/**
 * The upgrades a fleet change wakes: every one not finished (isFinished). A finished upgrade observes nothing
 * and calls nothing, so a server's restart after the end is none of its business: it is reconciled again only
 * when its own object changes (a spec edit, a retry annotation), never because of a Lease.
 */
export function upgradesToWake<T extends ApiServerUpgrade>(all: readonly T[]): T[] {
  return all.filter((u) => !isFinished(u));
}
