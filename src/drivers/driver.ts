import type { DriverRequest } from '../plan/actions.ts';

/** What became of one driver call. */
export type DriverOutcome =
  | { kind: 'accepted'; message: string }
  /** The driver refused for good (bad request, unknown server): retrying the same call cannot help. */
  | { kind: 'rejected'; message: string };

/**
 * How one apiserver is replaced. A driver call carries an idempotency key: a driver must treat a repeated
 * key as the same request (answer as before, never replace twice). Transient failures throw; the caller
 * retries the same key later.
 */
export interface Driver {
  call(request: DriverRequest): Promise<DriverOutcome>;
}

export class TransientDriverError extends Error {
  override readonly name = 'TransientDriverError';
}
