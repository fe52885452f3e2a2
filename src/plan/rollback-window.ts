import type { PlanContext } from './context.ts';
import { isTerminal } from '../api/vocabulary.ts';
import { asServer, rollbackVerdict, verdictCondition, type RollbackVerdict } from './rollback-verdict.ts';
import { rollbackGoal } from './rollback-goal.ts';
import { rollbackSafety } from './rollback-safety.ts';
import { observedStorage, storageList } from './frozen-plan.ts';
import { holdOn } from './phase-two-hold.ts';

/**
 * status.rollbackWindow, written at the end of every step of an upgrade with a plan and once more in the step that
 * ends it (then kept): where a rollback goes, whether it is safe, and — in a held phase two with a deadline — until
 * when. Read from status and the observation only, like every decision; nothing reads it back.
 */
export function reportRollbackWindow(ctx: PlanContext): void {
  const phase = ctx.phase;
  // Finished in an earlier step: what was said when it ended stays.
  if (isTerminal(phase) && ctx.initialPhase === phase) return;
  const plan = ctx.status.plan;
  const from = ctx.status.fromVersion ?? plan?.fromVersion;
  if (!plan || !from) {
    delete ctx.status.rollbackWindow;
    return;
  }
  const checkedAt = ctx.now.toISOString();
  if (isTerminal(phase)) {
    // Over: this object rolls nothing back any more. After Succeeded, what a later rollback to the from-version would
    // meet is the storage verdict of everything the target wrote; after RolledBack or Failed the last verdict stays.
    const prev = ctx.status.rollbackWindow ?? {};
    const base = { ...prev, available: false, toVersion: from, checkedAt };
    delete base.until;
    delete base.toEmulatedVersion;
    if (phase !== 'Succeeded') {
      ctx.status.rollbackWindow = base;
      return;
    }
    const c = verdictCondition(afterSuccess(ctx));
    ctx.status.rollbackWindow = { ...base, safe: c.status, reason: c.reason, message: c.message.slice(0, 4096) };
    return;
  }
  const goal = rollbackGoal(ctx);
  const c = verdictCondition(rollbackVerdict(ctx));
  const h = ctx.status.phaseTwoHold;
  const next = {
    available: phase !== 'RollingBack',
    toVersion: from,
    ...(goal.emulatedVersion === undefined ? {} : { toEmulatedVersion: goal.emulatedVersion }),
    ...(holdOn(ctx) && h?.deadline !== undefined ? { until: h.deadline } : {}),
    safe: c.status,
    reason: c.reason,
    message: c.message.slice(0, 4096),
  };
  // checkedAt moves only with what it dates: a step that finds the same window writes no new status for it.
  const { checkedAt: prevAt, ...prev } = ctx.status.rollbackWindow ?? {};
  ctx.status.rollbackWindow = { ...next, checkedAt: prevAt !== undefined && sameFields(prev, next) ? prevAt : checkedAt };
}

/** Whether two flat records hold the same values, whatever their key order (a stored status may reorder keys). */
function sameFields(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((k) => a[k] === b[k]);
}

/**
 * After Succeeded: could the from-version's binary read everything the target wrote? OnePhase: the target's hashes
 * recorded during the upgrade. TwoPhase: what phase one's emulating servers wrote and what the target writes with its
 * own API now, read in this step; not read counts as unknown (unsafe).
 */
export function afterSuccess(ctx: PlanContext): RollbackVerdict {
  const plan = ctx.status.plan;
  // OnePhase has no stage: the verdict is the storage one.
  if (plan?.phases !== 'TwoPhase') return rollbackVerdict(ctx);
  const from = plan.fromStorage ?? [];
  const own = observedStorage(ctx, ctx.spec.targetVersion);
  if (from.length === 0 || own === undefined) {
    const missing = from.length === 0 ? `the storage version hashes of ${plan.fromVersion} were never recorded` : `the storage version hashes of ${ctx.spec.targetVersion} without emulation were not read`;
    return { verdict: 'unknown', message: `rollback safety unknown: ${missing}` };
  }
  const written = [asServer(own.server, storageList(own)), ...(plan.targetStorage?.length ? [asServer(plan.targetStorageServer ?? 'target', plan.targetStorage)] : [])];
  const r = rollbackSafety([asServer(plan.fromStorageServer ?? 'from', from)], written);
  if (r.safe) return { verdict: 'safe', message: r.reason };
  return { verdict: 'unsafe', blocking: r.blocking.map((b) => b.resource), message: `${r.reason}${r.blocking.length ? `: ${r.blocking.map((b) => `${b.resource} (${b.reason})`).join('; ')}` : ''}` };
}
