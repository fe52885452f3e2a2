// The checker's rules for the start conditions (docs/lifecycle.md "Gates and windows hold starts, never what is
// under way"; docs/api.md acceptRisks): pure, on what the harness knows of the gate (the gauge it set, Prometheus
// down or hung), of the window (the spec's recurring windows, evaluated here, not by the operator's code) and of the
// preflight findings it made real, and the driver calls the watch saw recorded. Imported by history-check.ts; each rule has a VIOLATING history in test/campaign/history-check.test.ts.
import type { History, Span, Violation } from './history-check.ts';

/** What the harness knows of the gate: when its gauge failed, when Prometheus was down or hung (unknown: not held). */
export interface GateRecord {
  failing: Span[];
  unknown: Span[];
}

export interface RecurringWindowSpec {
  days: string[];
  /** HH:MM in the window's time zone. */
  start: string;
  /** A Go duration (90m, 1h30m). */
  duration: string;
}

/** spec.window as the upgrade was given it. */
export interface WindowSpec {
  timeZone: string;
  recurring: RecurringWindowSpec[];
  exclusions?: { start: string; end: string }[];
}

/**
 * The preflight findings the harness made real: `made`, acceptable ones present for the whole run (a serving
 * certificate expiring soon), of which the spec named `accepted` in acceptRisks; `hard`, when a finding no spec can
 * accept was there (a Node whose kubelet is newer than the target), from before the upgrade was created.
 */
export interface RiskRecord {
  accepted: string[];
  made: string[];
  hard: Span[];
}

/** A driver call as the watch first saw it recorded in status.driverCalls (Requested: decided, maybe not delivered). */
export interface CallSeen {
  t: number;
  key: string;
  batch?: number;
  action: string;
}

/**
 * From the gauge flipping to a batch's first call seen, what may pass while the operator still held the old value:
 * Prometheus scrapes it each second (SCRAPE: 1 s, and a scrape may take its 1 s timeout), and the look that queried
 * it, the step that recorded the call and the watch that saw the write take up to DECISION_LAG_MS.
 */
export const DECISION_LAG_MS = 5_000;
export const GATE_LAG_MS = 1_000 + 1_000 + DECISION_LAG_MS;
/** The window is read on the operator's clock at the step: only the step, its write and the watch lag (DECISION_LAG_MS). */
export const WINDOW_LAG_MS = DECISION_LAG_MS;
/**
 * A rollback's first Rollback call is recorded within this of when it may begin (RollingBack seen, every call in
 * flight landed or timed out): the look that sees the last call Done (an interval of 2-3 s, the identity Lease of the
 * restarted server) and the rollback verdict's storage reads (a 5 s deadline each).
 */
export const ROLLBACK_START_MS = 20_000;

const WAIT_REASONS = new Set(['GateNotHeld', 'GateUnknown', 'OutsideWindow']);
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const DAY = 86_400_000;

/** A Go duration of hours, minutes, seconds (what RecurringWindow.duration takes) in ms; NaN when not one. */
export function goDurationMs(s: string): number {
  const parts = [...s.matchAll(/(\d+(?:\.\d+)?)(h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== s) return Number.NaN;
  return parts.reduce((ms, p) => ms + Number(p[1]) * { h: 3_600_000, m: 60_000, s: 1_000 }[p[2] as 'h' | 'm' | 's'], 0);
}

/** Whether a UTC window is open at `t`; undefined for another time zone (not judged). */
export function windowOpenAt(w: WindowSpec, t: number): boolean | undefined {
  if (w.timeZone !== 'UTC') return undefined;
  if ((w.exclusions ?? []).some((x) => Date.parse(x.start) <= t && t < Date.parse(x.end))) return false;
  const midnight = Math.floor(t / DAY) * DAY;
  return w.recurring.some((r) => {
    const [hh, mm] = r.start.split(':').map(Number) as [number, number];
    const dur = goDurationMs(r.duration);
    // A window of up to 168 h opened up to 7 days before.
    for (let back = 0; back <= 7; back++) {
      const day = midnight - back * DAY;
      if (!r.days.includes(DAYS[new Date(day).getUTCDay()]!)) continue;
      const open = day + hh * 3_600_000 + mm * 60_000;
      if (open <= t && t < open + dur) return true;
    }
    return false;
  });
}

/** Spans merged where they touch or overlap, sorted. */
function merged(spans: readonly Span[]): Span[] {
  const out: Span[] = [];
  for (const s of [...spans].sort((a, b) => a.from - b.from)) {
    const last = out.at(-1);
    if (last && s.from <= last.to) last.to = Math.max(last.to, s.to);
    else out.push({ ...s });
  }
  return out;
}

const coveredThroughout = (spans: readonly Span[], from: number, to: number): boolean => merged(spans).some((s) => s.from <= from && to <= s.to);

/**
 * The first call of each batch (a batch's start: the gate pass's first EnableProxy is batch 0's, then each Upgrade
 * batch's), when it was decided at the latest: the watch first saw it recorded, or the driver took it, whichever
 * came first. A call of a batch already started, a Rollback and a RevertProxy are not starts.
 */
export function batchStarts(h: History): { batch: number; key: string; action: string; t: number }[] {
  const accepted = new Map(h.ops.map((o) => [o.key, o.start]));
  const first = new Map<number, { batch: number; key: string; action: string; t: number }>();
  for (const c of h.callsSeen ?? []) {
    if (c.batch === undefined || (c.action !== 'Upgrade' && c.action !== 'EnableProxy')) continue;
    const t = Math.min(c.t, accepted.get(c.key) ?? c.t);
    const prev = first.get(c.batch);
    if (!prev || t < prev.t) first.set(c.batch, { batch: c.batch, key: c.key, action: c.action, t });
  }
  return [...first.values()].sort((a, b) => a.t - b.t);
}

/**
 * No batch starts while the gate fails or cannot be evaluated, as the harness knows it (the gauge at 0, Prometheus
 * down or hung), allowing GATE_LAG_MS: a start is judged when the gate failed or was unknown for all of the
 * GATE_LAG_MS before it. Within GATE_LAG_MS after Prometheus came back its last sample may still be the value from
 * before it went away: not judged there.
 */
export function noCallWhileGateFails(h: History): Violation[] {
  const g = h.gate;
  if (!g) return [];
  const held = [...g.failing, ...g.unknown];
  return batchStarts(h)
    .filter((s) => coveredThroughout(held, s.t - GATE_LAG_MS, s.t) && !g.unknown.some((u) => u.to >= s.t - GATE_LAG_MS && u.to <= s.t))
    .map((s) => ({ rule: 'NoCallWhileGateFails' as const, t: s.t, message: `batch ${s.batch} started (${s.action}, ${s.key}) at ${s.t} while the gate had ${g.failing.some((f) => f.from <= s.t && s.t <= f.to) ? 'failed' : 'been unknown'} since at least ${s.t - GATE_LAG_MS}` }));
}

/** No batch starts outside the window (the spec's, evaluated here in UTC) for all of the WINDOW_LAG_MS before it. */
export function noCallOutsideWindow(h: History): Violation[] {
  const w = h.window;
  if (!w) return [];
  const closedThroughout = (from: number, to: number): boolean => {
    for (let t = from; t < to; t += 1_000) if (windowOpenAt(w, t) !== false) return false;
    return windowOpenAt(w, to) === false;
  };
  return batchStarts(h)
    .filter((s) => closedThroughout(s.t - WINDOW_LAG_MS, s.t))
    .map((s) => ({ rule: 'NoCallOutsideWindow' as const, t: s.t, message: `batch ${s.batch} started (${s.action}, ${s.key}) at ${s.t} outside the maintenance window (closed since at least ${s.t - WINDOW_LAG_MS})` }));
}

/**
 * A rollback is never held by a gate or the window: a RollingBack status never waits on one, and where the gate
 * failed or the window was closed when a rollback could begin (RollingBack seen, each call in flight landed or timed
 * out), its first Rollback call is recorded within ROLLBACK_START_MS — judged only while it stays RollingBack that long,
 * and no span of `blind` (no replica leading, no server to write to) falls in it.
 */
export function rollbackNotDelayedByGateOrWindow(h: History, blind: readonly Span[]): Violation[] {
  const out: Violation[] = [];
  const statuses = [...h.statuses].sort((a, b) => a.t - b.t);
  const waited = statuses.find((s) => s.phase === 'RollingBack' && s.waiting !== undefined && WAIT_REASONS.has(s.waiting));
  if (waited) out.push({ rule: 'RollbackNotDelayedByGateOrWindow', t: waited.t, message: `RollingBack at ${waited.t} waits on ${waited.waiting}` });
  const timeout = h.spec.batchTimeoutMs;
  if (timeout === undefined || (!h.gate && !h.window)) return out;
  const heldAt = (t: number): boolean => (h.gate !== undefined && [...h.gate.failing, ...h.gate.unknown].some((s) => s.from <= t && t <= s.to))
    || (h.window !== undefined && windowOpenAt(h.window, t) === false);
  const seen = h.callsSeen ?? [];
  const accepted = new Map(h.ops.map((o) => [o.key, o]));
  statuses.forEach((s, i) => {
    if (s.phase !== 'RollingBack' || statuses[i - 1]?.phase === 'RollingBack') return;
    // Every call decided before the rollback began is in flight until it landed, failed (a driver that reports it),
    // or its batchTimeout ran out.
    const until = seen.filter((c) => c.action !== 'Rollback' && c.t < s.t).map((c) => {
      const op = accepted.get(c.key);
      if (op?.end !== undefined && (op.landed || h.spec.driverReportsFailure)) return op.end;
      return Math.min(c.t, op?.start ?? c.t) + timeout;
    });
    const from = Math.max(s.t, ...until);
    const by = from + ROLLBACK_START_MS;
    const next = statuses.find((x) => x.t > s.t && x.phase !== 'RollingBack');
    if ((next !== undefined && next.t <= by) || by > h.endedAt || !heldAt(from)) return;
    if (blind.some((b) => b.from <= by && b.to >= s.t)) return;
    const first = [...seen.filter((c) => c.action === 'Rollback').map((c) => c.t), ...h.ops.filter((o) => o.action === 'Rollback').map((o) => o.start)].filter((t) => t >= s.t - DECISION_LAG_MS).sort((a, b) => a - b)[0];
    if (first !== undefined && first <= by) return;
    out.push({ rule: 'RollbackNotDelayedByGateOrWindow', t: by, message: `RollingBack since ${s.t}, free to begin at ${from} while ${h.gate && [...h.gate.failing, ...h.gate.unknown].some((x) => x.from <= from && from <= x.to) ? 'the gate failed' : 'the window was closed'}, yet no Rollback call by ${by}${first === undefined ? '' : ` (the first at ${first})`}` });
  });
  return out;
}

/**
 * Preflight lets an upgrade start (its first driver call) on a blocking finding the spec accepted only once
 * status.acceptedRisks records it (seen by the watch up to WATCH_LAG_MS after that call: the write came first); on
 * one it did not accept, never; and never while a hard finding the harness made before the upgrade was created is
 * still there (no spec can accept it).
 */
export function acceptedRiskRecorded(h: History, watchLagMs: number): Violation[] {
  const risks = h.risks;
  const statuses = [...h.statuses].sort((a, b) => a.t - b.t);
  const first = [...(h.callsSeen ?? []).map((c) => c.t), ...h.ops.map((o) => o.start)].sort((a, b) => a - b)[0];
  if (!risks || first === undefined) return [];
  const out: Violation[] = [];
  for (const f of risks.made) {
    if (!risks.accepted.includes(f)) {
      out.push({ rule: 'AcceptedRiskRecorded', t: first, message: `the first driver call at ${first} went out past the blocking finding ${f}, which spec.acceptRisks does not name` });
      continue;
    }
    if (!statuses.some((s) => s.t <= first + watchLagMs && (s.acceptedRisks ?? []).includes(f))) out.push({ rule: 'AcceptedRiskRecorded', t: first, message: `the first driver call at ${first} went out past the accepted finding ${f} before status.acceptedRisks recorded it` });
  }
  const createdBy = statuses[0]?.t ?? first;
  for (const x of risks.hard.filter((x) => x.from <= createdBy && first < x.to)) {
    out.push({ rule: 'AcceptedRiskRecorded', t: first, message: `the first driver call at ${first} went out while a hard finding was there (from ${x.from} to ${x.to}): never acceptable, it must block` });
  }
  return out;
}
