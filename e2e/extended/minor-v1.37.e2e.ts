// v1.36 -> v1.37 on real servers: 3 × v1.36.3 (proxy gate on by default) -> v1.37.2, with a client asking for a
// resource only v1.37 serves. Then the rollback variant: the server of batch 2 dies during its soak, and the
// operator (onBreach: Rollback) puts every upgraded server back, ending on a uniform v1.36.3 fleet.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { MINOR_V1_37 as path } from './paths.ts';
import { assertServedAfterConvergence, callsOnce, finishPath, fleetVersions, runPath, startPath, watchUpgrade } from './scenario.ts';
import type { Rig } from '../support/rig.ts';

const rigs: Rig[] = [];
after(async () => {
  for (const r of rigs) await r.teardown();
});

test('v1.36.3 -> v1.37.2: Succeeded without a gate pass; no 404 for a v1.37-only resource once the first batch converged', async () => {
  const run = await runPath(path, 'to-v1-37', 18142, { strategy: { soakDuration: '5s' }, analysis: { onBreach: 'Pause' } }, { rigs, phase: 'Succeeded' });
  const { final, rig } = run;
  assert.ok(!run.phases.includes('EnablingProxy'), '1.36 has the gate on by default: no gate pass');
  assert.deepEqual(await fleetVersions(rig.cluster), [path.to, path.to, path.to]);
  assert.deepEqual(callsOnce(rig), ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.equal(final.status?.coverage?.builtInAdded, 4, JSON.stringify(final.status?.coverage));
  const seen = assertServedAfterConvergence(run, path, 5_000);
  process.stderr.write(`[v1.37] ${(run.elapsedMs / 1000).toFixed(1)} s to Succeeded; traffic ${seen}\n`);
});

test('v1.36.3 -> v1.37.2, a breach in batch 2: RolledBack, every server on v1.36.3 again, each call once', async () => {
  const name = 'to-v1-37-rollback';
  const started = await startPath(path, name, 18144, { strategy: { soakDuration: '3m', batchTimeout: '5m' }, analysis: { onBreach: 'Rollback', thresholds: { proxyErrorRatio: 0.05 } } });
  rigs.push(started.rig);
  const { cluster } = started.rig;
  await watchUpgrade(cluster, name, (u) => u.status?.batch?.current === 2 && u.status.batch.soakUntil !== undefined, 6 * 60_000);
  await cluster.kill(1);
  const run = await finishPath(started, name, 6 * 60_000);
  const { final, rig } = run;
  assert.equal(final.status?.phase, 'RolledBack', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.deepEqual(await fleetVersions(cluster), [path.from, path.from, path.from], 'a uniform old fleet');
  const calls = callsOnce(rig);
  assert.deepEqual(calls.slice(0, 2), ['Upgrade:cp-1', 'Upgrade:cp-2']);
  assert.deepEqual(calls.slice(2).sort(), ['Rollback:cp-1', 'Rollback:cp-2'], 'both upgraded servers rolled back, cp-3 never touched');
  assert.equal(final.status?.conditions?.find((c) => c.type === 'RollbackSafe')?.status, 'True', 'storage versions compared before rolling back');
  process.stderr.write(`[v1.37 rollback] ${(run.elapsedMs / 1000).toFixed(1)} s to RolledBack; calls ${calls.join(', ')}\n`);
});
