/**
 * How long a look waits for each server's probe (/version, /readyz, the /metrics scrape): one analysis interval, at
 * least 1 s, at most 5 s — as a kubelet probe's timeout is at most its period. A look waits for its slowest server,
 * so a deadline longer than the interval stretched every check while one server hung: a server cut from etcd answers
 * /readyz only after its own 2 s etcd checks or not at all, and checks meant 2 s apart came 6 s apart (fault campaign,
 * nodes seed 102 #0: a 3 x 2 s limit acted on 23 s after the cut). A server that does not answer within the deadline
 * is not ready for that check: unknown is unsafe. Half an interval was tried first and made slow but healthy
 * servers look down at load 20–30 (a 5 s interval's 2.5 s); an interval of 5 s or more keeps the 5 s the probes
 * always had.
 */
export const PROBE_DEADLINE_MIN_MS = 1_000;
export const PROBE_DEADLINE_MAX_MS = 5_000;

export function probeDeadlineMs(intervalMs: number): number {
  if (!Number.isFinite(intervalMs) || intervalMs <= 0) return PROBE_DEADLINE_MAX_MS;
  return Math.min(PROBE_DEADLINE_MAX_MS, Math.max(PROBE_DEADLINE_MIN_MS, Math.floor(intervalMs)));
}
