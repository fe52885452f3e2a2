import type { PlanContext } from './context.ts';
import { callInFlight, callPollMs, driveStep, inFlight, serverAt } from './calls.ts';
import { rollbackGoal, rollbackMoves } from './rollback-goal.ts';
import { heldBySkewWhileRollingBack, mayRollBack, onBreach, pause } from './breach.ts';
import { replacementGate } from './gate-pass.ts';

/**
 * Puts the touched servers back on the rollback goal, one at a time, with the gate replacementGate() gives
 * (on across a minor step; none, so kept as found, for Unmanaged or a patch upgrade). A server with a call in flight is waited for first —
 * its replacement may still land. Ends RolledBack only when every Rollback call is Done and every member
 * is up at the goal with nothing in flight.
 */
export function runRollingBack(ctx: PlanContext): void {
  const from = ctx.status.fromVersion;
  if (!from) {
    pause(ctx, 'RollbackSafetyUnknown', 'cannot roll back: the version before the upgrade was never recorded', 'Upgrading');
    return;
  }
  if (heldBySkewWhileRollingBack(ctx)) return;
  const goal = rollbackGoal(ctx);
  const gate = replacementGate(ctx);
  for (const h of goal.touched) {
    const busy = callInFlight(ctx, h);
    if (busy && busy.action !== 'Rollback') {
      ctx.setPeerState(h, 'RollingBack', `waiting for the ${busy.action} call in flight (${busy.result}) to land or time out before rolling back`);
      ctx.progressMessage = `rolling back: waiting for ${h}'s ${busy.action} call in flight`;
      ctx.requeue(2_000);
      return;
    }
    if (rollbackMoves(ctx, h, goal) && !mayRollBack(ctx, h)) return;
    const r = driveStep(ctx, h, -1, 'Rollback', goal.target, gate, { always: true, ...(goal.emulatedVersion ? { emulatedVersion: goal.emulatedVersion } : {}) });
    if (r === 'waiting') {
      ctx.setPeerState(h, 'RollingBack', `rollback to ${goal.describe} requested`);
      ctx.progressMessage = `rolling back ${h} to ${goal.describe}`;
      ctx.requeue(callPollMs(ctx));
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
  const notBack = members.filter((h) => !serverAt(ctx, h, goal.target, undefined, goal.emulatedVersion));
  const flying = (ctx.status.driverCalls ?? []).filter(inFlight);
  if (notBack.length > 0 || flying.length > 0) {
    const lastDone = (ctx.status.driverCalls ?? []).filter((c) => c.action === 'Rollback' && c.completedAt).map((c) => Date.parse(c.completedAt!));
    const resumed = ctx.status.resumedAt ? [Date.parse(ctx.status.resumedAt)] : [];
    const since = Math.max(Date.parse(ctx.status.rollbackStartedAt ?? ctx.now.toISOString()), ...lastDone, ...resumed);
    if (flying.length === 0 && ctx.now.getTime() - since > ctx.spec.strategy.batchTimeoutMs) {
      onBreach(ctx, 'BatchTimeout', `rolled back, but ${notBack.join(', ')} not up on ${goal.describe} within ${Math.round(ctx.spec.strategy.batchTimeoutMs / 1000)}s`);
      return;
    }
    ctx.progressMessage = `rolling back: waiting for ${[...notBack, ...flying.map((c) => c.server)].join(', ')}`;
    ctx.requeue(2_000);
    return;
  }
  ctx.setPhase('RolledBack');
  ctx.status.completedAt = ctx.now.toISOString();
  const message = `every server is back on ${goal.describe}`;
  ctx.condition({ type: 'Progressing', status: 'False', reason: 'RolledBack', message });
  ctx.condition({ type: 'Complete', status: 'False', reason: 'RolledBack', message: `rolled back to ${goal.describe}` });
  ctx.event('Warning', 'RolledBack', message);
}
