import type { DriverRequest } from '../plan/actions.ts';
import type { CallOutcome } from '../plan/call-outcome.ts';

export type { CallOutcome } from '../plan/call-outcome.ts';

/**
 * What became of one delivery of a driver call: `accepted` (the replacement was taken), `rejected` (refused
 * for good: the same call cannot succeed) or `transient` (no usable answer: send the same key again later).
 * The shell records it with `recordCallOutcome` (src/plan/call-outcome.ts).
 */
export type DriverOutcome = CallOutcome;

/**
 * How one apiserver is replaced. A driver call carries an idempotency key: a driver must treat a repeated
 * key as the same request (answer as before, never replace twice).
 *
 * `call` never rejects: every failure is an outcome. Transient failures (timeouts, connection errors, 5xx,
 * 429, an unexpected error) are `{ kind: 'transient', message }`, the message saying what failed, where and
 * after how long; the caller sends the same key again later.
 */
export interface Driver {
  call(request: DriverRequest): Promise<DriverOutcome>;
}
