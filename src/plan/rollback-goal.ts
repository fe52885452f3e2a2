import type { PlanContext } from './context.ts';
import { callInFlight, emulationOf, serverAt } from './calls.ts';
import { minorOf, sameRelease } from './version.ts';
import { isUp } from './peers.ts';

/**
 * Where a rollback takes the fleet. Before the API moved (OnePhase, or phase one of TwoPhase): back to the
 * from-version's binary. In phase two of TwoPhase: back to the from-version's API by re-applying the
 * emulation on the new binary — the safe point phase one established.
 */
export interface RollbackGoal {
  target: string;
  emulatedVersion?: string;
  /** What the fleet is back on, for messages. */
  describe: string;
  /** The servers to put back, newest batch first. */
  touched: string[];
}

/**
 * The servers a rollback must put back: every member that had an Upgrade call of the stage being undone
 * recorded (it may have landed, or land late: a Rollback call supersedes it at the driver) and every member
 * observed off the goal. Newest batch first, so the fleet unwinds in the reverse order it moved.
 */
export function rollbackGoal(ctx: PlanContext): RollbackGoal {
  const from = ctx.status.fromVersion ?? '';
  const members = ctx.status.plan?.members ?? (ctx.status.peers ?? []).map((r) => r.hostname);
  const apiStage = ctx.status.stage === 'API';
  const fromMinor = minorOf(from);
  const goal: Omit<RollbackGoal, 'touched'> = apiStage
    ? { target: ctx.spec.targetVersion, ...(fromMinor ? { emulatedVersion: fromMinor } : {}), describe: `${ctx.spec.targetVersion} emulating ${fromMinor} (the ${fromMinor} API)` }
    : { target: from, describe: from };
  const apiBatches = new Set((ctx.status.plan?.batches ?? []).filter((b) => b.stage === 'API').map((b) => b.index));
  const batchOf = new Map<string, number>();
  for (const c of ctx.status.driverCalls ?? []) {
    if (c.result === 'Rejected') continue;
    // A call the driver accepted and then reported failed may still have moved its server (a manifest swapped,
    // then restored): it counts until that server is seen up on the goal, as a Rejected one never does.
    if (c.result === 'Failed' && serverAt(ctx, c.server, goal.target, undefined, goal.emulatedVersion)) continue;
    // A server this rollback already called stays touched until it is back, even when it cannot be seen.
    if (c.action === 'Rollback') {
      if (!batchOf.has(c.server)) batchOf.set(c.server, 0);
      continue;
    }
    if (c.action !== 'Upgrade') continue;
    if (apiStage && !apiBatches.has(c.batch ?? 0)) continue;
    batchOf.set(c.server, Math.max(batchOf.get(c.server) ?? 0, c.batch ?? 0));
  }
  for (const h of members) {
    const p = ctx.observed(h);
    if (batchOf.has(h)) continue;
    // A member down (gone, or a stale Lease) after a call of this upgrade that did not land — a gate call that timed
    // out with its server stopped — is put back too: nothing else would bring it up, and the rollback would wait forever.
    if (!isUp(p) && (ctx.status.driverCalls ?? []).some((c) => c.server === h && c.result !== 'Rejected' && c.result !== 'Done')) {
      batchOf.set(h, Number.MAX_SAFE_INTEGER);
      continue;
    }
    if (p?.version === undefined) continue;
    const off = !sameRelease(p.version, goal.target) || emulationOf(p) !== (goal.emulatedVersion ?? minorOf(goal.target));
    if (off) batchOf.set(h, Number.MAX_SAFE_INTEGER);
  }
  const touched = members.filter((h) => batchOf.has(h)).sort((a, b) => batchOf.get(b)! - batchOf.get(a)! || b.localeCompare(a));
  return { ...goal, touched };
}

export function touchedServers(ctx: PlanContext): string[] {
  return rollbackGoal(ctx).touched;
}

/**
 * Whether a rollback would move `hostname`: it has a call in flight (which may still land), or it is not seen up on
 * the rollback's goal. One already back there with nothing in flight (its Upgrade failed and it restarted on the
 * from-version) is only restarted where it stands: whatever its failed replacement may have written, it reads already.
 */
export function rollbackMoves(ctx: PlanContext, hostname: string, goal: RollbackGoal = rollbackGoal(ctx)): boolean {
  return callInFlight(ctx, hostname) !== undefined || !serverAt(ctx, hostname, goal.target, undefined, goal.emulatedVersion);
}

/** The touched servers a rollback would move (rollbackMoves): only those need the storage verdict. */
export function serversToMove(ctx: PlanContext): string[] {
  const goal = rollbackGoal(ctx);
  return goal.touched.filter((h) => rollbackMoves(ctx, h, goal));
}
