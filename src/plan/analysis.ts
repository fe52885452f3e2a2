import type { PlanContext } from './context.ts';
import { onBreach } from './breach.ts';

/**
 * Counts consecutive breaching checks. A check is one new analysis (a new time); an inconclusive check
 * (no data) neither counts towards the limit nor resets it. Returns true when it acted on a breach.
 */
export function applyAnalysis(ctx: PlanContext): boolean {
  const a = ctx.obs.analysis;
  if (!a) return false;
  const prev = ctx.status.lastAnalysis;
  if (prev?.time === a.time) return false;
  const before = prev?.consecutiveBreaches ?? 0;
  const consecutive = a.verdict === 'Breach' ? before + 1 : a.verdict === 'Healthy' ? 0 : before;
  ctx.status.lastAnalysis = { time: a.time, verdict: a.verdict, consecutiveBreaches: consecutive, signals: a.signals, breaches: a.breaches };
  if (a.verdict === 'Breach' && consecutive >= ctx.spec.analysis.failureLimit) {
    const what = a.breaches.map((b) => `${b.signal}${b.server ? `@${b.server}` : ''} ${b.observed ?? '?'} > ${b.threshold ?? '?'}`).join('; ');
    onBreach(ctx, 'AnalysisBreach', `${consecutive} consecutive breaching checks (failureLimit ${ctx.spec.analysis.failureLimit}): ${what}`);
    return true;
  }
  return false;
}
