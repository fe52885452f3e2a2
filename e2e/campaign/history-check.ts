// The offline checker of a fault campaign's recorded history (issue 26): pure, so each rule is unit-tested on
// hand-made histories (test/campaign/history-check.test.ts). A history is what the campaign records of one upgrade,
// from sources that do not trust the operator: the driver's own log (the hook's log, the agent Jobs), the harness's
// process records (which binary each server ran, and when it was up), a watch of the upgrade object (its status
// snapshots), the faults injected and when they healed, and the client's answers.
import { acceptedRiskRecorded, noCallOutsideWindow, noCallWhileGateFails, rollbackNotDelayedByGateOrWindow, type CallSeen, type GateRecord, type RiskRecord, type WindowSpec } from './rules-gates.ts';

import { componentSkewHoldsRollback, deadlineActedOn, holdNeedsApprovalOrDeadline } from './rules-late.ts';

/** One replacement as the driver carried it out: started when it took the key, ended when the server was back (or failed). */
export interface DriverOp {
  key: string;
  server: string;
  action: 'Upgrade' | 'Rollback' | 'EnableProxy' | 'RevertProxy';
  start: number;
  /** When the server came back from it, or the driver reported it failed; undefined: never (hung, or the run ended first). */
  end?: number;
  /** Whether it brought the server back at its goal. */
  landed: boolean;
  /**
   * A landed webhook call: when the harness last found the new run not ready. The server was back at its goal after
   * this, and may have been seen so before `end`, which also waits out the harness's 500 ms readiness poll and the
   * balancer (seed 4213 #16: the operator saw cp-3 back 0.14 s before the hook's record ended).
   */
  readyAfter?: number;
  /** The goal runs with --emulated-version (TwoPhase phase one): the target's API is not served yet. */
  emulated?: boolean;
}

/** A span of time, ms. */
export interface Span {
  from: number;
  to: number;
}

/** A server's state from the harness's process records: from `t` on, until the next record of that server. */
export interface ServerRecord {
  t: number;
  server: string;
  up: boolean;
  /** The binary's release ("v1.36.3"). */
  version: string;
  /** `--emulated-version`, when the process runs with one. */
  emulation?: string;
}

/** A snapshot of the upgrade object's status, from a watch. */
export interface StatusSnapshot {
  t: number;
  phase: string;
  pauseReason?: string;
  pauseMessage?: string;
  /** status.plan.targetStorage is recorded (the rollback verdict's inputs are known). */
  targetStorageKnown?: boolean;
  /** The batch indices in status.batch.history (finished batches). */
  finishedBatches?: number[];
  /** status.stage of a TwoPhase upgrade: API once phase two (lifting the emulation) began. */
  stage?: string;
  /** The RollbackSafe condition's status ('True', 'False', 'Unknown'); absent when not set (or not recorded). */
  rollbackSafe?: string;
  /** status.resumedAt: changes with every resume (a new annotation value, or spec.paused set false). */
  resumedAt?: string;
  /** status.waiting.reason (GateNotHeld, GateUnknown, OutsideWindow, a preflight wait); absent when not waiting. */
  waiting?: string;
  /** The names in status.acceptedRisks; absent when none. */
  acceptedRisks?: string[];
  /** status.phaseTwoHold.heldSince (epoch ms): when the operator says phase two's hold began. */
  heldSince?: number;
  /** status.phaseTwoHold.endedBy: Approved, DeadlineProceeded, DeadlineRolledBack, RollbackStarted. */
  holdEndedBy?: string;
}

/**
 * One analysis check as the operator wrote it to status.lastAnalysis: what it counted, for reading a history (why a
 * breach was acted on late); the checker judges from the harness's own records, never from these.
 */
export interface CheckRecord {
  /** When the watch saw it. */
  t: number;
  /** The check's own time (status.lastAnalysis.time). */
  time: string;
  verdict: string;
  consecutive: number;
  /** `signal@server` of each breach. */
  breaches: string[];
}

/** A window in which the signals breached (an injected fault the analysis sees: errors, a server down, latency). */
export interface BreachWindow {
  from: number;
  to: number;
  /** The server the fault took down, when it is one (absent: client errors, latency). */
  server?: string;
}

/** One answer the client got for a resource. */
export interface ClientAnswer {
  t: number;
  resource: string;
  code: number;
}

export interface History {
  spec: {
    fromVersion: string;
    targetVersion: string;
    /** How many servers may be replaced at once (the resolved batch size). */
    batchSize: number;
    failureLimit: number;
    /** How often a check comes: the analysis interval, or with Prometheus max(window, interval). */
    intervalMs: number;
    /** Resources only the target version serves: a 404 for one after the first batch converged is the proxy failing. */
    targetOnlyResources: string[];
    /**
     * spec.strategy.batchTimeout: how long the operator waits for a call that does not land before it pauses. A server
     * down while its call is in flight is the replacement's business until then (src/plan/analysis.ts callInFlight).
     * Absent: calls are not exempt (histories written before it).
     */
    batchTimeoutMs?: number;
    /** The driver reports a failed call (a static Pod Job fails); a webhook does not, so the operator waits out the batch. */
    driverReportsFailure?: boolean;
  };
  ops: DriverOp[];
  servers: ServerRecord[];
  statuses: StatusSnapshot[];
  breaches: BreachWindow[];
  /** Servers the harness itself took down (a fault), and when: the batch bound counts the operator's doing only. */
  faultDown?: (Span & { server: string })[];
  /** When no operator replica led (its leader killed, none started yet): nothing can act on a breach then. */
  operatorBlind?: Span[];
  /** When the last fault healed; from then on the upgrade must come to rest. */
  healedAt: number;
  /** When the history was closed (the upgrade's window ended). */
  endedAt: number;
  client: ClientAnswer[];
  /** Resumes the harness issued after the heal, to a resting pause (liveness runs: Schedule.resumeAfterHeal). */
  resumesAfterHeal?: number[];
  /** The operator's analysis checks, as it wrote them (not judged: CheckRecord). */
  checks?: CheckRecord[];
  /** Each driver call as the watch first saw it in status.driverCalls (histories before the start conditions: absent). */
  callsSeen?: CallSeen[];
  /** The gate as the harness set it (spec.gates drawn: `gate-fail`, Prometheus faults). */
  gate?: GateRecord;
  /** spec.window as the upgrade was given it (`window-close` drawn). */
  window?: WindowSpec;
  /** The preflight findings the harness made real, and those spec.acceptRisks named. */
  risks?: RiskRecord;
  /** Phase two held for an approval, as the harness set spec.strategy.phaseTwo (absent: Automatic). */
  hold?: { deadlineMs?: number; onDeadline?: 'Proceed' | 'Rollback' };
  /** When each new value of the approve annotation the harness set was written (its PATCH answered). */
  approvals?: number[];
  /** kube-controller-manager / kube-scheduler versions as the harness set them (their mirror Pods), each for a span. */
  components?: (Span & { component: string; node: string; version: string })[];
  /** Operator rollouts (helm upgrade's RollingUpdate, by the harness): from the first SIGTERM to the last new replica ready. */
  rollouts?: Span[];
}

/** Every rule of the checker (docs/reliability.md's table maps each to the promise it checks). */
export const RULES = [
  'OncePerKey',
  'OneInFlight',
  'RollbackAfterLanding',
  'TerminalMatchesFleet',
  'DownWithinBatch',
  'BreachActedOn',
  'ComesToRest',
  'ResumeCompletes',
  'No404AfterConvergence',
  'RollbackOnlyWhenSafe',
  'StoppedSendsNothing',
  'EnableProxyFirst',
  'PhaseOneFirst',
  'StageNeverBack',
  'NoCallWhileGateFails',
  'NoCallOutsideWindow',
  'RollbackNotDelayedByGateOrWindow',
  'AcceptedRiskRecorded',
  // A held phase two and the control plane's components (rules-late.ts).
  'HoldNeedsApprovalOrDeadline',
  'DeadlineActedOn',
  'ComponentSkewHoldsRollback',
] as const;

export type Rule = (typeof RULES)[number];

export interface Violation {
  rule: Rule;
  t: number;
  message: string;
}

export interface Verdict {
  violations: Violation[];
  /** How long each breach that outlasted failureLimit x interval took to pause or roll back, in ms. */
  breachReactionMs: number[];
  /** How long each hold's deadline took to be acted on, in ms (rules-late.ts). */
  deadlineReactionMs?: number[];
}

const PAUSED = 'Paused';
const ACTIVE = new Set(['EnablingProxy', 'Upgrading']);
const TERMINAL = new Set(['Succeeded', 'RolledBack', 'Failed']);

/** Each key carried out at most once: a repeated call with the same key must not replace the server again. */
function oncePerKey(h: History): Violation[] {
  const seen = new Map<string, DriverOp>();
  const out: Violation[] = [];
  for (const op of [...h.ops].sort((a, b) => a.start - b.start)) {
    const first = seen.get(op.key);
    if (first) out.push({ rule: 'OncePerKey', t: op.start, message: `${op.action} ${op.server} carried out twice under key ${op.key} (at ${first.start} and ${op.start})` });
    else seen.set(op.key, op);
  }
  return out;
}

/** Never two replacements of one server in flight at once. */
function oneInFlight(h: History): Violation[] {
  const out: Violation[] = [];
  const byServer = new Map<string, DriverOp[]>();
  for (const op of h.ops) byServer.set(op.server, [...(byServer.get(op.server) ?? []), op]);
  for (const [server, ops] of byServer) {
    const sorted = [...ops].sort((a, b) => a.start - b.start);
    for (let i = 1; i < sorted.length; i++) {
      const prev = sorted[i - 1]!;
      const cur = sorted[i]!;
      if (prev.end === undefined || prev.end > cur.start) out.push({ rule: 'OneInFlight', t: cur.start, message: `${cur.action} ${server} (${cur.key}) started while ${prev.action} (${prev.key}) was still in flight` });
    }
  }
  return out;
}

/**
 * Rollback waits for every call in flight to land or time out (docs/lifecycle.md "Rollback"): no Rollback starts while
 * an Upgrade of any server is still in flight — before the driver ended it, or, when it never ended, before
 * batchTimeout since it started (less CALL_LAG_MS: the operator's clock starts at its call, a little before the
 * driver's log). Histories without batchTimeout judge only the calls that ended.
 */
function rollbackAfterLanding(h: History): Violation[] {
  const out: Violation[] = [];
  const timeout = h.spec.batchTimeoutMs;
  for (const rb of h.ops.filter((o) => o.action === 'Rollback')) {
    const pending = h.ops.find((o) => o.action === 'Upgrade' && o.start < rb.start && (o.end !== undefined ? o.end > rb.start : timeout !== undefined && rb.start < o.start + timeout - CALL_LAG_MS));
    if (pending) out.push({ rule: 'RollbackAfterLanding', t: rb.start, message: `Rollback ${rb.server} (${rb.key}) sent while the Upgrade of ${pending.server} (${pending.key}) was in flight` });
  }
  return out;
}

/** The fleet as the process records say at time t: each server's last record at or before t. */
function fleetAt(h: History, t: number): Map<string, ServerRecord> {
  const fleet = new Map<string, ServerRecord>();
  for (const r of [...h.servers].sort((a, b) => a.t - b.t)) if (r.t <= t) fleet.set(r.server, r);
  return fleet;
}

/**
 * Succeeded: every server up on the target without emulation. RolledBack: every server up on the from-version, no
 * emulation flag left — or, when the rollback began in phase two of a TwoPhase upgrade, every server up on the target
 * emulating the from-version's minor: the from-version's API on the new binary, the safe point phase one made (a
 * server that wrote the target's storage cannot go back to the old binary; src/plan/rollback-goal.ts, docs/two-phase.md).
 */
/**
 * How late the harness's record of a server may be: it polls every 200 ms (process) or 250 ms (nodes, each a /readyz
 * and a /version request that take their time at load), while the operator's own look may have seen the server back
 * first (nodes seed 4203 #13: RolledBack in the watch 21 ms before the poll saw cp-1 up on the old version).
 */
export const SERVER_SAMPLE_LAG_MS = 1_000;

function terminalMatchesFleet(h: History): Violation[] {
  const sorted = [...h.statuses].sort((a, b) => a.t - b.t);
  const end = sorted.find((s) => s.phase === 'Succeeded' || s.phase === 'RolledBack');
  if (!end) return [];
  const rollingBack = sorted.find((s) => s.phase === 'RollingBack');
  const apiRollback = end.phase === 'RolledBack' && sorted.filter((s) => s.t <= (rollingBack ?? end).t).at(-1)?.stage === 'API';
  const fromMinor = /^v(\d+\.\d+)/.exec(h.spec.fromVersion)?.[1];
  const want = end.phase === 'Succeeded' || apiRollback ? h.spec.targetVersion : h.spec.fromVersion;
  const wantEmulation = apiRollback ? fromMinor : undefined;
  const wrong = [...fleetAt(h, end.t + SERVER_SAMPLE_LAG_MS).values()].filter((r) => !r.up || r.version !== want || r.emulation !== wantEmulation);
  if (wrong.length === 0) return [];
  const what = wrong.map((r) => `${r.server} ${r.up ? `runs ${r.version}${r.emulation ? ` emulating ${r.emulation}` : ''}` : 'is down'}`).join(', ');
  return [{ rule: 'TerminalMatchesFleet', t: end.t, message: `${end.phase}, yet ${what} (want every server up on ${want}, ${wantEmulation ? `emulating ${wantEmulation}: a rollback from phase two` : 'no emulation'})` }];
}

/**
 * Never more servers down at once by the operator's doing than the batch allows. The operator takes a server down
 * only through a driver call, so its doing is a server down while a call for it is in flight (from the call until the
 * server came back, or until the end when it never did). A server a fault took down is the harness's doing, and one
 * that restarted by itself with no call in flight (the kubelet restarting its container on a machine at load 34:
 * seed 43 #5 and #8) is nobody's: neither counts. Health of that kind is BreachActedOn's business.
 */
function downWithinBatch(h: History): Violation[] {
  const times = [...new Set(h.servers.map((r) => r.t))].sort((a, b) => a - b);
  const byFault = (server: string, t: number): boolean => (h.faultDown ?? []).some((f) => f.server === server && f.from <= t && t <= f.to);
  const inReplacement = (server: string, t: number): boolean => h.ops.some((o) => o.server === server && o.start <= t && t <= (o.end ?? h.endedAt));
  for (const t of times) {
    const down = [...fleetAt(h, t).values()].filter((r) => !r.up && !byFault(r.server, t) && inReplacement(r.server, t)).map((r) => r.server);
    if (down.length > h.spec.batchSize) return [{ rule: 'DownWithinBatch', t, message: `${down.length} servers down at once in replacements (${down.join(', ')}), batch size ${h.spec.batchSize}` }];
  }
  return [];
}

/**
 * When the breached server was the replacement's business: a fault that took down a server with a driver call in
 * flight looks, from outside, like the replacement itself (a hook failing a call and the harness killing that server:
 * seed 151 #0), and the analysis leaves such a server to the replacement until the call lands, the driver reports it
 * failed, or the batch times out (src/plan/analysis.ts). A call that starts during the breach counts from its start
 * (nodes seed 251 #7: the operator called cp-1's Upgrade 0.2 s after the harness killed cp-1, 1.9 s before anyone
 * could see it down). No spans: no call was in flight.
 */
function inFlightSpans(h: History, b: BreachWindow, blind: readonly Span[]): Span[] {
  const timeout = h.spec.batchTimeoutMs;
  // Histories written before a breach named its server tie it to the outage with the same span.
  const server = b.server ?? (h.faultDown ?? []).find((f) => f.from === b.from && f.to === b.to)?.server;
  if (timeout === undefined || server === undefined) return [];
  const until = (o: DriverOp): number => {
    if (o.landed && o.end !== undefined) return unseenLandingEnd(h, o, blind) ?? o.end;
    if (o.end !== undefined && h.spec.driverReportsFailure) return o.end;
    // The call times out batchTimeout after the operator recorded it, just before the hook accepted it (src/plan/calls.ts).
    return o.start + timeout;
  };
  return h.ops.filter((o) => o.server === server && o.start <= b.to).map((o) => ({ from: o.start, to: until(o) })).filter((x) => x.to >= b.from);
}

/**
 * A call is Done when a look finds its server back at its goal (docs/lifecycle.md), so a landing no operator could
 * see is no landing: when the server was taken down again before any replica looked (the whole time from the landing
 * to the fault is blind: no leader, or no server to store a decision), the call stays in flight until the server is
 * back, or its batchTimeout runs out (seed 4207 #6: cp-1 landed during an operator rollout and was killed 1.1 s
 * later, 3.8 s before the new leader's first look). Undefined: the landing could be seen.
 */
function unseenLandingEnd(h: History, o: DriverOp, blind: readonly Span[]): number | undefined {
  const landed = o.end!;
  const fault = (h.faultDown ?? []).filter((f) => f.server === o.server && f.from >= landed).sort((a, b) => a.from - b.from)[0];
  if (!fault) return undefined;
  // `blind` comes sorted by start (breachActedOn): one pass chains the spans that cover the landing.
  let covered = landed;
  for (const x of blind) if (x.from <= covered && x.to > covered) covered = x.to;
  return covered >= fault.from ? Math.min(fault.to, o.start + h.spec.batchTimeoutMs!) : undefined;
}

/**
 * When no server could take a write: each was down by the process records, or taken down by a fault from the fault's
 * start (a server cut from etcd says ready for 3-4 s more, but stores nothing). No pause can be recorded then, and no
 * lease renewed (seed 191 #0: cp-1 in its replacement, cp-2 and cp-3 cut from etcd; the leader stepped down).
 */
export function noServerUp(h: History): Span[] {
  const faults = h.faultDown ?? [];
  const names = [...new Set(h.servers.map((r) => r.server))];
  const times = [...new Set([...h.servers.map((r) => r.t), ...faults.flatMap((f) => [f.from, f.to])])].sort((a, b) => a - b);
  const spans: Span[] = [];
  let since: number | undefined;
  for (const t of times) {
    const fleet = fleetAt(h, t);
    const none = names.every((n) => fleet.get(n)?.up === false || faults.some((f) => f.server === n && f.from <= t && t < f.to));
    if (none && since === undefined) since = t;
    if (!none && since !== undefined) {
      spans.push({ from: since, to: t });
      since = undefined;
    }
  }
  if (since !== undefined) spans.push({ from: since, to: h.endedAt });
  return spans;
}

/**
 * A breach lasting longer than failureLimit x interval must pause or roll back within that bound plus one interval
 * of its start (or of when the breached server's call stopped being in flight); the reaction time of each such
 * breach is measured.
 */
function breachActedOn(h: History): { violations: Violation[]; reactions: number[] } {
  const bound = h.spec.failureLimit * h.spec.intervalMs;
  const violations: Violation[] = [];
  const reactions: number[] = [];
  const statuses = [...h.statuses].sort((a, b) => a.t - b.t);
  const blind = [...(h.operatorBlind ?? []), ...noServerUp(h)].sort((a, b) => a.from - b.from);
  for (const b of h.breaches) {
    if (b.to - b.from <= bound) continue;
    // Already stopped when the breach began: nothing to act on.
    // Only an upgrade that replaces servers judges breaches (preflight holds on an unhealthy fleet instead).
    const before = statuses.filter((s) => s.t <= b.from).at(-1);
    if (!before || !ACTIVE.has(before.phase)) continue;
    // Reaching Succeeded is not an action on a breach: it only ends the upgrade, so the breach needs no action after it.
    const acted = statuses.find((s) => s.t >= b.from && (s.phase === PAUSED || s.phase === 'RollingBack' || (TERMINAL.has(s.phase) && s.phase !== 'Succeeded')));
    const succeeded = statuses.find((s) => s.t >= b.from && s.phase === 'Succeeded');
    // A breach seen while no replica led, no server could record a decision, or the server's own call was in
    // flight: the bound runs from when that ended. Spans that begin before the bound of the last one ran out chain
    // (sorted by start, one pass suffices).
    let blindEnd = b.from;
    const spans = [...blind, ...inFlightSpans(h, b, blind)].sort((x, y) => x.from - y.from);
    for (const x of spans) if (x.from <= blindEnd + bound + h.spec.intervalMs && x.to > blindEnd) blindEnd = x.to;
    if (b.to - blindEnd <= bound) continue;
    const limit = blindEnd + bound + h.spec.intervalMs;
    if (succeeded && succeeded.t <= limit && (!acted || succeeded.t < acted.t)) continue;
    if (acted && acted.t <= limit) {
      reactions.push(acted.t - b.from);
      continue;
    }
    const late = acted ? `was acted on only at ${acted.t} (${acted.phase})` : `was never acted on${succeeded ? ` (the upgrade went on to Succeeded at ${succeeded.t})` : ''}`;
    violations.push({ rule: 'BreachActedOn', t: limit, message: `a breach from ${b.from} to ${b.to} (longer than failureLimit x interval = ${bound} ms) ${late}; bound ${limit}` });
  }
  return { violations, reactions };
}

/**
 * How long a preflight may still wait MixedVersions after the fleet became one version: its next look (the analysis
 * interval, at most seconds) sees it; the margin covers a look slowed by load.
 */
export const PREFLIGHT_RECHECK_MS = 30_000;

/**
 * Once the faults healed, the upgrade reaches a terminal phase or a pause whose reason names a real, present cause.
 * A pause on an unknown that is known by then (RollbackSafetyUnknown with the target's hashes recorded) names none.
 * A preflight waiting MixedVersions rests too while the fleet is mixed (docs/troubleshooting.md#mixedversions: it
 * waits for a human to finish the fleet and then goes on by itself): a server the harness restarted on another binary
 * before preflight passed stays there, as a hand-made upgrade of one server would (seed 4204 #4). Once the fleet runs
 * one version for PREFLIGHT_RECHECK_MS, the wait names no cause.
 */
function comesToRest(h: History): Violation[] {
  const last = [...h.statuses].sort((a, b) => a.t - b.t).at(-1);
  if (!last) return [{ rule: 'ComesToRest', t: h.endedAt, message: 'no status was ever recorded' }];
  if (TERMINAL.has(last.phase)) return [];
  if (restingPreflight(last)) {
    const since = h.endedAt - PREFLIGHT_RECHECK_MS;
    const mixedAt = (t: number): boolean => new Set([...fleetAt(h, t).values()].filter((r) => r.up).map((r) => r.version)).size > 1;
    if ([since, ...h.servers.map((r) => r.t).filter((t) => t > since)].some(mixedAt)) return [];
    return [{ rule: 'ComesToRest', t: h.endedAt, message: `still Preflight waiting MixedVersions, yet the fleet ran one version for the last ${PREFLIGHT_RECHECK_MS} ms: the cause is gone` }];
  }
  if (last.phase !== PAUSED) return [{ rule: 'ComesToRest', t: h.endedAt, message: `still ${last.phase} at the end, ${h.endedAt - h.healedAt} ms after the faults healed` }];
  if (!last.pauseReason || !last.pauseMessage) return [{ rule: 'ComesToRest', t: last.t, message: 'Paused without a reason and a message' }];
  if (last.pauseReason === 'RollbackSafetyUnknown' && last.targetStorageKnown) {
    return [{ rule: 'ComesToRest', t: last.t, message: `Paused RollbackSafetyUnknown although the target's storage hashes are recorded: the cause is gone (${last.pauseMessage})` }];
  }
  return [];
}

/**
 * Pauses the operator re-checks and lifts by itself once the fleet is the plan's again (src/plan/breach.ts): one
 * that stays names a fleet the harness left changed — a one-shot restart on another binary is not undone by a heal
 * (seed 91 #9: cp-3 restarted on v1.36.3 without emulation in TwoPhase's phase one). ComesToRest judges them.
 */
export const SELF_LIFTING: ReadonlySet<string> = new Set(['MembershipChanged', 'RollbackSafetyUnknown']);

/**
 * Preflight waits that rest while the fleet keeps their cause: they wait for a human and go on by themselves once it
 * is gone (docs/troubleshooting.md#mixedversions). ComesToRest judges them; the runner ends such an upgrade.
 */
const RESTING_PREFLIGHT_WAITS: ReadonlySet<string> = new Set(['MixedVersions']);

/** Whether a status is a preflight waiting on one of RESTING_PREFLIGHT_WAITS. */
export function restingPreflight(s: { phase?: string; waiting?: string } | undefined): boolean {
  return s?.phase === 'Preflight' && s.waiting !== undefined && RESTING_PREFLIGHT_WAITS.has(s.waiting);
}

/**
 * Liveness: once the faults healed, a resting pause the harness resumed (as the human it paged would) ends in a
 * terminal phase. With every fault gone no cause is left, so a pause that comes back names none: the resume did not
 * take, or the operator paused on a cause it could no longer see.
 */
function resumeCompletes(h: History): Violation[] {
  const resumes = h.resumesAfterHeal ?? [];
  if (resumes.length === 0) return [];
  const last = [...h.statuses].sort((a, b) => a.t - b.t).at(-1);
  if (last && TERMINAL.has(last.phase)) return [];
  if (last?.phase === PAUSED && last.pauseReason !== undefined && SELF_LIFTING.has(last.pauseReason)) return [];
  const where = last ? `${last.phase}${last.pauseReason ? ` ${last.pauseReason}: ${last.pauseMessage ?? ''}` : ''}` : 'no status';
  return [{ rule: 'ResumeCompletes', t: last?.t ?? h.endedAt, message: `resumed ${resumes.length} time(s) after the heal (last at ${resumes.at(-1)}), still ${where} at the end` }];
}

/**
 * After the first batch converged, the client never sees a 404 for a resource only the target serves, until a
 * rollback begins (it takes the resource away on purpose). The first batch is the first to put a server on the
 * target's API: a batch finished after the first Upgrade without emulation landed (not EnablingProxy's, not
 * TwoPhase's phase one).
 */
function no404AfterConvergence(h: History): Violation[] {
  const statuses = [...h.statuses].sort((a, b) => a.t - b.t);
  const landed = h.ops.filter((o) => o.action === 'Upgrade' && o.landed && !o.emulated && o.end !== undefined).map((o) => o.end!).sort((a, b) => a - b)[0];
  if (landed === undefined) return [];
  const finishedBefore = statuses.filter((s) => s.t < landed).at(-1)?.finishedBatches?.length ?? 0;
  const converged = statuses.find((s) => s.t >= landed && s.phase === 'Upgrading' && (s.finishedBatches?.length ?? 0) > finishedBefore);
  if (!converged) return [];
  const rollback = Math.min(...statuses.filter((s) => s.phase === 'RollingBack' || s.phase === 'RolledBack').map((s) => s.t), ...h.ops.filter((o) => o.action === 'Rollback').map((o) => o.start));
  const only = new Set(h.spec.targetOnlyResources);
  const bad = h.client.filter((a) => a.t > converged.t && a.t < rollback && a.code === 404 && only.has(a.resource));
  return bad.length ? [{ rule: 'No404AfterConvergence', t: bad[0]!.t, message: `${bad.length} 404 answer(s) for ${[...new Set(bad.map((a) => a.resource))].join(', ')} after batch 1 converged at ${converged.t}` }] : [];
}

/** How much later than a driver call the watch may see the status write that came before it (the same machine's clock). */
export const WATCH_LAG_MS = 1_000;

/** Pause reasons that say rollback is not allowed now: unknown is unsafe (docs/lifecycle.md). */
const ROLLBACK_HELD = new Set(['RollbackSafetyUnknown', 'RollbackUnsafe', 'RollbackOrphans']);

/**
 * A Rollback to the from-version's binary is carried out only while the operator's own status says rollback is safe
 * (docs/lifecycle.md: "Unknown is unsafe"; docs/two-phase.md: phase one's rollback needs RollbackSafe). The status
 * that allowed it is the one in force at the call, or one the watch saw up to WATCH_LAG_MS after it (the operator
 * writes status before it calls). It must not be paused on a rollback-safety reason, and must show RollbackSafe=True; histories recorded before the
 * condition was kept fall back to whether the target's storage hashes were known (without them the verdict cannot be
 * True). A rollback begun in phase two of TwoPhase goes to the target emulating the from-version, not to the old
 * binary, and needs no storage verdict.
 */
function rollbackOnlyWhenSafe(h: History): Violation[] {
  const statuses = [...h.statuses].sort((a, b) => a.t - b.t);
  const out: Violation[] = [];
  const unsafe = (s: StatusSnapshot): string | undefined => {
    if (s.phase === PAUSED && s.pauseReason !== undefined && ROLLBACK_HELD.has(s.pauseReason)) return `the status said Paused ${s.pauseReason}`;
    if (s.rollbackSafe !== undefined && s.rollbackSafe !== 'True') return `the status said RollbackSafe=${s.rollbackSafe}`;
    if (s.rollbackSafe === undefined && !s.targetStorageKnown) return 'the target\'s storage hashes were not recorded (the verdict was unknown)';
    return undefined;
  };
  for (const rb of h.ops.filter((o) => o.action === 'Rollback' && !o.emulated).sort((a, b) => a.start - b.start)) {
    // The status in force when the call went out, and those the watch saw up to WATCH_LAG_MS after it (the write
    // that allowed the call may arrive there): one of them must allow it.
    const before = statuses.filter((s) => s.t <= rb.start).at(-1);
    const seen = [...(before ? [before] : []), ...statuses.filter((s) => s.t > rb.start && s.t <= rb.start + WATCH_LAG_MS)];
    const began = seen.filter((s) => s.phase === 'RollingBack').at(-1);
    if ((began ?? before)?.stage === 'API') continue;
    if (seen.some((s) => unsafe(s) === undefined)) continue;
    const why = seen.length === 0 ? 'no status was recorded before it' : unsafe(seen[0]!)!;
    out.push({ rule: 'RollbackOnlyWhenSafe', t: rb.start, message: `Rollback ${rb.server} (${rb.key}) carried out at ${rb.start} while ${why}` });
  }
  return out;
}

/** How much later than the call's status write a driver call may be seen (the hook's log; a poll of the Jobs in nodes mode). */
export const CALL_LAG_MS = 3_000;

const sameState = (a: StatusSnapshot, b: StatusSnapshot): boolean =>
  a.phase === b.phase && a.pauseReason === b.pauseReason && a.pauseMessage === b.pauseMessage && a.resumedAt === b.resumedAt;

/**
 * A step that stops sends nothing (docs/lifecycle.md): no driver call starts while the upgrade is Paused or terminal,
 * and none but Rollback while it is RollingBack. The state must be in force from CALL_LAG_MS before the call to the
 * first snapshot after CALL_LAG_MS past it, unchanged (phase, pause, resumedAt): a watch that was cut re-lists and can
 * miss the states in between, and a resume, or a pause that lifted, shows in what changed. A pause the operator lifts
 * by itself (SELF_LIFTING) can come back with the same words, so it is not judged here; a terminal phase is final.
 */
function stoppedSendsNothing(h: History): Violation[] {
  const statuses = [...h.statuses].sort((a, b) => a.t - b.t);
  const out: Violation[] = [];
  for (const op of [...h.ops].sort((a, b) => a.start - b.start)) {
    const before = statuses.filter((s) => s.t <= op.start - CALL_LAG_MS).at(-1);
    if (!before) continue;
    const stopped = TERMINAL.has(before.phase) || (before.phase === PAUSED && !SELF_LIFTING.has(before.pauseReason ?? '')) || (before.phase === 'RollingBack' && op.action !== 'Rollback');
    if (!stopped) continue;
    if (!TERMINAL.has(before.phase)) {
      const through = statuses.filter((s) => s.t > before.t && s.t <= op.start + CALL_LAG_MS);
      const next = statuses.find((s) => s.t > op.start + CALL_LAG_MS);
      if (!through.every((s) => sameState(s, before)) || next === undefined || !sameState(next, before)) continue;
    }
    out.push({ rule: 'StoppedSendsNothing', t: op.start, message: `${op.action} ${op.server} (${op.key}) carried out at ${op.start} while the upgrade was ${before.phase}${before.pauseReason ? ` ${before.pauseReason}` : ''} (since ${before.t})` });
  }
  return out;
}

/**
 * The Mixed Version Proxy gate is on before any version changes (docs/operations.md, docs/drivers.md): each server
 * that gets an Upgrade and had an EnableProxy before the first Upgrade of the history, has its last such EnableProxy
 * landed before that first Upgrade started. (A joiner accepted later gets its EnableProxy later: not judged.)
 */
/**
 * When a call that landed put its server back: up again after being down since the call started, not by a fault of the
 * harness (its server is never one in a replacement). A static Pod agent's Job completes seconds after the kubelet
 * started the new server and it answered ready (4.8 s at load 7, nodes seed 4202 #9), and the operator counts a call
 * landed by what the server says of itself, not by the Job; a webhook's record ends when the hook says so. So the
 * driver's record is a late bound: the server back up is the earlier one, where it was seen down in between.
 */
export function backUpAfter(h: History, op: DriverOp): number | undefined {
  if (!op.landed) return undefined;
  const rec = h.servers.filter((r) => r.server === op.server && r.t >= op.start).sort((a, b) => a.t - b.t);
  const down = rec.find((r) => !r.up);
  if (!down) return undefined;
  const faulted = (h.faultDown ?? []).some((f) => f.server === op.server && f.to >= op.start && f.from <= down.t);
  if (faulted) return undefined;
  return rec.find((r) => r.up && r.t > down.t)?.t;
}

function enableProxyFirst(h: History): Violation[] {
  const firstUp = [...h.ops].filter((o) => o.action === 'Upgrade').sort((a, b) => a.start - b.start)[0];
  if (!firstUp) return [];
  const upgraded = new Set(h.ops.filter((o) => o.action === 'Upgrade').map((o) => o.server));
  const out: Violation[] = [];
  for (const server of [...upgraded].sort()) {
    const last = h.ops.filter((o) => o.server === server && o.action === 'EnableProxy' && o.start < firstUp.start).sort((a, b) => a.start - b.start).at(-1);
    if (!last) continue;
    const landedAt = Math.min(last.end ?? Infinity, last.readyAfter ?? Infinity, backUpAfter(h, last) ?? Infinity);
    if (last.landed && landedAt <= firstUp.start) continue;
    out.push({ rule: 'EnableProxyFirst', t: firstUp.start, message: `Upgrade ${firstUp.server} (${firstUp.key}) started at ${firstUp.start} while the gate's EnableProxy of ${server} (${last.key}) had ${last.end === undefined ? 'not ended' : last.landed ? `landed only at ${last.end}` : 'failed'}` });
  }
  return out;
}

/**
 * TwoPhase: phase one's calls (Upgrade with emulation) all come before phase two's (Upgrade without it): no Upgrade
 * with emulation starts after one without emulation started (docs/two-phase.md). OnePhase histories have none.
 */
function phaseOneFirst(h: History): Violation[] {
  const ups = h.ops.filter((o) => o.action === 'Upgrade').sort((a, b) => a.start - b.start);
  const firstLift = ups.find((o) => !o.emulated);
  if (!firstLift || !ups.some((o) => o.emulated)) return [];
  return ups.filter((o) => o.emulated && o.start > firstLift.start).map((o) => ({ rule: 'PhaseOneFirst' as const, t: o.start, message: `Upgrade ${o.server} (${o.key}) with emulation at ${o.start}, after phase two's first call (${firstLift.server}, ${firstLift.start})` }));
}

/** status.stage only moves forward: once API (phase two began) it stays API (docs/two-phase.md). */
function stageNeverBack(h: History): Violation[] {
  const statuses = [...h.statuses].sort((a, b) => a.t - b.t);
  const api = statuses.find((s) => s.stage === 'API');
  const back = api && statuses.find((s) => s.t > api.t && s.stage !== undefined && s.stage !== 'API');
  return api && back ? [{ rule: 'StageNeverBack', t: back.t, message: `status.stage went back from API (since ${api.t}) to ${back.stage} at ${back.t}` }] : [];
}

/** Checks one upgrade's history against every rule (or the rules of `only`). */
export function checkHistory(h: History, only: ReadonlySet<Rule> = new Set(RULES)): Verdict {
  const breach = breachActedOn(h);
  const deadline = deadlineActedOn(h, [...(h.operatorBlind ?? []), ...noServerUp(h)]);
  const violations = [
    ...oncePerKey(h),
    ...oneInFlight(h),
    ...rollbackAfterLanding(h),
    ...terminalMatchesFleet(h),
    ...downWithinBatch(h),
    ...breach.violations,
    ...comesToRest(h),
    ...resumeCompletes(h),
    ...no404AfterConvergence(h),
    ...rollbackOnlyWhenSafe(h),
    ...stoppedSendsNothing(h),
    ...enableProxyFirst(h),
    ...phaseOneFirst(h),
    ...stageNeverBack(h),
    ...noCallWhileGateFails(h),
    ...noCallOutsideWindow(h),
    ...rollbackNotDelayedByGateOrWindow(h, [...(h.operatorBlind ?? []), ...noServerUp(h)]),
    ...acceptedRiskRecorded(h, WATCH_LAG_MS),
    ...holdNeedsApprovalOrDeadline(h),
    ...deadline.violations,
    ...componentSkewHoldsRollback(h),
  ].filter((v) => only.has(v.rule)).sort((a, b) => a.t - b.t);
  return { violations, breachReactionMs: breach.reactions, ...(deadline.reactions.length ? { deadlineReactionMs: deadline.reactions } : {}) };
}

/** p50, p95 and max of a list of durations (ms); undefined when empty. */
export function percentiles(xs: readonly number[]): { p50: number; p95: number; max: number } | undefined {
  if (xs.length === 0) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
  return { p50: at(0.5), p95: at(0.95), max: s.at(-1)! };
}
