// The reconciler shell, in process, against real kube-apiservers: get -> observe -> plan -> apply in that
// order; a call is in status (Requested) before it reaches the hook; the step's events are emitted even when
// its call fails, and the failure is recorded on the call; a write conflict (409) throws to the work queue
// and the next reconcile re-plans without a second call.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { Cluster, NEW_VERSION, OLD_VERSION, PROXY_GATE } from './cluster/index.ts';
import { createServingCert } from './cluster/pki.ts';
import { installCrd, createUpgrade, getUpgrade } from './support/operator.ts';
import { forward } from './support/tcp-forward.ts';
import { loadKubeConfig, KubeClient, KubeApiError } from '../src/runtime/kube.ts';
import { silentLogger } from '../src/runtime/logger.ts';
import { FleetObserver } from '../src/observe/fleet.ts';
import { UpgradeReconciler } from '../src/controller/reconciler.ts';
import { OperatorMetrics } from '../src/controller/metrics.ts';
import { driverFor } from '../src/controller/driver-factory.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

let cluster: Cluster;
let kube: KubeClient;
let observer: FleetObserver;
let hook: Server;
let hookUrl = '';
let caBundle = '';
/** What the hook saw: the key, and the call's result in status at the moment the POST arrived. */
const seen: { key: string; resultInStatus: string | undefined }[] = [];
let hookMode: 'accept' | 'fail' = 'accept';

before(async () => {
  cluster = await Cluster.start({ servers: 3, version: OLD_VERSION, featureGates: { [PROXY_GATE]: true }, verbose: true });
  await installCrd(cluster);
  const kc = loadKubeConfig({ file: cluster.kubeconfig });
  kube = new KubeClient(kc, { logger: silentLogger() });
  observer = new FleetObserver(kc, (path) => kube.request('GET', path), silentLogger());
  const cert = await createServingCert(cluster.pki, 'shell-hook', ['127.0.0.1'], []);
  const [certPem, keyPem, caPem] = await Promise.all([readFile(cert.cert), readFile(cert.key), readFile(cluster.pki.caCert, 'utf8')]);
  caBundle = Buffer.from(caPem).toString('base64');
  hook = createServer({ cert: certPem, key: keyPem }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const p = JSON.parse(body) as { idempotencyKey: string; upgrade: string };
      void getUpgrade(cluster, p.upgrade).then((u) => {
        seen.push({ key: p.idempotencyKey, resultInStatus: u?.status?.driverCalls?.find((c) => c.key === p.idempotencyKey)?.result });
        res.writeHead(hookMode === 'accept' ? 202 : 503, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(hookMode === 'accept' ? { accepted: true } : { error: 'platform busy' }));
      });
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  hookUrl = `https://127.0.0.1:${(hook.address() as AddressInfo).port}/replace`;
});

after(async () => {
  observer?.close();
  await new Promise<void>((r) => (hook ? hook.close(() => r()) : r()));
  await cluster?.teardown();
});

function reconciler(): UpgradeReconciler {
  return new UpgradeReconciler({
    kube, observer, metrics: new OperatorMetrics(new Registry()), log: silentLogger(),
    driverFor: (spec, name) => driverFor(spec, kube, name),
    events: { controller: 'upgrade.apiserver.dev/operator', instance: 'e2e-shell' },
  });
}

function manifest(name: string, url: string): Record<string, unknown> {
  return {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name },
    spec: { targetVersion: NEW_VERSION, strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '2m' }, proxy: { allowAlphaGate: true }, driver: { webhook: { url, caBundle, timeout: '5s' } }, analysis: { interval: '2s' } },
  };
}

/** Upgrades run one at a time: each test removes its own when done, so the next one is not held back. */
async function remove(name: string): Promise<void> {
  const r = await cluster.request('lb', `/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades/${name}`, { method: 'DELETE' });
  assert.ok(r.status === 200 || r.status === 404, `delete ${name}: HTTP ${r.status}`);
}

async function reasons(name: string): Promise<string[]> {
  const evs = JSON.parse((await cluster.request('lb', '/apis/events.k8s.io/v1/namespaces/default/events')).body) as { items: { reason: string; regarding: { name: string } }[] };
  return evs.items.filter((e) => e.regarding.name === name).map((e) => e.reason);
}

/** Reconciles until the first call was made (or `n` reconciles), as the work queue would. */
async function reconcileUntilCall(r: UpgradeReconciler, name: string, n = 10): Promise<ApiServerUpgrade> {
  for (let i = 0; i < n; i++) {
    await r.reconcile(name).catch((err: unknown) => {
      if (!(err instanceof KubeApiError && err.statusCode === 409)) throw err;
    });
    const u = await getUpgrade(cluster, name);
    if (u?.status?.driverCalls?.length) return u;
  }
  throw new Error(`no call recorded after ${n} reconciles`);
}

test('a call is recorded Requested in status before it reaches the hook; the answer is recorded after', async () => {
  hookMode = 'accept';
  await createUpgrade(cluster, manifest('shell-order', hookUrl));
  const u = await reconcileUntilCall(reconciler(), 'shell-order');
  const call = u.status!.driverCalls![0]!;
  const atHook = seen.find((s) => s.key === call.key);
  assert.ok(atHook, 'the hook received the call');
  assert.equal(atHook.resultInStatus, 'Requested', 'the call was in status, Requested, when the hook got it');
  assert.equal(call.result, 'Accepted', 'the answer was recorded');
  assert.equal(call.attempts, 1);
  const r = await reasons('shell-order');
  for (const e of ['Started', 'PreflightPassed', 'BatchStarted']) assert.ok(r.includes(e), `event ${e}: ${r.join(', ')}`);
  await remove('shell-order');
});

test("a call that fails transiently: the step's events are still emitted and the error is recorded on the call", async () => {
  hookMode = 'fail';
  // The hook through a forwarder the test closes later: the driver URL is frozen once the upgrade runs.
  const door = await forward(0, Number(new URL(hookUrl).port));
  await createUpgrade(cluster, manifest('shell-fail', `https://127.0.0.1:${door.port}/replace`));
  const u = await reconcileUntilCall(reconciler(), 'shell-fail');
  const call = u.status!.driverCalls![0]!;
  assert.equal(call.result, 'Requested', 'not delivered: it stays Requested and is sent again with the same key');
  assert.match(call.message ?? '', /not delivered yet \(attempt 1\): .*HTTP 503/);
  const r = await reasons('shell-fail');
  for (const e of ['Started', 'PreflightPassed', 'BatchStarted']) assert.ok(r.includes(e), `event ${e} emitted although the call failed: ${r.join(', ')}`);
  // A hook that refuses connections: the error names the refusal, and the next reconcile re-sends the same key.
  await door.close();
  await reconciler().reconcile('shell-fail');
  const again = (await getUpgrade(cluster, 'shell-fail'))!.status!.driverCalls!;
  assert.equal(again.length, 1, 'the same call, not a new one');
  assert.equal(again[0]!.key, call.key);
  assert.match(again[0]!.message ?? '', /attempt 2.*ECONNREFUSED/);
  await remove('shell-fail');
});

test('two reconciles racing: a write conflict (409) throws to the work queue and makes no call; one key only', async () => {
  hookMode = 'accept';
  // Created paused: the first reconcile runs preflight and pauses, making no call. Then unpaused, so that the
  // racing reconciles both decide the first call from the same stored status.
  await createUpgrade(cluster, { ...manifest('shell-race', hookUrl), spec: { ...(manifest('shell-race', hookUrl).spec as object), paused: true } });
  const [a, b] = [reconciler(), reconciler()];
  await a.reconcile('shell-race');
  assert.equal((await getUpgrade(cluster, 'shell-race'))?.status?.pause?.reason, 'PausedBySpec');
  await cluster.request('lb', '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades/shell-race', {
    method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify({ spec: { paused: false } }),
  });
  const before = seen.length;
  const results = await Promise.allSettled([a.reconcile('shell-race'), b.reconcile('shell-race')]);
  const conflicts = results.filter((x) => x.status === 'rejected' && x.reason instanceof KubeApiError && x.reason.statusCode === 409);
  const other = results.filter((x) => x.status === 'rejected' && !(x.reason instanceof KubeApiError && x.reason.statusCode === 409));
  assert.deepEqual(other, [], 'no other error');
  assert.ok(conflicts.length <= 1, 'at most one of the two lost the race');
  const u = (await getUpgrade(cluster, 'shell-race'))!;
  const calls = u.status?.driverCalls ?? [];
  process.stderr.write(`race: ${conflicts.length} conflict(s); calls ${JSON.stringify(calls.map((c) => `${c.server}:${c.result}`))}; hook got ${seen.length - before}\n`);
  assert.equal(calls.length, 1, 'one call recorded');
  // A reconcile whose write conflicted made no call; one that read the winner's status re-sent the same key.
  const fulfilled = results.filter((x) => x.status === 'fulfilled').length;
  assert.equal(seen.filter((s) => s.key === calls[0]!.key).length, fulfilled, 'a delivery per reconcile that wrote, none for the one that conflicted');
  assert.equal(new Set(seen.slice(before).map((s) => s.key)).size, 1, 'never a second key');
  // The next reconcile re-plans from the stored status and sends nothing new.
  const delivered = seen.length;
  await reconciler().reconcile('shell-race');
  assert.equal(seen.length, delivered, 'an Accepted call is never sent again');
  await remove('shell-race');
});
