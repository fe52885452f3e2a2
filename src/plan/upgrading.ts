import type { BatchRecord } from '../api/types.generated.ts';
import type { PlanContext } from './context.ts';
import { driveStep, callInFlight, inFlight } from './calls.ts';
import { onBreach } from './breach.ts';
import { applyAnalysis, describeBreaches } from './analysis.ts';
import { gatePass } from './gate-pass.ts';
import { applyBatchSizeEdit, batchOf, startedBatches } from './frozen-plan.ts';
import { finishSucceeded } from './preflight.ts';
import { isUp } from './peers.ts';
import { proxyGateOnByDefault, sameRelease } from './version.ts';

function startBatch(ctx: PlanContext, k: number): void {
  const servers = batchOf(ctx, k);
  const b = ctx.status.batch ?? {};
  ctx.status.batch = { ...b, current: k, total: ctx.status.plan?.batches?.length ?? b.total ?? k, progress: `${k}/${ctx.status.plan?.batches?.length ?? '?'}`, servers, startedAt: ctx.now.toISOString() };
  delete ctx.status.batch.soakUntil;
  delete ctx.status.batch.discoveryPendingSince;
  delete ctx.status.batch.checkAfter;
  delete ctx.status.batch.soakHeldSince;
  for (const h of servers) {
    const row = ctx.peerRow(h);
    if (row) row.batch = k;
  }
  ctx.event('Normal', 'BatchStarted', `batch ${k}/${ctx.status.batch.total}: ${servers.join(', ') || '(no servers left)'} -> ${ctx.spec.targetVersion}`);
}

/** Records a finished batch once: its history entry is keyed by index. */
function finishBatch(ctx: PlanContext, k: number): void {
  const b = ctx.status.batch!;
  if ((b.history ?? []).some((r) => r.index === k)) return;
  const record: BatchRecord = { index: k, servers: b.servers ?? [], startedAt: b.startedAt ?? ctx.now.toISOString(), completedAt: ctx.now.toISOString(), result: 'Succeeded' };
  b.history = [...(b.history ?? []), record].slice(-256);
  ctx.event('Normal', 'BatchSucceeded', `batch ${k}/${b.total} upgraded, converged and soaked`);
}

/** The gate an Upgrade call asks for: on across the skew, unless the gate is Unmanaged (then untouched). */
function upgradeGate(ctx: PlanContext): boolean | undefined {
  return ctx.spec.proxy.gate === 'Unmanaged' ? undefined : true;
}

/** Every server of the batches started so far is up at the target. */
function startedBatchesBack(ctx: PlanContext): string[] {
  const target = ctx.spec.targetVersion;
  return startedBatches(ctx).flatMap((b) => b.servers).filter((h) => {
    const p = ctx.observed(h);
    return !(isUp(p) && sameRelease(p.version, target));
  });
}

/** Replace a batch -> wait until each call is done -> discovery converges -> soak on a healthy check -> next. */
export function runUpgrading(ctx: PlanContext): void {
  const target = ctx.spec.targetVersion;
  applyBatchSizeEdit(ctx);
  if (!ctx.status.batch?.current) startBatch(ctx, 1);
  const k = ctx.status.batch!.current!;
  const servers = batchOf(ctx, k);

  const checkBefore = ctx.status.lastAnalysis?.time;
  if (applyAnalysis(ctx)) return;
  const newCheck = ctx.status.lastAnalysis !== undefined && ctx.status.lastAnalysis.time !== checkBefore;

  let waiting = false;
  for (const h of servers) {
    const r = driveStep(ctx, h, k, 'Upgrade', target, upgradeGate(ctx));
    if (r === 'waiting') {
      waiting = true;
      ctx.setPeerState(h, 'Replacing', `upgrade to ${target} ${callInFlight(ctx, h)?.result === 'Accepted' ? 'in progress' : 'requested'}`);
      continue;
    }
    if (r !== 'done') {
      ctx.setPeerState(h, 'Failed', r.message);
      onBreach(ctx, r.failed, r.message);
      return;
    }
    ctx.setPeerState(h, 'Upgraded');
  }
  if (waiting) {
    ctx.progressMessage = `batch ${k}: replacing ${servers.filter((h) => callInFlight(ctx, h)).join(', ')}`;
    ctx.requeue(2_000);
    return;
  }
  const notBack = startedBatchesBack(ctx);
  if (notBack.length > 0) {
    // Health after a done call belongs to the analysis (a down member makes each check breach).
    ctx.progressMessage = `batch ${k}: waiting for ${notBack.join(', ')} to be up on ${target}`;
    ctx.requeue(2_000);
    return;
  }
  if (!discoveryConverged(ctx)) return;

  const bs = ctx.status.batch!;
  if (!bs.soakUntil) {
    bs.soakUntil = new Date(ctx.now.getTime() + ctx.spec.strategy.soakMs).toISOString();
    if (ctx.spec.strategy.soakMs > 0) ctx.event('Normal', 'Soaking', `batch ${k} is back on ${target}; soaking until ${bs.soakUntil}`);
  }
  const left = Date.parse(bs.soakUntil) - ctx.now.getTime();
  if (left > 0) {
    ctx.progressMessage = `batch ${k}: soaking until ${bs.soakUntil}`;
    ctx.requeue(Math.min(left, ctx.spec.analysis.intervalMs));
    return;
  }
  if (soakHeld(ctx, k, newCheck)) return;
  finishBatch(ctx, k);
  if (k < (ctx.status.plan?.batches?.length ?? k)) {
    startBatch(ctx, k + 1);
    // Drive the new batch in this same step; the recursion is bounded by the number of batches.
    runUpgrading(ctx);
    return;
  }
  finishUpgrade(ctx);
}

/**
 * A batch never ends on a breaching signal. When the soak runs out while the latest checks breach, or a
 * resume asked for a check newer than itself that has not come yet, it goes on until a check that does not
 * breach, or the streak reaches failureLimit and onBreach applies.
 */
function soakHeld(ctx: PlanContext, k: number, newCheck: boolean): boolean {
  const last = ctx.status.lastAnalysis;
  const streak = last?.consecutiveBreaches ?? 0;
  const after = ctx.status.batch?.checkAfter;
  const needsFreshCheck = after !== undefined && (!last?.time || Date.parse(last.time) <= Date.parse(after) || last.verdict === 'Breach');
  const b = ctx.status.batch!;
  if (streak === 0 && !needsFreshCheck) {
    delete b.soakHeldSince;
    return false;
  }
  const prefix = `soak of batch ${k} extended`;
  const what = describeBreaches(last?.breaches ?? []);
  const message = streak > 0
    ? `${prefix}: ${streak} of ${ctx.spec.analysis.failureLimit} breaching checks${what ? ` (${what})` : ''}; waiting for a healthy check or failureLimit`
    : `${prefix}: waiting for a check after the resume at ${after} that does not breach`;
  const wasHeld = b.soakHeldSince !== undefined;
  b.soakHeldSince ??= ctx.now.toISOString();
  if (!wasHeld || (newCheck && last?.verdict === 'Breach')) ctx.event('Warning', 'SoakExtended', message);
  ctx.progressMessage = message;
  ctx.requeue(ctx.spec.analysis.intervalMs);
  return true;
}

function discoveryConverged(ctx: PlanContext): boolean {
  const d = ctx.obs.discovery;
  const b = ctx.status.batch!;
  if (d?.converged) {
    ctx.condition({ type: 'DiscoveryConverged', status: 'True', reason: 'Converged', message: d.message });
    delete b.discoveryPendingSince;
    return true;
  }
  const message = d?.message ?? 'discovery not observed yet';
  ctx.condition({ type: 'DiscoveryConverged', status: 'False', reason: 'Converging', message });
  b.discoveryPendingSince ??= ctx.now.toISOString();
  const pending = ctx.now.getTime() - Date.parse(b.discoveryPendingSince);
  ctx.progressMessage = `batch ${b.current}: waiting for discovery to converge (${Math.round(pending / 1000)}s): ${message}`;
  if (pending > ctx.spec.analysis.thresholds.discoveryConvergenceMs) {
    onBreach(ctx, 'DiscoveryNotConverged', `discovery has not converged for ${Math.round(pending / 1000)}s: ${message}`);
    return false;
  }
  ctx.requeue(2_000);
  return false;
}

function finishUpgrade(ctx: PlanContext): void {
  const target = ctx.spec.targetVersion;
  // Where the target still has the gate alpha, the operator may turn it back off once no skew remains —
  // only where the operator turned it on.
  if (ctx.spec.proxy.revertAfter && !proxyGateOnByDefault(target) && ctx.spec.proxy.gate !== 'Unmanaged') {
    if (!gatePass(ctx, 'off', target)) return;
  }
  const members = ctx.status.plan?.members ?? [];
  // Nothing may still be in flight anywhere (a call of a server that left the fleet included): the upgrade
  // never ends with a call Requested or Accepted.
  const flying = (ctx.status.driverCalls ?? []).filter(inFlight).map((c) => c.server);
  const notThere = [...new Set([...members.filter((h) => !(isUp(ctx.observed(h)) && sameRelease(ctx.observed(h)!.version!, target))), ...flying])];
  if (notThere.length > 0) {
    ctx.progressMessage = `finishing: waiting for ${notThere.join(', ')}`;
    ctx.requeue(2_000);
    return;
  }
  if (members.length === 0) {
    // Every member left and a resume accepted it: there is no fleet to upgrade, and never a false Succeeded.
    const message = 'no kube-apiserver is left in the plan: every member left the fleet';
    ctx.setPhase('Failed');
    ctx.status.completedAt = ctx.now.toISOString();
    ctx.condition({ type: 'Complete', status: 'False', reason: 'NoServers', message });
    ctx.condition({ type: 'Progressing', status: 'False', reason: 'NoServers', message });
    ctx.event('Warning', 'Failed', message);
    return;
  }
  const total = ctx.status.plan?.batches?.length ?? ctx.status.batch?.total ?? 0;
  ctx.status.batch = { ...ctx.status.batch!, total, progress: `${total}/${total}` };
  finishSucceeded(ctx, `every server runs ${target}`);
  ctx.event('Normal', 'Succeeded', `every server runs ${target}`);
}
