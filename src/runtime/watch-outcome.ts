/**
 * Why a watch ended, from what client-node's Watch handed its `done` callback (see docs/runtime.md
 * for what each failure looks like against real servers). Pure, so the table is unit-tested.
 */
export type WatchEnd =
  /** The server closed the stream cleanly (timeoutSeconds reached, or a graceful shutdown finished it). */
  | 'closed'
  /** 410 Gone, as an ERROR event in the stream or as the HTTP status: our resourceVersion is too old. */
  | 'gone'
  /** client-node's inactivity timer fired (no bytes for requestTimeoutMs). */
  | 'timeout'
  /** Our watchdog found the watch silent for too long and dropped it. */
  | 'watchdog'
  /** Connection refused/reset, TLS failure, socket closed mid-stream. */
  | 'network'
  /** An HTTP error status other than 410 (429, 5xx, 403, ...), or an ERROR event that is not 410. */
  | 'http'
  /** Anything else: a bug or an unexpected shape; treated like a network error. */
  | 'error';

/** Why the informer had to list again or re-watch; the label of its restarts metric. */
export type RestartReason = WatchEnd | 'list-error' | 'resync';

export function classifyWatchEnd(err: unknown, sawGone: boolean, errorEvent: { code?: number } | undefined): WatchEnd {
  if (sawGone) return 'gone';
  if (err === null || err === undefined) return errorEvent ? 'http' : 'closed';
  const e = err as { name?: unknown; statusCode?: unknown; code?: unknown; message?: unknown };
  if (e.statusCode === 410) return 'gone';
  if (typeof e.statusCode === 'number') return 'http';
  if (e.name === 'TimeoutError') return 'timeout';
  if (e.name === 'TypeError' && (e.message === 'terminated' || e.message === 'fetch failed')) return 'network';
  if (typeof e.code === 'string' && /^(E[A-Z]+|UND_ERR|ERR_SSL|ERR_TLS)/.test(e.code)) return 'network';
  return 'error';
}
