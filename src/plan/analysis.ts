import type { PlanContext } from './context.ts';
import type { AnalysisStatus, Breach } from '../api/types.generated.ts';
import { onBreach } from './breach.ts';
import { callInFlight, FAILED_ATTEMPT } from './calls.ts';
import type { CallResult } from '../api/vocabulary.ts';
import { isUp } from './peers.ts';
import { BODY_CAP_SIGNAL, bodyCapBreaches } from './body-caps.ts';

/** `proxyErrorRatio@cp-2 0.4 > 0.01; ...`, for pause messages and events. */
export function describeBreaches(breaches: readonly Breach[]): string {
  // Named signals (an APIService, a webhook) carry the name in their message: say it.
  const named = new Set(['unavailableAPIServices', 'webhookErrorRatio', BODY_CAP_SIGNAL]);
  return breaches.map((b) => `${b.signal}${b.server ? `@${b.server}` : ''} ${b.observed ?? '?'} > ${b.threshold ?? '?'}${named.has(b.signal) && b.message ? ` (${b.message})` : ''}`).join('; ');
}

/**
 * Whether a new check is due: the observer computes signals once per interval, and the planner decides
 * the interval from status (which survives a restart), not from the observer's memory. Checks keep a grid
 * (`nextCheckAt`): a check due at 10 s that ran at 10.2 s makes the next due at 10 s + interval, not 10.2 s +
 * interval, so failureLimit checks take failureLimit intervals however long each look takes (seed 4242 #8 of the
 * fault campaign drifted 0.15 s per check at load 6 and reacted 0.6 s past its bound).
 */
export function analysisDue(last: Pick<AnalysisStatus, 'time' | 'nextCheckAt'> | undefined, intervalMs: number, now: Date): boolean {
  const due = nextDueMs(last, intervalMs);
  return due === undefined || now.getTime() >= due;
}

/** When the next check is due (epoch ms): its slot on the grid, or an interval after a check written before the grid; undefined before any check. */
export function nextDueMs(last: Pick<AnalysisStatus, 'time' | 'nextCheckAt'> | undefined, intervalMs: number): number | undefined {
  if (last?.time === undefined) return undefined;
  return last.nextCheckAt === undefined ? Date.parse(last.time) + intervalMs : Date.parse(last.nextCheckAt);
}

/**
 * The due time of the check after one that ran at `checkTime`: the previous check's slot plus the interval while
 * the check filled its slot (ran at or after it, less than one interval late); otherwise — a check early, or slots
 * missed while no operator ran — the grid starts again from this check.
 */
export function nextCheckAt(prev: Pick<AnalysisStatus, 'nextCheckAt'> | undefined, checkTime: string, intervalMs: number): string {
  const ran = Date.parse(checkTime);
  const slot = prev?.nextCheckAt === undefined ? Number.NaN : Date.parse(prev.nextCheckAt);
  const base = Number.isFinite(slot) && ran >= slot && ran - slot < intervalMs ? slot : ran;
  return new Date(base + intervalMs).toISOString();
}

/**
 * A member whose last call failed before the last resume: the resume asked to try that step again, so the
 * server is about to get a new call — it is not a health problem of its own yet.
 */
function retryPending(ctx: PlanContext, hostname: string): boolean {
  const last = (ctx.status.driverCalls ?? []).filter((c) => c.server === hostname).at(-1);
  if (!last || !ctx.status.resumedAt || !last.completedAt) return false;
  return FAILED_ATTEMPT.has(last.result as CallResult) && Date.parse(last.completedAt) <= Date.parse(ctx.status.resumedAt);
}

/** Members that are not up and not being replaced right now: after its call is done, health is the analysis'. */
function unhealthyMembers(ctx: PlanContext): Breach[] {
  return (ctx.status.plan?.members ?? [])
    .filter((h) => !callInFlight(ctx, h) && !retryPending(ctx, h) && !isUp(ctx.observed(h)))
    .map((h) => ({ signal: 'serverReady', server: h, observed: 'not ready', threshold: 'ready', message: `${h} is not up (not ready, stale lease or gone) and no replacement of it is in flight` }));
}

/**
 * Counts consecutive breaching checks. A check is one new analysis (a new time) — or, when the signals
 * are unavailable, one interval passing — and a member that is down without a call in flight makes it
 * breach. An inconclusive check neither counts towards the limit nor resets it. Returns true when it acted.
 */
export function applyAnalysis(ctx: PlanContext): boolean {
  const prev = ctx.status.lastAnalysis;
  const a = ctx.obs.analysis;
  let check: AnalysisStatus | undefined;
  // A real check is new when it is newer than the last one — or as new as a synthetic one, which it replaces.
  // A check stamped with the same instant but another verdict is another check (a source that recomputed
  // within the same millisecond): never let it hide a breach.
  const newer = a !== undefined && (prev?.time === undefined || Date.parse(a.time) > Date.parse(prev.time) || (Date.parse(a.time) === Date.parse(prev.time) && (prev.synthetic === true || a.verdict !== prev.verdict)));
  if (a && newer) {
    check = { time: a.time, verdict: a.verdict, signals: { ...a.signals }, breaches: [...a.breaches] };
  } else if (analysisDue(prev, ctx.spec.analysis.intervalMs, ctx.now) && (!a || ctx.now.getTime() - Date.parse(a.time) >= 2 * ctx.spec.analysis.intervalMs)) {
    // No new signals for a whole interval (no data, or every server down): the check still happens, so a
    // member that is down keeps counting towards failureLimit instead of holding the upgrade silently. It
    // can breach; it never ends a batch.
    check = { time: ctx.now.toISOString(), verdict: 'Inconclusive', signals: {}, breaches: [], synthetic: true };
  }
  if (!check) return false;
  // A server whose answers exceed a cap is unknown, and unknown is unsafe: a breach (src/plan/body-caps.ts).
  const down = [...unhealthyMembers(ctx), ...bodyCapBreaches(ctx.obs.bodyCaps)];
  if (down.length > 0) {
    check.verdict = 'Breach';
    check.breaches = [...(check.breaches ?? []), ...down].slice(0, 64);
  }
  const d = ctx.obs.discovery;
  if (d) check.signals = { ...check.signals, discoveryConverged: d.converged };
  const pendingSince = ctx.status.batch?.discoveryPendingSince;
  if (pendingSince) check.signals = { ...check.signals, discoveryPendingSeconds: Math.round((ctx.now.getTime() - Date.parse(pendingSince)) / 1000) };
  const before = prev?.consecutiveBreaches ?? 0;
  check.consecutiveBreaches = check.verdict === 'Breach' ? before + 1 : check.verdict === 'Healthy' ? 0 : before;
  check.nextCheckAt = nextCheckAt(prev, check.time!, ctx.spec.analysis.intervalMs);
  ctx.status.lastAnalysis = check;
  if (check.verdict === 'Breach' && check.consecutiveBreaches >= ctx.spec.analysis.failureLimit) {
    onBreach(ctx, 'AnalysisBreach', `${check.consecutiveBreaches} consecutive breaching checks (failureLimit ${ctx.spec.analysis.failureLimit}): ${describeBreaches(check.breaches ?? [])}`);
    return true;
  }
  return false;
}
