// Maintenance windows (src/plan/window.ts) and how the planner keeps to them: across daylight-saving changes in
// zones that have them, with dated exclusions, and in the planner: no first call and no new batch outside a window,
// a batch in flight finishes after it closes, an abort proceeds at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { windowAt, zonedInstant } from '../../src/plan/window.ts';
import { resolveSpec, SpecError, type ResolvedWindow } from '../../src/api/defaults.ts';
import { Sim, peer, spec, OLD } from './fleet.ts';
import { ABORT_ANNOTATION } from '../../src/plan/index.ts';
import type { MaintenanceWindow } from '../../src/api/types.generated.ts';

const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());
const at = (s: string) => Date.parse(s);
const win = (w: MaintenanceWindow): ResolvedWindow => resolveSpec(spec({ window: w })).window!;

test('a daily 02:30 window in Europe/Berlin across spring-forward (2026-03-29, 02:00 -> 03:00): opens 03:30 CEST, one hour long in elapsed time', () => {
  const w = win({ timeZone: 'Europe/Berlin', recurring: [{ days: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'], start: '02:30', duration: '1h' }] });
  // The day before: 02:30 CET = 01:30Z.
  assert.equal(iso(windowAt(w, at('2026-03-28T00:00:00Z')).nextStart), '2026-03-28T01:30:00.000Z');
  // The night of the change: 02:30 does not exist; the window opens at 03:30 CEST = 01:30Z.
  const before = windowAt(w, at('2026-03-29T00:00:00Z'));
  assert.equal(before.open, false);
  assert.equal(iso(before.nextStart), '2026-03-29T01:30:00.000Z');
  const inside = windowAt(w, at('2026-03-29T02:00:00Z'));
  assert.equal(inside.open, true);
  assert.equal(iso(inside.closesAt), '2026-03-29T02:30:00.000Z');
  // The day after: 02:30 CEST = 00:30Z.
  assert.equal(iso(windowAt(w, at('2026-03-29T12:00:00Z')).nextStart), '2026-03-30T00:30:00.000Z');
});

test('fall-back (2026-10-25 in Europe/Berlin, 03:00 -> 02:00): a 02:30 window opens at the first 02:30 (CEST); a 01:00 window of 3 h is 3 elapsed hours', () => {
  const w = win({ timeZone: 'Europe/Berlin', recurring: [{ days: ['Sun'], start: '02:30', duration: '30m' }] });
  assert.equal(iso(windowAt(w, at('2026-10-24T12:00:00Z')).nextStart), '2026-10-25T00:30:00.000Z');
  const long = win({ timeZone: 'Europe/Berlin', recurring: [{ days: ['Sun'], start: '01:00', duration: '3h' }] });
  const s = windowAt(long, at('2026-10-24T12:00:00Z')).nextStart!;
  assert.equal(iso(s), '2026-10-24T23:00:00.000Z');
  assert.equal(iso(windowAt(long, s + 1).closesAt), '2026-10-25T02:00:00.000Z');
});

test('America/New_York across its spring-forward (2026-03-08): a Sunday 02:15 window opens 03:15 EDT; a weekday 22:00 window keeps its wall-clock time across the change', () => {
  const w = win({ timeZone: 'America/New_York', recurring: [{ days: ['Sun'], start: '02:15', duration: '2h' }] });
  assert.equal(iso(windowAt(w, at('2026-03-07T12:00:00Z')).nextStart), '2026-03-08T07:15:00.000Z');
  const evening = win({ timeZone: 'America/New_York', recurring: [{ days: ['Fri', 'Mon'], start: '22:00', duration: '4h' }] });
  assert.equal(iso(windowAt(evening, at('2026-03-06T12:00:00Z')).nextStart), '2026-03-07T03:00:00.000Z', 'Friday 22:00 EST = 03:00Z');
  assert.equal(iso(windowAt(evening, at('2026-03-08T12:00:00Z')).nextStart), '2026-03-10T02:00:00.000Z', 'Monday 22:00 EDT = 02:00Z');
  assert.equal(windowAt(evening, at('2026-03-10T05:59:00Z')).open, true);
  assert.equal(windowAt(evening, at('2026-03-10T06:00:00Z')).open, false);
});

test('zonedInstant: UTC is the identity; a repeated hour takes its first occurrence', () => {
  assert.equal(zonedInstant('UTC', at('2026-06-01T10:00:00Z')), at('2026-06-01T10:00:00Z'));
  assert.equal(iso(zonedInstant('America/New_York', at('2026-11-01T01:30:00Z'))), '2026-11-01T05:30:00.000Z');
});

test('dated exclusions close a window, and the next start skips past them; the reason is kept', () => {
  const w = win({
    timeZone: 'UTC',
    recurring: [{ days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri'], start: '09:00', duration: '8h' }],
    exclusions: [{ start: '2026-12-21T00:00:00Z', end: '2027-01-05T12:00:00Z', reason: 'year-end freeze' }],
  });
  const frozen = windowAt(w, at('2026-12-22T10:00:00Z'));
  assert.equal(frozen.open, false);
  assert.equal(frozen.excludedBy, 'year-end freeze');
  assert.equal(iso(frozen.nextStart), '2027-01-05T12:00:00.000Z', 'the rest of the window after the exclusion ends');
  assert.equal(windowAt(w, at('2026-12-18T16:59:00Z')).open, true);
});

test('an unknown zone makes the spec invalid (no window is guessed)', () => {
  assert.throws(() => resolveSpec(spec({ window: { timeZone: 'Mars/Olympus_Mons', recurring: [{ days: ['Mon'], start: '02:00', duration: '1h' }] } })), SpecError);
  assert.throws(() => resolveSpec(spec({ window: { timeZone: 'UTC', recurring: [{ days: ['Mon'], start: '25:00', duration: '1h' }] } })), SpecError);
});

// The planner: Sim starts at 2026-11-29T10:00:00Z (a Sunday).
const threeOn = () => [peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on'), peer('cp-3', OLD, 'on')];

function steps(sim: Sim, n: number, ms = 5_000): string[] {
  const calls: string[] = [];
  for (let i = 0; i < n; i++) {
    sim.step(ms);
    calls.push(...sim.calls().map((c) => `${c}@${sim.now.toISOString().slice(11, 19)}`));
    sim.applyDriverCalls();
  }
  return calls;
}

test('a window opening one minute after creation: nothing is called before it opens; status shows the next start', () => {
  const sim = new Sim(threeOn(), spec({ strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' }, window: { timeZone: 'UTC', recurring: [{ days: ['Sun'], start: '10:01', duration: '1h' }] } }));
  const before = steps(sim, 10, 5_000); // 10:00:05 .. 10:00:50
  assert.deepEqual(before, []);
  assert.equal(sim.status?.waiting?.reason, 'OutsideWindow');
  assert.equal(sim.status?.waiting?.until, '2026-11-29T10:01:00.000Z');
  assert.equal(sim.status?.window?.nextStart, '2026-11-29T10:01:00.000Z');
  assert.equal(sim.status?.window?.open, false);
  assert.equal(sim.last.requeueAfterMs, 10_000, 'looks again at the opening or the interval, whichever first');
  const calls = steps(sim, 12, 5_000);
  assert.equal(calls[0], 'Upgrade:cp-1@10:01:00');
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.equal(sim.status?.window?.open, true);
});

test('a batch started near the end of a window finishes after it closes; the next batch waits for the next window', () => {
  // Open 10:00-10:01 on Sundays and 10:00-10:01 on Mondays.
  const sim = new Sim(threeOn(), spec({ strategy: { batchSize: 1, soakDuration: '2m', batchTimeout: '10m' }, window: { timeZone: 'UTC', recurring: [{ days: ['Sun', 'Mon'], start: '10:00', duration: '1m' }] } }));
  const first = steps(sim, 4, 10_000); // batch 1 starts in the window
  assert.deepEqual(first.map((c) => c.split('@')[0]), ['Upgrade:cp-1']);
  const later = steps(sim, 30, 10_000); // the soak of 2 min ends after 10:01
  assert.deepEqual(later, [], 'no batch starts after the window closed');
  assert.deepEqual(sim.status?.batch?.history?.map((h) => h.index), [1], 'batch 1 finished outside the window');
  assert.equal(sim.status?.waiting?.reason, 'OutsideWindow');
  assert.equal(sim.status?.waiting?.until, '2026-11-30T10:00:00.000Z');
  // An abort outside the window rolls back at once.
  sim.upgrade = { ...sim.upgrade, annotations: { [ABORT_ANNOTATION]: 'now' } };
  const rb = steps(sim, 4, 5_000);
  assert.deepEqual(rb.map((c) => c.split('@')[0]), ['Rollback:cp-1']);
  assert.equal(sim.status?.phase, 'RolledBack');
});
