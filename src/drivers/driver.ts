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
 * What a driver knows, after it accepted a call, about the replacement it runs (the static Pod driver reads
 * its Job and the Job's Pod; a webhook with reportsStatus asks the hook, src/drivers/webhook-status.ts): `failed` is
 * final — the replacement will not happen and nothing the driver started for it runs any more (the target image
 * could not be pulled and the Job was stopped, its Pod gone; the agent exited non-zero; the new static Pod never got
 * ready and the agent restored the backup): the next call for the server may go out at once;
 * `running` and `succeeded` are information only (a call is Done only when its server is observed back at the
 * goal) — except that no other call goes to the server while the driver still runs this one; `unknown` means the
 * driver could not tell (its read failed): never a failure; `gone`: the driver keeps nothing for the call any more.
 */
export type DriverReport =
  | { kind: 'running'; message: string }
  | { kind: 'succeeded'; message: string }
  | { kind: 'failed'; message: string }
  | { kind: 'unknown'; message: string }
  /** The driver keeps nothing for this call any more (the Job was deleted): it runs nothing for it. */
  | { kind: 'gone'; message: string };

/** The parts of an accepted call a driver needs to find what it started for it. */
export interface ReportRequest {
  idempotencyKey: string;
  action: DriverRequest['action'];
  server: { hostname: string };
}

/**
 * How one apiserver is replaced. A driver call carries an idempotency key: a driver must treat a repeated
 * key as the same request (answer as before, never replace twice).
 *
 * `call` never rejects: every failure is an outcome. Transient failures (timeouts, connection errors, 5xx,
 * 429, an unexpected error) are `{ kind: 'transient', message }`, the message saying what failed, where and
 * after how long; the caller sends the same key again later.
 *
 * `report`, where a driver has it, never rejects either: the shell asks it about every Accepted call on each
 * reconcile and hands `failed` reports to the planner, which ends the call as Failed.
 */
export interface Driver {
  call(request: DriverRequest): Promise<DriverOutcome>;
  report?(call: ReportRequest): Promise<DriverReport>;
  /**
   * The server's effective kube-apiserver flags, where the driver can tell (the webhook driver's Describe,
   * docs/drivers.md). Never rejects: anything but an answer with flags is `unknown`, never an error.
   */
  describe?(server: DriverRequest['server']): Promise<DescribeOutcome>;
}

/** What a driver knows of one server's flags (`--name` -> value), or why it does not. */
export type DescribeOutcome = { kind: 'flags'; flags: Record<string, string> } | { kind: 'unknown'; message: string };
