import type { BatchRecord } from '../api/types.generated.ts';
import type { PlanContext } from './context.ts';
import { CALL_POLL_MS, driveStep, callInFlight, callPollMs, fastLookMs, inFlight, serverAt, withinComingUpWindow } from './calls.ts';
import { onBreach, pause } from './breach.ts';
import { proofBeforeCall } from './flag-proof-gate.ts';
import { applyAnalysis, describeBreaches } from './analysis.ts';
import { gatePass, replacementGate } from './gate-pass.ts';
import { applyBatchSizeEdit, batchDef, batchOf, startedBatches } from './frozen-plan.ts';
import { emulationCheck } from './two-phase.ts';
import { finishSucceeded } from './preflight.ts';
import { proxyGateOnByDefault } from './version-facts.ts';
import { startHeld } from './start-gates.ts';
import { phaseTwoHeld } from './phase-two-hold.ts';

function startBatch(ctx: PlanContext, k: number): void {
  const servers = batchOf(ctx, k);
  const def = batchDef(ctx, k);
  if (def?.stage) ctx.status.stage = def.stage;
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
  const goal = `${ctx.spec.targetVersion}${def?.emulatedVersion ? ` emulating ${def.emulatedVersion}` : ''}`;
  ctx.event('Normal', 'BatchStarted', `batch ${k}/${ctx.status.batch.total}${def?.stage ? ` (${def.stage})` : ''}: ${servers.join(', ') || '(no servers left)'} -> ${goal}`);
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
/** Servers of the batches started so far that are not up at their goal (the latest started batch's, per server). */
function startedBatchesBack(ctx: PlanContext): string[] {
  const target = ctx.spec.targetVersion;
  const goal = new Map<string, string | undefined>();
  for (const b of startedBatches(ctx)) for (const h of b.servers) goal.set(h, b.emulatedVersion);
  // A server in the gate-revert step after the last batch (in flight, or to be retried after a resume) is
  // that step's business: finishUpgrade drives it.
  const reverting = (h: string): boolean => (ctx.status.driverCalls ?? []).filter((c) => c.server === h).at(-1)?.action === 'RevertProxy';
  return [...goal].filter(([h, emulated]) => !reverting(h) && !serverAt(ctx, h, target, undefined, emulated)).map(([h]) => h);
}

/** Replace a batch -> wait until each call is done -> discovery converges -> soak on a healthy check -> next. */
export function runUpgrading(ctx: PlanContext): void {
  const target = ctx.spec.targetVersion;
  applyBatchSizeEdit(ctx);
  // The analysis first: a breach is acted on (a pause, a rollback) whether or not the next batch may start.
  const checkBefore = ctx.status.lastAnalysis?.time;
  if (applyAnalysis(ctx)) return;
  const newCheck = ctx.status.lastAnalysis !== undefined && ctx.status.lastAnalysis.time !== checkBefore;
  if (!ctx.status.batch?.current) {
    // Before the first server (after a gate pass, or without one): the window and the gates must allow it.
    if (startHeld(ctx, 'batch 1')) return;
    startBatch(ctx, 1);
  }
  const k = ctx.status.batch!.current!;
  const servers = batchOf(ctx, k);
  const emulatedVersion = batchDef(ctx, k)?.emulatedVersion;

  if (firstCallHeld(ctx, k)) return;
  let waiting = false;
  const gate = replacementGate(ctx);
  for (const h of servers) {
    // The static Pod driver: no call before the node's command line, as it is now, has an Accepted proof. A call only
    // recorded (Requested: the driver may never have got it, say the operator died before delivering it) is sent
    // again under the same check: its node's manifest may have changed in between.
    if (callInFlight(ctx, h)?.result !== 'Accepted' && !serverAt(ctx, h, target, undefined, emulatedVersion)) {
      const proof = proofBeforeCall(ctx, h, emulatedVersion, gate);
      if (proof.kind === 'waiting') {
        waiting = true;
        ctx.setPeerState(h, 'Pending', proof.message);
        continue;
      }
      if (proof.kind === 'refused') {
        ctx.setPeerState(h, 'Failed', proof.message);
        pause(ctx, 'FlagProofRefused', proof.message, 'Upgrading', [h]);
        return;
      }
    }
    const r = driveStep(ctx, h, k, 'Upgrade', target, gate, emulatedVersion === undefined ? {} : { emulatedVersion });
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
    const proving = servers.filter((h) => !callInFlight(ctx, h) && ctx.peerRow(h)?.state === 'Pending');
    ctx.progressMessage = `batch ${k}: replacing ${servers.filter((h) => callInFlight(ctx, h)).join(', ')}${proving.length > 0 ? `; proving the command line of ${proving.join(', ')}` : ''}`;
    ctx.requeue(callPollMs(ctx));
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
  // Phase one of a TwoPhase upgrade relies on the emulation: the new servers must serve and store what the
  // from-version does. If they do not, stop before anything else moves.
  if (emulatedVersion !== undefined) {
    const v = emulationCheck(ctx, emulatedVersion);
    if (v.kind === 'waiting') return;
    if (v.kind === 'broken') {
      onBreach(ctx, 'EmulationIneffective', v.message);
      return;
    }
  }

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
    if (!betweenStages(ctx, k)) return;
    // Batch k is over; the next starts only inside the window and with every gate holding.
    if (startHeld(ctx, `batch ${k + 1}`)) return;
    startBatch(ctx, k + 1);
    // Drive the new batch in this same step; the recursion is bounded by the number of batches.
    runUpgrading(ctx);
    return;
  }
  finishUpgrade(ctx);
}

/**
 * Between phase one and phase two of a TwoPhase upgrade: every server runs the new binary emulating the
 * from-version; the fleet is watched for phaseSoakDuration before the emulation is lifted. Returns true when
 * the next batch may start.
 */
function betweenStages(ctx: PlanContext, k: number): boolean {
  const cur = batchDef(ctx, k);
  const next = batchDef(ctx, k + 1);
  if (!next || next.stage === cur?.stage) return true;
  const b = ctx.status.batch!;
  if (!b.phaseSoakUntil) {
    b.phaseSoakUntil = new Date(ctx.now.getTime() + ctx.spec.strategy.phaseSoakMs).toISOString();
    ctx.event('Normal', 'PhaseOneDone', `every server runs ${ctx.spec.targetVersion} emulating ${cur?.emulatedVersion}; phase two (lifting the emulation) starts after ${b.phaseSoakUntil}`);
  }
  const left = Date.parse(b.phaseSoakUntil) - ctx.now.getTime();
  if (left > 0) {
    ctx.progressMessage = `phase one done: every server on ${ctx.spec.targetVersion} emulating ${cur?.emulatedVersion}; phase two starts at ${b.phaseSoakUntil}`;
    ctx.requeue(Math.min(left, ctx.spec.analysis.intervalMs));
    return false;
  }
  // spec.strategy.phaseTwo.start Approval (frozen in the plan): held here until an approval or the deadline.
  if (phaseTwoHeld(ctx, cur?.emulatedVersion)) return false;
  delete b.phaseSoakUntil;
  ctx.event('Normal', 'PhaseTwoStarted', `lifting the emulation: servers move to the ${ctx.spec.targetVersion} API batch by batch`);
  return true;
}

/** When batch `k`'s servers were last seen back: its calls' Done times, or its start when none was needed. */
function batchBackAt(ctx: PlanContext, k: number): number {
  const done = (ctx.status.driverCalls ?? []).filter((c) => c.batch === k && c.result === 'Done' && c.completedAt).map((c) => Date.parse(c.completedAt!));
  return Math.max(Date.parse(ctx.status.batch?.startedAt ?? ctx.now.toISOString()), ...done);
}

/**
 * A batch k > 1 whose first call has not gone out yet, resumed (or lifted) since it started — its servers' proofs
 * held it, say, and it paused — starts as a batch does after a resume: on a Healthy check newer than the resume.
 */
function firstCallHeld(ctx: PlanContext, k: number): boolean {
  const after = ctx.status.batch?.checkAfter;
  if (k <= 1 || after === undefined || (ctx.status.driverCalls ?? []).some((c) => c.batch === k)) return false;
  const last = ctx.status.lastAnalysis;
  const at = last?.time ? Date.parse(last.time) : undefined;
  if (last !== undefined && last.synthetic !== true && at !== undefined && at > Date.parse(after) && last.verdict === 'Healthy' && (last.consecutiveBreaches ?? 0) === 0) return false;
  ctx.progressMessage = `batch ${k}: waiting for a healthy check after the resume at ${after} before its first call`;
  ctx.requeue(ctx.spec.analysis.intervalMs);
  return true;
}

/**
 * A batch never ends on a breaching signal, nor on unknown health: it ends only on a real check (signals, not
 * a synthetic one) taken after its servers came back, with no breach streak — and after a resume, on a
 * Healthy check newer than the resume. When the soak runs out while the latest checks breach, it goes on
 * until a check that does not breach, or the streak reaches failureLimit and onBreach applies.
 */
function soakHeld(ctx: PlanContext, k: number, newCheck: boolean): boolean {
  const last = ctx.status.lastAnalysis;
  const streak = last?.consecutiveBreaches ?? 0;
  const after = ctx.status.batch?.checkAfter;
  const at = last?.time ? Date.parse(last.time) : undefined;
  const fresh = last !== undefined && last.synthetic !== true && at !== undefined && at > batchBackAt(ctx, k) && (after === undefined || at > Date.parse(after));
  const verdictOk = last?.verdict !== 'Breach' && (after === undefined || last?.verdict === 'Healthy');
  const b = ctx.status.batch!;
  if (streak === 0 && fresh && verdictOk) {
    delete b.soakHeldSince;
    return false;
  }
  const prefix = `soak of batch ${k} extended`;
  const what = describeBreaches(last?.breaches ?? []);
  const message = streak > 0
    ? `${prefix}: ${streak} of ${ctx.spec.analysis.failureLimit} breaching checks${what ? ` (${what})` : ''}; waiting for a healthy check or failureLimit`
    : after !== undefined
      ? `${prefix}: waiting for a healthy check after the resume at ${after}`
      : `batch ${k}: waiting for a check of the signals taken after its servers came back`;
  const wasHeld = b.soakHeldSince !== undefined;
  // Waiting for the next routine check is not news; a hold for breaches or after a resume is.
  const notable = streak > 0 || after !== undefined;
  if (notable) b.soakHeldSince ??= ctx.now.toISOString();
  if (notable && (!wasHeld || (newCheck && last?.verdict === 'Breach'))) ctx.event('Warning', 'SoakExtended', message);
  ctx.progressMessage = message;
  ctx.requeue(Math.min(2_000, ctx.spec.analysis.intervalMs));
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
  // A batch just back usually converges within a second (the new servers' peer-aggregated views fill in): the soak
  // starts on the look that sees it, so look often at first.
  ctx.requeue(withinComingUpWindow(ctx, b.discoveryPendingSince) ? fastLookMs(ctx) : CALL_POLL_MS);
  return false;
}

function finishUpgrade(ctx: PlanContext): void {
  const target = ctx.spec.targetVersion;
  // Where the target still has the gate alpha, the operator may turn it back off once no skew remains —
  // only where the operator turned it on. A default the operator does not know is no reason to turn anything
  // off (preflight refuses revertAfter for such a target: VersionFactsUnknown).
  if (ctx.spec.proxy.revertAfter && proxyGateOnByDefault(target) === false && ctx.spec.proxy.gate !== 'Unmanaged') {
    if (!gatePass(ctx, 'off', target)) return;
  }
  const members = ctx.status.plan?.members ?? [];
  // Nothing may still be in flight anywhere (a call of a server that left the fleet included): the upgrade
  // never ends with a call Requested or Accepted.
  const flying = (ctx.status.driverCalls ?? []).filter(inFlight).map((c) => c.server);
  const notThere = [...new Set([...members.filter((h) => !serverAt(ctx, h, target)), ...flying])];
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
