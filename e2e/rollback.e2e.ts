// Rollback on breach, for real: the first new server dies during its soak, the old servers' proxied requests
// to it answer 503, the proxy error ratio crosses its threshold for failureLimit checks, and the operator
// (onBreach: Rollback) puts that server back on the old version after checking storage versions. Once with
// the signals from the operator's own scrapes (source Direct), once from a real Prometheus (source Prometheus).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { OLD_VERSION, waitFor } from './cluster/index.ts';
import { createUpgrade, getUpgrade, upgradeAtRest } from './support/operator.ts';
import { startRig, upgradeManifest } from './support/rig.ts';
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function rollbackOnBreach(name: string, source: 'Direct' | 'Prometheus', healthPort: number): Promise<void> {
  const rig = await startRig({ gate: true, healthPort, trafficMaxMs: 6 * 60_000 });
  cleanups.push(() => rig.teardown());
  const { cluster, hook, op, traffic } = rig;
  const analysis = { onBreach: 'Rollback', thresholds: { proxyErrorRatio: 0.05 } };
  // The harness's Prometheus scrapes every second, so a 5 s window holds enough samples (the default is 1m).
  const sourced = source === 'Prometheus' ? { ...analysis, source, prometheus: { address: await cluster.startPrometheus(), window: '5s' } } : analysis;
  await createUpgrade(cluster, upgradeManifest(name, hook, { strategy: { soakDuration: '3m', batchTimeout: '5m' }, analysis: sourced }));

  // Batch 1 (cp-1) is back on the new version and soaking.
  await waitFor('batch 1 soaking', 3 * 60_000, async () => {
    const u = await getUpgrade(cluster, name);
    return u?.status?.batch?.current === 1 && u.status.batch.soakUntil ? true : undefined;
  }, 500);
  const killedAt = Date.now();
  await cluster.kill(0);

  const final = await upgradeAtRest(cluster, name, 'the rollback to finish', 3 * 60_000);
  await hook.idle();
  await traffic.stop();

  assert.equal(final.status?.phase, 'RolledBack', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  for (const s of cluster.servers) {
    const v = JSON.parse((await cluster.request(s.index, '/version')).body) as { gitVersion: string };
    assert.equal(v.gitVersion, OLD_VERSION, `${s.name} is back on the old version`);
  }
  // The dead server breaches on its own (signal serverReady: a member down with no call in flight), often
  // before its peers' proxied 503s fill a window; either names cp-1's death.
  const breaches = final.status?.lastAnalysis?.breaches ?? [];
  assert.ok(breaches.some((b) => b.signal === 'proxyErrorRatio' || (b.signal === 'serverReady' && b.server === 'cp-1')), `the breach was cp-1's death: ${JSON.stringify(breaches)}`);
  assert.ok((final.status?.lastAnalysis?.consecutiveBreaches ?? 0) >= 3);
  assert.equal(final.status?.conditions?.find((c) => c.type === 'Degraded')?.status, 'True');
  assert.equal(final.status?.conditions?.find((c) => c.type === 'RollbackSafe')?.status, 'True', 'storage versions were compared before rolling back');
  const calls = [...hook.calls.values()].map((c) => `${c.action}:${c.hostname}x${c.deliveries}`);
  assert.deepEqual(calls, ['Upgrade:cp-1x1', 'Rollback:cp-1x1'], 'only the upgraded server was rolled back, once');
  const rollbackCall = [...hook.calls.values()].find((c) => c.action === 'Rollback')!;
  const served503 = traffic.count((x) => x.status === 503, killedAt);
  process.stderr.write(`[${source}] kill -> rollback call ${rollbackCall.at - killedAt} ms; 503s seen by the client after the kill: ${served503}; ` +
    `breaches: ${JSON.stringify(breaches.map((b) => `${b.signal}@${b.server}=${b.observed}`))}; RollbackSafe: ${final.status?.conditions?.find((c) => c.type === 'RollbackSafe')?.message}\n`);
  // The client sees the 503s when the analysis measured them; a rollback on cp-1's own death alone (serverReady) can
  // come before any (2.9 s after the kill in one Prometheus run: no proxied 503 had reached the client yet).
  if (breaches.some((b) => b.signal === 'proxyErrorRatio')) assert.ok(served503 > 0, 'the client saw the 503s that the analysis measured');
  assert.deepEqual(op.exits, [], 'the operator never restarted');
  // The replacement of cp-1 itself (a server stopping, starting, answering its balancer's /readyz with 500
  // until ready) was no breach: only the kill was.
  const breachLines = op.logLines().filter((l) => l.message === 'analysis' && l.verdict === 'Breach');
  const early = breachLines.filter((l) => Date.parse(String(l.timestamp)) < killedAt);
  assert.deepEqual(early.map((l) => JSON.stringify(l.breaches)), [], 'no breach before the kill');
  if (source === 'Prometheus') assert.ok(op.logLines().some((l) => l.message === 'analysis' && l.source === 'Prometheus'), 'the checks came from the Prometheus source');
}

test('a new server that dies during its soak: proxy 503s breach the threshold and the operator rolls back', async () => {
  await rollbackOnBreach('rollback-on-breach', 'Direct', 18083);
});

test('the same with analysis.source Prometheus: a real Prometheus scraping the servers sees the breach', async () => {
  await rollbackOnBreach('rollback-via-prometheus', 'Prometheus', 18086);
});
