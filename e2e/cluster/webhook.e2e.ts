// The e2e replacement webhook never stops a server it cannot start again at once: a call whose target
// version has no built binary is refused (422) and the server keeps running; so is the cluster's replace().
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { Cluster, OLD_VERSION, ReplaceWebhook } from './index.ts';
import { builtBinary } from './binaries.ts';

const MISSING = 'v1.99.9';
let cluster: Cluster;
let hook: ReplaceWebhook;

before(async () => {
  assert.equal(builtBinary('kube-apiserver', MISSING), undefined, `kube-apiserver ${MISSING} must not exist for this test`);
  cluster = await Cluster.start({ servers: 1, version: OLD_VERSION, verbose: true });
  hook = await ReplaceWebhook.start(cluster);
});
after(async () => {
  await hook?.close();
  await cluster?.teardown();
});

function post(body: object): Promise<{ status: number; body: { error?: string; accepted?: boolean } }> {
  return new Promise((resolve, reject) => {
    const req = request(hook.url, { method: 'POST', ca: Buffer.from(hook.caBundle, 'base64'), headers: { 'Content-Type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as { error?: string } }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

test('a call to a version whose binary is not built is refused with 422, and the server keeps running', async () => {
  const before0 = cluster.server(0);
  const r = await post({ idempotencyKey: 'upgrade-cp-1-0000000000000001', action: 'Upgrade', server: { hostname: 'cp-1' }, targetVersion: MISSING, featureGates: {} });
  assert.equal(r.status, 422, JSON.stringify(r.body));
  assert.match(r.body.error ?? '', new RegExp(`kube-apiserver ${MISSING.replace(/\./g, '\\.')} is not built.*npm run cluster -- build ${MISSING.replace(/\./g, '\\.')}.*cp-1 keeps running`));
  assert.equal(hook.calls.size, 0, 'a refused call is not taken');
  assert.deepEqual(hook.log.map((e) => [e.event, e.status]), [['refused', 422]]);
  await hook.idle();
  const s = cluster.server(0);
  assert.ok(s.running, 'cp-1 still runs');
  assert.equal(s.config.version, OLD_VERSION);
  assert.equal(s.logPath, before0.logPath, 'cp-1 was not restarted (same log file)');
  assert.equal((await cluster.request(0, '/readyz')).status, 200);
});

test('replace() to a version whose binary is not built throws before draining or stopping anything', async () => {
  const logBefore = cluster.server(0).logPath;
  await assert.rejects(cluster.replace(0, { version: MISSING }), /is not built on this machine.*nothing was stopped/);
  const s = cluster.server(0);
  assert.ok(s.running);
  assert.equal(s.config.version, OLD_VERSION, 'the config is unchanged');
  assert.equal(s.logPath, logBefore);
  assert.equal((await cluster.request('lb', '/readyz')).status, 200, 'still in the balancer\'s rotation');
});
