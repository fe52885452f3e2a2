import type { ApiServerUpgradeSpec, ApiServerUpgradeStatus } from '../api/types.generated.ts';
import { resolveSpec, SpecError, type ResolvedSpec } from '../api/defaults.ts';
import { setCondition } from '../api/conditions.ts';
import { isTerminal } from '../api/vocabulary.ts';
import { PlanContext, type UpgradeInput } from './context.ts';
import type { Action } from './actions.ts';
import type { Observation } from './observation.ts';
import { refreshPeers } from './peers.ts';
import { runPreflight } from './preflight.ts';
import { gatePass } from './gate-pass.ts';
import { runUpgrading } from './upgrading.ts';
import { runRollingBack } from './rolling-back.ts';
import { pause, resume } from './breach.ts';
import { advanceCalls } from './calls.ts';
import { membershipChange } from './membership.ts';
import { recordTargetStorage, reportRollbackSafety } from './rollback-verdict.ts';

export const RESUME_ANNOTATION = 'upgrade.apiserver.dev/resume';

export interface Plan {
  status: ApiServerUpgradeStatus;
  actions: Action[];
  /** Reconcile again after this long; undefined when only a change should wake the upgrade. */
  requeueAfterMs: number | undefined;
}

/**
 * The whole decision: (spec, status, observation, now) -> new status + side effects + when to look again.
 * Pure: it reads nothing but its arguments, so every transition is a row in a unit-test table.
 */
export function plan(upgrade: UpgradeInput, specIn: ApiServerUpgradeSpec, statusIn: ApiServerUpgradeStatus | undefined, obs: Observation, now: Date): Plan {
  let spec: ResolvedSpec;
  try {
    spec = resolveSpec(specIn);
  } catch (err) {
    if (!(err instanceof SpecError)) throw err;
    const status = { ...structuredClone(statusIn ?? {}), observedGeneration: upgrade.generation };
    status.conditions = setCondition(status.conditions, { type: 'Degraded', status: 'True', reason: 'InvalidSpec', message: err.message, observedGeneration: upgrade.generation }, now);
    return { status, actions: [{ kind: 'event', type: 'Warning', reason: 'InvalidSpec', note: err.message }], requeueAfterMs: undefined };
  }
  const ctx = new PlanContext(upgrade, spec, statusIn ?? {}, obs, now);
  ctx.status.observedGeneration = upgrade.generation;
  if (isTerminal(ctx.phase)) return done(ctx);
  ctx.status.peers = refreshPeers(ctx.status.peers, obs.peers);
  advanceCalls(ctx);
  recordTargetStorage(ctx);
  if (ctx.status.plan) reportRollbackSafety(ctx);
  const resumeToken = takeResumeToken(ctx);

  if (ctx.phase === 'Pending') {
    ctx.status.startedAt = now.toISOString();
    ctx.setPhase('Preflight');
    ctx.condition({ type: 'Progressing', status: 'True', reason: 'Started', message: `upgrade to ${spec.targetVersion} started` });
    ctx.event('Normal', 'Started', `upgrade to ${spec.targetVersion} started`);
  }
  // Preflight touches nothing, so it runs even when the upgrade is created paused: the plan is shown for review.
  if (ctx.phase === 'Preflight') runPreflight(ctx);
  if (isTerminal(ctx.phase)) return done(ctx);

  if (handlePause(ctx, resumeToken)) return done(ctx);

  const change = membershipChange(ctx);
  if (change) {
    pause(ctx, 'MembershipChanged', change.message, ctx.phase);
    return done(ctx);
  }

  switch (ctx.phase) {
    case 'EnablingProxy':
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
 * The resume annotation's value, if it changed since last seen. It is recorded whenever it changes, in any
 * phase, so a value set before a pause never resumes that pause: only a new value written while paused does.
 */
function takeResumeToken(ctx: PlanContext): string | undefined {
  const token = ctx.upgrade.annotations[RESUME_ANNOTATION];
  if (token === undefined || token === ctx.status.observedResume) return undefined;
  ctx.status.observedResume = token;
  return token;
}

/** Returns true when the upgrade is (or just became) paused and nothing else should happen this step. */
function handlePause(ctx: PlanContext, resumeToken: string | undefined): boolean {
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
  return true;
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
  const actions = ctx.actions.filter(allowed);
  const active = !stopped;
  if (active && phase !== 'Pending') ctx.condition({ type: 'Progressing', status: 'True', reason: phase, message: ctx.progressMessage ?? `phase ${phase}` });
  if (phase !== 'Paused' && ctx.status.conditions?.some((c) => c.type === 'Paused' && c.status === 'True')) {
    ctx.condition({ type: 'Paused', status: 'False', reason: 'NotPaused', message: 'not paused' });
  }
  // While work is under way, look again at least every analysis interval even without events.
  if (active && ctx.requeueAfterMs === undefined) ctx.requeue(ctx.spec.analysis.intervalMs);
  // A paused upgrade still watches its calls in flight time out, and the plan's facts stay fresh.
  if (phase === 'Paused' && ctx.requeueAfterMs === undefined) ctx.requeue(Math.max(ctx.spec.analysis.intervalMs, 10_000));
  return { status: ctx.status, actions, requeueAfterMs: ctx.requeueAfterMs };
}
