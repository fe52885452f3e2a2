/**
 * The RunningProcessDiffers pause (src/plan/running-process.ts decides what holds a call): taken when a call in flight is
 * held by its server's /flagz or /statusz, re-checked at every step from the pages read then, and lifted by itself once
 * no call is held. A resume ends it too, but a call still held pauses it again at once; an abort rolls back (a rollback
 * does not hold the calls it undoes).
 */
import type { PlanContext } from './context.ts';
import { pause } from './breach.ts';
import type { HeldCall } from './running-process.ts';
import { safeMessage } from './redact.ts';
import { inFlight } from './calls.ts';

function message(held: readonly HeldCall[], rollingBack: boolean): string {
  return `the running process is not what the call meant: ${held.map((h) => h.verdict.message).join('; ')}. The call is not counted as landed; the pause lifts by itself once the server's /flagz and /statusz agree (restart it with the flags the call gave it)${rollingBack ? '' : ', or abort to roll back'}`;
}

/** Pauses when a call is held. Returns true when it paused. */
export function holdForRunning(ctx: PlanContext, held: readonly HeldCall[]): boolean {
  if (held.length === 0 || ctx.phase === 'Paused') return false;
  pause(ctx, 'RunningProcessDiffers', message(held, ctx.phase === 'RollingBack'), ctx.phase, held.map((h) => h.call.server));
  return true;
}

/**
 * A RunningProcessDiffers pause re-checked: it stays while a call is held (its message follows what the pages say now)
 * or a paused server's call is still in flight without a verdict (the server restarting, not back yet), and lifts once
 * none is: each call landed (or ended otherwise, which the step then judges). Returns true while paused.
 */
export function recheckRunning(ctx: PlanContext, held: readonly HeldCall[]): boolean {
  const p = ctx.status.pause;
  if (p?.reason !== 'RunningProcessDiffers') return true;
  const pending = (p.servers ?? []).some((h) => (ctx.status.driverCalls ?? []).some((c) => c.server === h && inFlight(c)));
  if (held.length === 0 && pending) return true;
  if (held.length > 0) {
    const now = safeMessage(message(held, p.resumePhase === 'RollingBack'), { maxChars: 4096 });
    if (now !== p.message) {
      p.message = now;
      p.servers = held.map((h) => h.call.server).sort();
      ctx.condition({ type: 'Paused', status: 'True', reason: 'RunningProcessDiffers', message: now });
    }
    return true;
  }
  const to = p.resumePhase ?? 'Upgrading';
  const why = `no call of ${(p.servers ?? []).join(', ') || 'the paused servers'} is held by its /flagz and /statusz any more: the RunningProcessDiffers pause lifts by itself`;
  delete ctx.status.pause;
  ctx.setPhase(to);
  ctx.condition({ type: 'Paused', status: 'False', reason: 'Resumed', message: why });
  ctx.event('Normal', 'RunningProcessConfirmed', `${why}; back to ${to}`);
  ctx.requeue(0);
  return false;
}
