/**
 * Every body the operator reads from a server, a hook or Prometheus has a cap, counted on the bytes as they
 * arrive (after gunzip: a gzip bomb stops at the cap) and, for JSON, on its structure before it is parsed. The
 * caps and the number of big bodies in memory at once are sized together so that their product fits the chart's
 * heap (`--max-old-space-size=160`, Pod limit 384 Mi) with room; docs/security.md "Caps" has the table and
 * the arithmetic:
 *
 *   worst case in the heap at once =
 *       BIG_BODY_SLOTS (2) x one big body (4 MiB of text + <= 24 MiB parsed, JSON_MAX_CONTAINERS bounds the
 *                                          expansion; a /metrics page: <= 8 MiB of kept lines + 50 Ki samples)  56 MiB
 *     + the discovery ETag cache (ETAG_CACHE_BYTES)                                                               24 MiB
 *     + small bodies (/version, /readyz, webhook answers: <= 64 KiB each, a few dozen at once)                   ~2 MiB
 *     = ~82 MiB above the operator's own ~35-45 MiB (informers, status): ~125 MiB of 160, 35 MiB to spare.
 *
 * A body over its cap is a `BodyCapExceeded`: the request is destroyed and the caller names the server and cap
 * (src/plan/body-caps.ts decides what that means for an upgrade).
 */

/** An aggregated or legacy discovery document: a real v1.35 `/apis` is ~32 KiB, a cluster with thousands of CRDs ~1-2 MiB. */
export const DISCOVERY_MAX_BYTES = 4 * 1024 * 1024;
/** `/version`, `/readyz` and other small answers of a server. */
export const SMALL_BODY_MAX_BYTES = 64 * 1024;
/** One `/metrics` page after gunzip: a kube-apiserver's is 1.3 MB (v1.35, test/fixtures), a busy cluster's ~10-20 MB. */
export const METRICS_MAX_BYTES = 32 * 1024 * 1024;
/** One line of a `/metrics` page: real lines are under 1 KiB; a longer one is refused before it is rebuilt. */
export const METRICS_MAX_LINE_BYTES = 64 * 1024;
/** Samples kept from one page (only the wanted families are kept: 837 on the v1.35 fixture; ~370 bytes each). */
export const METRICS_MAX_KEPT_SAMPLES = 50_000;
/** Bytes of the kept sample lines of one page (their label values stay in memory). */
export const METRICS_MAX_KEPT_BYTES = 8 * 1024 * 1024;
/** One Prometheus `/api/v1/query` answer: a vector per instance and label set, a few KiB for a fleet. */
export const PROMETHEUS_MAX_BYTES = 4 * 1024 * 1024;
/**
 * Objects and arrays in one JSON body, counted before `JSON.parse`: `[{},{},...]` of 4 MiB parses to ~90 MiB
 * (measured, V8 in Node 24), with this bound to at most ~24 MiB. A real 3 MiB discovery document has ~80 Ki.
 */
export const JSON_MAX_CONTAINERS = 256 * 1024;
/** Big bodies (discovery, legacy discovery, /metrics, Prometheus answers) read and parsed at once, process-wide. */
export const BIG_BODY_SLOTS = 2;
/** Bytes of discovery bodies the ETag cache keeps for If-None-Match (src/observe/etag-cache.ts). */
export const ETAG_CACHE_BYTES = 24 * 1024 * 1024;
/** A watch event line through the balancer: an object is at most etcd's 1.5 MiB, several times over once encoded. */
export const WATCH_MAX_LINE_BYTES = 16 * 1024 * 1024;
/** An answer of the API through the balancer (a page of a list, a status write's echo). */
export const KUBE_MAX_BODY_BYTES = 64 * 1024 * 1024;

/** Objects and arrays of one answer through the balancer (a page of 500 Pods has ~25 Ki). */
export const KUBE_MAX_JSON_CONTAINERS = 1024 * 1024;

/** Which cap a body exceeded: named in status and logs. */
export type BodyCap = 'bytes' | 'lineBytes' | 'keptSamples' | 'keptBytes' | 'jsonContainers';

export class BodyCapExceeded extends Error {
  readonly cap: BodyCap;
  readonly limit: number;
  constructor(cap: BodyCap, limit: number, what = 'response body') {
    super(`${what}: ${CAP_TEXT[cap](limit)}`);
    this.name = 'BodyCapExceeded';
    this.cap = cap;
    this.limit = limit;
  }
}

const CAP_TEXT: Record<BodyCap, (n: number) => string> = {
  bytes: (n) => `larger than ${n} bytes`,
  lineBytes: (n) => `a line longer than ${n} bytes`,
  keptSamples: (n) => `more than ${n} samples of the wanted families`,
  keptBytes: (n) => `more than ${n} bytes of samples of the wanted families`,
  jsonContainers: (n) => `more than ${n} JSON objects and arrays`,
};

/** The BodyCapExceeded behind an error (itself, or a cause up to a few levels down). */
export function capExceeded(err: unknown): BodyCapExceeded | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e instanceof Error; i++, e = e.cause) if (e instanceof BodyCapExceeded) return e;
  return undefined;
}

/**
 * Counts the objects and arrays of a JSON text (brackets outside strings) and throws past `max`: one linear
 * scan, so the parse that follows cannot expand a small body into a heap-filling tree.
 */
export function checkJsonContainers(text: string, max = JSON_MAX_CONTAINERS, what?: string): void {
  let count = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) {
      inString = true;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++count > max) throw new BodyCapExceeded('jsonContainers', max, what);
    }
  }
}

/** JSON.parse behind the container cap. */
export function parseBoundedJson<T>(text: string, max = JSON_MAX_CONTAINERS, what?: string): T {
  checkJsonContainers(text, max, what);
  return JSON.parse(text) as T;
}

/**
 * A counting semaphore: at most `slots` holders at once, the others wait in arrival order. `run` releases on
 * any outcome.
 */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(slots: number) {
    if (!Number.isInteger(slots) || slots < 1) throw new RangeError(`Slots: a positive integer, got ${slots}`);
    this.free = slots;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter; only when none waits does it become free.
      if (next) next();
      else this.free++;
    }
  }
}

/** The process-wide slots of big bodies (BIG_BODY_SLOTS): the direct client and the Prometheus source share them. */
export const bigBodySlots = new Slots(BIG_BODY_SLOTS);
