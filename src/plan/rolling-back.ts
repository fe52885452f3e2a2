import type { PlanContext } from './context.ts';
import { PROXY_GATE } from './context.ts';
import { driveServer } from './driver-wait.ts';

/**
 * Puts the servers that left the old version back on it, one at a time, newest batch first, with the
 * proxy gate on (the fleet is mixed until the last one is back). Ends in RolledBack.
 */
export function runRollingBack(ctx: PlanContext): void {
  const from = ctx.status.fromVersion;
  if (!from) {
    ctx.setPhase('Failed');
    ctx.condition({ type: 'Progressing', status: 'False', reason: 'NoFromVersion', message: 'cannot roll back: the version before the upgrade was never recorded' });
    return;
  }
  const rows = [...(ctx.status.peers ?? [])].sort((a, b) => (b.batch ?? 0) - (a.batch ?? 0) || b.hostname.localeCompare(a.hostname));
  for (const row of rows) {
    const p = ctx.observed(row.hostname);
    const touched = row.batch !== undefined || (p?.version !== undefined && p.version !== from);
    if (!touched) continue;
    const r = driveServer(ctx, row.hostname, -1, 'Rollback', { version: from }, { [PROXY_GATE]: true }, ctx.spec.strategy.batchTimeoutMs);
    if (r === 'failed') return;
    if (r === 'waiting') {
      ctx.setPeerState(row.hostname, 'RollingBack', `rollback to ${from} requested`);
      return;
    }
    ctx.setPeerState(row.hostname, 'RolledBack');
  }
  ctx.setPhase('RolledBack');
  ctx.status.completedAt = ctx.now.toISOString();
  ctx.condition({ type: 'Progressing', status: 'False', reason: 'RolledBack', message: `every server is back on ${from}` });
  ctx.condition({ type: 'Complete', status: 'False', reason: 'RolledBack', message: `rolled back to ${from}` });
  ctx.event('Warning', 'RolledBack', `every server is back on ${from}`);
}
