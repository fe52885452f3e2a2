// A patch upgrade inside a minor, the most frequent upgrade of all: 3 × v1.36.1 -> v1.36.3 with the defaults
// (the proxy gate on, as 1.36 has it). No gate pass, one replacement per server, no convergence wait beyond the
// first look; its time is measured (docs/timings.md, Extended tier).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { PATCH_V1_36 as path } from './paths.ts';
import { assertServedAfterConvergence, callsOnce, fleetVersions, runPath } from './scenario.ts';
import type { Rig } from '../support/rig.ts';

const rigs: Rig[] = [];
after(async () => {
  for (const r of rigs) await r.teardown();
});

test('patch v1.36.1 -> v1.36.3: Succeeded, no gate pass, each server replaced once, the client always served', async () => {
  const run = await runPath(path, 'patch-v1-36', 18140, { strategy: { soakDuration: '5s' } }, { rigs, phase: 'Succeeded' });
  const { final, rig } = run;
  assert.deepEqual(run.phases.filter((p) => p !== 'Pending'), ['Upgrading', 'Succeeded'], 'no EnablingProxy');
  assert.match(final.status?.conditions?.find((c) => c.type === 'PreflightPassed')?.message ?? '', /patch upgrade to v1\.36\.3/);
  assert.deepEqual(await fleetVersions(rig.cluster), [path.to, path.to, path.to]);
  assert.deepEqual(callsOnce(rig), ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.equal(final.status?.coverage?.builtInAdded, 0, 'a patch release adds no built-in resource');
  const seen = assertServedAfterConvergence(run, path, 5_000);
  const batches = (final.status?.batch?.history ?? []).map((h) => `${h.index}:${((Date.parse(h.completedAt ?? '') - Date.parse(h.startedAt ?? '')) / 1000).toFixed(1)}s`);
  process.stderr.write(`[patch] ${path.from} -> ${path.to}: ${(run.elapsedMs / 1000).toFixed(1)} s from creation to Succeeded (3 batches, 5 s soak each; per batch ${batches.join(', ')}); traffic ${seen}\n`);
});
