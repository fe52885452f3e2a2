/**
 * Why a watch ended, from how watch.ts settled (see docs/runtime.md for what each failure looks like against real
 * servers). Pure, so the table is unit-tested.
 */
export type WatchEnd =
  /** The server closed the stream cleanly (timeoutSeconds reached, or a graceful shutdown finished it). */
  | 'closed'
  /** 410 Gone, as an ERROR event in the stream or as the HTTP status: our resourceVersion is too old. */
  | 'gone'
  /** A streaming list's initial state did not end within listTimeoutMs (the informer's deadline). */
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
  const e = err as { statusCode?: unknown; code?: unknown };
  if (e.statusCode === 410) return 'gone';
  if (typeof e.statusCode === 'number') return 'http';
  // Socket and TLS errors carry a code (ECONNRESET, ECONNREFUSED, ERR_TLS_..., UNABLE_TO_VERIFY_LEAF_SIGNATURE, ...).
  if (typeof e.code === 'string') return 'network';
  return 'error';
}
