import type { StorageHash } from '../api/types.generated.ts';
import type { PlanContext } from './context.ts';
import { rollbackSafety, type ServerStorageHashes } from './rollback-safety.ts';
import { observedStorage, storageList } from './frozen-plan.ts';

export type RollbackVerdict =
  | { verdict: 'safe'; message: string }
  | { verdict: 'unsafe'; blocking: string[]; message: string }
  | { verdict: 'unknown'; message: string };

function asServer(server: string, list: readonly StorageHash[]): ServerStorageHashes {
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
  if (!plan || plan.targetStorage?.length) return;
  const s = observedStorage(ctx, ctx.spec.targetVersion);
  if (!s) return;
  plan.targetStorage = storageList(s);
  plan.targetStorageServer = s.server;
}

/**
 * May the fleet go back to the from-version? Judged only from what status holds (the from-version's hashes
 * read at preflight, the target's read since), never from memory: unknown is unsafe.
 */
export function rollbackVerdict(ctx: PlanContext): RollbackVerdict {
  const plan = ctx.status.plan;
  const from = plan?.fromStorage ?? [];
  const target = plan?.targetStorage ?? [];
  const missing = [
    ...(from.length === 0 ? [`the storage version hashes of ${plan?.fromVersion ?? 'the from-version'} were never recorded`] : []),
    ...(target.length === 0 ? [`the storage version hashes of ${ctx.spec.targetVersion} have not been read from a server running it yet`] : []),
  ];
  if (missing.length > 0) return { verdict: 'unknown', message: `rollback safety unknown: ${missing.join('; ')}` };
  const r = rollbackSafety([asServer(plan?.fromStorageServer ?? 'from', from)], [asServer(plan?.targetStorageServer ?? 'target', target)]);
  if (r.safe) return { verdict: 'safe', message: r.reason };
  return {
    verdict: 'unsafe',
    blocking: r.blocking.map((b) => b.resource),
    message: `${r.reason}${r.blocking.length ? `: ${r.blocking.map((b) => `${b.resource} (${b.reason})`).join('; ')}` : ''}`,
  };
}

/** Reflects the verdict in the RollbackSafe condition. */
export function reportRollbackSafety(ctx: PlanContext): RollbackVerdict {
  const v = rollbackVerdict(ctx);
  if (v.verdict === 'safe') ctx.condition({ type: 'RollbackSafe', status: 'True', reason: 'StorageVersionsReadable', message: v.message });
  else if (v.verdict === 'unsafe') ctx.condition({ type: 'RollbackSafe', status: 'False', reason: 'StorageVersionsMoved', message: v.message });
  else ctx.condition({ type: 'RollbackSafe', status: 'Unknown', reason: 'StorageVersionsUnknown', message: v.message });
  return v;
}
