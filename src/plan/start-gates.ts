/**
 * Whether the next step may start: the maintenance window (src/plan/window.ts) and the health gates of spec.gates,
 * checked before the first call (the proxy gate pass, or batch 1) and before every later batch — never inside a
 * batch in flight, never before a rollback or an abort. Pure: the gates' facts are the observation's
 * (src/observe/gates.ts reads them).
 *
 * Unknown is unsafe: a query that failed or was not read, a comparison on an empty result, Nodes not read or none
 * labelled control-plane — each does not hold (reason GateUnknown). The wait re-checks every analysis interval,
 * and lifts by itself once every gate holds.
 */
import type { ResolvedSpec } from '../api/defaults.ts';
import type { PlanContext } from './context.ts';
import type { Observation } from './observation.ts';
import { isUp } from './peers.ts';
import { windowAt } from './window.ts';
import { WINDOW_WAIT, isTerminal, type WaitReason } from '../api/vocabulary.ts';

export interface GateVerdict {
  name: string;
  /** undefined: could not be evaluated (does not hold). */
  holds: boolean | undefined;
  query?: string;
  /** What was found, for the message. */
  value: string;
}

/** The reasons of a wait this file decides, as `reason:` literals so test/docs/reasons.test.ts finds them. */
export const START_WAIT_REASONS = {
  gateNotHeld: { reason: 'GateNotHeld' },
  gateUnknown: { reason: 'GateUnknown' },
  outsideWindow: { reason: 'OutsideWindow' },
} as const satisfies Record<string, { reason: WaitReason }>;

const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';
/** Series named in a message, at most. */
const SHOWN_SERIES = 3;

function labelsText(labels: Record<string, string>): string {
  const entries = Object.entries(labels);
  return `{${entries.map(([k, v]) => `${k}="${v}"`).join(', ')}}`;
}

function compare(op: string, a: number, b: number): boolean {
  switch (op) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '==':
      return a === b;
    case '!=':
      return a !== b;
    case '>=':
      return a >= b;
    case '>':
      return a > b;
    default:
      return false;
  }
}

/** Every gate of the spec, judged on the observation. */
export function evaluateGates(spec: ResolvedSpec, obs: Observation): GateVerdict[] {
  const g = spec.gates;
  const out: GateVerdict[] = [];
  if (g.serversReady) {
    const down = obs.peers.filter((p) => !isUp(p)).map((p) => `${p.hostname} (${p.stale ? 'stale lease' : !p.ready ? 'not ready' : 'no /version'})`);
    out.push(obs.peers.length === 0 ? { name: 'serversReady', holds: undefined, value: 'no kube-apiserver seen' } : { name: 'serversReady', holds: down.length === 0, value: down.length === 0 ? `${obs.peers.length} servers ready` : `not ready: ${down.join(', ')}` });
  }
  if (g.controlPlaneNodesReady) {
    const nodes = obs.gates?.controlPlaneNodes;
    if (nodes === undefined) out.push({ name: 'controlPlaneNodesReady', holds: undefined, value: 'the Nodes were not read' });
    else if (!Array.isArray(nodes)) out.push({ name: 'controlPlaneNodesReady', holds: undefined, value: `the Nodes could not be read: ${nodes.error}` });
    else if (nodes.length === 0) out.push({ name: 'controlPlaneNodesReady', holds: undefined, value: `no Node labelled ${CONTROL_PLANE_LABEL}` });
    else {
      const notReady = nodes.filter((n) => !n.ready).map((n) => n.name);
      out.push({ name: 'controlPlaneNodesReady', holds: notReady.length === 0, value: notReady.length === 0 ? `${nodes.length} control-plane Nodes Ready` : `not Ready: ${notReady.join(', ')}` });
    }
  }
  for (const q of g.queries) {
    const seen = obs.gates?.queries.find((x) => x.name === q.name);
    const base = { name: q.name, query: q.query };
    if (seen === undefined) {
      out.push({ ...base, holds: undefined, value: 'not evaluated' });
      continue;
    }
    if (seen.error !== undefined || seen.samples === undefined) {
      out.push({ ...base, holds: undefined, value: `cannot be evaluated: ${seen.error ?? 'no answer'}` });
      continue;
    }
    const samples = seen.samples;
    const shown = samples.slice(0, SHOWN_SERIES).map((x) => `${labelsText(x.labels)} ${x.value}`).join('; ') + (samples.length > SHOWN_SERIES ? `; and ${samples.length - SHOWN_SERIES} more` : '');
    if (q.op === undefined || q.value === undefined) {
      out.push({ ...base, holds: samples.length === 0, value: samples.length === 0 ? 'empty' : `${samples.length} series: ${shown}` });
      continue;
    }
    if (samples.length === 0) {
      out.push({ ...base, holds: undefined, value: `empty: no value to compare ${q.op} ${q.value}` });
      continue;
    }
    const failing = samples.filter((x) => !compare(q.op!, x.value, q.value!));
    out.push({ ...base, holds: failing.length === 0, value: failing.length === 0 ? `every series ${q.op} ${q.value}` : `${failing.length} series not ${q.op} ${q.value}: ${failing.slice(0, SHOWN_SERIES).map((x) => `${labelsText(x.labels)} ${x.value}`).join('; ')}` });
  }
  return out;
}

/** status.window from spec.window at now (written on every step of an upgrade that has one). */
export function recordWindow(ctx: PlanContext): ReturnType<typeof windowAt> | undefined {
  const w = ctx.spec.window;
  if (!w) {
    delete ctx.status.window;
    return undefined;
  }
  const st = windowAt(w, ctx.now.getTime());
  ctx.status.window = {
    open: st.open,
    ...(st.closesAt === undefined ? {} : { closesAt: new Date(st.closesAt).toISOString() }),
    ...(st.nextStart === undefined ? {} : { nextStart: new Date(st.nextStart).toISOString() }),
    checkedAt: ctx.now.toISOString(),
  };
  return st;
}

/**
 * Before the first call and before each batch: true when `what` (e.g. "batch 2") must wait — outside the window, or
 * a gate does not hold — said in ctx.wait, with a look again at the next window start or the next interval.
 */
export function startHeld(ctx: PlanContext, what: string): boolean {
  const interval = ctx.spec.analysis.intervalMs;
  const st = recordWindow(ctx);
  if (st && !st.open) {
    const until = st.nextStart === undefined ? undefined : new Date(st.nextStart).toISOString();
    const why = st.excludedBy ? ` (excluded: ${st.excludedBy})` : '';
    const message = `${what} waits for the maintenance window${why}: ${until ? `next opens at ${until}` : `none opens within the next 60 days`} (${ctx.spec.window!.timeZone})`;
    ctx.wait(START_WAIT_REASONS.outsideWindow.reason, message, until ? { until } : {});
    ctx.progressMessage = `waiting: ${message}`;
    // Wake at the opening itself, not up to an interval after it.
    ctx.requeue(st.nextStart === undefined ? Math.max(interval, 60_000) : Math.max(1_000, Math.min(st.nextStart - ctx.now.getTime(), Math.max(interval, 60_000))));
    return true;
  }
  const failing = evaluateGates(ctx.spec, ctx.obs).find((v) => v.holds !== true);
  if (!failing) return false;
  const unknown = failing.holds === undefined;
  const message = `${what} waits: gate ${failing.name}${failing.query ? ` (${failing.query})` : ''} ${unknown ? 'cannot be evaluated, which counts as not holding' : 'does not hold'}: ${failing.value}`;
  ctx.wait(unknown ? START_WAIT_REASONS.gateUnknown.reason : START_WAIT_REASONS.gateNotHeld.reason, message, { gate: failing.name });
  ctx.progressMessage = `waiting: ${message}`;
  ctx.requeue(interval);
  return true;
}

/**
 * When the step ends: status.waiting and the Waiting condition from ctx.waiting — kept with its `since` while the
 * reason stays the same, an Event when it begins or its cause changes, cleared once the step no longer waits. A
 * paused or finished upgrade does not wait (a pause says why itself).
 */
export function settleWaiting(ctx: PlanContext): void {
  const prev = ctx.status.waiting;
  const w = ctx.phase === 'Paused' || isTerminal(ctx.phase) ? undefined : ctx.waiting;
  if (!w) {
    if (prev) {
      delete ctx.status.waiting;
      ctx.condition({ type: 'Waiting', status: 'False', reason: 'NotWaiting', message: `no longer waiting (was ${prev.reason})` });
    }
    return;
  }
  const same = prev?.reason === w.reason;
  ctx.status.waiting = {
    reason: w.reason,
    message: w.message.slice(0, 4096),
    ...(w.gate === undefined ? {} : { gate: w.gate }),
    since: same && prev.since ? prev.since : ctx.now.toISOString(),
    ...(w.until === undefined ? {} : { until: w.until }),
  };
  ctx.condition({ type: 'Waiting', status: 'True', reason: w.reason, message: w.message });
  // Preflight's waits have Events of their own (its reasons); a gate's or the window's is said here.
  const own = Object.values(START_WAIT_REASONS).some((r) => r.reason === w.reason);
  if (own && (!same || prev.gate !== w.gate)) ctx.event(w.reason === WINDOW_WAIT ? 'Normal' : 'Warning', 'Waiting', `${w.reason}: ${w.message}`);
}

/** Whether the proxy gate pass made its first call (it is then a step in flight: no gate holds it). */
export function gatePassStarted(ctx: PlanContext): boolean {
  return (ctx.status.driverCalls ?? []).some((c) => c.batch === 0 && c.action === 'EnableProxy');
}

