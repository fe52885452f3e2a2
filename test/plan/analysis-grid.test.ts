// The analysis keeps a grid of due times (src/plan/analysis.ts nextCheckAt): the time each look takes must not push
// every later check later, or failureLimit checks take longer than failureLimit intervals (fault campaign, seed
// 4242 #8: 0.15 s per check at load 6, a reaction 0.6 s past its bound).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { analysisDue, nextCheckAt } from '../../src/plan/analysis.ts';

const iso = (ms: number): string => new Date(ms).toISOString();
const T0 = Date.parse('2026-12-04T00:00:00Z');

/** Checks taken as the planner asks for them: at the first look at or after each due time, `late[i]` ms after it. */
function runChecks(intervalMs: number, late: readonly number[]): number[] {
  let last: { time: string; nextCheckAt?: string } | undefined;
  const times: number[] = [];
  let now = T0;
  for (const l of late) {
    const due = last === undefined ? now : Date.parse(last.nextCheckAt ?? last.time);
    if (last !== undefined) assert.ok(!analysisDue(last, intervalMs, new Date(due - 1)), 'not due a millisecond early');
    now = due + l;
    assert.ok(analysisDue(last, intervalMs, new Date(now)), 'due at its slot and after');
    const time = iso(now);
    last = { time, nextCheckAt: nextCheckAt(last, time, intervalMs) };
    times.push(now);
  }
  return times;
}

test('checks that each run late stay on their grid: the k-th check after the first runs at first + k x interval plus its own lateness only', () => {
  fc.assert(fc.property(fc.integer({ min: 1000, max: 30_000 }), fc.array(fc.nat(), { minLength: 2, maxLength: 12 }), (interval, raw) => {
    const late = raw.map((r) => r % interval);
    const times = runChecks(interval, late);
    for (let k = 1; k < times.length; k++) assert.equal(times[k], times[0]! + k * interval + late[k]!, `check ${k} drifted`);
  }));
});

test('without the grid the same lateness would add up: four checks 150 ms late each end 600 ms late (the campaign\'s case)', () => {
  const times = runChecks(2000, [0, 150, 150, 150, 150]);
  assert.equal(times[4]! - times[0]!, 4 * 2000 + 150, 'the fourth check after the first runs 150 ms late, not 600 ms');
});

test('a check a whole interval late or more (no operator ran) starts the grid again from itself, never a burst of checks', () => {
  const prev = { nextCheckAt: iso(T0 + 2000) };
  assert.equal(nextCheckAt(prev, iso(T0 + 9000), 2000), iso(T0 + 11_000));
  assert.equal(nextCheckAt(prev, iso(T0 + 4000), 2000), iso(T0 + 6000), 'exactly one interval late: a new grid');
  assert.equal(nextCheckAt(prev, iso(T0 + 3999), 2000), iso(T0 + 4000), 'less than one interval late: the grid holds');
});

test('a check earlier than its slot (a source with its own cadence) starts the grid from itself: the next is never more than an interval away', () => {
  const prev = { nextCheckAt: iso(T0 + 2000) };
  assert.equal(nextCheckAt(prev, iso(T0 + 500), 2000), iso(T0 + 2500));
  assert.equal(nextCheckAt(undefined, iso(T0), 2000), iso(T0 + 2000), 'the first check starts the grid');
});

test('a status written before the grid existed (no nextCheckAt) is due an interval after its last check', () => {
  const last = { time: iso(T0) };
  assert.equal(analysisDue(last, 2000, new Date(T0 + 1999)), false);
  assert.equal(analysisDue(last, 2000, new Date(T0 + 2000)), true);
  assert.equal(analysisDue(undefined, 2000, new Date(T0)), true, 'no check yet: due now');
});

test('the planner looks again when the next check is due, sooner than its call poll or the interval', async () => {
  const { ShellSim } = await import('./model/shell-sim.ts');
  const { peer, spec, OLD } = await import('./fleet.ts');
  const sim = new ShellSim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on'), peer('cp-3', OLD, 'on')], spec({ analysis: { interval: '10s', failureLimit: 3, onBreach: 'Pause' } }));
  sim.autoLand = false;
  sim.runUntil((s) => s.held.has('cp-1'), 8, 1000);
  const due = Date.parse(sim.status?.lastAnalysis?.nextCheckAt ?? '');
  assert.ok(Number.isFinite(due), 'the check recorded its next slot');
  // The next look 700 ms before that slot: nothing new to check yet, the Upgrade still in flight.
  sim.reconcile(due - 700 - sim.now.getTime());
  assert.equal(sim.last.requeueAfterMs, 700);
});

test('a phase that runs no check (RollingBack) keeps its own pace: an overdue slot does not make it look every 500 ms', async () => {
  const { ShellSim } = await import('./model/shell-sim.ts');
  const { peer, spec, OLD } = await import('./fleet.ts');
  const { ABORT_ANNOTATION } = await import('../../src/plan/index.ts');
  const sim = new ShellSim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on'), peer('cp-3', OLD, 'on')], spec({ analysis: { interval: '10s', failureLimit: 3, onBreach: 'Pause' } }));
  sim.autoLand = false;
  sim.runUntil((s) => s.held.has('cp-1'), 8, 1000);
  sim.land('cp-1');
  sim.runUntil((s) => s.held.has('cp-2'), 30, 1000);
  sim.land('cp-2');
  sim.upgrade = { ...sim.upgrade, annotations: { ...sim.upgrade.annotations, [ABORT_ANNOTATION]: 'now' } };
  sim.runUntil((s) => s.status?.phase === 'RollingBack', 10, 1000);
  assert.equal(sim.status?.phase, 'RollingBack');
  // Thirty seconds on, the last check's slot is long past; the rollback waits on its call.
  sim.reconcile(30_000);
  assert.ok((sim.last.requeueAfterMs ?? 0) >= 2_000, `RollingBack looks again after ${sim.last.requeueAfterMs} ms`);
});
