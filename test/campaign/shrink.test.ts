import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sameFailure, shrink, withoutFault } from '../../e2e/campaign/shrink.ts';
import { drawUpgrade, type Fault, type Schedule } from '../../e2e/campaign/schedule.ts';

const key = (f: Fault): string => `${f.kind}@${f.atMs}`;

test('shrink keeps exactly the faults the failure needs when each run reproduces faithfully', async () => {
  await fc.assert(fc.asyncProperty(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 2 ** 20 }), async (seed, mask) => {
    const s: Schedule = drawUpgrade(seed, 0, 'process');
    // The failure needs a non-empty subset of the drawn faults (chosen by `mask`). Faults are told apart by identity:
    // a draw may hold two alike (seed 151 #2: operator-leader-kill@27s twice), and the failure may need both.
    const needed = s.faults.filter((_, i) => (mask >> i) & 1);
    if (needed.length === 0) needed.push(s.faults[0]!);
    const breaks = async (c: Schedule): Promise<boolean> => needed.every((f) => c.faults.includes(f));
    const r = await shrink(s, breaks);
    assert.deepEqual(r.schedule.faults.map(key).sort(), needed.map(key).sort());
    assert.ok(r.schedule.faults.every((f) => needed.includes(f)));
    assert.deepEqual(r.schedule.spec, s.spec, 'the spec is never changed');
    assert.equal(r.schedule.windowMs, s.windowMs);
    assert.ok(r.tried.length <= s.faults.length, 'one run per fault at most');
  }), { examples: [[137, 0b11]] }); // seed 137 draws apiserver-kill@9s twice, and the failure needs both
});

test('a failure that does not come back keeps its fault (never a schedule that was not seen failing)', async () => {
  const s = drawUpgrade(3, 0, 'process');
  const faults = [...s.faults, { kind: 'pause', atMs: 1000, durationMs: 3000 } as Fault, { kind: 'abort', atMs: 2000, durationMs: 0 } as Fault];
  const r = await shrink({ ...s, faults }, async () => false);
  assert.deepEqual(r.schedule.faults, faults);
  assert.ok(r.tried.every((t) => !t.reproduced));
});

test('the budget caps the runs; a failure that needs no fault at all shrinks to none', async () => {
  const s = drawUpgrade(5, 0, 'process');
  const faults: Fault[] = [1, 2, 3, 4].map((n) => ({ kind: 'pause', atMs: n * 1000, durationMs: 3000 }));
  let runs = 0;
  const r = await shrink({ ...s, faults }, async () => (runs++, true), 2);
  assert.equal(runs, 2);
  assert.equal(r.schedule.faults.length, 2);
  const none = await shrink({ ...s, faults }, async () => true);
  assert.deepEqual(none.schedule.faults, []);
  assert.equal(none.tried.length, 4);
  assert.deepEqual(withoutFault({ ...s, faults }, 1).faults.map((f) => f.atMs), [1000, 3000, 4000]);
});

test('the same failure means one of the same rules broken', () => {
  assert.equal(sameFailure(['BreachActedOn'], ['ComesToRest', 'BreachActedOn']), true);
  assert.equal(sameFailure(['BreachActedOn'], ['ComesToRest']), false);
  assert.equal(sameFailure(['BreachActedOn'], []), false);
});
