// The campaign's schedules: the same seed draws the same upgrades, different indices differ, every fault heals
// well before the window ends, and a replay file is checked before it is run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { drawUpgrade, parseSchedule, prng, FAULT_KINDS } from '../../e2e/campaign/schedule.ts';

test('a seed draws the same upgrades again; upgrades of one campaign differ', () => {
  assert.deepEqual(drawUpgrade(42, 3), drawUpgrade(42, 3));
  const a = JSON.stringify(drawUpgrade(42, 0));
  assert.notEqual(a, JSON.stringify(drawUpgrade(42, 1)));
  assert.notEqual(a, JSON.stringify(drawUpgrade(43, 0)));
  const r = prng(7);
  const xs = Array.from({ length: 1000 }, () => r());
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  assert.ok(new Set(xs).size > 990, 'spread');
});

test('over many seeds: every fault heals before its window ends, apiserver faults name a server, every kind is drawn', () => {
  const kinds = new Set<string>();
  for (let seed = 0; seed < 300; seed++) {
    const s = drawUpgrade(seed, seed % 5);
    assert.ok(s.faults.length >= 1 && s.faults.length <= 3);
    for (const f of s.faults) {
      kinds.add(f.kind);
      assert.ok(f.atMs + f.durationMs + 60_000 <= s.windowMs, `${f.kind} heals at ${f.atMs + f.durationMs}, window ${s.windowMs}`);
      assert.equal(f.server !== undefined, f.kind.startsWith('apiserver-'));
    }
    assert.ok([1, 2].includes(s.spec.batchSize) && s.spec.failureLimit >= 2 && s.spec.failureLimit <= 4);
  }
  assert.deepEqual([...kinds].sort(), [...FAULT_KINDS].sort());
});

test('a replay file round-trips; a malformed one is refused', () => {
  const s = drawUpgrade(5, 2);
  assert.deepEqual(parseSchedule(JSON.stringify(s)), s);
  assert.throws(() => parseSchedule(JSON.stringify({ ...s, faults: [{ kind: 'rm -rf', atMs: 1, durationMs: 1 }] })), /not a campaign schedule/);
  assert.throws(() => parseSchedule(JSON.stringify({ ...s, faults: [{ kind: 'apiserver-kill', atMs: 1, durationMs: 1, server: 7 }] })), /not a campaign schedule/);
  assert.throws(() => parseSchedule('{}'), /not a campaign schedule/);
});
