import type { PlanContext } from './context.ts';
import type { UpgradePhase } from '../api/types.generated.ts';
import type { PauseReason } from '../api/vocabulary.ts';
import { reportRollbackSafety } from './rollback-verdict.ts';
import { touchedServers } from './rolling-back.ts';
import { acceptMembership } from './membership.ts';

/**
 * Acts on a crossed threshold, a timed-out or refused driver call: pause (and page a human through the
 * Paused condition and the alert on it), or roll back when the policy says so and storage allows it.
 * Rollback needs a known, safe verdict; unknown or unsafe pauses instead, saying what is missing.
 */
export function onBreach(ctx: PlanContext, reason: PauseReason, message: string): void {
  ctx.condition({ type: 'Degraded', status: 'True', reason, message });
  if (ctx.spec.analysis.onBreach === 'Rollback' && ctx.phase === 'Upgrading') {
    startRollback(ctx, message, ctx.phase);
    return;
  }
  pause(ctx, reason, message, ctx.phase);
}

/**
 * Goes RollingBack — after a breach with onBreach Rollback, or on a human's abort — once storage allows it.
 * With servers touched, the verdict must be known and safe; unknown or unsafe pauses instead, saying what
 * is missing, and a resume returns to `resumePhase`. Nothing touched: nothing to judge or undo.
 */
export function startRollback(ctx: PlanContext, message: string, resumePhase: UpgradePhase): void {
  if (touchedServers(ctx).length > 0) {
    const safety = reportRollbackSafety(ctx);
    if (safety.verdict === 'unsafe') {
      ctx.status.rollbackBlockedBy = [...safety.blocking];
      pause(ctx, 'RollbackUnsafe', `${message}; rollback refused: ${safety.message}`, resumePhase);
      return;
    }
    if (safety.verdict === 'unknown') {
      pause(ctx, 'RollbackSafetyUnknown', `${message}; rollback not started: ${safety.message}. Resume continues the upgrade; roll back by hand if the cause is the new version`, resumePhase);
      return;
    }
    if (safety.verdict === 'orphans') {
      ctx.status.orphanedObjects = safety.orphans.slice(0, 64).map((o) => ({ resource: o.resource, count: o.count, names: o.names.slice(0, 20) }));
      if (ctx.spec.rollback.orphanedObjects !== 'Proceed') {
        pause(ctx, 'RollbackOrphans', `${message}; rollback not started: ${safety.message}. Set spec.rollback.orphanedObjects to Proceed to roll back anyway, or resume to continue the upgrade`, resumePhase);
        return;
      }
      ctx.event('Warning', 'OrphanedObjects', safety.message);
    }
  }
  delete ctx.status.pause;
  ctx.setPhase('RollingBack');
  ctx.status.rollbackStartedAt = ctx.now.toISOString();
  ctx.event('Warning', 'RollingBack', `${message}; rolling back to ${ctx.status.fromVersion}`);
  ctx.condition({ type: 'Progressing', status: 'True', reason: 'RollingBack', message: `rolling back to ${ctx.status.fromVersion}: ${message}` });
  ctx.requeue(0);
}

export function pause(ctx: PlanContext, reason: PauseReason, message: string, resumePhase: UpgradePhase, servers?: string[]): void {
  ctx.status.pause = { reason, message, since: ctx.now.toISOString(), resumePhase, ...(servers?.length ? { servers: [...servers].sort() } : {}) };
  ctx.setPhase('Paused');
  ctx.condition({ type: 'Paused', status: 'True', reason, message });
  ctx.event('Warning', 'Paused', `${reason}: ${message}`);
}

/**
 * Ends a pause. Finished calls keep their results; a step whose last call failed before now is tried again
 * under a new key (status.resumedAt marks the failures this resume acknowledged). The batch must earn its
 * end again: its soak restarts and needs a check newer than the resume, and the discovery timer restarts.
 */
export function resume(ctx: PlanContext, why: string): void {
  const to = ctx.status.pause?.resumePhase ?? 'Upgrading';
  // Only the servers a MembershipChanged pause named (the human saw them) join or leave the plan.
  const named = ctx.status.pause?.reason === 'MembershipChanged' ? (ctx.status.pause.servers ?? []) : [];
  delete ctx.status.pause;
  ctx.status.resumedAt = ctx.now.toISOString();
  acceptMembership(ctx, named);
  const b = ctx.status.batch;
  if (b) {
    if (b.soakUntil) b.soakUntil = new Date(ctx.now.getTime() + ctx.spec.strategy.soakMs).toISOString();
    b.checkAfter = ctx.now.toISOString();
    delete b.discoveryPendingSince;
  }
  if (ctx.status.lastAnalysis) ctx.status.lastAnalysis = { ...ctx.status.lastAnalysis, consecutiveBreaches: 0 };
  ctx.setPhase(to);
  ctx.condition({ type: 'Paused', status: 'False', reason: 'Resumed', message: why });
  ctx.condition({ type: 'Degraded', status: 'False', reason: 'Resumed', message: why });
  ctx.event('Normal', 'Resumed', `${why}; back to ${to}`);
  ctx.requeue(0);
}
