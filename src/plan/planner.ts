import type { ApiServerUpgradeSpec, ApiServerUpgradeStatus, UpgradePhase } from '../api/types.generated.ts';
import { resolveSpec, SpecError, type ResolvedSpec } from '../api/defaults.ts';
import { setCondition } from '../api/conditions.ts';
import { PlanContext, type UpgradeInput } from './context.ts';
import type { Action } from './actions.ts';
import type { Observation } from './observation.ts';
import { refreshPeers } from './peers.ts';
import { runPreflight } from './preflight.ts';
import { gatePass } from './gate-pass.ts';
import { runUpgrading } from './upgrading.ts';
import { runRollingBack } from './rolling-back.ts';
import { pause, resume } from './breach.ts';

export const RESUME_ANNOTATION = 'upgrade.apiserver.dev/resume';

export interface Plan {
  status: ApiServerUpgradeStatus;
  actions: Action[];
  /** Reconcile again after this long; undefined when only a change should wake the upgrade. */
  requeueAfterMs: number | undefined;
}

const TERMINAL: ReadonlySet<UpgradePhase> = new Set(['Succeeded', 'RolledBack', 'Failed']);

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
  if (TERMINAL.has(ctx.phase)) return done(ctx);
  ctx.status.peers = refreshPeers(ctx.status.peers, obs.peers);
  if (obs.rollback) {
    ctx.condition(obs.rollback.safe
      ? { type: 'RollbackSafe', status: 'True', reason: 'StorageVersionsReadable', message: obs.rollback.message }
      : { type: 'RollbackSafe', status: 'False', reason: 'StorageVersionsMoved', message: obs.rollback.message });
  }

  if (handlePause(ctx)) return done(ctx);

  switch (ctx.phase) {
    case 'Pending':
      ctx.status.startedAt = now.toISOString();
      ctx.setPhase('Preflight');
      ctx.condition({ type: 'Progressing', status: 'True', reason: 'Started', message: `upgrade to ${spec.targetVersion} started` });
      ctx.event('Normal', 'Started', `upgrade to ${spec.targetVersion} started`);
      runPreflight(ctx);
      break;
    case 'Preflight':
      runPreflight(ctx);
      break;
    case 'EnablingProxy':
      if (gatePass(ctx, 'on', ctx.status.fromVersion ?? spec.targetVersion)) {
        ctx.event('Normal', 'ProxyEnabled', 'the Mixed Version Proxy gate is on on every server');
        ctx.setPhase('Upgrading');
        ctx.requeue(0);
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

/** Returns true when the upgrade is (or just became) paused and nothing else should happen this step. */
function handlePause(ctx: PlanContext): boolean {
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
  const token = ctx.upgrade.annotations[RESUME_ANNOTATION];
  if (token !== undefined && token !== ctx.status.observedResume) {
    ctx.status.observedResume = token;
    resume(ctx, `resumed by the ${RESUME_ANNOTATION} annotation (${token})`);
    return false;
  }
  return true;
}

function done(ctx: PlanContext): Plan {
  const phase = ctx.phase;
  const active = !TERMINAL.has(phase) && phase !== 'Paused';
  if (active && phase !== 'Pending') ctx.condition({ type: 'Progressing', status: 'True', reason: phase, message: ctx.progressMessage ?? `phase ${phase}` });
  if (phase !== 'Paused' && ctx.status.conditions?.some((c) => c.type === 'Paused' && c.status === 'True')) {
    ctx.condition({ type: 'Paused', status: 'False', reason: 'NotPaused', message: 'not paused' });
  }
  // While work is under way, look again at least every analysis interval even without events.
  if (active && ctx.requeueAfterMs === undefined) ctx.requeue(ctx.spec.analysis.intervalMs);
  return { status: ctx.status, actions: ctx.actions, requeueAfterMs: ctx.requeueAfterMs };
}
