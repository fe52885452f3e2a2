// A short fault campaign (issue 26) in the core tier: two upgrades on fresh process-mode clusters under faults drawn
// from a seed, each history judged by the offline checker. One seed is fixed (the same upgrade every run), the other
// is random and printed, so a failure names what to replay: npm run campaign -- --seed S --upgrades 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runUpgrade } from './campaign/run-upgrade.ts';
import { line } from './campaign/result.ts';
import { drawUpgrade } from './campaign/schedule.ts';

/** Seed 1's first upgrade: batch 2, client errors and a pause under way, gate on, OnePhase. */
const FIXED = 1;

/** A random seed whose first upgrade fits the tier's budget: OnePhase with the gate on (no EnablingProxy). */
function randomShortSeed(): number {
  for (;;) {
    const seed = Math.floor(Math.random() * 2 ** 31);
    const s = drawUpgrade(seed, 0);
    if (s.spec.gate && !s.spec.twoPhase) return seed;
  }
}

for (const [what, seed] of [['fixed', FIXED], ['random', randomShortSeed()]] as const) {
  test(`campaign, ${what} seed ${seed}: the upgrade under faults keeps every rule of the history checker`, { timeout: 8 * 60_000 }, async () => {
    const s = drawUpgrade(seed, 0);
    process.stderr.write(`campaign ${what} seed ${seed} (replay: npm run campaign -- --seed ${seed} --upgrades 1)\n`);
    const r = await runUpgrade(s, (m) => process.stderr.write(`${m}\n`));
    process.stderr.write(`${line(r)}\n`);
    assert.equal(r.harnessError, undefined);
    assert.ok(r.history.statuses.length > 0 && r.history.ops.length > 0, 'the upgrade ran: statuses and driver calls recorded');
    assert.deepEqual(r.verdict.violations, [], line(r));
  });
}
