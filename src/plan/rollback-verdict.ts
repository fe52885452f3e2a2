import type { StorageHash } from '../api/types.generated.ts';
import type { ObservedOrphans } from './observation.ts';
import type { PlanContext } from './context.ts';
import { rollbackSafety, type ServerStorageHashes } from './rollback-safety.ts';
import { observedStorage, storageList } from './frozen-plan.ts';
import { minorOf, sameRelease } from './version.ts';
import { emulationOf } from './calls.ts';

export type RollbackVerdict =
  | { verdict: 'safe'; message: string }
  | { verdict: 'unsafe'; blocking: string[]; message: string }
  | { verdict: 'unknown'; message: string }
  | { verdict: 'orphans'; orphans: ObservedOrphans[]; message: string };

/** A recorded hash list as rollbackSafety reads one server's hashes. */
export function asServer(server: string, list: readonly StorageHash[]): ServerStorageHashes {
  return {
    server,
    hashes: new Map(list.map((h) => [h.resource, h.hash])),
    kinds: new Map(list.filter((h) => h.kind).map((h) => [h.resource, h.kind!])),
  };
}

/**
 * Keeps the target version's storage hashes in status the first time they are read completely: after a
 * leader change, or once every new server is down, the verdict is still known.
 */
export function recordTargetStorage(ctx: PlanContext): void {
  const plan = ctx.status.plan;
  if (!plan) return;
  // TwoPhase: what a rollback to the old binary has to read is what phase one's emulating servers wrote.
  const emulated = plan.phases === 'TwoPhase' ? minorOf(plan.fromVersion ?? '') : undefined;
  if (!plan.targetStorage?.length) {
    const s = observedStorage(ctx, ctx.spec.targetVersion, emulated);
    if (s) {
      plan.targetStorage = storageList(s);
      plan.targetStorageServer = s.server;
    }
  }
  // ...and, should a server run the target without emulation during phase one (one that joined on the new
  // binary), what it wrote as well: its objects stay in etcd after it leaves.
  if (emulated !== undefined && !plan.targetApiStorage?.length) {
    const s = observedStorage(ctx, ctx.spec.targetVersion);
    if (s && unemulatedTargetServers(ctx).includes(s.server)) {
      plan.targetApiStorage = storageList(s);
      plan.targetApiStorageServer = s.server;
    }
  }
}

/**
 * TwoPhase, phase one: the servers observed on the target without emulating the from-version. Phase one
 * promises none; one that joined on the new binary writes at the target's own storage versions.
 */
export function unemulatedTargetServers(ctx: PlanContext): string[] {
  const plan = ctx.status.plan;
  if (plan?.phases !== 'TwoPhase' || ctx.status.stage === 'API') return [];
  const from = minorOf(plan.fromVersion ?? '');
  return ctx.obs.peers.filter((p) => p.version !== undefined && sameRelease(p.version, ctx.spec.targetVersion) && emulationOf(p) !== from).map((p) => p.hostname);
}

/**
 * Whether a server may have written at the storage versions of the target the verdict reads (TwoPhase's phase one:
 * the target emulating the from-version): an Upgrade call to it that the driver did not refuse (it may have landed,
 * or land late), or a server seen on it now or in the last recorded peer rows. A joiner never observed cannot be
 * known; one observed has its hashes recorded in the step that reads them.
 */
function mayHaveRunTarget(ctx: PlanContext): boolean {
  const plan = ctx.status.plan;
  const target = ctx.spec.targetVersion;
  const emulated = plan?.phases === 'TwoPhase' ? minorOf(plan.fromVersion ?? '') : undefined;
  const onIt = (p: { version?: string; emulation?: string }): boolean => p.version !== undefined && sameRelease(p.version, target) && (emulated === undefined || emulationOf(p) === emulated);
  return (ctx.status.driverCalls ?? []).some((c) => c.action === 'Upgrade' && c.result !== 'Rejected' && (emulated === undefined || c.emulatedVersion === emulated))
    || ctx.obs.peers.some(onIt)
    // A peer row keeps no emulation: it tells a server seen on the target only where there is none to tell (OnePhase).
    || (emulated === undefined && (ctx.status.peers ?? []).some(onIt));
}

/**
 * May the fleet go back to the from-version? Judged only from what status holds (the from-version's hashes
 * read at preflight, the target's read since), never from memory: unknown is unsafe.
 */
export function rollbackVerdict(ctx: PlanContext): RollbackVerdict {
  if (ctx.status.stage === 'API') return orphanVerdict(ctx);
  const plan = ctx.status.plan;
  const from = plan?.fromStorage ?? [];
  const target = plan?.targetStorage ?? [];
  // TwoPhase, phase one: a server on the target without emulation wrote at the target's own storage versions.
  const api = plan?.targetApiStorage ?? [];
  const unemulated = unemulatedTargetServers(ctx);
  const needTarget = target.length > 0 || mayHaveRunTarget(ctx);
  const missing = [
    ...(from.length === 0 ? [`the storage version hashes of ${plan?.fromVersion ?? 'the from-version'} were never recorded`] : []),
    ...(target.length === 0 && needTarget ? [`the storage version hashes of ${ctx.spec.targetVersion} have not been read from a server running it yet`] : []),
    ...(api.length === 0 && unemulated.length > 0 ? [`the storage version hashes of ${ctx.spec.targetVersion} without emulation (${unemulated.join(', ')} runs it) have not been read yet`] : []),
  ];
  if (missing.length > 0) return { verdict: 'unknown', message: `rollback safety unknown: ${missing.join('; ')}` };
  const written = [...(target.length ? [asServer(plan?.targetStorageServer ?? 'target', target)] : []), ...(api.length ? [asServer(plan?.targetApiStorageServer ?? 'target-api', api)] : [])];
  // Nothing may have run the target (no Upgrade call the driver did not refuse, no server seen on it): nothing was
  // written at its storage versions, so the from-version reads all there is. Waiting for hashes no server will ever
  // show (an abort while only gate calls were made) would hold the rollback forever.
  if (written.length === 0) return { verdict: 'safe', message: `no server has run ${ctx.spec.targetVersion} (no Upgrade call made, none observed on it): nothing was written at its storage versions` };
  const r = rollbackSafety([asServer(plan?.fromStorageServer ?? 'from', from)], written);
  if (r.safe) return { verdict: 'safe', message: r.reason };
  return {
    verdict: 'unsafe',
    blocking: r.blocking.map((b) => b.resource),
    message: `${r.reason}${r.blocking.length ? `: ${r.blocking.map((b) => `${b.resource} (${b.reason})`).join('; ')}` : ''}`,
  };
}

/**
 * Phase two of TwoPhase: going back re-applies the emulation on the same binary, which reads everything it
 * stored; what is lost is the resources only the target version serves. Their objects stay in etcd unserved
 * and unenforced: with any, the verdict is `orphans`; not read yet, unknown.
 */
function orphanVerdict(ctx: PlanContext): RollbackVerdict {
  const o = ctx.obs.orphans;
  if (o === undefined) return { verdict: 'unknown', message: `rollback safety unknown: the objects of resources only ${ctx.spec.targetVersion} serves have not been listed yet` };
  const with_ = o.filter((x) => x.count > 0);
  if (with_.length === 0) return { verdict: 'safe', message: `re-applying the emulation orphans no object: no resource only ${ctx.spec.targetVersion} serves has objects` };
  const what = with_.map((x) => `${x.count} ${x.resource} (${x.names.slice(0, 5).join(', ')}${x.count > 5 ? ', …' : ''})`).join('; ');
  return { verdict: 'orphans', orphans: with_, message: `re-applying the emulation would orphan objects only ${ctx.spec.targetVersion} serves — they stay in etcd, answer 404 and are no longer enforced: ${what}` };
}

/** A verdict as the RollbackSafe condition (and status.rollbackWindow) says it. */
export function verdictCondition(v: RollbackVerdict): { status: 'True' | 'False' | 'Unknown'; reason: string; message: string } {
  if (v.verdict === 'safe') return { status: 'True', reason: 'StorageVersionsReadable', message: v.message };
  if (v.verdict === 'unsafe') return { status: 'False', reason: 'StorageVersionsMoved', message: v.message };
  if (v.verdict === 'orphans') return { status: 'False', reason: 'WouldOrphanObjects', message: v.message };
  return { status: 'Unknown', reason: 'StorageVersionsUnknown', message: v.message };
}

/** Reflects the verdict in the RollbackSafe condition. */
export function reportRollbackSafety(ctx: PlanContext): RollbackVerdict {
  const v = rollbackVerdict(ctx);
  ctx.condition({ type: 'RollbackSafe', ...verdictCondition(v) });
  return v;
}
