import type { PlanContext } from './context.ts';
import { callPollMs, driveStep } from './calls.ts';
import { onBreach } from './breach.ts';

/**
 * Turns the Mixed Version Proxy gate on (or back off) server by server, at the version each runs, before
 * (or after) any version changes: the proxy only helps if every server has it when the skew starts.
 * Turning it off touches only the servers where the operator turned it on (status.plan.gateTurnedOn).
 * Returns true once every server concerned is at the wanted gate state.
 */
export function gatePass(ctx: PlanContext, want: 'on' | 'off', version: string): boolean {
  const action = want === 'on' ? 'EnableProxy' : 'RevertProxy';
  const plan = ctx.status.plan;
  const members = plan?.members ?? [];
  const servers = want === 'on' ? members : (plan?.gateTurnedOn ?? []).filter((h) => members.includes(h));
  for (const h of servers) {
    const r = driveStep(ctx, h, 0, action, version, want === 'on');
    if (r === 'done') {
      if (ctx.peerRow(h)?.state === 'EnablingProxy') ctx.setPeerState(h, 'Pending');
      continue;
    }
    if (r === 'waiting') {
      ctx.setPeerState(h, 'EnablingProxy', `${action} requested`);
      ctx.progressMessage = `${action} on ${h}`;
      ctx.requeue(callPollMs(ctx));
      return false;
    }
    ctx.setPeerState(h, 'Failed', r.message);
    onBreach(ctx, r.failed, r.message);
    return false;
  }
  return true;
}
