// Two operator replicas, as the chart deploys them: only the leader acts. The leader is stopped (SIGTERM,
// as at a rolling update of the operator) in the middle of the upgrade; the other replica takes over and
// finishes, and no driver call is made twice.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from './cluster/index.ts';
import { createUpgrade, getUpgrade, startOperator } from './support/operator.ts';
import { startRig, upgradeManifest } from './support/rig.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const callsIn = (lines: Record<string, unknown>[]): string[] => lines.filter((l) => l.message === 'calling driver').map((l) => String(l.key));
const leads = (lines: Record<string, unknown>[]): boolean => lines.some((l) => l.message === 'started leading');

test('two replicas: one acts; when the leader stops mid-upgrade the other finishes, each driver key still delivered once', async () => {
  const rig = await startRig({ gate: true, healthPort: 18084 });
  cleanups.push(() => rig.teardown());
  const { cluster, hook } = rig;
  const first = rig.op;
  await waitFor('the first replica to lead', 30_000, async () => (leads(first.logLines()) ? true : undefined));
  const second = await startOperator(cluster, { healthPort: 18085 });
  cleanups.push(() => second.stop());

  await createUpgrade(cluster, upgradeManifest('ha', hook, { strategy: { soakDuration: '3s' } }));
  // Stop the leader once it has replaced the first server.
  await waitFor('the first upgrade call', 60_000, async () => ([...hook.calls.values()].some((c) => c.action === 'Upgrade') ? true : undefined), 200);
  const stoppedAt = Date.now();
  await first.stop();
  const final = await waitFor('the upgrade to finish under the second replica', 4 * 60_000, async () => {
    const u = await getUpgrade(cluster, 'ha');
    const p = u?.status?.phase;
    return p === 'Succeeded' || p === 'Paused' || p === 'Failed' ? u : undefined;
  }, 500);
  await hook.idle();

  assert.equal(final.status?.phase, 'Succeeded', JSON.stringify(final.status?.pause));
  const a = first.logLines();
  const b = second.logLines();
  assert.ok(leads(a) && leads(b), 'each replica led once: the first until it stopped, then the second');
  assert.ok(a.some((l) => l.message === 'released the lease'), 'the stopping leader released its lease');
  assert.ok(!b.some((l) => l.message === 'calling driver' && Date.parse(String(l.timestamp)) < stoppedAt), 'the standby made no call while the first replica led');
  const keys = [...callsIn(a), ...callsIn(b)];
  assert.equal(new Set(keys).size, keys.length, `no key called twice across replicas: ${keys.join(', ')}`);
  const hooked = [...hook.calls.values()];
  assert.deepEqual(hooked.map((c) => `${c.action}:${c.hostname}`), ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  for (const c of hooked) assert.equal(c.deliveries, 1, `${c.key} delivered once`);
  const takeover = b.find((l) => l.message === 'started leading');
  process.stderr.write(`leader stopped -> standby leading in ${Date.parse(String(takeover?.timestamp)) - stoppedAt} ms; calls by the first: ${callsIn(a).length}, by the second: ${callsIn(b).length}\n`);
});
