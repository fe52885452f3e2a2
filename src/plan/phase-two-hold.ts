import { resolvePhaseTwo, type ResolvedPhaseTwo } from '../api/phase-two.ts';
import { APPROVE_ANNOTATION, type WaitReason } from '../api/vocabulary.ts';
import type { PlanContext } from './context.ts';
import { startRollback } from './breach.ts';

/**
 * Phase two of a TwoPhase upgrade held for an approval (spec.strategy.phaseTwo.start Approval, frozen in
 * status.plan.phaseTwo at preflight). Every fact a decision needs is in status.phaseTwoHold — when the hold started,
 * its deadline, the approval seen — so an operator restart or a leader change during the hold changes nothing.
 *
 * - The hold starts when phaseSoakDuration is over; every server stays on the new binary emulating the old version
 *   (nothing is called), the analysis keeps watching, and status.waiting says AwaitingApproval.
 * - An approval is a value of the approve annotation first seen while the hold is on (status.observedApprove records
 *   every value seen, in any phase): one set before the hold started approves nothing later, so a hold always waits
 *   for an act made while it is shown.
 * - The deadline (heldSince + phaseTwo.deadline) applies at the first step of Upgrading after it passes: Proceed starts
 *   phase two, Rollback rolls back to the old binaries through the rollback safety checks. A pause holds it.
 */

/** The wait of a hold (APPROVAL_WAIT of the vocabulary), as a `reason:` literal so test/docs/reasons.test.ts finds it. */
export const HOLD_WAIT = { reason: 'AwaitingApproval' } as const satisfies { reason: WaitReason };

/** The frozen policy: status.plan.phaseTwo, or Automatic for a plan made before the field existed. */
export function frozenPhaseTwo(ctx: PlanContext): ResolvedPhaseTwo | string {
  return resolvePhaseTwo(ctx.status.plan?.phaseTwo);
}

/** Whether a hold is on: started and not ended. */
export function holdOn(ctx: PlanContext): boolean {
  const h = ctx.status.phaseTwoHold;
  return h?.heldSince !== undefined && h.endedBy === undefined;
}

/**
 * Records a new value of the approve annotation (every step, any phase but a finished one). It approves the hold only
 * when the hold is on and not yet approved; a value seen earlier is only recorded. Idempotent: the value and its
 * effect are written in the same status update.
 */
export function takeApproval(ctx: PlanContext): void {
  const token = ctx.upgrade.annotations[APPROVE_ANNOTATION];
  if (token === undefined || token === ctx.status.observedApprove) return;
  ctx.status.observedApprove = token;
  const h = ctx.status.phaseTwoHold;
  if (!holdOn(ctx) || h === undefined || h.approvedAt !== undefined) {
    ctx.event('Normal', 'ApprovalIgnored', `the ${APPROVE_ANNOTATION} annotation (${token}) approves nothing: ${h?.approvedAt !== undefined && holdOn(ctx) ? 'phase two is already approved' : 'no phase two is held now (an approval counts only while the hold is on)'}`);
    return;
  }
  h.approval = token;
  h.approvedAt = ctx.now.toISOString();
  ctx.event('Normal', 'PhaseTwoApproved', `phase two approved by the ${APPROVE_ANNOTATION} annotation (${token})`);
}

function endHold(ctx: PlanContext, endedBy: NonNullable<NonNullable<PlanContext['status']['phaseTwoHold']>['endedBy']>): void {
  const h = ctx.status.phaseTwoHold!;
  h.endedBy = endedBy;
  h.endedAt = ctx.now.toISOString();
}

/**
 * Between the phases, once phaseSoakDuration is over: true when phase two must not start in this step (held, or the
 * deadline started a rollback). `emulated` is the from-version's minor every server emulates.
 */
export function phaseTwoHeld(ctx: PlanContext, emulated: string | undefined): boolean {
  const policy = frozenPhaseTwo(ctx);
  const h0 = ctx.status.phaseTwoHold;
  if (h0?.endedBy !== undefined) return false;
  // A frozen policy that cannot be read holds (unknown is unsafe): only an approval or an abort ends it.
  const p: ResolvedPhaseTwo = typeof policy === 'string' ? { start: 'Approval' } : policy;
  if (p.start === 'Automatic' && h0 === undefined) return false;
  const from = ctx.status.fromVersion ?? ctx.status.plan?.fromVersion ?? '';
  const target = ctx.spec.targetVersion;
  if (h0?.heldSince === undefined) {
    const heldSince = ctx.now.toISOString();
    const deadline = p.deadlineMs === undefined ? undefined : new Date(ctx.now.getTime() + p.deadlineMs).toISOString();
    ctx.status.phaseTwoHold = { ...h0, heldSince, ...(deadline === undefined ? {} : { deadline, onDeadline: p.onDeadline! }) };
    ctx.event('Normal', 'PhaseTwoHeld', `every server runs ${target} emulating ${emulated}; phase two waits for an approval (kubectl apiserver-upgrade approve ${ctx.upgrade.name}, a new value of ${APPROVE_ANNOTATION})${deadline ? `; at ${deadline} it ${p.onDeadline === 'Proceed' ? 'starts anyway' : `rolls back to ${from}`}` : ''}; aborting rolls back to ${from}${typeof policy === 'string' ? ` (status.plan.phaseTwo cannot be read: ${policy}; held until an approval)` : ''}`);
  }
  const h = ctx.status.phaseTwoHold!;
  if (h.approvedAt !== undefined) {
    endHold(ctx, 'Approved');
    return false;
  }
  const deadlineAt = h.deadline === undefined ? undefined : Date.parse(h.deadline);
  if (deadlineAt !== undefined && ctx.now.getTime() >= deadlineAt) {
    if (h.onDeadline === 'Proceed') {
      endHold(ctx, 'DeadlineProceeded');
      ctx.event('Normal', 'PhaseTwoDeadline', `no approval by the deadline ${h.deadline}: phase two starts (onDeadline Proceed)`);
      return false;
    }
    const message = `no approval of phase two by the deadline ${h.deadline} (onDeadline ${h.onDeadline ?? 'unknown, read as Rollback'})`;
    ctx.event('Warning', 'PhaseTwoDeadline', `${message}: rolling back to ${from}`);
    ctx.condition({ type: 'Degraded', status: 'True', reason: 'PhaseTwoDeadline', message });
    // The rollback goes through the safety checks; held by them (a pause), the hold stays on and says why.
    startRollback(ctx, message, 'Upgrading');
    if (ctx.phase === 'RollingBack') endHold(ctx, 'DeadlineRolledBack');
    return true;
  }
  const message = `phase two waits for an approval: every server runs ${target} emulating ${emulated}, and aborting rolls back to ${from}${h.deadline ? `; at ${h.deadline} it ${h.onDeadline === 'Proceed' ? 'starts without one' : `rolls back to ${from}`}` : ''}. Approve: kubectl apiserver-upgrade approve ${ctx.upgrade.name}`;
  ctx.wait(HOLD_WAIT.reason, message, h.deadline === undefined ? {} : { until: h.deadline });
  ctx.progressMessage = `waiting: ${message}`;
  const interval = ctx.spec.analysis.intervalMs;
  ctx.requeue(deadlineAt === undefined ? interval : Math.max(0, Math.min(deadlineAt - ctx.now.getTime(), interval)));
  return true;
}

/**
 * At the end of every step: a hold still on while the upgrade rolls back (an abort, a breach under onBreach Rollback,
 * a held rollback that started by itself) has ended.
 */
export function settleHold(ctx: PlanContext): void {
  if (holdOn(ctx) && ctx.phase === 'RollingBack') endHold(ctx, 'RollbackStarted');
}
