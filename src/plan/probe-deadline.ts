/**
 * How long a look waits for each server's probe (/version, /readyz, the /metrics scrape): one analysis interval less
 * the rest of the look's time, at least 1 s, at most 5 s — as a kubelet probe's timeout is at most its period. A look
 * waits for its slowest server, so a deadline longer than the interval stretched every check while one server hung:
 * a server cut from etcd answers /readyz only after its own 2 s etcd checks or not at all, and checks meant 2 s apart
 * came 6 s apart (fault campaign, nodes seed 102 #0: a 3 x 2 s limit acted on 23 s after the cut). A deadline of the
 * whole interval still made such a look overrun its interval by its status write, and a look that overruns leaves
 * half the wait before the next (src/controller/reconciler.ts): checks 3 s apart, not 2 (nodes seed 191 #9). The
 * rest of a look (the driver's reports, the plan, the status write) took 30-450 ms in the campaign at load ~10, so
 * the probes leave it a quarter of the interval, at most LOOK_HEADROOM_MS. A server that does not answer within the
 * deadline is not ready for that check: unknown is unsafe. Half an interval was tried and made slow but healthy
 * servers look down at load 20–30 (a 5 s interval's 2.5 s); an interval of 5.5 s or more keeps the 5 s the probes
 * always had.
 */
export const PROBE_DEADLINE_MIN_MS = 1_000;
export const PROBE_DEADLINE_MAX_MS = 5_000;
const LOOK_HEADROOM_MS = 500;

export function probeDeadlineMs(intervalMs: number): number {
  if (!Number.isFinite(intervalMs) || intervalMs <= 0) return PROBE_DEADLINE_MAX_MS;
  const probes = intervalMs - Math.min(intervalMs / 4, LOOK_HEADROOM_MS);
  return Math.min(PROBE_DEADLINE_MAX_MS, Math.max(PROBE_DEADLINE_MIN_MS, Math.floor(probes)));
}
