import type { ApiServerUpgradeStatus } from '../api/types.generated.ts';
import { safeMessage } from './redact.ts';

/** What the shell learnt from one delivery of a driver call. */
export type CallOutcome =
  | { kind: 'accepted'; message: string }
  /** The driver refused for good (bad request, unknown server): the same call cannot succeed. */
  | { kind: 'rejected'; message: string }
  /** No answer, or an answer that may change (5xx, 429, connection refused, deadline): send the same key again. */
  | { kind: 'transient'; message: string };

/** A call's message in status: printable, no credential shapes (src/plan/redact.ts), at most this long. */
const MESSAGE_MAX = 1024;

/**
 * Records one delivery's outcome on the status, the only way the shell changes a call. Pure: the reconciler
 * and the model tests' simulated shell use the same function. A call that is no longer Requested (already
 * accepted, or resolved by observation) keeps its result; an answer to a repeated key changes nothing.
 */
export function recordCallOutcome(status: ApiServerUpgradeStatus, key: string, outcome: CallOutcome, now: Date): ApiServerUpgradeStatus {
  const next = structuredClone(status);
  const call = next.driverCalls?.find((c) => c.key === key);
  if (!call) return next;
  call.attempts = (call.attempts ?? 0) + 1;
  const message = safeMessage(outcome.message, { maxChars: MESSAGE_MAX });
  if (call.result !== 'Requested') return next;
  if (outcome.kind === 'accepted') {
    call.result = 'Accepted';
    call.acceptedAt = now.toISOString();
    call.message = message;
  } else if (outcome.kind === 'rejected') {
    call.result = 'Rejected';
    call.completedAt = now.toISOString();
    call.message = message;
  } else {
    call.message = `not delivered yet (attempt ${call.attempts}): ${message}`;
  }
  return next;
}
