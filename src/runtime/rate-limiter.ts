import { exponentialDelay } from './backoff.ts';

/** How long to wait before retrying a key, per key; client-go's workqueue.RateLimiter. */
export interface RateLimiter {
  /** The delay before the key's next retry; counts a failure. */
  when(key: string): number;
  /** The key succeeded (or was given up on): its failures are forgotten. */
  forget(key: string): void;
  /** Failures counted for the key since the last forget. */
  numRequeues(key: string): number;
}

export interface ItemExponentialOptions {
  baseMs?: number;
  maxMs?: number;
}

/**
 * client-go's ItemExponentialFailureRateLimiter: base * 2^failures per key, capped; defaults
 * 5 ms .. 1000 s like client-go's DefaultControllerRateLimiter. No jitter, as in client-go:
 * keys are independent, so there is no herd to spread.
 */
export class ItemExponentialRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();
  private readonly baseMs: number;
  private readonly maxMs: number;

  constructor(o: ItemExponentialOptions = {}) {
    this.baseMs = o.baseMs ?? 5;
    this.maxMs = o.maxMs ?? 1_000_000;
  }

  when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    return exponentialDelay(n, { baseMs: this.baseMs, maxMs: this.maxMs });
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}
