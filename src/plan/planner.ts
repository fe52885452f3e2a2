import type { ApiServerUpgradeSpec, ApiServerUpgradeStatus } from '../api/types.generated.ts';
import { resolveSpec, SpecError, type ResolvedSpec } from '../api/defaults.ts';
import { setCondition } from '../api/conditions.ts';
import { ABORT_ANNOTATION, RESUME_ANNOTATION, RETRY_ANNOTATION, isTerminal } from '../api/vocabulary.ts';
import { PlanContext, type UpgradeInput } from './context.ts';
import type { Action } from './actions.ts';
import type { Observation } from './observation.ts';
import { refreshPeers } from './peers.ts';
import { runPreflight } from './preflight.ts';
import { gatePass } from './gate-pass.ts';
import { applyAnalysis, nextDueMs } from './analysis.ts';
import { runUpgrading } from './upgrading.ts';
import { runRollingBack } from './rolling-back.ts';
import { pause, recheckComponentSkew, recheckMembership, recheckRollback, resume, startRollback } from './breach.ts';
import { componentStatus } from './component-skew.ts';
import { advanceCalls, inFlight } from './calls.ts';
import { holdForRunning, recheckRunning } from './running-pause.ts';
import type { HeldCall } from './running-process.ts';
import { touchedServers } from './rollback-goal.ts';
import { membershipChange } from './membership.ts';
import { recordTargetStorage, reportRollbackSafety } from './rollback-verdict.ts';
import { checkSpec, type Policy, type PolicyViolation } from './policy.ts';
import { policyGate, policyPause, refusePreflight } from './policy-gate.ts';
import { markKubeadmConfigPending } from './kubeadm-config.ts';
import { sameRelease } from './version.ts';
import { settleHold, takeApproval } from './phase-two-hold.ts';
import { reportRollbackWindow } from './rollback-window.ts';
import { gatePassStarted, recordWindow, settleWaiting, startHeld } from './start-gates.ts';

export { RESUME_ANNOTATION, ABORT_ANNOTATION, RETRY_ANNOTATION };

export interface Plan {
  status: ApiServerUpgradeStatus;
  actions: Action[];
  /** Reconcile again after this long; undefined when only a change should wake the upgrade. */
  requeueAfterMs: number | undefined;
}

/**
 * The whole decision: (spec, status, observation, now) -> new status + side effects + when to look again.
 * Pure: it reads nothing but its arguments, so every transition is a row in a unit-test table.
 * `policy` is the operator's own (--policy-file, src/plan/policy.ts): a spec outside it is refused at
 * preflight and pauses a run under way (NotAllowedByPolicy), making no call. Undefined: everything is allowed.
 */
export function plan(upgrade: UpgradeInput, specIn: ApiServerUpgradeSpec, statusIn: ApiServerUpgradeStatus | undefined, obs: Observation, now: Date, policy?: Policy): Plan {
  let spec: ResolvedSpec;
  try {
    spec = resolveSpec(specIn);
  } catch (err) {
    if (!(err instanceof SpecError)) throw err;
    return invalidSpecPlan(upgrade, statusIn, err, now);
  }
  return planResolved(upgrade, spec, statusIn, obs, now, policy, policy === undefined ? [] : checkSpec(policy, spec));
}

/** A spec that cannot be resolved: said in Degraded (InvalidSpec) and an Event; nothing else moves. */
export function invalidSpecPlan(upgrade: UpgradeInput, statusIn: ApiServerUpgradeStatus | undefined, err: SpecError, now: Date): Plan {
  const status = { ...structuredClone(statusIn ?? {}), observedGeneration: upgrade.generation };
  status.conditions = setCondition(status.conditions, { type: 'Degraded', status: 'True', reason: 'InvalidSpec', message: err.message, observedGeneration: upgrade.generation }, now);
  return { status, actions: [{ kind: 'event', type: 'Warning', reason: 'InvalidSpec', note: err.message }], requeueAfterMs: undefined };
}

/**
 * `plan` on a spec resolved once by the caller, with the policy's verdict on it (`violations`, checked once by
 * the caller: src/plan/reconcile.ts): the shell's entry, which resolves nothing again.
 */
export function planResolved(upgrade: UpgradeInput, spec: ResolvedSpec, statusIn: ApiServerUpgradeStatus | undefined, obs: Observation, now: Date, policy: Policy | undefined, violations: readonly PolicyViolation[]): Plan {
  const ctx = new PlanContext(upgrade, spec, statusIn ?? {}, obs, now, policy);
  ctx.status.observedGeneration = upgrade.generation;
  if (ctx.status.conditions?.some((c) => c.type === 'Degraded' && c.status === 'True' && c.reason === 'InvalidSpec')) {
    ctx.condition({ type: 'Degraded', status: 'False', reason: 'SpecValid', message: 'the spec is valid again' });
  }
  const retryToken = takeToken(ctx, RETRY_ANNOTATION, 'observedRetry');
  if (retryToken !== undefined && ctx.phase === 'Failed') retryFailed(ctx, retryToken);
  if (isTerminal(ctx.phase)) return done(ctx);
  ctx.status.peers = refreshPeers(ctx.status.peers, obs.peers);
  const components = componentStatus(obs.components);
  if (components) ctx.status.components = components;
  const held = advanceCalls(ctx);
  recordTargetStorage(ctx);
  if (ctx.status.plan) reportRollbackSafety(ctx);
  const resumeToken = takeToken(ctx, RESUME_ANNOTATION, 'observedResume') ?? (ctx.phase === 'Paused' ? retryToken : undefined);
  const abortToken = takeToken(ctx, ABORT_ANNOTATION, 'observedAbort');
  // Before any decision of this step: an approval seen while the hold is on is the hold's (src/plan/phase-two-hold.ts).
  takeApproval(ctx);

  if (ctx.phase === 'Pending') {
    ctx.status.startedAt = now.toISOString();
    ctx.setPhase('Preflight');
    ctx.condition({ type: 'Progressing', status: 'True', reason: 'Started', message: `upgrade to ${spec.targetVersion} started` });
    ctx.event('Normal', 'Started', `upgrade to ${spec.targetVersion} started`);
  }
  // Checked on every step (by the caller): the policy file may change, and so may the spec.
  // Preflight touches nothing, so it runs even when the upgrade is created paused: the plan is shown for review.
  // Held by the spec before preflight passed, it runs again at every step (a first verdict that is only "waiting",
  // e.g. for the storage hashes, must not stay the verdict) and the pause keeps where to resume: Preflight until
  // it passes, then the phase it leads to.
  const heldBeforePreflight = isHeldBeforePreflight(ctx.phase, ctx.status);
  if (ctx.phase === 'Preflight' || heldBeforePreflight) {
    if (heldBeforePreflight) ctx.setPhase('Preflight');
    if (violations.length > 0) refusePreflight(ctx, violations);
    else runPreflight(ctx);
    if (heldBeforePreflight && !isTerminal(ctx.phase)) {
      ctx.status.pause!.resumePhase = ctx.phase;
      ctx.setPhase('Paused');
    }
  }
  if (isTerminal(ctx.phase)) return done(ctx);

  if (abortToken !== undefined && abort(ctx, abortToken)) return done(ctx);
  if (policyGate(ctx, violations, resumeToken)) return done(ctx);
  if (handlePause(ctx, resumeToken, held)) return done(ctx);
  if (policyPause(ctx, violations)) return done(ctx);
  if (holdForRunning(ctx, held)) return done(ctx);

  const change = membershipChange(ctx);
  if (change) {
    pause(ctx, 'MembershipChanged', change.message, ctx.phase, change.servers);
    return done(ctx);
  }

  switch (ctx.phase) {
    case 'EnablingProxy':
      // The gate pass restarts every server: a server that goes down meanwhile (not the one being restarted)
      // or a signal that breaches pauses here as in Upgrading (seed 78 #7 of the fault campaign was seen only by
      // membership, 20 s later). onBreach Rollback pauses too: no version changed yet, and the gate stays on.
      if (applyAnalysis(ctx)) break;
      // The gate pass is the first call: the window and the gates hold it until it starts, never once it has.
      if (!gatePassStarted(ctx) && startHeld(ctx, 'the proxy gate pass (the first call)')) break;
      if (gatePass(ctx, 'on', ctx.status.fromVersion ?? spec.targetVersion)) {
        ctx.event('Normal', 'ProxyEnabled', 'the Mixed Version Proxy gate is on on every server');
        ctx.setPhase('Upgrading');
        runUpgrading(ctx);
      }
      break;
    case 'Upgrading':
      runUpgrading(ctx);
      break;
    case 'RollingBack':
      runRollingBack(ctx);
      break;
    default:
      break;
  }
  return done(ctx);
}

/**
 * An action annotation's value, if it changed since last seen. It is recorded whenever it changes, in any
 * phase, so a value set before a pause never resumes (or aborts) later: only a new value acts, once.
 */
function takeToken(ctx: PlanContext, annotation: string, field: 'observedResume' | 'observedAbort' | 'observedRetry'): string | undefined {
  const token = ctx.upgrade.annotations[annotation];
  if (token === undefined || token === ctx.status[field]) return undefined;
  ctx.status[field] = token;
  return token;
}

/**
 * A human's abort: roll back now, through the same safety checks as onBreach Rollback. Before anything was
 * touched it ends RolledBack at once (nothing to undo); while rolling back or finished it changes nothing.
 * Returns true when the step is over.
 */
function abort(ctx: PlanContext, token: string): boolean {
  const message = `aborted by the ${ABORT_ANNOTATION} annotation (${token})`;
  if (ctx.phase === 'RollingBack') return false;
  ctx.condition({ type: 'Degraded', status: 'True', reason: 'Aborted', message });
  // Nothing to undo only while every server runs the from-version: one seen on anything else (a joiner on the
  // target) makes RolledBack untrue; the rollback then goes through membership and the safety checks.
  const from = ctx.status.fromVersion ?? '';
  const allFrom = ctx.obs.peers.every((p) => p.version === undefined || sameRelease(p.version, from));
  const untouched = touchedServers(ctx).length === 0 && !(ctx.status.driverCalls ?? []).some(inFlight) && allFrom;
  if (ctx.phase === 'Pending' || ctx.phase === 'Preflight' || !ctx.status.plan || untouched) {
    delete ctx.status.pause;
    ctx.setPhase('RolledBack');
    ctx.status.completedAt = ctx.now.toISOString();
    const what = `${message} before any server changed version (a proxy gate turned on stays on)`;
    ctx.condition({ type: 'Progressing', status: 'False', reason: 'Aborted', message: what });
    ctx.condition({ type: 'Complete', status: 'False', reason: 'Aborted', message });
    ctx.event('Warning', 'Aborted', what);
    return true;
  }
  const resumePhase = ctx.phase === 'Paused' ? (ctx.status.pause?.resumePhase ?? 'Upgrading') : ctx.phase;
  ctx.event('Warning', 'Aborted', message);
  startRollback(ctx, message, resumePhase);
  return ctx.phase === 'Paused';
}

/** A human's retry of a Failed upgrade: preflight runs again, from what is observed now. */
function retryFailed(ctx: PlanContext, token: string): void {
  const why = `retried by the ${RETRY_ANNOTATION} annotation (${token})`;
  delete ctx.status.completedAt;
  delete ctx.status.plan;
  delete ctx.status.batch;
  delete ctx.status.phaseTwoHold;
  ctx.setPhase('Preflight');
  ctx.condition({ type: 'Complete', status: 'False', reason: 'Retried', message: why });
  ctx.condition({ type: 'Progressing', status: 'True', reason: 'Retried', message: why });
  ctx.event('Normal', 'Retried', why);
}

/** Returns true when the upgrade is (or just became) paused and nothing else should happen this step. */
function handlePause(ctx: PlanContext, resumeToken: string | undefined, held: readonly HeldCall[]): boolean {
  const p = ctx.status.pause;
  if (ctx.spec.paused) {
    if (ctx.phase !== 'Paused') pause(ctx, 'PausedBySpec', 'spec.paused is true', ctx.phase);
    return true;
  }
  if (ctx.phase !== 'Paused') return false;
  if (p?.reason === 'PausedBySpec') {
    resume(ctx, 'spec.paused is false');
    return false;
  }
  if (resumeToken !== undefined) {
    resume(ctx, `resumed by the ${RESUME_ANNOTATION} annotation (${resumeToken})`);
    return false;
  }
  if (p?.reason === 'RollbackSafetyUnknown') return recheckRollback(ctx);
  if (p?.reason === 'MembershipChanged') return recheckMembership(ctx);
  if (p?.reason === 'ComponentSkew') return recheckComponentSkew(ctx);
  if (p?.reason === 'RunningProcessDiffers') return recheckRunning(ctx, held);
  return true;
}

/** The phases whose steps apply the analysis (src/plan/analysis.ts applyAnalysis). */
const ANALYSED: ReadonlySet<string> = new Set(['EnablingProxy', 'Upgrading']);

/**
 * How long until the next analysis check is due. Overdue (the observer had no new window yet): soon again, not at
 * once, so a look that brings no check does not spin.
 */
function untilNextCheck(ctx: PlanContext): number {
  const interval = ctx.spec.analysis.intervalMs;
  const due = nextDueMs(ctx.status.lastAnalysis, interval);
  if (due === undefined) return interval;
  const left = due - ctx.now.getTime();
  return Math.min(interval, left > 0 ? left : Math.min(500, interval));
}

/**
 * Closes a step. A step that ends stopped (paused or finished) sends nothing: calls first recorded in it are
 * dropped again, and calls re-sent from earlier steps wait. A step rolling back sends only Rollback calls.
 */
function done(ctx: PlanContext): Plan {
  const phase = ctx.phase;
  const stopped = isTerminal(phase) || phase === 'Paused';
  const allowed = (a: Action): boolean => a.kind !== 'callDriver' || (!stopped && (phase !== 'RollingBack' || a.request.action === 'Rollback'));
  const dropped = ctx.actions.filter((a) => !allowed(a));
  if (dropped.length > 0) {
    const droppedNew = new Set(dropped.flatMap((a) => (a.kind === 'callDriver' && ctx.newCalls.has(a.request.idempotencyKey) ? [a.request.idempotencyKey] : [])));
    ctx.status.driverCalls = (ctx.status.driverCalls ?? []).filter((c) => !droppedNew.has(c.key));
  }
  settleHold(ctx);
  reportRollbackWindow(ctx);
  // Why it waits (a gate, the window, preflight), and the window's next start, in status on every step.
  if (!isTerminal(phase) && !ctx.waiting) recordWindow(ctx);
  settleWaiting(ctx);
  const actions = ctx.actions.filter(allowed);
  // The step that ends the upgrade records kubeadm-config as to be brought in line (src/plan/kubeadm-config.ts).
  if (isTerminal(phase) && ctx.initialPhase !== phase) markKubeadmConfigPending(ctx.status);
  const active = !stopped;
  if (active && phase !== 'Pending') ctx.condition({ type: 'Progressing', status: 'True', reason: phase, message: ctx.progressMessage ?? `phase ${phase}` });
  if (phase !== 'Paused' && ctx.status.conditions?.some((c) => c.type === 'Paused' && c.status === 'True')) {
    ctx.condition({ type: 'Paused', status: 'False', reason: 'NotPaused', message: 'not paused' });
  }
  // While work is under way, look again when the next check is due (its slot on the grid), even without events,
  // and however slowly the calls are polled: a look an interval after the last one's end would make each check late
  // by the time the look before it took (seed 31 #7 of the fault campaign: two checks ~1 s late each at load 4).
  // Only the phases that check (EnablingProxy, Upgrading) keep to the grid; the others (RollingBack, Preflight) look
  // again an interval on when nothing else asked sooner: an overdue slot there would make them look every 500 ms.
  if (active && ANALYSED.has(phase)) ctx.requeue(untilNextCheck(ctx));
  else if (active && ctx.requeueAfterMs === undefined) ctx.requeue(ctx.spec.analysis.intervalMs);
  // A paused upgrade still watches its calls in flight time out, and the plan's facts stay fresh.
  if (phase === 'Paused' && ctx.requeueAfterMs === undefined) ctx.requeue(Math.max(ctx.spec.analysis.intervalMs, 10_000));
  return { status: ctx.status, actions, requeueAfterMs: ctx.requeueAfterMs };
}

/**
 * Held by spec.paused before preflight passed: the planner runs preflight again at every step, so a look then reads
 * everything preflight reads (src/plan/reconcile.ts atPreflight).
 */
export function isHeldBeforePreflight(phase: string | undefined, status: ApiServerUpgradeStatus | undefined): boolean {
  return phase === 'Paused' && status?.pause?.reason === 'PausedBySpec' && status.pause.resumePhase === 'Preflight';
}
