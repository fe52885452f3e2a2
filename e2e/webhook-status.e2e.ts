// A hook that reports status (spec.driver.webhook.reportsStatus, docs/drivers.md "Status"), on real servers: the hook
// ends cp-1's Upgrade 20 s after cp-1 is ready and back in its balancer (its own last steps), and an abort comes in
// that time. cp-1 is at its goal, so its Upgrade is Done by observation; the Rollback must still wait for the hook to
// say the Upgrade ended. The fault campaign caught the operator without this (process seed 281 #3: a Rollback the
// hook took 0.1 s before it ended the Upgrade of the same server).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { OLD_VERSION, waitFor } from './cluster/index.ts';
import { createUpgrade, upgradeAtRest } from './support/operator.ts';
import { startRig, upgradeManifest } from './support/rig.ts';
import { ABORT_ANNOTATION } from '../src/api/vocabulary.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';
const TAIL_MS = 20_000;

test('no Rollback for a server until the hook says its landed Upgrade ended', async () => {
  const rig = await startRig({ gate: true, healthPort: 18127 });
  cleanups.push(() => rig.teardown());
  const { cluster, hook, op } = rig;
  const name = 'status-before-rollback';
  hook.holdAfterReady('cp-1', TAIL_MS);
  await createUpgrade(cluster, upgradeManifest(name, hook, { strategy: { soakDuration: '3m', batchTimeout: '3m' } }));

  // cp-1 is ready on the new version; the hook still runs its Upgrade.
  const held = await waitFor('cp-1 ready, its Upgrade not ended', 3 * 60_000, () => Promise.resolve(hook.log.find((e) => e.event === 'held' && e.hostname === 'cp-1' && e.action === 'Upgrade')), 200);
  const abortAt = Date.now();
  const r = await cluster.request('lb', `${UPGRADES}/${name}`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify({ metadata: { annotations: { [ABORT_ANNOTATION]: 'a1' } } }) });
  assert.equal(r.status, 200, r.body);

  const final = await upgradeAtRest(cluster, name, 'the rollback to finish', 4 * 60_000);
  await hook.idle();

  assert.equal(final.status?.phase, 'RolledBack', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  const upgradeDone = hook.log.find((e) => e.event === 'done' && e.hostname === 'cp-1' && e.action === 'Upgrade');
  const rollbackTaken = hook.log.find((e) => e.event === 'accepted' && e.hostname === 'cp-1' && e.action === 'Rollback');
  assert.ok(upgradeDone && rollbackTaken, JSON.stringify(hook.log));
  assert.ok(rollbackTaken.at >= upgradeDone.at, `the Rollback reached the hook ${upgradeDone.at - rollbackTaken.at} ms before the Upgrade ended`);
  const upgradeCall = final.status?.driverCalls?.find((c) => c.server === 'cp-1' && c.action === 'Upgrade');
  assert.equal(upgradeCall?.result, 'Done');
  assert.ok(upgradeCall?.driverSettledAt, 'the settlement is recorded on the call');
  assert.ok(Date.parse(upgradeCall.completedAt!) < upgradeDone.at, 'the Upgrade was Done (observed) before the hook ended it');
  assert.ok(hook.statuses > 0, 'the operator asked the hook');
  const v = JSON.parse((await cluster.request(0, '/version')).body) as { gitVersion: string };
  assert.equal(v.gitVersion, OLD_VERSION, 'cp-1 is back on the old version');
  assert.deepEqual(op.exits, [], 'the operator never restarted');
  process.stderr.write(`held at +0, abort at +${abortAt - held.at} ms, Upgrade ended at +${upgradeDone.at - held.at} ms, Rollback taken at +${rollbackTaken.at - held.at} ms; status requests ${hook.statuses}\n`);
});
