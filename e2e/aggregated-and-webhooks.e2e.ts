// Issue 13: an upgrade that breaks what the Mixed Version Proxy does not cover — an aggregated API, an
// admission webhook — only on the new servers pauses, naming what broke. Three v1.35.4 servers (gate on);
// the new version's servers run as their own uid (`Cluster.start({ runAs })`) and a policy routing rule in
// the cluster's namespace refuses that uid's connections to one backend (e2e/support/netrules.ts says why
// not by address): the old servers reach it, every new server cannot. The operator runs as its own process
// through the balancer and upgrades through the harness' webhook driver.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, ReplaceWebhook, OLD_VERSION, NEW_VERSION, PROXY_GATE, waitFor } from './cluster/index.ts';
import { createUpgrade, getUpgrade, installCrd, startOperator, type OperatorProcess } from './support/operator.ts';
import { upgradeManifest } from './support/rig.ts';
import { blockFromUid } from './support/netrules.ts';
import { registerApiService, registerValidatingWebhook, startAggregatedApi, startAllowingWebhook, type Backend } from './support/backends.ts';
import { parsePromText } from '../src/observe/prom-text.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

const NEW_UID = 1536;
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

interface SplitRig {
  cluster: Cluster;
  hook: ReplaceWebhook;
  op: OperatorProcess;
}

async function startSplitRig(healthPort: number): Promise<SplitRig> {
  const cluster = await Cluster.start({
    servers: 3, version: OLD_VERSION, featureGates: { [PROXY_GATE]: true },
    // No kube-proxy in the harness: the aggregator must dial the APIService's endpoints, not its cluster IP.
    extraFlags: ['--enable-aggregator-routing=true'],
    runAs: { [NEW_VERSION]: { uid: NEW_UID, gid: NEW_UID } }, verbose: true,
  });
  cleanups.push(() => cluster.teardown());
  await installCrd(cluster);
  const hook = await ReplaceWebhook.start(cluster);
  cleanups.push(() => hook.close());
  const op = await startOperator(cluster, { healthPort });
  cleanups.push(() => op.stop());
  return { cluster, hook, op };
}

/** One metric family's samples on server i, keyed by the `name` label. */
async function byName(cluster: Cluster, i: number, family: string): Promise<{ labels: Record<string, string>; value: number }[]> {
  const r = await cluster.request(i, '/metrics');
  return parsePromText(r.body, new Set([family])).get(family)?.samples ?? [];
}

async function pausedOrDone(cluster: Cluster, name: string): Promise<ApiServerUpgrade> {
  let last = '';
  return waitFor(`${name} to pause`, 4 * 60_000, async () => {
    const u = await getUpgrade(cluster, name);
    const line = `${u?.status?.phase} ${u?.status?.batch?.progress ?? ''} ${u?.status?.pause?.message ?? ''}`;
    if (line !== last) process.stderr.write(`[${name}] ${(last = line)}\n`);
    const p = u?.status?.phase;
    return p === 'Paused' || p === 'Succeeded' || p === 'Failed' || p === 'RolledBack' ? u : undefined;
  }, 500);
}

function upgradeCalls(hook: ReplaceWebhook): string[] {
  return [...hook.calls.values()].filter((c) => c.action === 'Upgrade').sort((a, b) => a.at - b.at).map((c) => c.hostname);
}

test('an aggregated API only the old servers reach: the first new server breaches and the upgrade pauses naming the APIService', async () => {
  const t0 = Date.now();
  const { cluster, hook } = await startSplitRig(18130);
  const group = { group: 'widgets.auo.example.com', version: 'v1alpha1', service: 'auo-widgets' };
  const backend: Backend = await startAggregatedApi(cluster, group);
  cleanups.push(() => backend.close());
  await blockFromUid(cluster, { uid: NEW_UID, address: backend.address, port: backend.port });
  const apiService = await registerApiService(cluster, backend, group);
  // Before the upgrade every (old) server's aggregator reaches it.
  await waitFor('every server to report the APIService available', 60_000, async () => {
    for (const s of cluster.servers) {
      const g = (await byName(cluster, s.index, 'aggregator_unavailable_apiservice')).find((x) => x.labels.name === apiService);
      if (g?.value !== 0) return undefined;
    }
    return true;
  }, 500);

  const name = 'agg-split';
  await createUpgrade(cluster, upgradeManifest(name, hook, { strategy: { soakDuration: '2m' } }));
  const final = await pausedOrDone(cluster, name);
  await hook.idle();
  const first = upgradeCalls(hook)[0];
  process.stderr.write(`pause: ${JSON.stringify(final.status?.pause)}\nbreaches: ${JSON.stringify(final.status?.lastAnalysis?.breaches)}\n`);

  assert.equal(final.status?.phase, 'Paused', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.equal(final.status?.pause?.reason, 'AnalysisBreach');
  assert.deepEqual(upgradeCalls(hook), [first], 'only the first batch was replaced');
  const others = cluster.servers.map((s) => s.name).filter((n) => n !== first).sort();
  const msg = final.status?.pause?.message ?? '';
  assert.ok(msg.includes(`APIService ${apiService} is unavailable on ${first} but available on ${others.join(', ')}`), msg);
  const breaches = final.status?.lastAnalysis?.breaches ?? [];
  assert.ok(breaches.some((b) => b.signal === 'unavailableAPIServices' && b.server === first), JSON.stringify(breaches));
  // The new server's own gauge says the same, from its own check: its connections were refused.
  const idx = cluster.servers.findIndex((s) => s.name === first);
  assert.equal((await byName(cluster, idx, 'aggregator_unavailable_apiservice')).find((x) => x.labels.name === apiService)?.value, 1);
  assert.match(await cluster.logTail(idx, 2000), /connect: permission denied/);
  // Measured, not asserted (it depends on which server wrote the shared APIService status last): what clients
  // of the old servers get for the group while the new server keeps writing Available=False.
  const seen: Record<string, number> = {};
  for (let k = 0; k < 20; k++) {
    for (const s of cluster.servers.filter((x) => x.name !== first)) {
      const r = await cluster.request(s.index, `/apis/${group.group}/${group.version}/namespaces/default/widgets`);
      seen[`${s.name}:${r.status}`] = (seen[`${s.name}:${r.status}`] ?? 0) + 1;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  process.stderr.write(`aggregated API scenario: ${((Date.now() - t0) / 1000).toFixed(1)} s; backend calls ${JSON.stringify([...backend.calls])}; old servers answered the group's requests ${JSON.stringify(seen)}\n`);
});

test('a validating webhook the new servers cannot reach (failurePolicy Ignore): the upgrade pauses naming the webhook', async () => {
  const t0 = Date.now();
  const { cluster, hook } = await startSplitRig(18132);
  const webhookName = 'allow.auo.example.com';
  const backend = await startAllowingWebhook(cluster, 'allow');
  cleanups.push(() => backend.close());
  await blockFromUid(cluster, { uid: NEW_UID, address: backend.address, port: backend.port });
  await registerValidatingWebhook(cluster, backend, webhookName, 'Ignore');
  const ns = await cluster.request('lb', '/api/v1/namespaces', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ metadata: { name: 'hooked', labels: { 'auo-e2e-webhook': 'on' } } }) });
  assert.equal(ns.status, 201, ns.body);

  // Traffic the webhook sees: a dry-run ConfigMap create on every server in turn (dry runs call webhooks
  // with sideEffects None and store nothing). Fail open: every create succeeds, on every server.
  const answers: Record<string, number> = {};
  let stop = false;
  const traffic = (async () => {
    while (!stop) {
      for (const s of cluster.servers) {
        const r = await cluster.request(s.index, '/api/v1/namespaces/hooked/configmaps?dryRun=All', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ metadata: { generateName: 'cm-' } }), timeoutMs: 5000 }).catch(() => undefined);
        const k = `${s.name}:${r?.status ?? 'error'}`;
        answers[k] = (answers[k] ?? 0) + 1;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  cleanups.push(async () => {
    stop = true;
    await traffic;
  });
  await waitFor('the webhook to be called', 30_000, async () => ((backend.calls.get('/validate') ?? 0) >= 10 ? true : undefined), 250);

  const name = 'webhook-split';
  await createUpgrade(cluster, upgradeManifest(name, hook, { strategy: { soakDuration: '2m' }, analysis: { thresholds: { webhookMinCalls: 5 } } }));
  const final = await pausedOrDone(cluster, name);
  stop = true;
  await traffic;
  await hook.idle();
  const first = upgradeCalls(hook)[0]!;
  process.stderr.write(`pause: ${JSON.stringify(final.status?.pause)}\nbreaches: ${JSON.stringify(final.status?.lastAnalysis?.breaches)}\ntraffic: ${JSON.stringify(answers)}\n`);

  assert.equal(final.status?.phase, 'Paused', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.equal(final.status?.pause?.reason, 'AnalysisBreach');
  assert.deepEqual(upgradeCalls(hook), [first], 'only the first batch was replaced');
  const msg = final.status?.pause?.message ?? '';
  assert.match(msg, new RegExp(`webhook ${webhookName.replace(/\./g, '\\.')}: \\d+ of \\d+ calls from ${first} failed`), msg);
  const breaches = final.status?.lastAnalysis?.breaches ?? [];
  assert.ok(breaches.some((b) => b.signal === 'webhookErrorRatio' && b.server === first), JSON.stringify(breaches));
  // Fail open: the clients never saw it (every create answered 201) and no other signal breached.
  assert.deepEqual(Object.keys(answers).filter((k) => !k.endsWith(':201') && !k.endsWith(':error')), [], JSON.stringify(answers));
  assert.deepEqual(breaches.filter((b) => b.signal === 'errorRatio'), []);
  // The new server's own counters: its calls failed as 5xx, let through (rejected="false").
  const idx = cluster.servers.findIndex((s) => s.name === first);
  const calls = (await byName(cluster, idx, 'apiserver_admission_webhook_request_total')).filter((x) => x.labels.name === webhookName);
  assert.ok(calls.length > 0 && calls.every((x) => /^5\d\d$/.test(x.labels.code ?? '') && x.labels.rejected === 'false'), JSON.stringify(calls));
  process.stderr.write(`webhook scenario: ${((Date.now() - t0) / 1000).toFixed(1)} s; webhook calls ${backend.calls.get('/validate') ?? 0}\n`);
});
