import type { FrozenPlan, PlannedBatch, StorageHash, UpgradeStage } from '../api/types.generated.ts';
import { resolveBatchSize } from '../api/batch-size.ts';
import type { PlanContext } from './context.ts';
import type { ObservedStorage } from './observation.ts';
import { peerRowFrom } from './peers.ts';
import { minorOf, sameRelease } from './version.ts';
import { phaseTwoToFreeze } from '../api/phase-two.ts';

/** What one stage of the plan does to each server: TwoPhase has two, OnePhase one (no stage fields). */
interface StageDef {
  stage?: UpgradeStage;
  emulatedVersion?: string;
}

/** The stages of a plan: OnePhase moves each server once; TwoPhase first emulating the from-version, then not. */
export function stageDefs(phases: FrozenPlan['phases'], fromVersion: string): StageDef[] {
  if (phases !== 'TwoPhase') return [{}];
  return [{ stage: 'Binaries', emulatedVersion: minorOf(fromVersion)! }, { stage: 'API' }];
}

/** Splits servers into batches, numbered from `firstIndex`, all of one stage. */
function chunk(servers: readonly string[], size: number, firstIndex: number, def: StageDef = {}): PlannedBatch[] {
  const out: PlannedBatch[] = [];
  for (let i = 0; i < servers.length; i += size) out.push({ index: firstIndex + out.length, servers: servers.slice(i, i + size), ...def });
  return out;
}

/** Cuts each stage's servers into batches, stage after stage, numbered from `firstIndex`. */
function cutStages(defs: readonly StageDef[], serversOf: (d: StageDef) => string[], size: number, firstIndex: number): PlannedBatch[] {
  const out: PlannedBatch[] = [];
  for (const d of defs) out.push(...chunk(serversOf(d), size, firstIndex + out.length, d));
  return out;
}

export function storageList(s: ObservedStorage): StorageHash[] {
  return Object.keys(s.hashes).sort().map((resource) => ({ resource, hash: s.hashes[resource]!, ...(s.kinds[resource] ? { kind: s.kinds[resource] } : {}) }));
}

/** The observed storage hashes of servers running `version` emulating `emulated` (default: none), if read completely. */
export function observedStorage(ctx: PlanContext, version: string, emulated?: string): ObservedStorage | undefined {
  const want = emulated ?? minorOf(version);
  return ctx.obs.storage?.find((s) => sameRelease(s.version, version) && (s.emulation ?? minorOf(s.version)) === want);
}

/** The plan fixed at preflight: the members in hostname order, cut into batches. */
export function freezePlan(ctx: PlanContext, fromVersion: string, fromStorage: ObservedStorage): FrozenPlan {
  const members = ctx.obs.peers.map((p) => p.hostname).sort((a, b) => a.localeCompare(b));
  const size = resolveBatchSize(ctx.spec.strategy.batchSize, members.length);
  const phases = ctx.spec.strategy.phases;
  ctx.status.peers = [...ctx.obs.peers].sort((a, b) => a.hostname.localeCompare(b.hostname)).map((p) => ({ ...peerRowFrom(p), state: 'Pending' }));
  return {
    fromVersion,
    members,
    batches: cutStages(stageDefs(phases, fromVersion), () => members, size, 1),
    batchSize: String(ctx.spec.strategy.batchSize),
    phases,
    ...(phases === 'TwoPhase' ? { phaseTwo: phaseTwoToFreeze(ctx.spec.strategy.phaseTwo) } : {}),
    // Every call the operator makes asks for the gate on (unless Unmanaged), so where it is off now, the
    // operator is the one turning it on: the only servers revertAfter may turn it off on again.
    gateTurnedOn: ctx.spec.proxy.gate === 'Unmanaged' ? [] : ctx.obs.peers.filter((p) => p.proxyGate === 'off').map((p) => p.hostname).sort(),
    fromStorageServer: fromStorage.server,
    fromStorage: storageList(fromStorage),
  };
}

/** The batches already started (their membership is history and never changes). */
export function startedBatches(ctx: PlanContext): PlannedBatch[] {
  const current = ctx.status.batch?.current ?? 0;
  return (ctx.status.plan?.batches ?? []).filter((b) => b.index <= current);
}

/**
 * Re-cuts the batches not yet started from the plan's members, with the spec's batch size: after a
 * strategy edit, or after a resume accepted a membership change. Started batches keep their servers, so no
 * server is skipped and none is replaced twice.
 */
export function replanRemaining(ctx: PlanContext): void {
  const plan = ctx.status.plan;
  if (!plan) return;
  const started = startedBatches(ctx);
  const members = plan.members ?? [];
  const size = resolveBatchSize(ctx.spec.strategy.batchSize, members.length);
  // Per stage, the members no started batch of that stage holds: none skipped, none moved twice.
  // A member already on the target's own API (a joiner on the new binary, accepted once phase one had nothing left
  // to protect) gets no phase-one batch: re-applying the emulation over the objects only it served would take an
  // API away.
  const onTargetApi = (h: string): boolean => {
    const p = ctx.observed(h);
    return p?.version !== undefined && sameRelease(p.version, ctx.spec.targetVersion) && (p.emulation ?? minorOf(p.version)) === minorOf(ctx.spec.targetVersion);
  };
  // A stage never starts again once a later one began: after phase two's first batch the fleet serves the target's
  // API, so a member still on the from-version (a joiner, accepted by a resume) goes straight to it. A phase-one
  // batch then would take status.stage back to Binaries, and the plan's own phase-two members would read as servers
  // off phase one's rule (MembershipChanged on every resume).
  const defs = stageDefs(plan.phases, plan.fromVersion ?? '');
  const latestStarted = Math.max(-1, ...started.map((b) => defs.findIndex((d) => d.stage === b.stage)));
  const remaining = (d: StageDef): string[] => {
    if (defs.indexOf(d) < latestStarted) return [];
    const taken = new Set(started.filter((b) => b.stage === d.stage).flatMap((b) => b.servers));
    return members.filter((h) => !taken.has(h) && !(d.emulatedVersion !== undefined && onTargetApi(h)));
  };
  plan.batches = [...started, ...cutStages(defs, remaining, size, started.length + 1)];
  plan.batchSize = String(ctx.spec.strategy.batchSize);
  if (ctx.status.batch) {
    ctx.status.batch.total = plan.batches.length;
    ctx.status.batch.progress = `${ctx.status.batch.current ?? 0}/${plan.batches.length}`;
  }
}

/** A strategy.batchSize edit while active applies to the batches not yet started. */
export function applyBatchSizeEdit(ctx: PlanContext): void {
  const plan = ctx.status.plan;
  if (!plan || plan.batchSize === String(ctx.spec.strategy.batchSize)) return;
  const before = plan.batches?.length ?? 0;
  replanRemaining(ctx);
  ctx.event('Normal', 'Replanned', `strategy.batchSize is now ${ctx.spec.strategy.batchSize}: the batches not yet started were re-cut (${before} -> ${plan.batches?.length ?? 0} batches in all)`);
}

export function batchOf(ctx: PlanContext, index: number): string[] {
  return batchDef(ctx, index)?.servers ?? [];
}

export function batchDef(ctx: PlanContext, index: number): PlannedBatch | undefined {
  return ctx.status.plan?.batches?.find((b) => b.index === index);
}
