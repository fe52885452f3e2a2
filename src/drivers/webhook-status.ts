import { safeMessage } from '../plan/redact.ts';
import type { DriverReport, ReportRequest } from './driver.ts';

/**
 * The body of a status request (docs/drivers.md "Status"): "what became of the replacement you took under this
 * key?". A different `kind`, and no targetVersion, so a hook that only knows ReplaceServerRequest refuses it (4xx)
 * instead of taking it for a replacement. It changes nothing; sent only when spec.driver.webhook.reportsStatus is true.
 */
export interface StatusPayload {
  apiVersion: 'upgrade.apiserver.dev/v1alpha1';
  kind: 'ReplaceStatusRequest';
  action: 'Status';
  idempotencyKey: string;
  /** The action the key was sent with (Upgrade, Rollback, …): for the hook's logs; the key alone names the call. */
  callAction: ReportRequest['action'];
  server: { hostname: string };
}

export function statusPayload(call: ReportRequest): StatusPayload {
  return {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1',
    kind: 'ReplaceStatusRequest',
    action: 'Status',
    idempotencyKey: call.idempotencyKey,
    callAction: call.action,
    server: { hostname: call.server.hostname },
  };
}

/** The hook's words for a replacement, and what the operator reads from each. Nothing else is a state. */
const STATES: Readonly<Record<string, DriverReport['kind']>> = {
  Running: 'running',
  Succeeded: 'succeeded',
  Failed: 'failed',
  NotFound: 'gone',
};

/**
 * The deadline of a status request (or spec.driver.webhook.timeout when shorter). It is asked before a look observes
 * the fleet, while a call awaits its settlement, so a hook that does not answer lengthens that look by this much; a
 * status is a lookup the hook answers from memory. Past it the status is unknown: the call is taken as running.
 */
export const STATUS_DEADLINE_MS = 1_000;

/** The most of the hook's `message` kept (it becomes a status message and an event), counted after redaction. */
export const STATUS_MESSAGE_CHARS = 512;

/**
 * A 2xx body into a report: `{"state": "Running" | "Succeeded" | "Failed" | "NotFound", "message"?: string}`.
 * Anything else — not JSON, not an object, a state not in that list (case counts), a message that is not a
 * string — is `unknown`: never a failure and never a settlement on a guess. The message is made plain and
 * redacted (`secrets`: the configured token) before it is cut to STATUS_MESSAGE_CHARS. Pure.
 */
export function reportFromStatusBody(text: string, where: string, secrets: readonly (string | undefined)[] = []): DriverReport {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { kind: 'unknown', message: `${where}: an answer that is not JSON` };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { kind: 'unknown', message: `${where}: an answer that is not a JSON object` };
  const { state, message } = parsed as { state?: unknown; message?: unknown };
  const kind = typeof state === 'string' && Object.hasOwn(STATES, state) ? STATES[state] : undefined;
  if (kind === undefined) return { kind: 'unknown', message: `${where}: no "state" of Running, Succeeded, Failed or NotFound in the answer` };
  if (message !== undefined && typeof message !== 'string') return { kind: 'unknown', message: `${where}: "message" is not a string` };
  const words = safeMessage(message ?? '', { secrets, maxChars: STATUS_MESSAGE_CHARS }).trim();
  return { kind, message: words === '' ? `${where}: ${state as string}` : words };
}
