// The Mixed Version Proxy's trust preflight and the coverage report on real kube-apiservers (docs/trust.md).
// Two servers with the gate on; cp-2 starts with --requestheader-allowed-names empty. The reconciler runs in
// process with preflightFacts on, as main.ts wires it; the harness has no kubelet (no mirror Pods), so every
// server's flags come from the replacement hook's Describe, which answers from the command line the harness
// started each server with. Upgrades are created paused where nothing should be called: preflight still runs.
import { test, before, after } from 'node:test';
import { request } from 'node:https';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { Cluster, ReplaceWebhook, OLD_VERSION, NEW_VERSION, PROXY_GATE } from './cluster/index.ts';
import { installCrd, createUpgrade, getUpgrade } from './support/operator.ts';
import { run } from './cluster/exec.ts';
import { loadKubeConfig, KubeClient, KubeApiError } from '../src/runtime/kube.ts';
import { silentLogger } from '../src/runtime/logger.ts';
import { FleetObserver } from '../src/observe/fleet.ts';
import { UpgradeReconciler } from '../src/controller/reconciler.ts';
import { OperatorMetrics } from '../src/controller/metrics.ts';
import { driverFor } from '../src/controller/driver-factory.ts';
import type { ApiServerUpgrade, Condition } from '../src/api/types.generated.ts';

let cluster: Cluster;
let hook: ReplaceWebhook;
let kube: KubeClient;
let observer: FleetObserver;

before(async () => {
  cluster = await Cluster.start({
    servers: 2,
    version: OLD_VERSION,
    featureGates: { [PROXY_GATE]: true },
    // The flag emptied (withOverrides replaces the harness default in place; repeating it would append).
    perServer: [{}, { extraFlags: ['--requestheader-allowed-names='] }],
    verbose: true,
  });
  hook = await ReplaceWebhook.start(cluster);
  await installCrd(cluster);
  const kc = loadKubeConfig({ file: cluster.kubeconfig });
  kube = new KubeClient(kc, { logger: silentLogger() });
  observer = new FleetObserver(kc, (path) => kube.request('GET', path), silentLogger());
});

after(async () => {
  observer?.close();
  await hook?.close();
  await cluster?.teardown();
});

function reconciler(): UpgradeReconciler {
  return new UpgradeReconciler({
    kube, observer, metrics: new OperatorMetrics(new Registry()), log: silentLogger(),
    driverFor: (spec, name) => driverFor(spec, kube, name),
    events: { controller: 'upgrade.apiserver.dev/operator', instance: 'e2e-trust' },
    preflightFacts: true,
  });
}

function manifest(name: string, o: { paused: boolean; requireAllowedNames?: boolean }): Record<string, unknown> {
  return {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name },
    spec: {
      targetVersion: NEW_VERSION, paused: o.paused,
      strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '2m' },
      proxy: { allowAlphaGate: true },
      driver: { webhook: { url: hook.url, caBundle: hook.caBundle, timeout: '5s' } },
      analysis: { interval: '2s' },
      ...(o.requireAllowedNames === undefined ? {} : { trust: { requireAllowedNames: o.requireAllowedNames } }),
    },
  };
}

/** Reconciles as the work queue would (a 409 re-plans) until `done` holds, or fails after `n` steps. */
async function reconcileUntil(name: string, done: (u: ApiServerUpgrade) => boolean, n = 12): Promise<ApiServerUpgrade> {
  const r = reconciler();
  let u: ApiServerUpgrade | undefined;
  for (let i = 0; i < n; i++) {
    await r.reconcile(name).catch((err: unknown) => {
      if (!(err instanceof KubeApiError && err.statusCode === 409)) throw err;
    });
    u = await getUpgrade(cluster, name);
    if (u && done(u)) return u;
  }
  throw new Error(`${name}: not there after ${n} reconciles: ${JSON.stringify(u?.status?.conditions)}`);
}

const cond = (u: ApiServerUpgrade | undefined, type: string): Condition | undefined => u?.status?.conditions?.find((c) => c.type === type);

async function remove(name: string): Promise<void> {
  const r = await cluster.request('lb', `/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades/${name}`, { method: 'DELETE' });
  assert.ok(r.status === 200 || r.status === 404, `delete ${name}: HTTP ${r.status}`);
}

test('cp-2 with --requestheader-allowed-names empty is named with AnyFrontProxyCertTrusted; ProxyTrustVerified=False; the coverage report is frozen', async () => {
  const name = 'trust-warn';
  await createUpgrade(cluster, manifest(name, { paused: true }));
  const u = await reconcileUntil(name, (x) => x.status?.trust !== undefined && x.status.coverage !== undefined);
  const rows = u.status!.trust!.checks!;
  process.stderr.write(`[${name}] status.trust:\n${rows.map((r) => `  ${r.server} ${r.check} ${r.result}${r.reason ? ` ${r.reason}` : ''} [${r.source}] ${r.message}`).join('\n')}\n`);
  const findings = rows.filter((r) => r.result === 'Finding');
  assert.deepEqual(findings.map((r) => `${r.server} ${r.check} ${r.reason} ${r.flag}`), ['cp-2 RequestHeaderAllowedNames AnyFrontProxyCertTrusted --requestheader-allowed-names']);
  assert.equal(rows.filter((r) => r.result === 'Unknown').length, 0, 'every input was read');
  assert.equal(u.status!.trust!.servers, 2);
  assert.equal(u.status!.trust!.verified, 11);
  // Each server's flags came from the hook's Describe; the certificate and the address from a TLS handshake.
  assert.ok(rows.filter((r) => r.check === 'RequestHeaderCA').every((r) => r.source === 'Webhook'));
  assert.ok(rows.filter((r) => r.check === 'PeerServingCert').every((r) => r.result === 'Verified' && r.source === 'TLS'));
  assert.ok(rows.filter((r) => r.check === 'PeerReachable').every((r) => r.result === 'Verified' && /leaseAnnotation/.test(r.message ?? '')));
  const c = cond(u, 'ProxyTrustVerified');
  assert.equal(c?.status, 'False');
  assert.equal(c?.reason, 'AnyFrontProxyCertTrusted');
  assert.match(c!.message, /^cp-2: --requestheader-allowed-names is empty/);
  assert.equal(cond(u, 'PreflightPassed')?.reason, 'Passed', 'a warning: the upgrade may start');
  assert.deepEqual([...hook.describes.keys()].sort(), ['cp-1', 'cp-2']);
  assert.equal(hook.calls.size, 0, 'Describe is no replacement: no call taken');

  const cov = u.status!.coverage!;
  process.stderr.write(`[${name}] status.coverage: ${cov.message}\n${(cov.clientView ?? []).map((v) => `  ${v.kind} (${v.count}): ${v.sees}`).join('\n')}\n`);
  assert.deepEqual(cov.entries!.filter((e) => e.kind === 'BuiltInAdded').map((e) => e.name), ['admissionregistration.k8s.io/v1/mutatingadmissionpolicies', 'admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings']);
  assert.equal(cov.builtInRemoved, 0);
  assert.match(cov.fromSource ?? '', /^Observed cp-[12]$/);
  assert.equal(cov.targetSource, `Catalog ${NEW_VERSION}`);
  assert.deepEqual(cov.entries!.filter((e) => e.kind === 'CustomResource').map((e) => e.name), ['upgrade.apiserver.dev/v1alpha1/apiserverupgrades'], 'the CRD is told apart by its APIService');
  assert.equal(cov.aggregated, 0);
  await remove(name);
});

/** POSTs a SelfSubjectReview to one server with a client certificate and headers; answers the status and the user it saw. */
function whoAmI(url: string, cert: Buffer, key: Buffer, headers: Record<string, string>): Promise<{ status: number; user?: string }> {
  const body = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  return new Promise((resolve, reject) => {
    const req = request(`${url}/apis/authentication.k8s.io/v1/selfsubjectreviews`, { method: 'POST', ca: readFileSync(cluster.pki.caCert), cert, key, servername: 'kubernetes.default.svc', agent: false, headers: { 'Content-Type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        let user: string | undefined;
        try {
          user = (JSON.parse(text) as { status?: { userInfo?: { username?: string } } }).status?.userInfo?.username;
        } catch {
          /* not JSON: no user */
        }
        resolve({ status: res.statusCode ?? 0, ...(user ? { user } : {}) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('what the finding means, on the real servers: a front-proxy-CA certificate with another CN asserts any user on cp-2 only', async () => {
  const dir = cluster.pki.dir;
  const [key, csr, crt, ext] = ['rogue.key', 'rogue.csr', 'rogue.crt', 'rogue.ext'].map((f) => join(dir, f)) as [string, string, string, string];
  writeFileSync(ext, 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n');
  await run('openssl', ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', csr, '-subj', '/CN=not-the-proxy']);
  await run('openssl', ['x509', '-req', '-in', csr, '-CA', cluster.pki.frontProxyCaCert, '-CAkey', join(dir, 'front-proxy-ca.key'), '-CAcreateserial', '-out', crt, '-days', '1', '-extfile', ext]);
  const [c, k] = [readFileSync(crt), readFileSync(key)];
  const asserted = { 'X-Remote-User': 'mallory', 'X-Remote-Group': 'system:masters' };
  const [one, two] = await Promise.all([whoAmI(cluster.server(0).url, c, k, asserted), whoAmI(cluster.server(1).url, c, k, asserted)]);
  process.stderr.write(`[rogue CN] cp-1 (allowed names front-proxy-client): HTTP ${one.status} ${one.user ?? ''}; cp-2 (allowed names empty): HTTP ${two.status} ${two.user ?? ''}\n`);
  assert.equal(two.status, 201);
  assert.equal(two.user, 'mallory', 'cp-2 took the asserted user from a certificate that is not the proxy\'s');
  assert.notEqual(one.user, 'mallory', 'cp-1 checks the CN against --requestheader-allowed-names');
});

test('requireAllowedNames: the upgrade refuses to start (PreflightPassed=False AnyFrontProxyCertTrusted) and nothing is called', async () => {
  const name = 'trust-refuse';
  const describedBefore = [...hook.describes.values()].reduce((a, b) => a + b, 0);
  await createUpgrade(cluster, manifest(name, { paused: false, requireAllowedNames: true }));
  const u = await reconcileUntil(name, (x) => cond(x, 'PreflightPassed')?.reason === 'AnyFrontProxyCertTrusted');
  // More steps change nothing: still refused, still no call.
  for (let i = 0; i < 3; i++) await reconciler().reconcile(name).catch(() => undefined);
  const again = (await getUpgrade(cluster, name))!;
  for (const x of [u, again]) {
    assert.equal(x.status?.phase, 'Preflight');
    assert.equal(cond(x, 'PreflightPassed')?.status, 'False');
    assert.match(cond(x, 'PreflightPassed')!.message, /requireAllowedNames is true and cp-2 run with --requestheader-allowed-names empty/);
    assert.equal(x.status?.plan, undefined);
    assert.equal(x.status?.driverCalls, undefined);
  }
  assert.equal(hook.calls.size, 0, 'the hook took no replacement');
  assert.ok([...hook.describes.values()].reduce((a, b) => a + b, 0) > describedBefore, 'it only described the servers');
  await remove(name);
});

test('with the names set on every server, ProxyTrustVerified=True and requireAllowedNames passes', async () => {
  // cp-2 restarted with the harness default (--requestheader-allowed-names=front-proxy-client).
  await cluster.replace(1, { extraFlags: [] });
  const name = 'trust-verified';
  await createUpgrade(cluster, manifest(name, { paused: true, requireAllowedNames: true }));
  const u = await reconcileUntil(name, (x) => cond(x, 'PreflightPassed')?.status === 'True' && cond(x, 'ProxyTrustVerified') !== undefined);
  const c = cond(u, 'ProxyTrustVerified');
  assert.equal(c?.status, 'True', c?.message);
  assert.equal(c?.reason, 'AllVerified');
  assert.equal(u.status!.trust!.verified, 12);
  assert.equal(u.status!.trust!.findings, 0);
  assert.equal(cond(u, 'PreflightPassed')?.reason, 'Passed');
  assert.equal(hook.calls.size, 0);
  await remove(name);
});
