import type { PlanContext } from './context.ts';
import { PROXY_GATE } from './context.ts';
import { driveServer } from './driver-wait.ts';

/**
 * Turns the Mixed Version Proxy gate on (or back off) server by server, at the version each runs, before
 * (or after) any version changes: the proxy only helps if every server has it when the skew starts.
 * Returns true once every server is at the wanted gate state.
 */
export function gatePass(ctx: PlanContext, want: 'on' | 'off', version: string): boolean {
  const action = want === 'on' ? 'EnableProxy' : 'RevertProxy';
  for (const row of ctx.status.peers ?? []) {
    const r = driveServer(ctx, row.hostname, 0, action, { version, gate: want }, { [PROXY_GATE]: want === 'on' }, ctx.spec.strategy.batchTimeoutMs);
    if (r === 'done') {
      if (row.state === 'EnablingProxy') ctx.setPeerState(row.hostname, 'Pending');
      continue;
    }
    if (r === 'waiting') ctx.setPeerState(row.hostname, 'EnablingProxy', `${action} requested`);
    // One server at a time: the next waits until this one is back.
    return false;
  }
  return true;
}
