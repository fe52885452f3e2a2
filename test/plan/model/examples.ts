// Schedules the model found counterexamples with (shrunk), pinned: every property runs them first, so a
// fixed planner stays fixed even where the generated runs would rarely hit the case again.
import type { Schedule, Setup, Step } from './schedule.ts';

const BASE: Setup = {
  servers: 1,
  gateOn: false,
  target: 'v1.36.3',
  suffix: '',
  batchSize: 1,
  soak: '0s',
  batchTimeout: '1m',
  failureLimit: 1,
  onBreach: 'Pause',
  gate: 'Auto',
  revertAfter: false,
  storageSafe: false,
  pausedAtCreation: false,
  downDelayS: 0,
  upDelayS: 2,
  staleOnStop: false,
  phases: 'OnePhase',
};

const at = (dt: number, ev?: Step['ev'], crash = -1): Step => (ev === undefined ? { dt, crash } : { dt, ev, crash });

export interface Pinned {
  /** What the planner did wrong when this was found. */
  found: string;
  schedule: Schedule;
}

const pin = (found: string, setup: Partial<Setup>, steps: Step[]): Pinned => ({ found, schedule: { setup: { ...BASE, ...setup }, steps } });

export const PINNED: Pinned[] = [
  pin('I6: RevertProxy re-sent to a server that left and was dropped (gateTurnedOn kept it): DriverFailed after every resume', { servers: 2, target: 'v1.35.5', revertAfter: true }, [at(0), at(0, { e: 'leave', i: 0 })]),
  pin('I6: RollbackUnsafe after every resume: the same revert to a dropped server, on a plan created paused', { servers: 2, target: 'v1.35.5', revertAfter: true, onBreach: 'Rollback', pausedAtCreation: true }, [at(0), at(0, { e: 'leave', i: 0 })]),
  pin('I2: Succeeded with no member left (the only server hung stopped and was dropped)', {}, [at(0, { e: 'fate', f: 'hangDown' })]),
  pin('I6: MembershipChanged after every resume once the only server was gone', {}, [at(0, { e: 'fate', f: 'late' })]),
  pin('I2: Succeeded while a late EnableProxy still had its server stopped (dropped on the re-plan while in flight)', { servers: 2 }, [at(0), at(0, { e: 'fate', f: 'late' }), at(45), at(0, { e: 'leave', i: 0 })]),
  pin('I2: a server whose call timed out during a PausedBySpec pause was dropped on unpause without a MembershipChanged pause', { servers: 2 }, [at(0, { e: 'fate', f: 'hangDown' }), at(0, { e: 'paused', v: true }), at(90)]),
  pin('I2: a server whose call timed out during an AnalysisBreach pause was dropped on the resume without being named', { servers: 2, gateOn: true }, [at(45, { e: 'fate', f: 'hangDown' }), at(5, { e: 'blip', i: 1 }), at(90, undefined, 0)]),
  pin('I3: batch 1 ended on the breaching check seen while its call was in flight', { servers: 2, gate: 'Unmanaged' }, [at(0), at(0, { e: 'breach', s: 10, v: 'Breach' }), at(2)]),
  pin('I3: a breaching check first seen by a lost plan was skipped by the next, which started batch 2', { servers: 2, gateOn: true, soak: '15s' }, [at(0), at(10), at(10), at(0, { e: 'breach', s: 10, v: 'Breach' }, 0), at(5, undefined, 1)]),
  pin('I3: batch 2 started after a MembershipChanged resume on inconclusive checks only', { servers: 2 }, [
    at(0, { e: 'stuck', s: 30 }),
    at(10),
    at(10, { e: 'breach', s: 300, v: 'Inconclusive' }),
    at(5),
    at(0, { e: 'leave', i: 0 }),
    at(0, { e: 'resume' }),
    at(20),
  ]),
  pin('I6: a hung RevertProxy: each resume breaches at once on the server not up (AnalysisBreach) and the revert is never retried', { target: 'v1.35.5', revertAfter: true, staleOnStop: true }, [at(0), at(0, { e: 'fate', f: 'hangDown' }), at(2)]),
  pin('I6: the same with onBreach Rollback and unsafe storage: RollbackUnsafe after every resume', { target: 'v1.35.5', revertAfter: true, staleOnStop: true, soak: '40s', onBreach: 'Rollback' }, [at(0), at(20), at(20, { e: 'fate', f: 'hangDown' }), at(20)]),
  pin('I6: RollingBack with a timed-out Rollback re-pauses BatchTimeout at once after every resume', { gateOn: true, onBreach: 'Rollback', storageSafe: true, staleOnStop: true }, [
    at(0, { e: 'fate', f: 'rename' }),
    at(0, { e: 'breach', s: 30, v: 'Breach' }, 0),
    at(5),
    at(20, { e: 'resume' }),
    at(0, { e: 'fate', f: 'hangDown' }),
  ]),
  // Issue 26.
  pin('I9: an abort while batch 1\'s first Upgrade was in flight paused RollbackSafetyUnknown, and stayed so after the target\'s hashes were read: nothing rolled back', { servers: 3, gateOn: true, storageSafe: true, upDelayS: 20 }, [
    at(0),
    at(2, { e: 'abort' }),
    at(30),
  ]),
  pin('I4: a server that joined on the target during a rollback begun with nothing touched (an EnableProxy in flight) was rolled back with unsafe storage', { servers: 2, upDelayS: 25 }, [
    at(0),
    at(2, { e: 'abort' }),
    at(2, { e: 'join', at: 'target' }),
    at(2, { e: 'resume' }),
  ]),
  pin('I10: a server that joined on the target during EnablingProxy got EnableProxy with the from-version as its target (a downgrade)', { servers: 2 }, [at(0), at(0, { e: 'join', at: 'target' }), at(0, { e: 'resume' })]),
  pin('I6: TwoPhase: the only server of the phase-one batch left; every resume paused EmulationIneffective again, waiting for it', { servers: 2, target: 'v1.36.3', phases: 'TwoPhase', gateOn: true }, [
    at(0),
    at(0, { e: 'leave', i: 0 }),
  ]),
  pin('I4: TwoPhase: a server that joined on the target without emulation in phase one was accepted; a breach then rolled back to the old binary, judged on the emulating servers\' storage only', { servers: 2, target: 'v1.36.3', phases: 'TwoPhase', gateOn: true, onBreach: 'Rollback', upDelayS: 5 }, [
    at(0),
    at(2, { e: 'join', at: 'target' }),
    at(2, { e: 'resume' }),
    at(2, { e: 'breach', s: 60, v: 'Breach' }),
    at(10),
  ]),
  pin('I2: an abort with nothing touched ended RolledBack at once although a server had joined on the target', { pausedAtCreation: true }, [at(0), at(0, { e: 'join', at: 'target' }), at(0, { e: 'abort' })]),
  pin('I6: an abort while an EnableProxy hung with its server stopped (stale lease): the rollback never called that server, BatchTimeout after every resume', { staleOnStop: true }, [at(0, { e: 'fate', f: 'hangDown' }), at(0, { e: 'abort' })]),
  // Exploration (npm run test:explore), seeds 104 and 120 of 2026-12-03.
  pin('I6 (seed 120): a rollback put a server of batch 1 back, a resume continued the upgrade, and batch 1 waited forever for it: its Upgrade call was still counted Done', { servers: 2, batchSize: 3, onBreach: 'Rollback', gate: 'Unmanaged', phases: 'TwoPhase' }, [
    at(0, { e: 'fate', f: 'fail' }),
    at(10),
    at(10, undefined, 0),
    at(45),
    at(0),
    at(0, { e: 'join', at: 'target' }),
  ]),
  pin('I6 (seed 104): TwoPhase: the only planned server left and a joiner on the target without emulation was the last server standing: MembershipChanged after every resume, asking to remove it or move it back into emulation', { phases: 'TwoPhase' }, [
    at(0, { e: 'fate', f: 'hangDown' }),
    at(90),
    at(0, { e: 'join', at: 'target' }, 0),
  ]),
  pin('I11: an abort while an EnableProxy was in flight (its server stopped): Paused RollbackSafetyUnknown forever, waiting for the target\'s hashes although no server ever ran it', { servers: 2, upDelayS: 25 }, [at(0), at(2, { e: 'abort' }), at(30)]),
  pin('I11: TwoPhase: the same with a joiner on the target without emulation: its hashes were read, yet the pause waited for those of the emulated target no server ran', { servers: 2, upDelayS: 25, storageSafe: true, phases: 'TwoPhase' }, [
    at(0),
    at(2, { e: 'join', at: 'target' }),
    at(2, { e: 'abort' }),
    at(30),
  ]),
  pin('I11: a member gone after a late EnableProxy timed out came back, yet the MembershipChanged pause stayed, naming it gone', {}, [
    at(0, { e: 'fault', f: 'unreachable', n: 1 }),
    at(20, { e: 'fate', f: 'late' }),
    at(45),
    at(90),
  ]),
  pin('I14: a server that joined on the from-version after phase two began got a phase-one batch: status.stage went back to Binaries and every resume paused MembershipChanged on the plan\'s own phase-two members', { servers: 2, gateOn: true, soak: '40s', storageSafe: true, phases: 'TwoPhase' }, [
    ...Array.from({ length: 24 }, () => at(5)),
    at(0, { e: 'join', at: 'from' }),
    at(5),
    at(0, { e: 'resume' }),
    at(5),
  ]),
  pin('I16: an Upgrade recorded and lost before delivery (a crash) was sent again after the node\'s command line changed, without proving it again', { servers: 3, staticPod: true, proofDelayS: 0 }, [
    at(0),
    at(0),
    at(45),
    at(20, { e: 'proof', i: 0, v: 'refuse' }),
    at(5, undefined, 1),
  ]),
  pin('I3: batch 2 (phase two) paused FlagProofRefused before its first call; after the resume its first call went out with no healthy check newer than the resume', { phases: 'TwoPhase', staticPod: true, proofDelayS: 0 }, [
    at(5),
    at(0, { e: 'proof', i: 0, v: 'refuse' }),
    at(10),
    at(10),
    at(45),
    at(20),
    at(5, undefined, 0),
    at(0),
    at(0),
  ]),
  pin('I11 (the judgment): the only server whose Upgrade the driver failed left before any server on the target was read: Paused RollbackSafetyUnknown is an unknown the operator cannot resolve, and a resume goes on', { servers: 2, gateOn: true, onBreach: 'Rollback' }, [
    at(0, { e: 'fate', f: 'pullFail' }),
    at(0, { e: 'leave', i: 0 }),
  ]),
];

/**
 * Scenarios of gates and windows (not counterexamples): each runs on every invariant, and model.test.ts checks it
 * reaches what it is about — a wait, a batch finished after its window closed, a Rollback sent while held.
 */
export const GATE_AND_WINDOW_SCENARIOS: Pinned[] = [
  pin('a gate flapping: a critical alert fires during batch 1, clears, Prometheus goes away, and an abort rolls back while the gate cannot be evaluated', { servers: 3, gateOn: true, soak: '15s', upDelayS: 5, storageSafe: true, gated: true }, [
    at(0),
    at(5, { e: 'health', v: 'fail' }),
    at(10),
    at(20),
    at(10, { e: 'health', v: 'hold' }),
    at(20),
    at(5, { e: 'health', v: 'unknown' }),
    at(20),
    at(5, { e: 'abort' }),
    at(10),
  ]),
  pin('a window closing mid-batch: batch 1 starts at 10:00 in a 1-minute window, soaks past 10:01, batch 2 waits, and an abort outside the window rolls back at once', { servers: 2, gateOn: true, soak: '40s', upDelayS: 5, storageSafe: true, windowOpenMin: 1 }, [
    at(0),
    at(20),
    at(20),
    at(20),
    at(20),
    at(5, { e: 'abort' }),
    at(10),
  ]),
  pin('a leader change at the window\'s edge: a plan lost 1 ms before it closes, the next leader at the closing instant, another 1 ms after it opens crashing after delivery', { servers: 3, gateOn: true, soak: '0s', upDelayS: 5, storageSafe: true, windowOpenMin: 2 }, [
    at(0),
    at(10),
    at(0, { e: 'edge', d: -1 }, 0),
    at(0, { e: 'edge', d: 0 }),
    at(0, { e: 'edge', d: 1 }, 2),
    at(5),
    at(0, { e: 'edge', d: -1 }, 1),
    at(0, { e: 'edge', d: 0 }),
    at(5, { e: 'abort' }),
    at(5),
  ]),
];

/**
 * A held phase two (spec.strategy.phaseTwo) through leader changes: each scenario reaches the hold within its steps and
 * crashes there (a plan lost before it was persisted, a crash around a delivery), so the hold is carried by status alone.
 */
const tenSeconds = (n: number): Step[] => Array.from({ length: n }, () => at(10));
export const HOLD_SCENARIOS: Pinned[] = [
  pin('held until an approval: one set before the hold is ignored; leader changes in the hold; the approval seen by a plan that is lost, then again', { servers: 2, gateOn: true, phases: 'TwoPhase', hold: 'approval', upDelayS: 5, storageSafe: true }, [
    at(0, { e: 'approve' }),
    ...tenSeconds(14),
    at(10, undefined, 0),
    at(20, undefined, 0),
    at(45),
    at(10, { e: 'approve' }, 0),
    at(5),
    at(10),
  ]),
  pin('a 2m deadline that rolls back, passed while the leader changes: the plan that sees it first is lost, the next rolls back to the old binaries', { servers: 2, gateOn: true, phases: 'TwoPhase', hold: 'rollback', upDelayS: 5, storageSafe: true }, [
    ...tenSeconds(14),
    at(45, undefined, 0),
    at(45, undefined, 0),
    at(45, undefined, 0),
    at(10),
    at(10, undefined, 1),
    at(10),
  ]),
];

/**
 * The control plane's skew, by construction (the generated runs seldom roll back at all): each scenario holds a
 * rollback on a kube-controller-manager that is newer than the from-version, or of unknown version, and ends
 * RolledBack once calm brings every one back (model.test.ts checks that it held).
 */
export const COMPONENT_SCENARIOS: Pinned[] = [
  pin('a kube-controller-manager moved to the target during batch 1\'s soak, then an abort: held, no Rollback call until calm brings it back', { servers: 3, gateOn: true, soak: '40s', upDelayS: 5, storageSafe: true }, [
    at(5),
    at(5),
    at(10),
    at(10),
    at(5, { e: 'component', i: 1, to: 'target' }),
    at(5, { e: 'abort' }),
    at(5),
    at(10, { e: 'component', i: 1, to: 'unknown' }),
    at(10),
  ]),
  pin('a breach with onBreach Rollback in batch 2; a kube-controller-manager moved a minor past the target after the first Rollback call, while it is in flight: no second one until calm', { servers: 3, gateOn: true, soak: '15s', upDelayS: 10, storageSafe: true, onBreach: 'Rollback', failureLimit: 1 }, [
    at(5),
    at(5),
    at(20),
    at(20),
    at(20),
    at(5, { e: 'breach', s: 60, v: 'Breach' }),
    at(10),
    at(2),
    at(2, { e: 'component', i: 0, to: 'newer' }),
    at(10, undefined, 0),
    at(20),
  ]),
];
