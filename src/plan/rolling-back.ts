import type { PlanContext } from './context.ts';
import { callInFlight, driveStep, inFlight } from './calls.ts';
import { onBreach, pause } from './breach.ts';
import { isUp } from './peers.ts';
import { sameRelease } from './version.ts';

/**
 * The servers a rollback must put back: every member that had an Upgrade call recorded (it may have
 * landed, or land late: a Rollback call supersedes it at the driver) and every member observed off the
 * from-version. Newest batch first, so the fleet unwinds in the reverse order it moved.
 */
export function touchedServers(ctx: PlanContext): string[] {
  const from = ctx.status.fromVersion ?? '';
  const members = ctx.status.plan?.members ?? (ctx.status.peers ?? []).map((r) => r.hostname);
  const batchOf = new Map<string, number>();
  for (const c of ctx.status.driverCalls ?? []) {
    if (c.action === 'Upgrade' && c.result !== 'Rejected') batchOf.set(c.server, Math.max(batchOf.get(c.server) ?? 0, c.batch ?? 0));
  }
  for (const h of members) {
    const p = ctx.observed(h);
    if (p?.version !== undefined && !sameRelease(p.version, from) && !batchOf.has(h)) batchOf.set(h, Number.MAX_SAFE_INTEGER);
  }
  return members.filter((h) => batchOf.has(h)).sort((a, b) => batchOf.get(b)! - batchOf.get(a)! || b.localeCompare(a));
}

/**
 * Puts the touched servers back on the from-version, one at a time, with the proxy gate on (unless the
 * gate is Unmanaged: then the call carries no gate). A server with a call in flight is waited for first —
 * its replacement may still land. Ends RolledBack only when every Rollback call is Done and every member
 * runs the from-version with nothing in flight.
 */
export function runRollingBack(ctx: PlanContext): void {
  const from = ctx.status.fromVersion;
  if (!from) {
    pause(ctx, 'RollbackSafetyUnknown', 'cannot roll back: the version before the upgrade was never recorded', 'Upgrading');
    return;
  }
  const gate = ctx.spec.proxy.gate === 'Unmanaged' ? undefined : true;
  for (const h of touchedServers(ctx)) {
    const busy = callInFlight(ctx, h);
    if (busy && busy.action !== 'Rollback') {
      ctx.setPeerState(h, 'RollingBack', `waiting for the ${busy.action} call in flight (${busy.result}) to land or time out before rolling back`);
      ctx.progressMessage = `rolling back: waiting for ${h}'s ${busy.action} call in flight`;
      ctx.requeue(2_000);
      return;
    }
    const r = driveStep(ctx, h, -1, 'Rollback', from, gate, { always: true });
    if (r === 'waiting') {
      ctx.setPeerState(h, 'RollingBack', `rollback to ${from} requested`);
      ctx.progressMessage = `rolling back ${h} to ${from}`;
      ctx.requeue(2_000);
      return;
    }
    if (r !== 'done') {
      ctx.setPeerState(h, 'Failed', r.message);
      onBreach(ctx, r.failed, r.message);
      return;
    }
    ctx.setPeerState(h, 'RolledBack');
  }
  const members = ctx.status.plan?.members ?? [];
  const notBack = members.filter((h) => !(isUp(ctx.observed(h)) && sameRelease(ctx.observed(h)!.version!, from)));
  const flying = (ctx.status.driverCalls ?? []).filter(inFlight);
  if (notBack.length > 0 || flying.length > 0) {
    const lastDone = (ctx.status.driverCalls ?? []).filter((c) => c.action === 'Rollback' && c.completedAt).map((c) => Date.parse(c.completedAt!));
    const since = Math.max(Date.parse(ctx.status.rollbackStartedAt ?? ctx.now.toISOString()), ...lastDone);
    if (flying.length === 0 && ctx.now.getTime() - since > ctx.spec.strategy.batchTimeoutMs) {
      onBreach(ctx, 'BatchTimeout', `rolled back, but ${notBack.join(', ')} not up on ${from} within ${Math.round(ctx.spec.strategy.batchTimeoutMs / 1000)}s`);
      return;
    }
    ctx.progressMessage = `rolling back: waiting for ${[...notBack, ...flying.map((c) => c.server)].join(', ')}`;
    ctx.requeue(2_000);
    return;
  }
  ctx.setPhase('RolledBack');
  ctx.status.completedAt = ctx.now.toISOString();
  ctx.condition({ type: 'Progressing', status: 'False', reason: 'RolledBack', message: `every server is back on ${from}` });
  ctx.condition({ type: 'Complete', status: 'False', reason: 'RolledBack', message: `rolled back to ${from}` });
  ctx.event('Warning', 'RolledBack', `every server is back on ${from}`);
}
