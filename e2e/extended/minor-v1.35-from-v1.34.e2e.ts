// A fleet still on v1.34: 3 × v1.34.4 (proxy gate alpha, off) -> v1.35.4, once OnePhase (the gate pass first,
// then the batches) and once TwoPhase (v1.35.4 emulates 1.32..1.35, so phase one runs it emulating 1.34).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { MINOR_V1_35_FROM_V1_34 as path } from './paths.ts';
import { assertServedAfterConvergence, callsOnce, fleetVersions, runPath } from './scenario.ts';
import type { Rig } from '../support/rig.ts';

const rigs: Rig[] = [];
after(async () => {
  for (const r of rigs) await r.teardown();
});

test('v1.34.4 -> v1.35.4 OnePhase: the gate turned on first, then the batches; Succeeded', async () => {
  const run = await runPath(path, 'from-v1-34', 18146, { strategy: { soakDuration: '5s' } }, { gate: false, rigs, phase: 'Succeeded' });
  const { rig } = run;
  assert.deepEqual(callsOnce(rig), ['EnableProxy:cp-1', 'EnableProxy:cp-2', 'EnableProxy:cp-3', 'Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.deepEqual(await fleetVersions(rig.cluster), [path.to, path.to, path.to]);
  const seen = assertServedAfterConvergence(run, path, 5_000);
  process.stderr.write(`[v1.34 -> v1.35] ${(run.elapsedMs / 1000).toFixed(1)} s to Succeeded; traffic ${seen}\n`);
});

test('v1.34.4 -> v1.35.4 TwoPhase: phase one emulating 1.34, phase two lifts it; Succeeded', async () => {
  const run = await runPath(path, 'from-v1-34-two-phase', 18148, { strategy: { soakDuration: '2s', phases: 'TwoPhase', phaseSoakDuration: '10s' } }, { gate: true, rigs, phase: 'Succeeded' });
  const { rig } = run;
  assert.deepEqual(callsOnce(rig), ['Upgrade:cp-1@1.34', 'Upgrade:cp-2@1.34', 'Upgrade:cp-3@1.34', 'Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.deepEqual(await fleetVersions(rig.cluster), [path.to, path.to, path.to]);
  process.stderr.write(`[v1.34 -> v1.35 TwoPhase] ${(run.elapsedMs / 1000).toFixed(1)} s to Succeeded\n`);
});
