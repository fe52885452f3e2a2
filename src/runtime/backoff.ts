/**
 * Backoff arithmetic shared by the informer, the work queue, the leader elector and the API retry
 * wrapper. Pure and seedable (pass `random`) so the growth is unit-testable.
 */

export interface BackoffOptions {
  /** First delay. */
  baseMs: number;
  /** Ceiling; growth stops here. */
  maxMs: number;
  /** Growth per attempt; 2 doubles. */
  factor?: number;
  /**
   * Fraction of the delay that is randomised: 0.2 gives a delay in [0.8d, 1.2d] (capped at maxMs).
   * Jitter spreads the reconnects of many clients after a server goes away, so they do not
   * stampede the next one in lockstep.
   */
  jitter?: number;
}

/** The un-jittered delay before attempt `attempt` (0-based): base * factor^attempt, capped. */
export function exponentialDelay(attempt: number, o: BackoffOptions): number {
  const f = o.factor ?? 2;
  // Cap the exponent: 2^1100 is Infinity, and Infinity * 0 (base 0) would be NaN.
  const raw = o.baseMs * Math.pow(f, Math.min(Math.max(attempt, 0), 1000));
  return Number.isFinite(raw) ? Math.min(raw, o.maxMs) : o.maxMs;
}

/** `ms` spread uniformly by ±fraction; never negative. */
export function withJitter(ms: number, fraction: number, random: () => number = Math.random): number {
  if (fraction <= 0) return ms;
  return Math.max(0, ms * (1 - fraction + 2 * fraction * random()));
}

/** A stateful exponential backoff: next() grows, reset() starts over. */
export class Backoff {
  private attempt = 0;
  private readonly opts: BackoffOptions;
  private readonly random: () => number;

  constructor(opts: BackoffOptions, random: () => number = Math.random) {
    this.opts = opts;
    this.random = random;
  }

  /** The delay to wait now; each call grows the next one. */
  next(): number {
    const d = exponentialDelay(this.attempt, this.opts);
    this.attempt++;
    return Math.min(this.opts.maxMs, withJitter(d, this.opts.jitter ?? 0, this.random));
  }

  /** How many delays were handed out since the last reset. */
  get attempts(): number {
    return this.attempt;
  }

  reset(): void {
    this.attempt = 0;
  }
}

/** A promise that resolves after `ms`, or early (without rejecting) when `signal` aborts. */
export function sleepUnlessAborted(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = (): void => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
