import { Backoff, sleepUnlessAborted, type BackoffOptions } from './backoff.ts';
import { KubeApiError } from './kube-request.ts';

/**
 * Whether an API call may succeed if simply tried again: the server or the path to it was briefly
 * away (connection refused/reset while the balancer drops a server being replaced, timeouts, TLS
 * handshakes cut short) or overloaded (429, 5xx). A write that lost an optimistic-concurrency race
 * (409) is not transient: it needs a re-read, which the caller (or the next reconcile) does.
 */
export function isTransient(err: unknown): boolean {
  if (err instanceof KubeApiError) {
    // 504 carries "Timeout: request did not complete", 503 "the server is shutting down" / peer unreachable.
    return err.statusCode === 429 || err.statusCode >= 500;
  }
  if (!(err instanceof Error)) return false;
  // Our deadlines are TimeoutErrors (kube-request.ts); any other AbortError is the caller cancelling, which is final.
  // Socket errors carry their code, on the error or on its cause.
  if (err.name === 'TimeoutError') return true;
  if (err.name === 'AbortError') return false;
  const code = (err as { code?: unknown }).code ?? (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^(ECONN|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|ERR_SSL|ERR_TLS)/.test(code);
}

/**
 * Whether a call failed at the connection, before any answer: refused, reset, or closed before its TLS handshake
 * ended (a balancer that could not reach the server it chose closes the client's connection: haproxy after its
 * connect retries, ~3 s, to a server SIGKILLed a moment before). Not a timeout (the request may sit on a server)
 * and not an answer (an error status is the server's word).
 */
export function isConnectionFailure(err: unknown): boolean {
  if (err instanceof KubeApiError || !(err instanceof Error) || err.name === 'TimeoutError' || err.name === 'AbortError') return false;
  const code = (err as { code?: unknown }).code ?? (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|EPIPE|ERR_SSL|ERR_TLS)/.test(code);
}

export interface RetryOptions {
  /** Total tries including the first; default 8 (about 25 s of waiting with the default backoff). */
  attempts?: number;
  backoff?: BackoffOptions;
  signal?: AbortSignal;
  retryable?: (err: unknown) => boolean;
  /** Called before each wait, for logs and metrics. */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  random?: () => number;
}

export const DEFAULT_RETRY_BACKOFF: BackoffOptions = { baseMs: 200, maxMs: 10_000, factor: 2, jitter: 0.2 };

/**
 * Runs `fn` until it succeeds, a non-transient error occurs or the attempts run out; the last
 * error is rethrown. A 429/503 with Retry-After waits at least that long.
 */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, o: RetryOptions = {}): Promise<T> {
  const attempts = Math.max(1, o.attempts ?? 8);
  const retryable = o.retryable ?? isTransient;
  const backoff = new Backoff(o.backoff ?? DEFAULT_RETRY_BACKOFF, o.random);
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= attempts || o.signal?.aborted || !retryable(err)) throw err;
      const hinted = err instanceof KubeApiError ? err.retryAfterMs : undefined;
      const delay = Math.max(backoff.next(), hinted ?? 0);
      o.onRetry?.(err, attempt, delay);
      await sleepUnlessAborted(delay, o.signal);
      if (o.signal?.aborted) throw err;
    }
  }
}
