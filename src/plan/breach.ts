import type { PlanContext } from './context.ts';
import type { DriverCall, UpgradePhase } from '../api/types.generated.ts';
import { isUp } from './peers.ts';

/** Whether the server a call was about is now where the call wanted it. */
function callReachedGoal(ctx: PlanContext, c: DriverCall): boolean {
  const p = ctx.observed(c.server);
  if (!isUp(p) || p.version !== c.target) return false;
  if (c.action === 'EnableProxy') return p.proxyGate === 'on';
  if (c.action === 'RevertProxy') return p.proxyGate === 'off';
  return true;
}

/**
 * Acts on a crossed threshold, a timed-out batch or a failed driver call: pause (and page a human
 * through the Paused condition and the alert on it), or roll back when the policy says so and storage
 * allows it. Rollback is refused — and the upgrade paused — when the new servers write a storage version
 * the old ones cannot read.
 */
export function onBreach(ctx: PlanContext, reason: string, message: string): void {
  ctx.condition({ type: 'Degraded', status: 'True', reason, message });
  const wantsRollback = ctx.spec.analysis.onBreach === 'Rollback' && ctx.phase !== 'RollingBack';
  if (wantsRollback) {
    const safety = ctx.obs.rollback;
    if (safety && !safety.safe) {
      ctx.status.rollbackBlockedBy = [...safety.blocking];
      pause(ctx, 'RollbackUnsafe', `${message}; rollback refused: ${safety.message}`, ctx.phase);
      return;
    }
    ctx.setPhase('RollingBack');
    ctx.event('Warning', 'RollingBack', `${message}; rolling back to ${ctx.status.fromVersion}`);
    ctx.condition({ type: 'Progressing', status: 'True', reason: 'RollingBack', message: `rolling back to ${ctx.status.fromVersion}: ${message}` });
    ctx.requeue(0);
    return;
  }
  pause(ctx, reason, message, ctx.phase);
}

export function pause(ctx: PlanContext, reason: string, message: string, resumePhase: UpgradePhase): void {
  ctx.status.pause = { reason, message, since: ctx.now.toISOString(), resumePhase };
  ctx.setPhase('Paused');
  ctx.condition({ type: 'Paused', status: 'True', reason, message });
  ctx.event('Warning', 'Paused', `${reason}: ${message}`);
}

export function resume(ctx: PlanContext, why: string): void {
  const to = ctx.status.pause?.resumePhase ?? 'Upgrading';
  const reason = ctx.status.pause?.reason;
  delete ctx.status.pause;
  // After a failed or timed-out step, resuming means "try that step again": the failed call is given up
  // and the step is re-sent under a new key. Calls still in flight (a pause for analysis) are kept.
  if (reason === 'DriverFailed' || reason === 'BatchTimeout') {
    for (const c of ctx.status.driverCalls ?? []) {
      const stuck = c.result === 'Failed' || (c.result !== 'Abandoned' && !callReachedGoal(ctx, c));
      if (stuck) {
        c.result = 'Abandoned';
        c.message = `${c.message ? `${c.message}; ` : ''}abandoned on resume, retried under a new key`;
      }
    }
  }
  ctx.setPhase(to);
  ctx.condition({ type: 'Paused', status: 'False', reason: 'Resumed', message: why });
  ctx.condition({ type: 'Degraded', status: 'False', reason: 'Resumed', message: why });
  if (ctx.status.lastAnalysis) ctx.status.lastAnalysis = { ...ctx.status.lastAnalysis, consecutiveBreaches: 0 };
  ctx.event('Normal', 'Resumed', `${why}; back to ${to}`);
  ctx.requeue(0);
}
