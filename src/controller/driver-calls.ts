import type { ApiServerUpgrade, ApiServerUpgradeStatus, DriverCall } from '../api/types.generated.ts';
import type { DriverRequest } from '../plan/index.ts';
import { recordCallOutcome, type CallOutcome } from '../plan/call-outcome.ts';
import { safeMessage } from '../plan/redact.ts';
import type { CallReport } from '../plan/context.ts';
import type { ReconcileContext } from '../plan/reconcile.ts';
import { describeViolations } from '../plan/policy.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Driver } from '../drivers/driver.ts';
import { faultPoint } from './fault-injection.ts';
import type { ReconcilerConfig } from './reconciler-config.ts';
import { writeStatus } from './status-writes.ts';

/**
 * The driver's reports on the calls Accepted in the status (Driver.report), read afresh on every reconcile and
 * never kept in memory: the planner records a `failed` one as the call's result. Bounded by the calls in
 * flight. Fails closed: a report that cannot be read (the driver cannot be built, the read throws) or says
 * `unknown` is left out, and the call is judged from observation alone. A driver without `report` reads nothing.
 */
export async function readDriverReports(c: ReconcilerConfig, rc: ReconcileContext, calls: readonly DriverCall[], log: Logger): Promise<Record<string, CallReport> | undefined> {
  if (!rc.spec.ok) return undefined;
  let driver: Driver;
  try {
    driver = await c.driverFor(rc.spec.spec, rc.upgrade.metadata!.name!);
  } catch (err) {
    log.warn('driver not built: its reports on the calls in flight are not read this time', { err: err instanceof Error ? err.message : String(err) });
    return undefined;
  }
  const report = driver.report?.bind(driver);
  if (!report) return undefined;
  const reports: Record<string, CallReport> = {};
  await Promise.all(calls.map(async (call) => {
    const clog = log.child({ server: call.server, key: call.key, action: call.action });
    try {
      const r = await report({ idempotencyKey: call.key, action: call.action, server: { hostname: call.server } });
      if (r.kind === 'unknown') clog.debug('driver report unknown: no failure and no settlement read this time (an ended call is taken as still running)', { detail: r.message });
      else reports[call.key] = { kind: r.kind, message: r.message };
      if (r.kind === 'failed') clog.warn('the driver reports the replacement failed', { detail: r.message });
    } catch (err) {
      // `report` should never reject; if it does, it is no answer — never a failure or a settlement on a guess.
      clog.warn('driver report not read: no failure and no settlement read this time', { err: err instanceof Error ? err.message : String(err) });
    }
  }));
  return reports;
}

/**
 * The driver of this step's calls. The planner made no call for a spec outside the policy; the verdict is
 * looked at again here, before the driver is built (building a webhook driver reads its token Secret), so
 * that a refused spec never reaches it.
 */
export async function callingDriver(c: ReconcilerConfig, rc: ReconcileContext): Promise<Driver> {
  if (rc.violations.length > 0) throw new Error(`no driver built, no call made: ${describeViolations(rc.policy!, rc.violations)}`);
  if (!rc.spec.ok) throw rc.spec.error;
  return c.driverFor(rc.spec.spec, rc.upgrade.metadata!.name!);
}

/** A call recorded as Requested in the written status: delivered, and what came of it recorded. */
export async function callDriver(c: ReconcilerConfig, u: ApiServerUpgrade, driver: Driver, request: DriverRequest, now: Date, log: Logger): Promise<ApiServerUpgrade> {
  const clog = log.child({ batch: request.batch, server: request.server.hostname, key: request.idempotencyKey, action: request.action });
  faultPoint('before-call', clog);
  clog.info('calling driver', { target: request.targetVersion });
  const answered: CallOutcome = await driver.call(request);
  // Whatever the driver passes on of a hook's or Job's words is logged and written: made safe once, here.
  const outcome: CallOutcome = { ...answered, message: safeMessage(answered.message, { maxChars: 1024 }) };
  c.metrics.driverCalls.inc({ action: request.action, outcome: outcome.kind });
  faultPoint('after-call', clog);
  if (outcome.kind === 'transient') clog.warn('driver call not delivered, the same key is sent again on the next reconcile', { detail: outcome.message });
  else clog.info('driver answered', { outcome: outcome.kind, detail: outcome.message });
  return writeStatus(c, u, recordCallOutcome(u.status ?? {}, request.idempotencyKey, outcome, now), clog);
}

/** Counts, once, each call the written status ended Failed on the driver's report (outcome "failed"). */
export function countReportedFailures(c: ReconcilerConfig, before: ApiServerUpgradeStatus | undefined, after: ApiServerUpgradeStatus | undefined): void {
  const was = new Map((before?.driverCalls ?? []).map((call) => [call.key, call.result]));
  for (const call of after?.driverCalls ?? []) {
    if (call.result === 'Failed' && was.get(call.key) === 'Accepted') c.metrics.driverCalls.inc({ action: call.action, outcome: 'failed' });
  }
}
