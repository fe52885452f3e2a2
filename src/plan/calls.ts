import type { DriverAction, DriverCall } from '../api/types.generated.ts';
import { IN_FLIGHT_RESULTS, type CallResult } from '../api/vocabulary.ts';
import type { ResolvedDriver } from '../api/defaults.ts';
import type { PlanContext } from './context.ts';
import { isUp } from './peers.ts';
import { safeMessage } from './redact.ts';
import { minorOf, sameRelease } from './version.ts';
import { processIdentity, startTimeFresh } from './process-identity.ts';
import { checkRunning, holds, type HeldCall } from './running-process.ts';

/**
 * The results of a step's attempt that failed: a resume (or retry) after it acknowledges the failure and the
 * step is tried again under a new key; before that, the step pauses on it.
 */
export const FAILED_ATTEMPT: ReadonlySet<CallResult> = new Set<CallResult>(['TimedOut', 'Rejected', 'Failed', 'Abandoned']);

/** Whether a call may still change its server: nothing else is sent to that server meanwhile. */
export function inFlight(c: DriverCall): boolean {
  return IN_FLIGHT_RESULTS.has(c.result as CallResult);
}

/**
 * How long past batchTimeout a driver may still run an ended call: the static Pod agent's Job has the deadline
 * readyTimeout (shorter than batchTimeout) plus its 300 s image pull allowance (src/drivers/static-pod.ts
 * PULL_ALLOWANCE_SECONDS; test/plan/driver-settle.test.ts holds the two together), counted from about the call's time.
 */
export const DRIVER_RUN_SLACK_MS = 300_000;
/** Results after which a driver may still run something for the call (it accepted it, or may have). */
const MAY_STILL_RUN: ReadonlySet<CallResult> = new Set<CallResult>(['Done', 'Failed', 'TimedOut']);

/**
 * Whether the driver says when it runs nothing more for a call: the static Pod driver (its Job), and a webhook
 * whose spec says it answers status requests (spec.driver.webhook.reportsStatus, docs/drivers.md "Status").
 * Without that, an ended call is judged from observation alone.
 */
export function driverReportsSettlement(driver: ResolvedDriver): boolean {
  return driver.kind === 'staticPod' || driver.webhook.reportsStatus === true;
}

/**
 * An ended call whose driver has not said it runs nothing more for it, within the time the driver can run it:
 * a call is Done when its server is observed back, which can be seconds before the static Pod agent exits or a
 * hook ends its replacement (both seen by the fault campaign: a Rollback Job started while the Upgrade's agent
 * still ran on that node; a hook given cp-2's Rollback 0.1 s before it ended cp-2's Upgrade). Only drivers that
 * report (driverReportsSettlement) are read; their reports settle the call (driverSettledAt).
 */
export function awaitsSettlement(c: DriverCall, now: Date, batchTimeoutMs: number): boolean {
  if (!MAY_STILL_RUN.has(c.result as CallResult) || c.driverSettledAt !== undefined) return false;
  const since = Date.parse(c.time ?? '');
  return !Number.isFinite(since) || now.getTime() < since + batchTimeoutMs + DRIVER_RUN_SLACK_MS;
}

/**
 * The calls whose driver reports the shell reads: the ended calls awaiting settlement and, for the static Pod
 * driver, every call Accepted (its Job's failure ends the call Failed). A webhook's report is a request to the hook,
 * made before the look observes the fleet: it is asked only what settles a call, so a slow hook lengthens looks only
 * while a call awaits its settlement. A driver without reports: none.
 */
export function callsToReport(calls: readonly DriverCall[], now: Date, batchTimeoutMs: number, driver: ResolvedDriver): DriverCall[] {
  if (!driverReportsSettlement(driver)) return [];
  return calls.filter((c) => (c.result === 'Accepted' && driver.kind === 'staticPod') || awaitsSettlement(c, now, batchTimeoutMs));
}

/** The reports that say the driver runs nothing more for a call. */
const SETTLED_REPORTS: ReadonlySet<string> = new Set(['succeeded', 'failed', 'gone']);

/** Records when the driver said it runs nothing more for an ended call. Runs with advanceCalls, first in every step. */
export function settleDrivers(ctx: PlanContext): void {
  for (const c of ctx.status.driverCalls ?? []) {
    if (!awaitsSettlement(c, ctx.now, ctx.spec.strategy.batchTimeoutMs)) continue;
    const r = ctx.upgrade.driverReports?.[c.key];
    if (r && SETTLED_REPORTS.has(r.kind)) c.driverSettledAt = ctx.now.toISOString();
  }
}

/**
 * An ended call on the server whose driver may still be running it (a driver that reports, not settled, within
 * its run time): nothing else goes to that server until it settles. Unknown (no report read) is running.
 */
export function driverStillRunning(ctx: PlanContext, hostname: string): DriverCall | undefined {
  if (!driverReportsSettlement(ctx.spec.driver)) return undefined;
  return (ctx.status.driverCalls ?? []).find((c) => c.server === hostname && awaitsSettlement(c, ctx.now, ctx.spec.strategy.batchTimeoutMs));
}

/** The call in flight on a server, if any (at most one, by construction). */
export function callInFlight(ctx: PlanContext, hostname: string): DriverCall | undefined {
  return (ctx.status.driverCalls ?? []).find((c) => c.server === hostname && inFlight(c));
}

/** The version a server emulates: what it says, else its binary's own minor. */
export function emulationOf(p: { version?: string; emulation?: string } | undefined): string | undefined {
  return p?.emulation ?? (p?.version === undefined ? undefined : minorOf(p.version));
}

/**
 * Whether a server is up and runs `version` (build metadata ignored) emulating `emulated` (default: the
 * version's own minor, i.e. no emulation), with the proxy gate as asked.
 */
export function serverAt(ctx: PlanContext, hostname: string, version: string, gate?: 'on' | 'off', emulated?: string): boolean {
  const p = ctx.observed(hostname);
  return isUp(p) && sameRelease(p.version, version) && (gate === undefined || p.proxyGate === gate) && emulationOf(p) === (emulated ?? minorOf(version));
}

function gateGoal(action: DriverAction): 'on' | 'off' | undefined {
  return action === 'EnableProxy' ? 'on' : action === 'RevertProxy' ? 'off' : undefined;
}

/**
 * A call has landed when its server restarted — its process identity (the identity Lease's holder, with the
 * start time before 1.35: process-identity.ts) changed since the call was recorded — and is up at the call's
 * goal. Without the restart, a server that merely still runs the goal version (a rollback target, say) proves
 * nothing about the call.
 */
export function landed(ctx: PlanContext, c: DriverCall): boolean {
  if (!serverAt(ctx, c.server, c.target ?? '', gateGoal(c.action), c.emulatedVersion)) return false;
  const holder = processIdentity(ctx.observed(c.server));
  return c.holderBefore === undefined || (holder !== undefined && holder !== c.holderBefore);
}

/** How often a step waiting on a driver call looks again. */
export const CALL_POLL_MS = 2_000;
/** The fastest look while a replaced server's new process comes up; see callPollMs. */
export const COMING_UP_POLL_MS = 500;
/** A look costs 6–10 ms of CPU per server (bench/README.md fleet table): a look per 10 ms per server keeps fast looks under one core. */
const LOOK_COST_PER_SERVER_MS = 10;
/** A new process that is not back within this long is not about to be: look at the normal pace again. */
const COMING_UP_WINDOW_MS = 120_000;

/**
 * The period of a look expected to find what it waits for within seconds: 500 ms, slower for large fleets (10 ms
 * per server: each look observes every server), never slower than CALL_POLL_MS.
 */
export function fastLookMs(ctx: PlanContext): number {
  const servers = ctx.status.plan?.members?.length ?? 0;
  return Math.min(CALL_POLL_MS, Math.max(COMING_UP_POLL_MS, servers * LOOK_COST_PER_SERVER_MS));
}

/** Whether `since` (an ISO time) is at most `COMING_UP_WINDOW_MS` ago: what is not there by then is not about to be. */
export function withinComingUpWindow(ctx: PlanContext, since: string | undefined): boolean {
  return ctx.now.getTime() - Date.parse(since ?? ctx.now.toISOString()) <= COMING_UP_WINDOW_MS;
}

/**
 * How soon to look again while calls are in flight. A call is Done only when a look finds its server back at
 * the goal, so the look's period is added to every replacement: when a server's new process is up (its identity
 * Lease has a new holder) but not yet back, it turns ready within seconds, and the step looks at fastLookMs
 * instead of every 2 s, in the first two minutes of the call.
 */
export function callPollMs(ctx: PlanContext): number {
  const comingUp = (ctx.status.driverCalls ?? []).some((c) => {
    if (!inFlight(c) || c.holderBefore === undefined) return false;
    const holder = processIdentity(ctx.observed(c.server));
    return holder !== undefined && holder !== c.holderBefore && withinComingUpWindow(ctx, c.time);
  });
  return comingUp ? fastLookMs(ctx) : CALL_POLL_MS;
}

/**
 * The driver's report that an Accepted call failed, if it gave one this step (ctx.upgrade.driverReports, read by
 * the shell for the calls Accepted in the status it planned from). Only `failed` decides anything; `running`,
 * `succeeded` and `unknown` (the driver could not tell) change nothing: a call is Done only when observed.
 */
export function reportedFailure(ctx: PlanContext, c: DriverCall): string | undefined {
  if (c.result !== 'Accepted') return undefined;
  const r = ctx.upgrade.driverReports?.[c.key];
  return r?.kind === 'failed' ? r.message : undefined;
}

function finish(ctx: PlanContext, c: DriverCall, result: CallResult, message: string): void {
  c.result = result;
  c.completedAt = ctx.now.toISOString();
  c.message = safeMessage(message, { maxChars: 4000 });
}

/**
 * Moves every call in flight along its lifecycle from what is observed and what the driver reported: Done
 * when it landed (observation wins over any report) and its server's own /flagz and /statusz do not say otherwise
 * (src/plan/running-process.ts), Failed when the driver reported, after accepting it, that the replacement failed,
 * TimedOut when batchTimeout passed since it was recorded. Runs first in every step, paused or not, so a decision
 * never reads a stale lifecycle. Returns the calls the pages hold (back at the goal, but the process differs or its
 * pages could not be read): they stay in flight, and are not timed out while held (the planner pauses on them).
 */
export function advanceCalls(ctx: PlanContext): HeldCall[] {
  const timeoutMs = ctx.spec.strategy.batchTimeoutMs;
  const held: HeldCall[] = [];
  for (const c of ctx.status.driverCalls ?? []) {
    if (!inFlight(c)) continue;
    if (landed(ctx, c)) {
      const verdict = checkRunning(ctx, c);
      if (verdict && holds(verdict)) {
        held.push({ call: c, verdict });
        continue;
      }
      const how = c.result === 'Requested' ? 'landed before its acceptance was recorded' : 'done';
      finish(ctx, c, 'Done', `${c.server} restarted and is up at ${c.target}: ${how}`);
      continue;
    }
    const failure = reportedFailure(ctx, c);
    if (failure !== undefined) {
      finish(ctx, c, 'Failed', failure || 'the driver reported the replacement failed, without details');
      continue;
    }
    const age = ctx.now.getTime() - Date.parse(c.time ?? ctx.now.toISOString());
    if (age <= timeoutMs) continue;
    const secs = Math.round(timeoutMs / 1000);
    const why = c.result === 'Requested'
      ? `the driver was never reached within ${secs}s${c.message ? ` (${c.message})` : ''}`
      : `accepted, but ${c.server} did not come back at ${c.target}${c.emulatedVersion ? ` emulating ${c.emulatedVersion}` : ''}${gateGoal(c.action) ? ` with the proxy gate ${gateGoal(c.action)}` : ''} within ${secs}s`;
    finish(ctx, c, 'TimedOut', why);
  }
  settleDrivers(ctx);
  return held;
}

/**
 * The latest attempt of one step and whether it still counts: a failure from before the last resume was
 * acknowledged by that resume, so the step is tried again under a new key instead of pausing on it again.
 */
export function latestAttempt(ctx: PlanContext, hostname: string, batch: number, action: DriverAction, target: string): { call: DriverCall; acknowledged: boolean } | undefined {
  const call = ctx.attempts(hostname, batch, action, target).at(-1);
  if (!call) return undefined;
  const resumed = ctx.status.resumedAt ? Date.parse(ctx.status.resumedAt) : undefined;
  const ended = call.completedAt ? Date.parse(call.completedAt) : undefined;
  const acknowledged = FAILED_ATTEMPT.has(call.result as CallResult) && resumed !== undefined && ended !== undefined && ended <= resumed;
  return { call, acknowledged };
}

/**
 * Whether a server's latest call ended Failed after the last resume: its driver said the replacement failed,
 * so a server missing now is explained by that (the agent restored its backup and the kubelet is restarting
 * it) and the pause is DriverFailed, not a membership change.
 */
export function failedSinceResume(ctx: PlanContext, hostname: string): boolean {
  const last = (ctx.status.driverCalls ?? []).filter((c) => c.server === hostname).at(-1);
  if (last?.result !== 'Failed' || !last.completedAt) return false;
  return ctx.status.resumedAt === undefined || Date.parse(last.completedAt) > Date.parse(ctx.status.resumedAt);
}

/**
 * A member of the batch under way whose last call is Done since the last resume: the run's own replacement
 * landed there. Missing from the fleet afterwards, it is a server of this batch that went down.
 */
export function landedInBatchUnderWay(ctx: PlanContext, hostname: string): boolean {
  if (!(ctx.status.batch?.servers ?? []).includes(hostname)) return false;
  const last = (ctx.status.driverCalls ?? []).filter((c) => c.server === hostname).at(-1);
  if (last?.result !== 'Done' || !last.completedAt) return false;
  return ctx.status.resumedAt === undefined || Date.parse(last.completedAt) > Date.parse(ctx.status.resumedAt);
}

/**
 * Whether a later call of the other direction went to a Done call's server: a Rollback after an Upgrade (or a gate
 * call), an Upgrade after a Rollback. What the Done call did may be undone, so the step is judged from observation
 * again (a rollback resumed into the upgrade re-upgrades the servers it put back; a second rollback rolls back a
 * server re-upgraded since). A refused call changed nothing.
 */
function undone(ctx: PlanContext, done: DriverCall): boolean {
  const calls = ctx.status.driverCalls ?? [];
  const back = done.action === 'Rollback';
  return calls.slice(calls.indexOf(done) + 1).some((c) => c.server === done.server && c.result !== 'Rejected' && (c.action === 'Rollback') !== back);
}

export type StepState = 'done' | 'waiting' | { failed: 'DriverFailed' | 'BatchTimeout'; message: string };

/**
 * One server's step towards a goal: at most one call in flight per server, one attempt at a time.
 * `always` sends a call even when the server already looks right (a rollback must supersede whatever the
 * driver may still carry out for that server).
 */
export function driveStep(ctx: PlanContext, hostname: string, batch: number, action: DriverAction, target: string, gate: boolean | undefined, opts: { always?: boolean; emulatedVersion?: string } = {}): StepState {
  const latest = latestAttempt(ctx, hostname, batch, action, target);
  if (latest && !latest.acknowledged && !(latest.call.result === 'Done' && undone(ctx, latest.call))) {
    const c = latest.call;
    if (c.result === 'Done') return 'done';
    if (c.result === 'Requested') {
      ctx.send(c);
      return 'waiting';
    }
    if (c.result === 'Accepted') return 'waiting';
    if (c.result === 'Rejected') return { failed: 'DriverFailed', message: `the driver refused to ${action} ${hostname}: ${c.message ?? 'no details'}` };
    if (c.result === 'Failed') return { failed: 'DriverFailed', message: `the driver reported that the ${action} of ${hostname} failed after it accepted it: ${c.message ?? 'no details'}` };
    if (c.result === 'TimedOut') return { failed: 'BatchTimeout', message: `${action} of ${hostname}: ${c.message ?? 'timed out'}` };
  }
  const other = callInFlight(ctx, hostname);
  if (other) return 'waiting';
  // The driver may still be carrying out the last call on this server (its agent not exited yet): never two at once.
  if (driverStillRunning(ctx, hostname)) return 'waiting';
  if (!opts.always && serverAt(ctx, hostname, target, gateGoal(action), opts.emulatedVersion)) return 'done';
  // The call records the process it finds (holderBefore): before 1.35 that needs a start time this look read.
  if (!startTimeFresh(ctx.observed(hostname))) return 'waiting';
  ctx.requestCall(action, batch, hostname, target, gate, opts.emulatedVersion);
  return 'waiting';
}
