// `kubectl apiserver-upgrade plan`: the operator's own planner, stepped on one observation of the fleet,
// without a single call or write. Pure: the command observes (src/observe/fleet.ts, as the operator does) and
// hands the observation here.
//
// 1. Now: plan() on the spec with an empty status, again and again with the same observation (as the
//    controller steps), until a step asks for a driver call (those are the calls the operator would make
//    first; they are shown, never sent), stops (Paused, finished) or makes no more progress.
// 2. Then, the projection: the same planner stepped on a fleet simulated from that observation, where every
//    call is accepted and lands at once, every check is healthy, every gate holds and a window is open, until the
//    upgrade ends. It shows every
//    call the operator would make, in its order, with what each carries; nothing of it is real.
import type { ApiServerUpgradeSpec, ApiServerUpgradeStatus, Condition } from '../api/types.generated.ts';
import { PROXY_GATE } from '../api/constants.ts';
import { isTerminal } from '../api/vocabulary.ts';
import { plan, recordCallOutcome, sameRelease, type Action, type DriverRequest, type Observation, type UpgradeInput } from '../plan/index.ts';
import { minorOf } from '../plan/version.ts';
import { resolveSpec } from '../api/defaults.ts';
import { proofRequests } from '../plan/flag-proof-gate.ts';
import { PROOF_SENTINEL } from '../plan/flag-proof.ts';
import type { ObservedFlagProof } from '../plan/observed-preflight.ts';

export interface PlannedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  note: string;
}

export interface DryRun {
  /** Planner steps taken on the real observation. */
  steps: number;
  /** Why stepping stopped: `calls` (the next step would call the driver), `stopped` (Paused or finished), `noProgress`. */
  stoppedBecause: 'calls' | 'stopped' | 'noProgress';
  /** The status the steps computed (never written). */
  status: ApiServerUpgradeStatus;
  phase: string;
  preflight: Condition | undefined;
  /** The driver calls the operator would make first, now. */
  firstCalls: DriverRequest[];
  /** The Events the steps would record. */
  events: PlannedEvent[];
  projection: Projection | undefined;
  /**
   * The static Pod driver's flag proof was assumed Accepted on every node: the dry run runs no proof Job (the operator
   * does, at preflight: docs/flag-proof.md).
   */
  flagProofAssumed: boolean;
}

/**
 * The flag proof as if every node's proof Job had answered Accepted, for the command line of the call it would
 * prove (one key per node and call edit): what the dry run assumes, and says it does. Undefined: not the static Pod driver.
 */
export function assumedProofs(specIn: ApiServerUpgradeSpec, status: ApiServerUpgradeStatus | undefined, obs: Observation): ObservedFlagProof | undefined {
  let spec;
  try {
    spec = resolveSpec(specIn);
  } catch {
    return undefined;
  }
  if (spec.driver.kind !== 'staticPod') return undefined;
  const wants = proofRequests(spec, status, obs.peers).map((r) => ({
    hostname: r.hostname, key: `assumed-${r.hostname}-${String(r.gate)}-${r.emulatedVersion ?? 'none'}`, image: r.targetVersion, command: [PROOF_SENTINEL],
    ...(r.gate === undefined ? {} : { gate: r.gate }), ...(r.emulatedVersion === undefined ? {} : { emulatedVersion: r.emulatedVersion }),
  }));
  return { wants, jobs: wants.map((w) => ({ key: w.key, hostname: w.hostname, name: `assumed-${w.hostname}`, proof: { hostname: w.hostname, verdict: { result: 'Accepted' as const, warnings: [] } } })) };
}

/** The observation with the flag proof assumed where it was not read. */
function withProofs(spec: ApiServerUpgradeSpec, status: ApiServerUpgradeStatus | undefined, obs: Observation): Observation {
  if (obs.flagProof !== undefined) return obs;
  const flagProof = assumedProofs(spec, status, obs);
  return flagProof === undefined ? obs : { ...obs, flagProof };
}

export interface Projection {
  /** Every driver call, in the order the operator would make them, each key once. */
  calls: DriverRequest[];
  /** Where the simulated run ended: Succeeded normally. */
  phase: string;
  /** The pause or progress message when it did not end Succeeded. */
  message: string | undefined;
  steps: number;
  /** spec.paused was true: the projection shows what happens once it is set to false. */
  assumedResumed: boolean;
}

const MAX_NOW_STEPS = 20;
const MAX_PROJECTION_STEPS = 5000;

function driverCalls(actions: readonly Action[]): DriverRequest[] {
  return actions.flatMap((a) => (a.kind === 'callDriver' ? [a.request] : []));
}

function eventsOf(actions: readonly Action[]): PlannedEvent[] {
  return actions.flatMap((a) => (a.kind === 'event' ? [{ type: a.type, reason: a.reason, note: a.server ? `${a.server}: ${a.note}` : a.note }] : []));
}

export function dryRun(upgrade: UpgradeInput, spec: ApiServerUpgradeSpec, obs: Observation, now: Date): DryRun {
  let status: ApiServerUpgradeStatus | undefined;
  const events: PlannedEvent[] = [];
  let firstCalls: DriverRequest[] = [];
  let stoppedBecause: DryRun['stoppedBecause'] = 'noProgress';
  let steps = 0;
  for (; steps < MAX_NOW_STEPS;) {
    const p = plan(upgrade, spec, status, withProofs(spec, status, obs), now);
    steps++;
    events.push(...eventsOf(p.actions));
    const before = JSON.stringify(status ?? null);
    status = p.status;
    firstCalls = driverCalls(p.actions);
    if (firstCalls.length > 0) {
      stoppedBecause = 'calls';
      break;
    }
    if (isTerminal(status.phase) || status.phase === 'Paused') {
      stoppedBecause = 'stopped';
      break;
    }
    if (JSON.stringify(status) === before) break;
  }
  const final = status ?? {};
  const phase = final.phase ?? 'Pending';
  // Only a run that got past preflight, and is neither finished nor failed, has a future to project.
  const canProject = final.plan !== undefined && !isTerminal(phase);
  return {
    steps,
    stoppedBecause,
    status: final,
    phase,
    preflight: final.conditions?.find((c) => c.type === 'PreflightPassed'),
    firstCalls,
    events,
    projection: canProject ? project(upgrade, spec, final, firstCalls, obs, now) : undefined,
    flagProofAssumed: obs.flagProof === undefined && assumedProofs(spec, final, obs) !== undefined,
  };
}

/**
 * The observation after a call landed: the server restarted (a new Lease holder) at its goal — version,
 * emulated version (none: its own minor) and proxy gate — up and ready.
 */
function land(obs: Observation, r: DriverRequest, n: number): Observation {
  const gate = r.featureGates[PROXY_GATE];
  return {
    ...obs,
    peers: obs.peers.map((p) => {
      if (p.hostname !== r.server.hostname) return p;
      const { emulation: _, ...rest } = p;
      return {
        ...rest,
        version: r.targetVersion,
        ...(r.emulatedVersion === undefined ? {} : { emulation: r.emulatedVersion }),
        ready: true,
        stale: false,
        ...(gate === undefined ? {} : { proxyGate: gate ? 'on' as const : 'off' as const }),
        holderIdentity: `${p.identity}_projected-${n}`,
      };
    }),
  };
}

/**
 * A fleet where every check is healthy and discovery has converged; every (version, emulation) that runs has
 * the from-version's storage hashes, and (for a TwoPhase plan) each server serves the from-version's own
 * resources: the emulation does what phase one relies on.
 */
function healthy(obs: Observation, status: ApiServerUpgradeStatus, now: Date): Observation {
  const storage = [...(obs.storage ?? [])];
  const from = storage[0];
  if (from) {
    for (const p of obs.peers) {
      if (p.version === undefined) continue;
      const emulation = p.emulation ?? minorOf(p.version);
      if (!storage.some((s) => sameRelease(s.version, p.version!) && (s.emulation ?? minorOf(s.version)) === emulation)) {
        storage.push({ ...from, version: p.version, server: p.hostname, ...(p.emulation === undefined ? {} : { emulation: p.emulation }) });
      }
    }
  }
  const fromResources = status.plan?.fromResources;
  const own = fromResources === undefined ? undefined : obs.peers.filter((p) => p.version !== undefined).map((p) => ({
    server: p.hostname, version: p.version!, ...(p.emulation === undefined ? {} : { emulation: p.emulation }), resources: [...fromResources],
  }));
  return {
    ...obs,
    discovery: { converged: true, message: 'projected: converged', ...(own ? { own } : {}) },
    analysis: { time: now.toISOString(), verdict: 'Healthy', signals: {}, breaches: [] },
    storage,
  };
}

function project(upgrade: UpgradeInput, specIn: ApiServerUpgradeSpec, from: ApiServerUpgradeStatus, firstCalls: DriverRequest[], obsIn: Observation, nowIn: Date): Projection {
  const assumedResumed = specIn.paused === true;
  // As every check is healthy in the projection, every gate holds and a window is open: it shows the calls, not when.
  const { gates: _gates, window: _window, ...free } = specIn;
  const spec: ApiServerUpgradeSpec = { ...free, paused: false };
  const calls: DriverRequest[] = [];
  const seen = new Set<string>();
  let status = from;
  let obs = obsIn;
  let now = nowIn;
  let pending = firstCalls;
  let steps = 0;
  let n = 0;
  for (; steps < MAX_PROJECTION_STEPS; steps++) {
    for (const r of pending) {
      if (!seen.has(r.idempotencyKey)) {
        seen.add(r.idempotencyKey);
        calls.push(r);
        obs = land(obs, r, ++n);
      }
      status = recordCallOutcome(status, r.idempotencyKey, { kind: 'accepted', message: 'projected: accepted' }, now);
    }
    if (isTerminal(status.phase)) break;
    now = new Date(now.getTime() + 1000);
    const p = plan(upgrade, spec, status, withProofs(spec, status, healthy(obs, status, now)), now);
    status = p.status;
    pending = driverCalls(p.actions);
    if (status.phase === 'Paused' && pending.length === 0) break;
    // The controller comes back after requeueAfter; the simulated clock jumps there (soaks pass at once).
    if (p.requeueAfterMs !== undefined && p.requeueAfterMs > 1000) now = new Date(now.getTime() + p.requeueAfterMs - 1000);
  }
  const phase = status.phase ?? 'Pending';
  const message = phase === 'Succeeded' ? undefined : status.pause?.message ?? status.conditions?.find((c) => c.type === 'Progressing')?.message;
  return { calls, phase, message, steps, assumedResumed };
}
