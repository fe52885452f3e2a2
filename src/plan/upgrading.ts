import type { PlanContext } from './context.ts';
import { PROXY_GATE } from './context.ts';
import { driveServer, atGoal } from './driver-wait.ts';
import { onBreach } from './breach.ts';
import { applyAnalysis, describeBreaches } from './analysis.ts';
import { gatePass } from './gate-pass.ts';
import { resolveBatchSize } from '../api/batch-size.ts';
import { getCondition } from '../api/conditions.ts';
import { parseVersion, proxyGateOnByDefault } from './version.ts';

/** The hostnames of batch `k` (1-based), in the table's (hostname) order. */
export function batchServers(ctx: PlanContext, k: number): string[] {
  const rows = ctx.status.peers ?? [];
  const size = resolveBatchSize(ctx.spec.strategy.batchSize, rows.length);
  return rows.slice((k - 1) * size, k * size).map((r) => r.hostname);
}

function startBatch(ctx: PlanContext, k: number): void {
  const servers = batchServers(ctx, k);
  const b = ctx.status.batch ?? {};
  ctx.status.batch = { ...b, current: k, progress: `${k}/${b.total ?? '?'}`, servers, startedAt: ctx.now.toISOString() };
  delete ctx.status.batch.soakUntil;
  for (const h of servers) {
    const row = ctx.peerRow(h);
    if (row) row.batch = k;
  }
  ctx.event('Normal', 'BatchStarted', `batch ${k}/${b.total}: ${servers.join(', ')} -> ${ctx.spec.targetVersion}`);
}

function finishBatch(ctx: PlanContext, k: number): void {
  const b = ctx.status.batch!;
  b.history = [...(b.history ?? []), { index: k, servers: b.servers ?? [], startedAt: b.startedAt ?? ctx.now.toISOString(), completedAt: ctx.now.toISOString(), result: 'Succeeded' }];
  ctx.event('Normal', 'BatchSucceeded', `batch ${k}/${b.total} upgraded, converged and soaked`);
}

function gates(ctx: PlanContext): Record<string, boolean> {
  // Keep the proxy on across the skew. Asking for it explicitly also covers targets where it is beta but
  // a manifest turned it off.
  return ctx.spec.proxy.gate === 'Unmanaged' ? {} : { [PROXY_GATE]: true };
}

/** Replace a batch -> wait until it is back at the target -> wait for discovery to converge -> soak -> next. */
export function runUpgrading(ctx: PlanContext): void {
  const target = ctx.spec.targetVersion;
  const b = ctx.status.batch ?? (ctx.status.batch = { current: 0, total: 1, history: [] });
  if (!b.current) startBatch(ctx, 1);
  const k = ctx.status.batch!.current!;
  const servers = ctx.status.batch!.servers ?? batchServers(ctx, k);

  const checkBefore = ctx.status.lastAnalysis?.time;
  if (applyAnalysis(ctx)) return;
  const newCheck = ctx.status.lastAnalysis !== undefined && ctx.status.lastAnalysis.time !== checkBefore;

  let waiting = false;
  for (const h of servers) {
    const r = driveServer(ctx, h, k, 'Upgrade', { version: target }, gates(ctx), ctx.spec.strategy.batchTimeoutMs);
    if (r === 'failed') return;
    if (r === 'waiting') {
      waiting = true;
      ctx.setPeerState(h, 'Replacing', `upgrade to ${target} requested`);
    } else {
      ctx.setPeerState(h, 'Upgraded');
    }
  }
  if (waiting) return;
  if (!discoveryConverged(ctx)) return;

  const bs = ctx.status.batch!;
  if (!bs.soakUntil) {
    bs.soakUntil = new Date(ctx.now.getTime() + ctx.spec.strategy.soakMs).toISOString();
    if (ctx.spec.strategy.soakMs > 0) ctx.event('Normal', 'Soaking', `batch ${k} is back on ${target}; soaking until ${bs.soakUntil}`);
  }
  const left = Date.parse(bs.soakUntil) - ctx.now.getTime();
  if (left > 0) {
    ctx.requeue(Math.min(left, ctx.spec.analysis.intervalMs));
    return;
  }
  if (soakHeldByBreach(ctx, k, newCheck)) return;
  finishBatch(ctx, k);
  if (k < (bs.total ?? k)) {
    startBatch(ctx, k + 1);
    // Drive the new batch in this same step; the recursion is bounded by the number of batches.
    runUpgrading(ctx);
    return;
  }
  finishUpgrade(ctx);
}

/**
 * A batch never ends on a breaching signal. When the soak runs out while the latest checks breach (a
 * streak below failureLimit, or inconclusive checks since), it goes on until a healthy check ends the
 * streak or the streak reaches failureLimit and onBreach applies. Otherwise a soak shorter than
 * failureLimit checks would widen the upgrade to the next batch while this one misbehaves.
 */
function soakHeldByBreach(ctx: PlanContext, k: number, newCheck: boolean): boolean {
  const last = ctx.status.lastAnalysis;
  const streak = last?.consecutiveBreaches ?? 0;
  if (!last || streak === 0) return false;
  const what = describeBreaches(last.breaches ?? []);
  const prefix = `soak of batch ${k} extended`;
  const message = `${prefix}: ${streak} of ${ctx.spec.analysis.failureLimit} breaching checks${what ? ` (${what})` : ''}; waiting for a healthy check or failureLimit`;
  // An event when the hold starts and at each further breaching check (at most failureLimit of them).
  const wasHeld = getCondition(ctx.status.conditions, 'Progressing')?.message.startsWith(prefix) === true;
  if (!wasHeld || (newCheck && last.verdict === 'Breach')) ctx.event('Warning', 'SoakExtended', message);
  ctx.progressMessage = message;
  ctx.requeue(ctx.spec.analysis.intervalMs);
  return true;
}

function discoveryConverged(ctx: PlanContext): boolean {
  const d = ctx.obs.discovery;
  if (d?.converged) {
    ctx.condition({ type: 'DiscoveryConverged', status: 'True', reason: 'Converged', message: d.message });
    return true;
  }
  const message = d?.message ?? 'discovery not observed yet';
  ctx.condition({ type: 'DiscoveryConverged', status: 'False', reason: 'Converging', message });
  const since = Date.parse(getCondition(ctx.status.conditions, 'DiscoveryConverged')!.lastTransitionTime);
  if (ctx.now.getTime() - since > ctx.spec.analysis.thresholds.discoveryConvergenceMs) {
    onBreach(ctx, 'DiscoveryNotConverged', `discovery has not converged for ${Math.round((ctx.now.getTime() - since) / 1000)}s: ${message}`);
    return false;
  }
  ctx.requeue(2_000);
  return false;
}

function finishUpgrade(ctx: PlanContext): void {
  const target = ctx.spec.targetVersion;
  const v = parseVersion(target);
  // Where the target still has the gate alpha, the operator may turn it back off once no skew remains.
  if (ctx.spec.proxy.revertAfter && v && !proxyGateOnByDefault(v) && ctx.spec.proxy.gate !== 'Unmanaged') {
    if (!gatePass(ctx, 'off', target)) return;
  }
  const all = (ctx.status.peers ?? []).every((r) => atGoal(ctx, r.hostname, { version: target }));
  if (!all) {
    ctx.requeue(2_000);
    return;
  }
  ctx.setPhase('Succeeded');
  ctx.status.completedAt = ctx.now.toISOString();
  ctx.status.batch = { ...ctx.status.batch!, progress: `${ctx.status.batch!.total}/${ctx.status.batch!.total}` };
  ctx.condition({ type: 'Complete', status: 'True', reason: 'Succeeded', message: `every server runs ${target}` });
  ctx.condition({ type: 'Progressing', status: 'False', reason: 'Succeeded', message: `every server runs ${target}` });
  ctx.event('Normal', 'Succeeded', `every server runs ${target}`);
}
