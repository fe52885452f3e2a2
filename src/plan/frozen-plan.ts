import type { FrozenPlan, PlannedBatch, StorageHash } from '../api/types.generated.ts';
import { resolveBatchSize } from '../api/batch-size.ts';
import type { PlanContext } from './context.ts';
import type { ObservedStorage } from './observation.ts';
import { peerRowFrom } from './peers.ts';
import { sameRelease } from './version.ts';

/** Splits servers into batches of the spec's size, numbered from `firstIndex`. */
function chunk(servers: readonly string[], size: number, firstIndex: number): PlannedBatch[] {
  const out: PlannedBatch[] = [];
  for (let i = 0; i < servers.length; i += size) out.push({ index: firstIndex + out.length, servers: servers.slice(i, i + size) });
  return out;
}

export function storageList(s: ObservedStorage): StorageHash[] {
  return Object.keys(s.hashes).sort().map((resource) => ({ resource, hash: s.hashes[resource]!, ...(s.kinds[resource] ? { kind: s.kinds[resource] } : {}) }));
}

/** The observed storage hashes of servers running `version`, if read completely. */
export function observedStorage(ctx: PlanContext, version: string): ObservedStorage | undefined {
  return ctx.obs.storage?.find((s) => sameRelease(s.version, version));
}

/** The plan fixed at preflight: the members in hostname order, cut into batches. */
export function freezePlan(ctx: PlanContext, fromVersion: string, fromStorage: ObservedStorage): FrozenPlan {
  const members = ctx.obs.peers.map((p) => p.hostname).sort((a, b) => a.localeCompare(b));
  const size = resolveBatchSize(ctx.spec.strategy.batchSize, members.length);
  ctx.status.peers = [...ctx.obs.peers].sort((a, b) => a.hostname.localeCompare(b.hostname)).map((p) => ({ ...peerRowFrom(p), state: 'Pending' }));
  return {
    fromVersion,
    members,
    batches: chunk(members, size, 1),
    batchSize: String(ctx.spec.strategy.batchSize),
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
  const taken = new Set(started.flatMap((b) => b.servers));
  const remaining = (plan.members ?? []).filter((h) => !taken.has(h));
  const size = resolveBatchSize(ctx.spec.strategy.batchSize, (plan.members ?? []).length);
  plan.batches = [...started, ...chunk(remaining, size, started.length + 1)];
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
  return ctx.status.plan?.batches?.find((b) => b.index === index)?.servers ?? [];
}
