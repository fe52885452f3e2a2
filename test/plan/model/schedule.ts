// Generated schedules of a hostile fleet, and the runner that plays one through the simulated shell.
//
// A schedule is the setup (fleet, versions, spec) and a list of steps; each step lets time pass, applies
// at most one perturbation, and reconciles (possibly crashing at one of the shell's crash points). After
// the schedule the faults stop ("calm") and the run must come to rest (I6).
import fc from 'fast-check';
import type { ApiServerUpgradeSpec } from '../../../src/api/types.generated.ts';
import { ModelRun, type Inv, type RunSetup, START } from './run.ts';
import { APPROVE_ANNOTATION } from '../../../src/api/vocabulary.ts';
import { WINDOW_STARTS, nextWindowEdge, release, stamp, type DeliveryFault, type Fate } from './world.ts';
import type { ProofMode } from '../flag-proof-sim.ts';

export const OLD = 'v1.35.4';

export interface Setup {
  servers: number;
  gateOn: boolean;
  target: 'v1.36.3' | 'v1.35.5';
  suffix: '' | '+rke2r1';
  batchSize: number | string;
  soak: string;
  batchTimeout: '1m' | '3m';
  failureLimit: number;
  onBreach: 'Pause' | 'Rollback';
  gate: 'Auto' | 'Enabled' | 'Unmanaged';
  revertAfter: boolean;
  storageSafe: boolean;
  pausedAtCreation: boolean;
  downDelayS: number;
  upDelayS: number;
  staleOnStop: boolean;
  /** spec.strategy.phases (TwoPhase needs a minor upgrade: with the patch target, preflight refuses it). */
  phases: 'OnePhase' | 'TwoPhase';
  /** spec.gates with one PromQL gate (`health`: no critical alert firing); absent: none. */
  gated?: boolean;
  /** spec.window: windows of this many minutes every 4 minutes from 10:00 to 11:00 UTC; absent or 0: none. */
  windowOpenMin?: 0 | 1 | 2 | 3;
  /** TwoPhase: spec.strategy.phaseTwo — none (Automatic), held until an approval, or with a 2m deadline that proceeds or rolls back. */
  hold?: 'none' | 'approval' | 'proceed' | 'rollback';
  /** The static Pod driver (its flag proof: test/plan/flag-proof-sim.ts) instead of the webhook's; absent: webhook. */
  staticPod?: boolean;
  /** How long a flag proof Job takes to its verdict (static Pod driver). */
  proofDelayS?: 0 | 5 | 20 | 60;
  /** The first node's kube-controller-manager when the run starts: on the from-version (absent), a minor past the target, or of unknown version. */
  componentAt?: 'from' | 'newer' | 'unknown';
}



export type Event =
  | { e: 'fault'; f: DeliveryFault; n: number }
  | { e: 'fate'; f: Exclude<Fate, 'land'> }
  | { e: 'batchSize'; v: number | string }
  | { e: 'paused'; v: boolean }
  | { e: 'onBreach'; v: 'Pause' | 'Rollback' }
  | { e: 'resume' }
  | { e: 'abort' }
  | { e: 'approve' }
  | { e: 'join'; at: 'from' | 'target' }
  | { e: 'leave'; i: number }
  | { e: 'breach'; s: number; v: 'Breach' | 'Inconclusive' }
  | { e: 'blip'; i: number }
  | { e: 'stuck'; s: number }
  | { e: 'flaky'; n: number }
  | { e: 'reportFault'; n: number }
  | { e: 'health'; v: 'hold' | 'fail' | 'unknown' }
  | { e: 'edge'; d: -1 | 0 | 1 }
  /** The static Pod driver's flag proof: node i's binary answers v to its next proofs; its Jobs are lost; its manifest edited by hand. */
  | { e: 'proof'; i: number; v: ProofMode }
  | { e: 'proofLost'; i: number }
  | { e: 'manifestEdit'; i: number; v: ProofMode }
  /** A human moves the kube-controller-manager on the i-th node to the from-version, the target, a minor past the target, or an image without a version. */
  | { e: 'component'; i: number; to: 'from' | 'target' | 'newer' | 'unknown' };

export interface Step {
  /** Seconds that pass before the reconcile. */
  dt: number;
  ev?: Event;
  /** -1: no crash; 0: before persisting the plan; 1+2i: before delivery i; 2+2i: after delivery i, before recording it. */
  crash: number;
}

export interface Schedule {
  setup: Setup;
  steps: Step[];
  /**
   * The control plane's skew, generated after the rest (so the setups and steps a seed gives are those it gave before
   * components were modelled): the first node's kube-controller-manager at the start, and moves by a human before
   * the reconcile of a step (its index).
   */
  skew?: { at: NonNullable<Setup['componentAt']>; moves: { step: number; i: number; to: 'from' | 'target' | 'newer' | 'unknown' }[] };
}

const BATCH_SIZES = [1, 2, 3, '50%'];

export const setupArb: fc.Arbitrary<Setup> = fc.record({
  servers: fc.integer({ min: 1, max: 5 }),
  gateOn: fc.boolean(),
  target: fc.constantFrom('v1.36.3' as const, 'v1.35.5' as const),
  suffix: fc.constantFrom('' as const, '' as const, '+rke2r1' as const),
  batchSize: fc.constantFrom(...BATCH_SIZES),
  soak: fc.constantFrom('0s', '15s', '40s'),
  batchTimeout: fc.constantFrom('1m' as const, '3m' as const),
  failureLimit: fc.integer({ min: 1, max: 3 }),
  onBreach: fc.constantFrom('Pause' as const, 'Rollback' as const),
  gate: fc.constantFrom('Auto' as const, 'Enabled' as const, 'Unmanaged' as const),
  revertAfter: fc.boolean(),
  storageSafe: fc.boolean(),
  pausedAtCreation: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  downDelayS: fc.integer({ min: 0, max: 6 }),
  upDelayS: fc.integer({ min: 2, max: 25 }),
  staleOnStop: fc.boolean(),
  phases: fc.constantFrom('OnePhase' as const, 'OnePhase' as const, 'TwoPhase' as const),
  gated: fc.boolean(),
  windowOpenMin: fc.constantFrom(0 as const, 0 as const, 1 as const, 2 as const, 3 as const),
  hold: fc.constantFrom('none' as const, 'approval' as const, 'approval' as const, 'proceed' as const, 'rollback' as const),
});

const eventArb: fc.Arbitrary<Event> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ e: fc.constant('fault' as const), f: fc.constantFrom<DeliveryFault>('unreachable', 'lost', 'reject', '5xx'), n: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 4, arbitrary: fc.record({ e: fc.constant('fate' as const), f: fc.constantFrom<Exclude<Fate, 'land'>>('fail', 'hangDown', 'hangUp', 'late', 'rename', 'pullFail', 'failReported', 'landReported') }) },
  { weight: 1, arbitrary: fc.record({ e: fc.constant('batchSize' as const), v: fc.constantFrom(...BATCH_SIZES) }) },
  { weight: 1, arbitrary: fc.record({ e: fc.constant('paused' as const), v: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ e: fc.constant('onBreach' as const), v: fc.constantFrom('Pause' as const, 'Rollback' as const) }) },
  { weight: 3, arbitrary: fc.record({ e: fc.constant('resume' as const) }) },
  { weight: 1, arbitrary: fc.record({ e: fc.constant('abort' as const) }) },
  { weight: 2, arbitrary: fc.record({ e: fc.constant('approve' as const) }) },
  { weight: 1, arbitrary: fc.record({ e: fc.constant('join' as const), at: fc.constantFrom('from' as const, 'from' as const, 'target' as const) }) },
  { weight: 1, arbitrary: fc.record({ e: fc.constant('leave' as const), i: fc.integer({ min: 0, max: 5 }) }) },
  { weight: 4, arbitrary: fc.record({ e: fc.constant('breach' as const), s: fc.constantFrom(10, 30, 60, 120, 300), v: fc.constantFrom('Breach' as const, 'Breach' as const, 'Inconclusive' as const) }) },
  { weight: 2, arbitrary: fc.record({ e: fc.constant('blip' as const), i: fc.integer({ min: 0, max: 5 }) }) },
  { weight: 2, arbitrary: fc.record({ e: fc.constant('stuck' as const), s: fc.constantFrom(30, 90, 200, 400) }) },
  { weight: 1, arbitrary: fc.record({ e: fc.constant('flaky' as const), n: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ e: fc.constant('reportFault' as const), n: fc.integer({ min: 1, max: 4 }) }) },
  // A gate flapping (a critical alert firing and clearing, Prometheus going away), and time moved to a window's edge
  // (a crash there is a leader change at the edge).
  { weight: 8, arbitrary: fc.record({ e: fc.constant('health' as const), v: fc.constantFrom('hold' as const, 'fail' as const, 'fail' as const, 'unknown' as const) }) },
  { weight: 2, arbitrary: fc.record({ e: fc.constant('edge' as const), d: fc.constantFrom(-1 as const, 0 as const, 1 as const) }) },
);

/** The static Pod driver's flag proof: what a node's binary answers, its proof Jobs lost, a hand edit of its manifest. */
const proofEventArb: fc.Arbitrary<Event> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ e: fc.constant('proof' as const), i: fc.integer({ min: 0, max: 5 }), v: fc.constantFrom<ProofMode>('refuse', 'refuse', 'inconclusive', 'notRun', 'accept') }) },
  { weight: 1, arbitrary: fc.record({ e: fc.constant('proofLost' as const), i: fc.integer({ min: 0, max: 5 }) }) },
  { weight: 4, arbitrary: fc.record({ e: fc.constant('manifestEdit' as const), i: fc.integer({ min: 0, max: 5 }), v: fc.constantFrom<ProofMode>('refuse', 'refuse', 'accept', 'accept', 'inconclusive') }) },
);

const stepOf = (events: fc.Arbitrary<Event>): fc.Arbitrary<Step> => fc.record(
  {
    dt: fc.constantFrom(0, 2, 5, 5, 10, 10, 20, 45, 90),
    ev: fc.option(events, { freq: 2, nil: undefined }),
    crash: fc.oneof({ weight: 6, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 4 }) }),
  },
  { requiredKeys: ['dt', 'crash'] },
);
const stepArb = stepOf(eventArb);

// Every generated run starts with the components on the from-version (one refused at the start would stall the run
// at preflight until calm, and the generated runs would reach the driver's failures less often): a move at step 0
// is a preflight refused, a later one a component moved mid-run.
const skewArb = (maxSteps: number): fc.Arbitrary<NonNullable<Schedule['skew']>> => fc.record({
  at: fc.constant('from' as const),
  moves: fc.array(fc.record({
    step: fc.integer({ min: 0, max: Math.max(0, maxSteps - 1) }),
    i: fc.integer({ min: 0, max: 4 }),
    to: fc.constantFrom('from' as const, 'target' as const, 'target' as const, 'newer' as const, 'unknown' as const),
  }), { maxLength: 3 }),
});

export const scheduleArb = (maxSteps = 24): fc.Arbitrary<Schedule> => fc.record({ setup: setupArb, steps: fc.array(stepArb, { maxLength: maxSteps }), skew: skewArb(maxSteps) });

function phaseTwoOf(hold: 'approval' | 'proceed' | 'rollback'): NonNullable<NonNullable<ApiServerUpgradeSpec['strategy']>['phaseTwo']> {
  if (hold === 'approval') return { start: 'Approval' };
  return { start: 'Approval', deadline: '2m', onDeadline: hold === 'proceed' ? 'Proceed' : 'Rollback' };
}

/** Runs of the static Pod driver: its flag proof takes time, and the proof events join the others. */
export const staticPodScheduleArb = (maxSteps = 24): fc.Arbitrary<Schedule> => fc.record({
  setup: fc.record({ base: setupArb, proofDelayS: fc.constantFrom(0 as const, 5 as const, 20 as const, 60 as const) }).map(({ base, proofDelayS }): Setup => ({ ...base, staticPod: true, proofDelayS })),
  steps: fc.array(stepOf(fc.oneof({ weight: 6, arbitrary: eventArb }, { weight: 2, arbitrary: proofEventArb })), { maxLength: maxSteps }),
});

export function specOf(s: Setup): ApiServerUpgradeSpec {
  return {
    targetVersion: s.target,
    paused: s.pausedAtCreation,
    driver: s.staticPod ? { staticPod: { readyTimeout: '30s' } } : { webhook: { url: 'https://hook.example/replace' } },
    strategy: { batchSize: s.batchSize, soakDuration: s.soak, batchTimeout: s.batchTimeout, ...(s.phases === 'TwoPhase' ? { phases: 'TwoPhase', phaseSoakDuration: '15s', ...(s.hold && s.hold !== 'none' ? { phaseTwo: phaseTwoOf(s.hold) } : {}) } : {}) },
    proxy: { gate: s.gate, revertAfter: s.revertAfter, allowAlphaGate: true },
    analysis: { interval: '10s', failureLimit: s.failureLimit, onBreach: s.onBreach, thresholds: { discoveryConvergence: '1m' } },
    ...(s.gated ? { gates: { prometheus: { address: 'http://prometheus:9090' }, queries: [{ name: 'health', query: 'ALERTS{alertstate="firing",severity="critical"}' }] } } : {}),
    ...(s.windowOpenMin ? { window: { timeZone: 'UTC', recurring: WINDOW_STARTS.map((start) => ({ days: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'] as const, start, duration: `${s.windowOpenMin}m` })).map((r) => ({ ...r, days: [...r.days] })) } } : {}),
  };
}

function runSetup(s: Setup): RunSetup {
  return {
    servers: s.servers,
    gateOn: s.gateOn,
    fromVersion: OLD,
    targetVersion: s.target,
    suffix: s.suffix,
    storageSafe: s.storageSafe,
    downDelayMs: s.downDelayS * 1000,
    upDelayMs: s.upDelayS * 1000,
    staleOnStop: s.staleOnStop,
    spec: specOf(s),
    batchTimeoutMs: s.batchTimeout === '1m' ? 60_000 : 180_000,
    twoPhase: s.phases === 'TwoPhase',
    gated: s.gated === true,
    windowOpenMin: s.windowOpenMin ?? 0,
    staticPod: s.staticPod === true,
    proofDelayMs: (s.proofDelayS ?? 0) * 1000,
  };
}

function componentAtText(at: Setup['componentAt']): string {
  return at && at !== 'from' ? `kube-controller-manager of cp-1 ${at === 'newer' ? 'a minor past the target' : 'of unknown version'}, ` : '';
}

/** The first node's kube-controller-manager as the setup says, before the first reconcile. */
function placeComponent(run: ModelRun, at: Setup['componentAt']): void {
  if (at === undefined || at === 'from') return;
  const first = [...run.world.components.keys()][0]!;
  run.world.components.set(first, at === 'newer' ? minorPast(run.setup.targetVersion) : undefined);
}

/** v1.37.0 for v1.36.3: a release one minor past `v`. */
function minorPast(v: string): string {
  const [major, minorN] = v.replace(/^v/, '').split('.').map(Number);
  return `v${major}.${(minorN ?? 0) + 1}.0`;
}

/** Readable, one line per step. */
export function renderSchedule(sc: Schedule): string {
  const s = sc.setup;
  const head =
    `setup: ${s.servers} servers on ${OLD}${s.suffix} gate ${s.gateOn ? 'on' : 'off'} -> ${s.target}; batchSize ${s.batchSize}, soak ${s.soak}, batchTimeout ${s.batchTimeout}, ` +
    `failureLimit ${s.failureLimit}, onBreach ${s.onBreach}, proxy.gate ${s.gate}${s.revertAfter ? ' revertAfter' : ''}, storage ${s.storageSafe ? 'safe' : 'UNSAFE'} to roll back, ` +
    `${componentAtText(sc.skew?.at ?? s.componentAt)}${s.phases === 'TwoPhase' ? `TwoPhase${s.hold && s.hold !== 'none' ? ` phase two held (${s.hold})` : ''}, ` : ''}${s.gated ? 'gate health, ' : ''}${s.windowOpenMin ? `windows of ${s.windowOpenMin}m every 4m 10:00-11:00 UTC, ` : ''}${s.pausedAtCreation ? 'created paused, ' : ''}ops stop after ${s.downDelayS}s and return ${s.upDelayS}s later${s.staleOnStop ? ' (stops leave stale leases)' : ''}`;
  const moves = (i: number): string => (sc.skew?.moves ?? []).filter((m) => m.step === i).map((m) => `, ${renderEvent({ e: 'component', i: m.i, to: m.to })}`).join('');
  const lines = sc.steps.map((st, i) => `  ${String(i + 1).padStart(2)}. wait ${st.dt}s${st.ev ? `, ${renderEvent(st.ev)}` : ''}${moves(i)}, reconcile${st.crash >= 0 ? ` crashing ${renderCrash(st.crash)}` : ''}`);
  return [head, ...lines, '  then: faults stop (calm) and the run must come to rest'].join('\n');
}

export function renderCrash(c: number): string {
  if (c === 0) return 'before persisting the plan';
  return c % 2 === 1 ? `before delivery #${(c - 1) / 2}` : `after delivery #${(c - 2) / 2}, before recording it`;
}

function renderEvent(ev: Event): string {
  switch (ev.e) {
    case 'fault':
      return `next ${ev.n} deliveries ${ev.f}`;
    case 'fate':
      return `next accepted op ${ev.f}`;
    case 'batchSize':
      return `spec.strategy.batchSize := ${ev.v}`;
    case 'paused':
      return `spec.paused := ${ev.v}`;
    case 'onBreach':
      return `spec.analysis.onBreach := ${ev.v}`;
    case 'resume':
      return 'resume annotation set to a new value';
    case 'abort':
      return 'abort annotation set to a new value';
    case 'approve':
      return 'approve annotation set to a new value';
    case 'join':
      return `a server joins at ${ev.at === 'from' ? 'the from-version' : 'the target version (once the plan is made)'}`;
    case 'leave':
      return `server #${ev.i} (by position) leaves`;
    case 'breach':
      return `checks ${ev.v} for ${ev.s}s`;
    case 'blip':
      return `server #${ev.i} not ready at the next observation`;
    case 'stuck':
      return `discovery not converging for ${ev.s}s`;
    case 'flaky':
      return `next ${ev.n} storage reads incomplete`;
    case 'reportFault':
      return `next ${ev.n} driver report reads fail (unknown, or the read throws)`;
    case 'health':
      return `gate health: ${ev.v === 'hold' ? 'holds' : ev.v === 'fail' ? 'a critical alert fires' : 'Prometheus down (cannot be evaluated)'}`;
    case 'edge':
      return `time moves to the next window edge${ev.d === 0 ? '' : ev.d < 0 ? ' less 1 ms' : ' plus 1 ms'}`;
    case 'proof':
      return `server #${ev.i}'s binary will answer its next flag proofs: ${ev.v}`;
    case 'proofLost':
      return `server #${ev.i}'s flag proof Jobs are deleted`;
    case 'manifestEdit':
      return `server #${ev.i}'s manifest is edited by hand (its command line changes; the target answers ${ev.v})`;
    case 'component':
      return `kube-controller-manager #${ev.i} moved to ${ev.to === 'from' ? 'the from-version' : ev.to === 'target' ? 'the target' : ev.to === 'newer' ? 'a minor past the target' : 'an image without a version'}`;
  }
}

function apply(run: ModelRun, ev: Event): void {
  const w = run.world;
  const byPos = (i: number) => [...w.servers.values()].sort((a, b) => a.index - b.index)[i % Math.max(1, w.servers.size)];
  switch (ev.e) {
    case 'fault':
      for (let i = 0; i < ev.n; i++) w.faults.push(ev.f);
      break;
    case 'fate':
      w.fates.push(ev.f);
      break;
    case 'batchSize':
      run.editSpec({ strategy: { ...run.spec.strategy, batchSize: ev.v } });
      break;
    case 'paused':
      run.editSpec({ paused: ev.v });
      break;
    case 'onBreach':
      run.editSpec({ analysis: { ...run.spec.analysis, onBreach: ev.v } });
      break;
    case 'resume':
      run.resume();
      break;
    case 'abort':
      run.abort();
      break;
    case 'approve':
      run.approve();
      break;
    case 'join':
      // A node provisioned with the new image joins at the target; before the plan is made that would only
      // be a mixed fleet for preflight to wait on, so it joins at the from-version then.
      if (w.servers.size < 7) w.addServer(ev.at === 'target' && run.persisted?.plan?.batches ? release(run.setup.targetVersion) : OLD, ev.at === 'target');
      w.noteWriters();
      break;
    case 'leave': {
      const s = byPos(ev.i);
      if (s && w.servers.size > 1) w.removeServer(s.hostname);
      break;
    }
    case 'breach':
      w.windows.push({ from: w.now, to: w.now + ev.s * 1000, verdict: ev.v });
      break;
    case 'blip': {
      const s = byPos(ev.i);
      if (s) w.blips.add(s.hostname);
      break;
    }
    case 'stuck':
      w.stuckUntil = Math.max(w.stuckUntil, w.now + ev.s * 1000);
      break;
    case 'flaky':
      w.flakyStorage += ev.n;
      break;
    case 'reportFault':
      w.reportFaults += ev.n;
      break;
    case 'health':
      w.health = ev.v;
      break;
    case 'edge':
      if ((run.setup.windowOpenMin ?? 0) > 0) w.advance(Math.max(0, nextWindowEdge(w.now, run.setup.windowOpenMin!) + ev.d - w.now));
      break;
    case 'proof': {
      const s = byPos(ev.i);
      if (s) run.proofs.mode.set(s.hostname, ev.v);
      break;
    }
    case 'proofLost': {
      const s = byPos(ev.i);
      if (s) run.proofs.lose(s.hostname);
      break;
    }
    case 'manifestEdit': {
      const s = byPos(ev.i);
      if (s) {
        run.proofs.edit(s.hostname);
        run.proofs.mode.set(s.hostname, ev.v);
      }
      break;
    }
    case 'component': {
      const nodes = [...w.components.keys()];
      const node = nodes[ev.i % nodes.length]!;
      w.components.set(node, ev.to === 'from' ? OLD : ev.to === 'target' ? release(run.setup.targetVersion) : ev.to === 'newer' ? minorPast(run.setup.targetVersion) : undefined);
      break;
    }
  }
  run.note(`~ ${renderEvent(ev)}`);
}

export interface Limits {
  /** Simulated time allowed per calm segment (from calm, or from a resume) to reach a terminal phase or a pause. */
  segmentMs: number;
  /** Reconciles allowed per calm segment, whatever the time. */
  segment: number;
  /** Resumes allowed in calm before the run must have ended. */
  resumes: number;
}

/** 7 servers at most, each with a gate pass, an upgrade and a revert of < 35 s and a soak of 40 s: 30 min is ample. */
export const LIMITS: Limits = { segmentMs: 30 * 60_000, segment: 1000, resumes: 8 };

/** Plays a schedule; throws a Violation (with the trace) when an enabled invariant breaks. */
export function play(sc: Schedule, enabled: ReadonlySet<Inv>, limits: Limits = LIMITS): ModelRun {
  const run = new ModelRun(runSetup(sc.setup), enabled);
  placeComponent(run, sc.skew?.at ?? sc.setup.componentAt);
  try {
    for (const [i, st] of sc.steps.entries()) {
      run.world.advance(st.dt * 1000);
      if (st.ev) apply(run, st.ev);
      for (const m of sc.skew?.moves ?? []) if (m.step === i) apply(run, { e: 'component', i: m.i, to: m.to });
      run.reconcile(st.crash);
    }
    calm(run, limits);
  } catch (err) {
    if (err instanceof Error && 'inv' in err) {
      // MODEL_TRACE=<n> shows more of the trace when replaying a seed.
      const lines = Number(process.env.MODEL_TRACE ?? 60);
      err.message = `${err.message}\n\nschedule (shrunk):\n${renderSchedule(sc)}\n\ntrace (last ${lines} lines):\n${run.trace.slice(-lines).join('\n')}`;
    }
    throw err;
  }
  return run;
}

/** Faults stop: healthy driver, no membership changes, no crashes, healthy checks. The run must come to rest. */
function calm(run: ModelRun, limits: Limits): void {
  const w = run.world;
  w.faults = [];
  w.fates = [];
  w.windows = [];
  w.stuckUntil = 0;
  w.blips.clear();
  w.flakyStorage = 0;
  w.reportFaults = 0;
  if (run.spec.paused) run.editSpec({ paused: false });
  // The gate holds again; the windows go (a later one may be a day away): what is left must come to rest.
  w.health = 'hold';
  // A node whose binary refuses its command line is fixed by hand: its manifest edited, the new command line accepted.
  for (const [h, mode] of [...run.proofs.mode]) {
    if (mode === 'accept') continue;
    run.proofs.mode.delete(h);
    run.proofs.edit(h);
  }
  // Every kube-controller-manager back on the from-version: a human fixed the skew.
  for (const node of w.components.keys()) w.components.set(node, OLD);
  if (run.spec.window) {
    const { window: _w, ...rest } = run.spec;
    run.spec = rest;
    run.upgrade = { ...run.upgrade, generation: run.upgrade.generation + 1 };
  }
  run.note('~ calm: faults stop; spec.paused false; gate holds; no window; every kube-controller-manager on the from-version');
  let resumes = 0;
  let steps = 0;
  let since = w.now;
  for (;;) {
    const p = run.reconcile();
    if (run.isTerminal()) return;
    if (run.phase === 'Paused') {
      run.checkPauseCause();
      if (resumes >= limits.resumes) {
        run.fail('I6', `still not finished after ${resumes} resumes in calm (paused again: ${run.persisted?.pause?.reason})`);
        return;
      }
      resumes++;
      steps = 0;
      since = w.now;
      run.note(`~ a human resumes (${run.resume()})`);
      w.advance(5_000);
      continue;
    }
    // A phase two held without a deadline waits for a human: they approve it (once per hold).
    const hold = run.persisted?.phaseTwoHold;
    if (run.persisted?.waiting?.reason === 'AwaitingApproval' && hold?.deadline === undefined && hold?.approvedAt === undefined && run.persisted.observedApprove === run.upgrade.annotations[APPROVE_ANNOTATION]) {
      run.note(`~ a human approves phase two (${run.approve()})`);
    }
    run.longestSegment = Math.max(run.longestSegment, ++steps);
    if (steps > limits.segment || w.now - since > limits.segmentMs) {
      run.fail('I6', `active (${run.phase}) for ${steps} reconciles and ${stamp(w.now - since).slice(1)} after the faults stopped${resumes ? ` and ${resumes} resume(s)` : ''}, neither terminal nor paused`);
      return;
    }
    // As a controller does: wake at the requeue (5 s at the soonest: a busy controller is late), or when a
    // watched object changes (a server stops or returns), and at least every 20 s.
    const requeue = p.requeueAfterMs ?? 10_000;
    const change = w.nextChange() - w.now;
    w.advance(Math.min(20_000, Math.max(5_000, Math.min(requeue, change))));
  }
}

export function fmtStart(): string {
  return new Date(START).toISOString();
}

export { stamp };
