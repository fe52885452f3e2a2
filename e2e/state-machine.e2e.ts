// The state machine against a hostile reality, on the real cluster:
// (a) the operator is SIGKILLed between writing a call to status and sending it (and, separately, after the
//     hook got the call but before the answer was recorded); a new process finishes the upgrade and each
//     replacement happens once;
// (b) onBreach Rollback while a replacement is still in flight: the rollback waits for it to land, then
//     puts every touched server back, and the fleet ends uniformly on the from-version;
// (c) a server down in preflight whose identity Lease is then gone (a kube-apiserver deletes it when it starts and
//     when it stops gracefully): preflight waits for it, and the plan has every server once it is back.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NEW_VERSION, OLD_VERSION, sleep, waitFor, type Cluster } from './cluster/index.ts';
import { identityLeases } from './support/identity-leases.ts';
import { createUpgrade, getUpgrade, startOperator, upgradeAtRest } from './support/operator.ts';
import { startRig, upgradeManifest } from './support/rig.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';

async function versions(cluster: Cluster): Promise<string[]> {
  return Promise.all(cluster.servers.map(async (s) => (JSON.parse((await cluster.request(s.index, '/version')).body) as { gitVersion: string }).gitVersion));
}

for (const [point, port] of [['before-call', 18090], ['after-call', 18092]] as const) {
  test(`the operator SIGKILLed ${point === 'before-call' ? 'between recording a call and sending it' : 'after sending a call, before recording the answer'}: a new process finishes, each server replaced once`, async () => {
    const once = join(mkdtempSync(join(tmpdir(), 'auo-fault-')), 'fired');
    const rig = await startRig({ gate: true, healthPort: port, operatorEnv: { AUO_FAULT: point, AUO_FAULT_ONCE_FILE: once } });
    cleanups.push(() => rig.teardown());
    const { cluster, hook, op } = rig;
    const name = `kill-${point}`;
    await createUpgrade(cluster, upgradeManifest(name, hook, { strategy: { soakDuration: '2s' } }));
    await waitFor('the fault to kill the operator', 90_000, async () => (op.exits.length > 0 ? true : undefined), 200);
    assert.equal(op.exits[0]?.signal, 'SIGKILL');
    const atKill = await getUpgrade(cluster, name);
    const pending = atKill?.status?.driverCalls?.filter((c) => c.result === 'Requested') ?? [];
    assert.equal(pending.length, 1, `one call recorded Requested when the process died: ${JSON.stringify(atKill?.status?.driverCalls)}`);
    assert.equal(hook.calls.has(pending[0]!.key), point === 'after-call', point === 'after-call' ? 'the hook got it' : 'the hook never got it');

    const second = await startOperator(cluster, { healthPort: port + 1, env: { AUO_FAULT: point, AUO_FAULT_ONCE_FILE: once } });
    cleanups.push(() => second.stop());
    const final = await upgradeAtRest(cluster, name, `${name} to finish`, 5 * 60_000);
    await hook.idle();

    assert.equal(final.status?.phase, 'Succeeded', JSON.stringify(final.status?.pause ?? final.status?.conditions));
    assert.deepEqual(await versions(cluster), cluster.servers.map(() => NEW_VERSION));
    const received = [...hook.calls.values()];
    assert.deepEqual(received.map((c) => `${c.action}:${c.hostname}`).sort(), ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
    const starts = hook.log.filter((e) => e.event === 'started').map((e) => e.hostname);
    assert.deepEqual(starts, ['cp-1', 'cp-2', 'cp-3'], 'each server replaced exactly once');
    const killedKey = received.find((c) => c.key === pending[0]!.key);
    assert.ok(killedKey, 'the call recorded before the kill was delivered by the new process under the same key');
    if (point === 'before-call') assert.equal(killedKey.deliveries, 1, 'sent once, by the new process');
    else {
      // Either the new process re-sent the key (the hook answered "duplicate" and replaced nothing), or the
      // replacement had landed by the time it looked and the call was resolved from observation.
      const recorded = final.status?.driverCalls?.find((c) => c.key === killedKey.key);
      process.stderr.write(`after-call: deliveries ${killedKey.deliveries}; status: ${recorded?.message}\n`);
      assert.ok(killedKey.deliveries === 2 || /landed before its acceptance was recorded/.test(recorded?.message ?? ''), `re-sent under the same key or resolved by observation: ${JSON.stringify(recorded)}`);
      assert.ok(killedKey.deliveries <= 2);
    }
    const calls = final.status?.driverCalls ?? [];
    assert.ok(calls.every((c) => c.result === 'Done'), `no call left Requested or Accepted: ${JSON.stringify(calls.map((c) => `${c.server}:${c.result}`))}`);
    assert.equal(new Set(calls.map((c) => c.key)).size, 3);
  });
}

test('onBreach Rollback while a replacement is in flight: the rollback waits for it, then the fleet ends on the from-version', async () => {
  const rig = await startRig({ gate: true, healthPort: 18094 });
  cleanups.push(() => rig.teardown());
  const { cluster, hook } = rig;
  const name = 'rollback-in-flight';
  await createUpgrade(cluster, upgradeManifest(name, hook, { strategy: { soakDuration: '2s', batchTimeout: '3m' }, analysis: { onBreach: 'Rollback', failureLimit: 1 } }));
  // cp-2's replacement is held for 25 s after the hook accepts it: it is in flight when the breach comes.
  hook.holdBeforeStart('cp-2', 25_000);
  await waitFor('cp-2 upgrade accepted', 3 * 60_000, async () => {
    const u = await getUpgrade(cluster, name);
    return u?.status?.driverCalls?.some((c) => c.server === 'cp-2' && c.action === 'Upgrade' && c.result === 'Accepted') ? true : undefined;
  }, 200);
  // A breach on the next check: a latency threshold no server meets (a spec edit, as a user would make).
  const patch = { spec: { analysis: { thresholds: { latencyP99: '1ms' } } } };
  const r = await cluster.request('lb', `${UPGRADES}/${name}`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify(patch) });
  assert.equal(r.status, 200, r.body);
  const breachAt = Date.now();
  await waitFor('RollingBack', 60_000, async () => ((await getUpgrade(cluster, name))?.status?.phase === 'RollingBack' ? true : undefined), 200);
  const final = await upgradeAtRest(cluster, name, `${name} to finish`, 5 * 60_000);
  await hook.idle();

  assert.equal(final.status?.phase, 'RolledBack', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.deepEqual(await versions(cluster), cluster.servers.map(() => OLD_VERSION), 'the fleet is uniformly on the from-version');
  const seq = hook.log.filter((e) => e.event === 'accepted').map((e) => `${e.action}:${e.hostname}`);
  assert.deepEqual(seq, ['Upgrade:cp-1', 'Upgrade:cp-2', 'Rollback:cp-2', 'Rollback:cp-1'], 'newest first, after the in-flight upgrade');
  const cp2up = [...hook.calls.values()].find((c) => c.action === 'Upgrade' && c.hostname === 'cp-2')!;
  const cp2back = [...hook.calls.values()].find((c) => c.action === 'Rollback' && c.hostname === 'cp-2')!;
  // Landed = the operator saw cp-2 back on the target (the call Done) before it recorded the Rollback. The hook's
  // own doneAt is not the measure: its readiness poll may notice the new server after the operator's did.
  const calls = final.status?.driverCalls ?? [];
  const upCall = calls.find((c) => c.action === 'Upgrade' && c.server === 'cp-2');
  const backCall = calls.find((c) => c.action === 'Rollback' && c.server === 'cp-2');
  assert.ok(upCall?.completedAt && backCall?.time && Date.parse(upCall.completedAt) <= Date.parse(backCall.time), `the Rollback of cp-2 was recorded only after its Upgrade was Done: ${JSON.stringify([upCall, backCall])}`);
  assert.ok(cp2up.startedAt !== undefined && cp2back.at > cp2up.startedAt, 'and reached the hook only after the held replacement had started');
  assert.ok(cp2up.at < breachAt, 'the Upgrade of cp-2 was in flight when the breach came');
  for (const c of hook.calls.values()) assert.equal(c.deliveries, 1, `${c.key} delivered once`);
  assert.equal(final.status?.conditions?.find((c) => c.type === 'RollbackSafe')?.status, 'True');
  assert.ok((final.status?.driverCalls ?? []).every((c) => c.result === 'Done'));
});

test('a server whose identity Lease is gone in preflight is waited for: the plan has every server once it is back', async () => {
  const rig = await startRig({ gate: true, healthPort: 18096 });
  cleanups.push(() => rig.teardown());
  const { cluster, hook } = rig;
  const name = 'lease-gone-in-preflight';
  await cluster.kill(1);
  await createUpgrade(cluster, upgradeManifest(name, hook, { strategy: { soakDuration: '2s' } }));
  await waitFor('preflight to wait on cp-2', 90_000, async () => {
    const u = await getUpgrade(cluster, name);
    return u?.status?.waiting?.reason === 'UnhealthyFleet' && /cp-2/.test(u.status.waiting.message ?? '') ? true : undefined;
  }, 200);
  // What cp-2's restart does first: its old Lease deleted, the new one not written yet.
  const leases = await identityLeases(cluster);
  const lease = leases.find((l) => l.metadata.labels?.['kubernetes.io/hostname'] === 'cp-2');
  assert.ok(lease, `cp-2's Lease: ${JSON.stringify(leases.map((l) => l.metadata.name))}`);
  const del = await cluster.request('lb', `/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/${lease.metadata.name}`, { method: 'DELETE' });
  assert.equal(del.status, 200, del.body);
  const waiting = await waitFor('cp-2 recorded missing', 60_000, async () => {
    const u = await getUpgrade(cluster, name);
    return u?.status?.peers?.find((r) => r.hostname === 'cp-2')?.missingSince ? u : undefined;
  }, 200);
  assert.equal(waiting.status?.phase, 'Preflight');
  assert.match(waiting.status?.waiting?.message ?? '', /cp-2 \(no identity Lease since /);
  // Every other server is healthy now; preflight still holds, several looks long.
  const holdUntil = Date.now() + 15_000;
  while (Date.now() < holdUntil) {
    const u = await getUpgrade(cluster, name);
    assert.equal(u?.status?.phase, 'Preflight', `no plan while cp-2 has no Lease: ${JSON.stringify(u?.status?.waiting)}`);
    await sleep(1_000);
  }
  assert.equal(hook.calls.size, 0, 'no call while cp-2 has no Lease');
  await cluster.start(1);
  const final = await upgradeAtRest(cluster, name, `${name} to finish`, 5 * 60_000);
  await hook.idle();
  assert.equal(final.status?.phase, 'Succeeded', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.deepEqual(final.status?.plan?.members, ['cp-1', 'cp-2', 'cp-3']);
  assert.deepEqual(await versions(cluster), cluster.servers.map(() => NEW_VERSION));
  assert.ok((final.status?.peers ?? []).every((r) => r.missingSince === undefined));
});
