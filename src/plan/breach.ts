import type { PlanContext } from './context.ts';
import type { UpgradePhase } from '../api/types.generated.ts';
import type { PauseReason } from '../api/vocabulary.ts';
import { reportRollbackSafety, rollbackVerdict } from './rollback-verdict.ts';
import { rollbackGoal, rollbackMoves, serversToMove } from './rollback-goal.ts';
import { rollbackSkew } from './component-skew.ts';
import { safeMessage } from './redact.ts';
import { acceptMembership, membershipChange } from './membership.ts';

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
  if (serversToMove(ctx).length > 0 && heldBySafety(ctx, message, resumePhase)) return;
  delete ctx.status.pause;
  ctx.setPhase('RollingBack');
  ctx.status.rollbackStartedAt = ctx.now.toISOString();
  ctx.event('Warning', 'RollingBack', `${message}; rolling back to ${ctx.status.fromVersion}`);
  ctx.condition({ type: 'Progressing', status: 'True', reason: 'RollingBack', message: `rolling back to ${ctx.status.fromVersion}: ${message}` });
  ctx.requeue(0);
}

/**
 * Applies the rollback verdict to a rollback about to move servers: the control plane's skew first (heldBySkew), then
 * storage: unsafe or unknown pauses, saying what is missing; orphans pause unless spec.rollback.orphanedObjects is
 * Proceed. Returns true when it paused.
 */
function heldBySafety(ctx: PlanContext, message: string, resumePhase: UpgradePhase, quiet = false): boolean {
  if (heldBySkew(ctx, message, resumePhase)) return true;
  const safety = reportRollbackSafety(ctx);
  if (safety.verdict === 'unsafe') {
    ctx.status.rollbackBlockedBy = [...safety.blocking];
    pause(ctx, 'RollbackUnsafe', `${message}; rollback refused: ${safety.message}`, resumePhase);
    return true;
  }
  if (safety.verdict === 'unknown') {
    pause(ctx, 'RollbackSafetyUnknown', `${message}${NOT_STARTED}${safety.message}. The rollback starts by itself once this is known (or once no server it would move is off its goal); resume to continue the upgrade instead`, resumePhase);
    holdRollback(ctx, message);
    return true;
  }
  if (safety.verdict === 'orphans') {
    ctx.status.orphanedObjects = safety.orphans.slice(0, 64).map((o) => ({ resource: o.resource, count: o.count, names: o.names.slice(0, 20) }));
    if (ctx.spec.rollback.orphanedObjects !== 'Proceed') {
      pause(ctx, 'RollbackOrphans', `${message}${NOT_STARTED}${safety.message}. Set spec.rollback.orphanedObjects to Proceed to roll back anyway, or resume to continue the upgrade`, resumePhase);
      holdRollback(ctx, message);
      return true;
    }
    if (!quiet) ctx.event('Warning', 'OrphanedObjects', safety.message);
  }
  return false;
}

/**
 * Whether a server may get its first Rollback call. The verdict judged when the rollback started covers the
 * servers touched then; one touched later — a server that joined on the target and was accepted by a resume,
 * one seen off the goal only now — was never judged, and a rollback begun with nothing touched judged nothing.
 * So the verdict is judged again before any server's first Rollback call (from status alone in OnePhase and
 * phase one, so a verdict that was safe stays safe; from the orphans read now in phase two). A held rollback
 * pauses; a resume then continues the upgrade where it stood.
 */
export function mayRollBack(ctx: PlanContext, hostname: string): boolean {
  if ((ctx.status.driverCalls ?? []).some((c) => c.server === hostname && c.action === 'Rollback')) return true;
  return !heldBySafety(ctx, `rolling back ${hostname}`, rollingBackResumePhase(ctx), true);
}

/** Where a resume of a pause taken while rolling back returns: the phase the upgrade was in before the rollback. */
function rollingBackResumePhase(ctx: PlanContext): UpgradePhase {
  const started = (ctx.status.batch?.current ?? 0) > 0 || ctx.spec.proxy.gate === 'Unmanaged';
  return started ? 'Upgrading' : 'EnablingProxy';
}

/**
 * The control plane's skew, judged at every step of a running rollback before any Rollback call is made or sent again:
 * a component may be moved by hand while the rollback runs. It holds (pauses ComponentSkew) while a touched server
 * would still get a call — one not back on the goal or with a call in flight, or one never called (a restart in
 * place) — and lets a rollback whose calls are all done finish. Returns true when it paused.
 */
export function heldBySkewWhileRollingBack(ctx: PlanContext): boolean {
  const goal = rollbackGoal(ctx);
  const called = new Set((ctx.status.driverCalls ?? []).filter((c) => c.action === 'Rollback' && c.result === 'Done').map((c) => c.server));
  if (!goal.touched.some((h) => rollbackMoves(ctx, h, goal) || !called.has(h))) return false;
  return heldBySkew(ctx, `rolling back to ${goal.describe}`, rollingBackResumePhase(ctx), true);
}

/** The version (or, in phase two, the emulated minor) the kube-apiservers are back on after the rollback. */
function rollbackReturnsTo(ctx: PlanContext): string {
  const goal = rollbackGoal(ctx);
  return goal.emulatedVersion ?? goal.target;
}

/**
 * A rollback that would leave a kube-controller-manager or kube-scheduler newer than the kube-apiservers it returns
 * to — or one whose version is unknown — pauses (ComponentSkew) instead of starting, naming each; no Rollback call is
 * made. The pause keeps the rollback's cause and re-checks at each step (recheckComponentSkew). Returns true when it paused.
 */
function heldBySkew(ctx: PlanContext, message: string, resumePhase: UpgradePhase, underWay = false): boolean {
  const skew = rollbackSkew(ctx.obs.components, rollbackReturnsTo(ctx));
  if (!skew) return false;
  pause(ctx, 'ComponentSkew', `${message}${underWay ? '; no further Rollback call: ' : NOT_STARTED}${skew.message}. Resume to continue the upgrade instead`, resumePhase, skew.blockers);
  holdRollback(ctx, underWay ? 'the rollback under way' : message);
  return true;
}

/**
 * A rollback held by ComponentSkew re-checks its cause on every step, from the components observed now: once none
 * would be newer than the version the rollback returns to (and every version is known), the rollback starts with
 * the cause it was held with, through every other check (startRollback). Returns true while the upgrade stays paused.
 */
export function recheckComponentSkew(ctx: PlanContext): boolean {
  const p = ctx.status.pause;
  if (p?.reason !== 'ComponentSkew') return true;
  const to = rollbackReturnsTo(ctx);
  if (rollbackSkew(ctx.obs.components, to)) return true;
  ctx.event('Normal', 'ComponentSkewResolved', `no kube-controller-manager or kube-scheduler is newer than ${to} now: the held rollback starts`);
  startRollback(ctx, p.heldRollback ?? 'a rollback held by the version skew of the control plane', p.resumePhase ?? 'Upgrading');
  return ctx.phase === 'Paused';
}

/** Separates a held rollback's cause from what holds it, in the pause's message (for people; the cause itself is kept in status). */
const NOT_STARTED = '; rollback not started: ';

/** Keeps the held rollback's cause as a field of the pause: the re-check starts the rollback with it, never reading it back from the message. */
function holdRollback(ctx: PlanContext, cause: string): void {
  if (ctx.status.pause) ctx.status.pause.heldRollback = safeMessage(cause, { maxChars: 4096 });
}

/**
 * A rollback held by RollbackSafetyUnknown fails closed on an unknown, and re-checks it on every step: the shell
 * re-reads the storage hashes (and, in phase two, the orphans) at each reconcile, a paused one included, and the
 * target's hashes are recorded as soon as a server running it is read. Once the verdict is known it acts —
 * rolls back (waiting for the calls in flight first), or pauses RollbackUnsafe / RollbackOrphans naming what it
 * found — instead of keeping a pause whose message says something is missing that no longer is.
 * Returns true while the upgrade stays paused.
 */
export function recheckRollback(ctx: PlanContext): boolean {
  const p = ctx.status.pause;
  // Without a from-version there is nothing a rollback could go back to (runRollingBack's own pause): no verdict acts.
  if (p?.reason !== 'RollbackSafetyUnknown' || !ctx.status.fromVersion) return true;
  const verdict = rollbackVerdict(ctx);
  // Still unknown, it holds only while the rollback would move a server: once every touched server is back on the
  // goal with nothing in flight (a replacement that failed back), there is nothing the verdict would guard.
  const moving = serversToMove(ctx).length > 0;
  if (verdict.verdict === 'unknown' && moving) return true;
  const cause = p.heldRollback ?? 'a rollback held while its safety was unknown';
  if (verdict.verdict === 'unknown') ctx.event('Normal', 'RollbackSafetyKnown', 'every server the rollback concerns is back where it would take it, with nothing in flight: it moves none, so it needs no storage verdict');
  else ctx.event('Normal', 'RollbackSafetyKnown', `rollback safety is known now (${verdict.verdict}): ${verdict.message}`);
  startRollback(ctx, cause, p.resumePhase ?? 'Upgrading');
  return ctx.phase === 'Paused';
}

/**
 * A MembershipChanged pause fails closed on a fleet the plan does not cover, and re-checks it on every step: once
 * the fleet is the plan's again (the member that was gone is back, the joiner left), the pause names nothing real
 * and lifts by itself. It acknowledges nothing, as a human's resume would: a call that failed meanwhile still pauses
 * on its own cause, and the batch ends only on a healthy check newer than now. Returns true while it stays paused.
 */
export function recheckMembership(ctx: PlanContext): boolean {
  const p = ctx.status.pause;
  if (p?.reason !== 'MembershipChanged' || membershipChange(ctx)) return true;
  const to = p.resumePhase ?? 'Upgrading';
  const why = `the fleet is the plan's members again (${(p.servers ?? []).join(', ') || 'the change'} as planned): the MembershipChanged pause lifts by itself`;
  delete ctx.status.pause;
  const b = ctx.status.batch;
  if (b) {
    b.checkAfter = ctx.now.toISOString();
    delete b.discoveryPendingSince;
  }
  ctx.setPhase(to);
  ctx.condition({ type: 'Paused', status: 'False', reason: 'Resumed', message: why });
  ctx.event('Normal', 'Resumed', `${why}; back to ${to}`);
  ctx.requeue(0);
  return false;
}

export function pause(ctx: PlanContext, reason: PauseReason, raw: string, resumePhase: UpgradePhase, servers?: string[]): void {
  // Breach and call messages carry servers' and drivers' words (label values, hook answers): made safe here.
  const message = safeMessage(raw, { maxChars: 4096 });
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
