import type { PlanContext } from './context.ts';
import { rollbackSafety } from './rollback-safety.ts';
import { observedStorage, startedBatches, storageList } from './frozen-plan.ts';
import { asServer } from './rollback-verdict.ts';
import { sameRelease } from './version.ts';

const preview = (xs: readonly string[]): string => `${xs.slice(0, 5).join(', ')}${xs.length > 5 ? ` and ${xs.length - 5} more` : ''}`;

/**
 * Phase one's promise, checked on the servers that run the new binary emulating the from-version: they
 * serve exactly the from-version's own resources (plan.fromResources), and every storage version they write
 * is one the from-version reads (decoded, not byte-equal: a hash may move to a version the old binary
 * serves). Data not yet observed holds the batch until batchTimeout, then counts as not holding (unknown is
 * unsafe).
 */
export type EmulationVerdict = { kind: 'holds' } | { kind: 'waiting' } | { kind: 'broken'; message: string };

export function emulationCheck(ctx: PlanContext, emulated: string): EmulationVerdict {
  const target = ctx.spec.targetVersion;
  const plan = ctx.status.plan;
  // The servers whose emulation there is to verify: the members phase one has moved so far. When none is left
  // (the batch's only server left the fleet and a resume dropped it), nothing runs emulated: there is nothing
  // to wait for — the next batch's servers are checked when they are back.
  const members = new Set(plan?.members ?? []);
  const emulating = startedBatches(ctx).filter((b) => b.emulatedVersion === emulated).flatMap((b) => b.servers).filter((h) => members.has(h));
  if (emulating.length === 0) return { kind: 'holds' };
  const from = new Set(plan?.fromResources ?? []);
  const own = (ctx.obs.discovery?.own ?? []).filter((o) => sameRelease(o.version, target) && o.emulation === emulated);
  const problems: string[] = [];
  for (const o of own) {
    const extra = o.resources.filter((r) => !from.has(r)).sort();
    const missing = [...from].filter((r) => !o.resources.includes(r)).sort();
    if (extra.length || missing.length) {
      problems.push(`${o.server} (${o.version} emulating ${emulated}) serves ${extra.length ? `${preview(extra)} that ${plan?.fromVersion} does not` : ''}${extra.length && missing.length ? ' and ' : ''}${missing.length ? `misses ${preview(missing)}` : ''}`);
    }
  }
  const stored = observedStorage(ctx, target, emulated);
  if (stored && plan?.fromStorage?.length) {
    const r = rollbackSafety([asServer(plan.fromStorageServer ?? 'from', plan.fromStorage)], [asServer(stored.server, storageList(stored))]);
    if (!r.safe) problems.push(`${stored.server} writes storage versions ${plan.fromVersion} cannot read: ${r.blocking.map((b) => b.resource).join(', ')}`);
  }
  if (problems.length > 0) return { kind: 'broken', message: `the emulation does not do what phase one relies on: ${problems.join('; ')}` };
  if (own.length > 0 && stored) return { kind: 'holds' };
  const startedAt = Date.parse(ctx.status.batch?.startedAt ?? ctx.now.toISOString());
  const missing = [...(own.length ? [] : ['their own discovery']), ...(stored ? [] : ['their storage version hashes'])].join(' and ');
  if (ctx.now.getTime() - startedAt > ctx.spec.strategy.batchTimeoutMs) {
    return { kind: 'broken', message: `could not verify the emulation within batchTimeout: ${missing} of the servers emulating ${emulated} were never read` };
  }
  ctx.progressMessage = `phase one: waiting to read ${missing} of the servers emulating ${emulated}`;
  ctx.requeue(2_000);
  return { kind: 'waiting' };
}
