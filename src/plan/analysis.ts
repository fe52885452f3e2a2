import type { PlanContext } from './context.ts';
import type { Breach } from '../api/types.generated.ts';
import { onBreach } from './breach.ts';

/** `proxyErrorRatio@cp-2 0.4 > 0.01; ...`, for pause messages and events. */
export function describeBreaches(breaches: readonly Breach[]): string {
  return breaches.map((b) => `${b.signal}${b.server ? `@${b.server}` : ''} ${b.observed ?? '?'} > ${b.threshold ?? '?'}`).join('; ');
}

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
    onBreach(ctx, 'AnalysisBreach', `${consecutive} consecutive breaching checks (failureLimit ${ctx.spec.analysis.failureLimit}): ${describeBreaches(a.breaches)}`);
    return true;
  }
  return false;
}
