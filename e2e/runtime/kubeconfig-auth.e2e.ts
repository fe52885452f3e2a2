// The operator's own kubeconfig loader (src/runtime/kubeconfig.ts) against real kube-apiservers: an exec credential
// plugin's client certificate carries requests and an informer's streaming list and watch; a refused credential
// (401) makes the next request run the plugin again; impersonation headers reach the server's authentication.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { Cluster, waitFor } from '../cluster/index.ts';
import { KubeAccess } from '../../src/runtime/kubeconfig.ts';
import { KubeApiError, kubeRequest } from '../../src/runtime/kube-request.ts';
import { Informer } from '../../src/runtime/informer.ts';
import type { KubeObject } from '../../src/runtime/object-cache.ts';
import { createLease, deleteLease, e2eLogger, LEASES } from './support.ts';

let cluster: Cluster;
let dir: string;
before(async () => {
  cluster = await Cluster.start({ servers: 2, verbose: true });
  dir = mkdtempSync(join(tmpdir(), 'auo-kubeconfig-auth-'));
});
after(async () => {
  await cluster?.teardown();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * An exec plugin (client.authentication.k8s.io/v1) that counts its runs in `runs` and prints, on run n, the n-th
 * of `answers`: 'cert' (the cluster's admin client certificate) or 'bad-token' (a token no server accepts).
 */
function execKubeconfig(name: string, answers: ('cert' | 'bad-token')[], user: Record<string, unknown> = {}): { file: string; runs: () => number } {
  const counter = join(dir, `${name}.runs`);
  writeFileSync(counter, '');
  const status = (a: 'cert' | 'bad-token'): object => (a === 'cert'
    ? { clientCertificateData: readFileSync(cluster.pki.adminCert, 'utf8'), clientKeyData: readFileSync(cluster.pki.adminKey, 'utf8') }
    : { token: 'not-a-token-any-server-accepts' });
  answers.forEach((a, i) => writeFileSync(join(dir, `${name}.${i + 1}.json`), JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: status(a) })));
  const plugin = join(dir, `${name}-plugin.sh`);
  writeFileSync(plugin, `#!/bin/sh\necho run >> '${counter}'\nn=$(wc -l < '${counter}')\ncat '${join(dir, name)}'.$n.json\n`);
  chmodSync(plugin, 0o755);
  const file = join(dir, `${name}.kubeconfig`);
  writeFileSync(file, stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'e2e',
    clusters: [{ name: 'e2e', cluster: { server: cluster.lbUrl, 'certificate-authority': cluster.pki.caCert } }],
    users: [{ name: 'exec', user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, interactiveMode: 'Never' }, ...user } }],
    contexts: [{ name: 'e2e', context: { cluster: 'e2e', user: 'exec' } }],
  }));
  return { file, runs: () => readFileSync(counter, 'utf8').split('\n').filter(Boolean).length };
}

test('an exec plugin\'s client certificate carries requests, and an informer\'s streaming list and watch; the plugin runs once', { timeout: 60_000 }, async () => {
  const { file, runs } = execKubeconfig('cert', ['cert', 'cert']);
  const kc = KubeAccess.fromFile(file);
  const version = await kubeRequest<{ gitVersion: string }>(kc, 'GET', '/version');
  assert.match(version.gitVersion, /^v1\.\d+\.\d+/);
  const informer = new Informer<KubeObject>({ kubeConfig: kc, path: LEASES, labelSelector: 'test=kubeconfig-auth', name: 'exec-auth', logger: e2eLogger(), timeoutSeconds: 60 });
  informer.start();
  try {
    await informer.synced;
    assert.equal(informer.stats().streamed, 1, 'the state came from a streaming list');
    await createLease(cluster, 'exec-auth-a', { test: 'kubeconfig-auth' });
    await waitFor('the watch to deliver', 20_000, async () => (informer.get('default/exec-auth-a') ? true : undefined), 100);
  } finally {
    await informer.stop();
    await deleteLease(cluster, 'exec-auth-a').catch(() => undefined);
  }
  assert.equal(runs(), 1, 'the credential (no expiry) is cached');
});

test('a credential the server refuses (401) is dropped: the next request runs the plugin again and gets in', { timeout: 60_000 }, async () => {
  const { file, runs } = execKubeconfig('refused', ['bad-token', 'cert']);
  const kc = KubeAccess.fromFile(file);
  await assert.rejects(kubeRequest(kc, 'GET', '/api/v1/namespaces/default'), (e: unknown) => e instanceof KubeApiError && e.statusCode === 401);
  assert.equal(runs(), 1);
  const ns = await kubeRequest<{ metadata: { name: string } }>(kc, 'GET', '/api/v1/namespaces/default');
  assert.equal(ns.metadata.name, 'default');
  assert.equal(runs(), 2, 'the plugin ran again after the 401, and only once');
});

test('impersonation (as, as-groups) reaches the server\'s authentication: a SelfSubjectReview names the impersonated user', { timeout: 60_000 }, async () => {
  const file = join(dir, 'impersonate.kubeconfig');
  writeFileSync(file, stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'e2e',
    clusters: [{ name: 'e2e', cluster: { server: cluster.lbUrl, 'certificate-authority': cluster.pki.caCert } }],
    users: [{ name: 'admin', user: { 'client-certificate': cluster.pki.adminCert, 'client-key': cluster.pki.adminKey, as: 'auo-e2e-alice', 'as-groups': ['auo-e2e-team', 'auo-e2e-oncall'] } }],
    contexts: [{ name: 'e2e', context: { cluster: 'e2e', user: 'admin' } }],
  }));
  const review = await kubeRequest<{ status: { userInfo: { username: string; groups?: string[] } } }>(KubeAccess.fromFile(file), 'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  assert.equal(review.status.userInfo.username, 'auo-e2e-alice');
  assert.deepEqual((review.status.userInfo.groups ?? []).filter((g) => g.startsWith('auo-e2e-')).sort(), ['auo-e2e-oncall', 'auo-e2e-team']);
});
