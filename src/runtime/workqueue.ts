import { ItemExponentialRateLimiter, type RateLimiter } from './rate-limiter.ts';

/**
 * What a reconcile asks for when it succeeds: nothing (wait for the next event), or a look again
 * after a while — controller-runtime's Result{RequeueAfter}. Failures are thrown, not returned.
 */
export interface ReconcileResult {
  requeueAfterMs?: number;
}

/** The reconciler sees only the key: it must re-read the state (level-triggered). */
export type Reconciler = (key: string) => Promise<ReconcileResult | void>;

export interface WorkQueueHooks {
  /** A key was accepted (not a duplicate). */
  onAdd?(key: string): void;
  /** A reconcile threw; the key is retried after `delayMs`. */
  onError?(key: string, err: unknown, delayMs: number): void;
  /** A reconcile finished, with its duration and outcome. */
  onProcessed?(key: string, ms: number, ok: boolean): void;
  /** The number of keys ready to run changed. */
  onDepth?(depth: number): void;
}

export interface WorkQueueOptions {
  rateLimiter?: RateLimiter;
  /** Workers; distinct keys run in parallel, one key never runs twice at once. */
  concurrency?: number;
  hooks?: WorkQueueHooks;
}

export interface ShutdownResult {
  /** Every in-flight reconcile finished before the deadline. */
  drained: boolean;
  /** Keys still running at the deadline. */
  inFlight: string[];
}

/**
 * A per-key work queue with client-go's semantics: a key queued while waiting is not queued twice,
 * a key added while it is being processed runs once more after it finishes, and one key is never
 * processed by two workers at once. Failed keys come back after a per-key exponential delay.
 */
export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly waiting = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly limiter: RateLimiter;
  private readonly hooks: WorkQueueHooks;
  private readonly concurrency: number;
  private reconciler?: Reconciler;
  private running = 0;
  private shuttingDown = false;
  private idleWaiters: (() => void)[] = [];

  constructor(opts: WorkQueueOptions = {}) {
    this.limiter = opts.rateLimiter ?? new ItemExponentialRateLimiter();
    this.hooks = opts.hooks ?? {};
    this.concurrency = Math.max(1, opts.concurrency ?? 1);
  }

  /** Starts handing keys to `reconciler`. Keys added before start wait until then. */
  start(reconciler: Reconciler): void {
    if (this.reconciler) throw new Error('work queue already started');
    this.reconciler = reconciler;
    this.pump();
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    this.hooks.onAdd?.(key);
    // While processing, the key stays dirty and is queued again when its worker finishes.
    if (this.processing.has(key)) return;
    this.queue.push(key);
    this.hooks.onDepth?.(this.queue.length);
    this.pump();
  }

  /** Adds the key after `ms`; of several pending delays for one key the earliest wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) return this.add(key);
    const at = Date.now() + ms;
    const prev = this.waiting.get(key);
    if (prev && prev.at <= at) return;
    if (prev) clearTimeout(prev.timer);
    const timer = setTimeout(() => {
      this.waiting.delete(key);
      this.add(key);
    }, ms);
    this.waiting.set(key, { at, timer });
  }

  /** Adds the key after its rate limiter's delay (which grows with each call until forget). */
  addRateLimited(key: string): number {
    const d = this.limiter.when(key);
    this.addAfter(key, d);
    return d;
  }

  /** Forgets the key's failures: its next retry starts from the base delay. */
  forget(key: string): void {
    this.limiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.limiter.numRequeues(key);
  }

  /** Keys ready to run (not counting those being processed or waiting on a delay). */
  get length(): number {
    return this.queue.length;
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /**
   * Stops accepting keys, drops queued and delayed ones and waits up to `deadlineMs` for the
   * in-flight reconciles. Queued keys are dropped rather than run because shutdown usually comes
   * with the loss of leadership: the next leader relists and reconciles every object anyway.
   */
  async shutdown(deadlineMs = 30_000): Promise<ShutdownResult> {
    this.shuttingDown = true;
    for (const w of this.waiting.values()) clearTimeout(w.timer);
    this.waiting.clear();
    for (const k of this.queue) this.dirty.delete(k);
    this.queue.length = 0;
    this.hooks.onDepth?.(0);
    if (this.running > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((r) => this.idleWaiters.push(r)),
        new Promise<void>((r) => (timer = setTimeout(r, deadlineMs))),
      ]);
      clearTimeout(timer);
    }
    return { drained: this.running === 0, inFlight: [...this.processing] };
  }

  private pump(): void {
    const reconciler = this.reconciler;
    if (!reconciler) return;
    while (this.running < this.concurrency && this.queue.length > 0 && !this.shuttingDown) {
      const key = this.queue.shift() as string;
      this.hooks.onDepth?.(this.queue.length);
      this.dirty.delete(key);
      this.processing.add(key);
      this.running++;
      void this.process(reconciler, key);
    }
  }

  private async process(reconciler: Reconciler, key: string): Promise<void> {
    const t0 = Date.now();
    let ok = true;
    try {
      const res = await reconciler(key);
      // Success resets the key's backoff, as controller-runtime does (Forget on success).
      this.limiter.forget(key);
      if (res && res.requeueAfterMs !== undefined) this.addAfter(key, res.requeueAfterMs);
    } catch (err) {
      ok = false;
      if (!this.shuttingDown) {
        const d = this.addRateLimited(key);
        this.safeHook(() => this.hooks.onError?.(key, err, d));
      }
    } finally {
      this.safeHook(() => this.hooks.onProcessed?.(key, Date.now() - t0, ok));
      this.processing.delete(key);
      this.running--;
      if (this.dirty.has(key) && !this.shuttingDown) {
        this.queue.push(key);
        this.hooks.onDepth?.(this.queue.length);
      }
      if (this.running === 0) for (const w of this.idleWaiters.splice(0)) w();
      this.pump();
    }
  }

  /** A throwing metrics/logging hook must not wedge the queue. */
  private safeHook(fn: () => void): void {
    try {
      fn();
    } catch {
      /* hooks are best effort */
    }
  }
}
