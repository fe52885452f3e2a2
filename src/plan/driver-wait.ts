import type { PlanContext } from './context.ts';
import type { DriverAction } from '../api/types.generated.ts';
import { isUp } from './peers.ts';
import { onBreach } from './breach.ts';

export type ServerGoal = { version: string; gate?: 'on' | 'off' };

/** Whether a server is up and at its goal. */
export function atGoal(ctx: PlanContext, hostname: string, goal: ServerGoal): boolean {
  const p = ctx.observed(hostname);
  return isUp(p) && p.version === goal.version && (goal.gate === undefined || p.proxyGate === goal.gate);
}

/**
 * Drives one server towards its goal with at most one driver call per (batch, server, action, target),
 * then waits for the server to come back there. Returns 'done', 'waiting', or 'failed' (already acted on).
 */
export function driveServer(ctx: PlanContext, hostname: string, batch: number, action: DriverAction, goal: ServerGoal, featureGates: Record<string, boolean>, timeoutMs: number): 'done' | 'waiting' | 'failed' {
  if (atGoal(ctx, hostname, goal)) return 'done';
  const call = ctx.callDriver(action, batch, hostname, goal.version, featureGates);
  if (call.result === 'Failed') {
    ctx.setPeerState(hostname, 'Failed', call.message);
    onBreach(ctx, 'DriverFailed', `the driver failed to ${action} ${hostname}: ${call.message ?? 'no details'}`);
    return 'failed';
  }
  const since = Date.parse(call.time ?? ctx.now.toISOString());
  if (ctx.now.getTime() - since > timeoutMs) {
    ctx.setPeerState(hostname, 'Failed', `not back at ${goal.version} within ${Math.round(timeoutMs / 1000)}s`);
    onBreach(ctx, 'BatchTimeout', `${hostname} did not come back at ${goal.version}${goal.gate ? ` with the proxy gate ${goal.gate}` : ''} within ${Math.round(timeoutMs / 1000)}s of the ${action} call`);
    return 'failed';
  }
  ctx.requeue(2_000);
  return 'waiting';
}
