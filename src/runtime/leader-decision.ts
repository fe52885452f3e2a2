/**
 * The pure part of Lease leader election, after client-go's leaderelection package. Time is
 * judged by the candidate's own clock from the moment it observed the record change, never by
 * comparing renewTime with the local clock: the holder's clock may be skewed.
 */

/** The fields of coordination.k8s.io/v1 LeaseSpec that election uses. */
export interface LeaseRecord {
  holderIdentity?: string | null;
  leaseDurationSeconds?: number | null;
  acquireTime?: string | null;
  renewTime?: string | null;
  leaseTransitions?: number | null;
}

export interface Observed {
  /** The record as last seen, serialized to compare cheaply. */
  fingerprint: string;
  /** Local time (ms) when the record was first seen in this form. */
  at: number;
}

export type Decision =
  | { action: 'create'; record: LeaseRecord }
  | { action: 'update'; record: LeaseRecord; renew: boolean }
  | { action: 'wait'; holder: string; expiresInMs: number };

export function fingerprint(r: LeaseRecord | undefined): string {
  if (!r) return '';
  return JSON.stringify([r.holderIdentity ?? '', r.leaseDurationSeconds ?? 0, r.renewTime ?? '', r.acquireTime ?? '', r.leaseTransitions ?? 0]);
}

/** Carries the observation forward: a changed record restarts its clock. */
export function observe(prev: Observed | undefined, r: LeaseRecord | undefined, now: number): Observed {
  const fp = fingerprint(r);
  return prev && prev.fingerprint === fp ? prev : { fingerprint: fp, at: now };
}

export interface DecideInput {
  /** The lease's spec, or undefined when the Lease does not exist. */
  lease: LeaseRecord | undefined;
  observed: Observed;
  identity: string;
  now: number;
  /** Our own leaseDuration, written into the record. */
  leaseDurationSeconds: number;
  /** The timestamp to write, as the API expects it (MicroTime). */
  nowText: string;
}

export function decide(i: DecideInput): Decision {
  const mine: LeaseRecord = {
    holderIdentity: i.identity,
    leaseDurationSeconds: i.leaseDurationSeconds,
    acquireTime: i.nowText,
    renewTime: i.nowText,
    leaseTransitions: 0,
  };
  if (!i.lease) return { action: 'create', record: mine };
  const holder = i.lease.holderIdentity ?? '';
  const transitions = i.lease.leaseTransitions ?? 0;
  if (holder === i.identity) {
    return { action: 'update', renew: true, record: { ...mine, acquireTime: i.lease.acquireTime ?? i.nowText, leaseTransitions: transitions } };
  }
  // Held by another candidate: wait out its duration, measured from when we saw its last renewal.
  // An empty holder is a released lease (ReleaseOnCancel): free at once.
  if (holder !== '') {
    const durMs = (i.lease.leaseDurationSeconds ?? i.leaseDurationSeconds) * 1000;
    const expiresInMs = i.observed.at + durMs - i.now;
    if (expiresInMs > 0) return { action: 'wait', holder, expiresInMs };
  }
  return { action: 'update', renew: false, record: { ...mine, leaseTransitions: transitions + 1 } };
}

/**
 * How long one renewal attempt may take: one retry period, doubled after each attempt of this round that failed,
 * never past the time left before the leader must step down (client-go lets every attempt run to renewDeadline).
 */
export function renewAttemptMs(leftMs: number, retryPeriodMs: number, failedAttempts: number): number {
  return Math.max(0, Math.min(leftMs, retryPeriodMs * 2 ** Math.min(failedAttempts, 16)));
}

/** Whether a leader must step down: its last successful renewal is older than renewDeadline. */
export function mustStepDown(lastRenewAt: number, now: number, renewDeadlineMs: number): boolean {
  return now - lastRenewAt >= renewDeadlineMs;
}

/**
 * The least leaseDuration - renewDeadline the elector accepts. A candidate starts its clock for a record when it
 * first sees it, which is after the holder started the request that wrote it; the holder counts renewDeadline from
 * that start (leader.ts), so it stops leading before any candidate may take over by at least this margin, whatever
 * the clocks' offsets (each side measures only durations on its own clock; rate differences are parts per million).
 * The margin covers what still runs after the deadline: an event-loop stall or GC pause before the step-down check
 * (Node's pauses for this heap are tens of milliseconds), and a status write or driver call already in flight when
 * the signal aborts (status writes carry a resourceVersion, driver calls an idempotency key: a late one is refused
 * or repeats nothing).
 */
export const MIN_TAKEOVER_MARGIN_MS = 2_000;

/**
 * How long a candidate waits before its next look at a lease another process holds: its poll period, or until the
 * lease expires by its own clock when that is sooner — so it takes over within a few milliseconds of expiry
 * instead of up to a whole retry period after (client-go's candidates look every 2-4.4 s).
 */
export function candidateWaitMs(expiresInMs: number, pollMs: number): number {
  return Math.max(0, Math.min(pollMs, expiresInMs + 1));
}
