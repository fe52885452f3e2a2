// The shell's side of the operator's policy: the policy file (read on every reconcile, fail closed when it
// breaks) and the reconciler, which must never build a driver — and so never read a webhook's token Secret —
// for a spec outside the policy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import type { ApiServerUpgrade, ApiServerUpgradeSpec, ApiServerUpgradeStatus } from '../../src/api/types.generated.ts';
import type { KubeClient } from '../../src/runtime/kube.ts';
import type { Logger } from '../../src/runtime/logger.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import type { FleetObserver } from '../../src/observe/fleet.ts';
import { UpgradeReconciler } from '../../src/controller/reconciler.ts';
import { OperatorMetrics } from '../../src/controller/metrics.ts';
import { acceptedProofs } from '../plan/flag-proof-sim.ts';
import { driverFor } from '../../src/controller/driver-factory.ts';
import { PolicyFile, parsePolicyText } from '../../src/controller/policy-file.ts';
import type { Policy } from '../../src/plan/policy.ts';
import type { Observation } from '../../src/plan/index.ts';
import { peer, storage, OLD, NEW } from '../plan/fleet.ts';

function tempFile(text: string): { path: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'auo-policy-'));
  const path = join(dir, 'policy.yaml');
  writeFileSync(path, text);
  return { path, dir };
}

function recordingLogger(): { log: Logger; lines: { level: string; message: string; meta: Record<string, unknown> }[] } {
  const lines: { level: string; message: string; meta: Record<string, unknown> }[] = [];
  const at = (level: string) => (message: string, meta: Record<string, unknown> = {}) => { lines.push({ level, message, meta }); };
  const log = { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug'), child: () => log } as unknown as Logger;
  return { log, lines };
}

test('policy file: YAML or JSON; an unknown field, a duplicate key or a bad entry is an error naming the file and the entry', () => {
  assert.equal(parsePolicyText('webhooks:\n  - url: https://hook.example/replace\n', 'f').webhooks.length, 1);
  assert.equal(parsePolicyText('{"agentImages": [{"image": "busybox:1.36"}]}', 'f').agentImages.length, 1);
  assert.equal(parsePolicyText('', 'f').webhooks.length, 0, 'an empty file allows nothing');
  assert.throws(() => parsePolicyText('webhooks: []\nwebhooks:\n  - url: https://evil.example/\n', '/p.yaml'), /^Error: \/p\.yaml: not YAML: .*[Mm]ap keys must be unique/);
  assert.throws(() => parsePolicyText('webhooks: [{url: "http://hook.example/"}]', '/p.yaml'), /^Error: \/p\.yaml: webhooks\[0\]\.url: "http:\/\/hook\.example\/" uses http, not https/);
  assert.throws(() => parsePolicyText('- a\n- b\n', '/p.yaml'), /the policy must be a mapping/);
});

test('policy file: the operator does not start on a file it cannot read or parse', () => {
  const { dir } = tempFile('');
  try {
    assert.throws(() => PolicyFile.open(join(dir, 'missing.yaml'), silentLogger()), /ENOENT/);
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'agentImages: [{image: busybox}]');
    assert.throws(() => PolicyFile.open(bad, silentLogger()), /bad\.yaml: agentImages\[0\]\.image: "busybox" has neither tag nor digest/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('policy file: re-read on every use; a change applies at once; a broken file allows nothing (fail closed), logged once; fixed, it applies again', () => {
  const { path, dir } = tempFile('webhooks: [{url: "https://a.example/replace"}]\n');
  const { log, lines } = recordingLogger();
  try {
    const f = PolicyFile.open(path, log);
    assert.equal(lines.at(-1)?.message, 'policy loaded');
    assert.equal(lines.at(-1)?.meta.webhooks, 1);
    assert.equal(f.current().webhooks[0]?.text, 'https://a.example/replace');
    assert.equal(f.current(), f.current(), 'unchanged: the same parsed policy');

    writeFileSync(path, 'webhooks: [{url: "https://b.example/replace"}, {prefix: "https://c.example/v1/"}]\n');
    assert.deepEqual(f.current().webhooks.map((w) => w.text), ['https://b.example/replace', 'https://c.example/v1/']);
    assert.equal(lines.at(-1)?.message, 'policy changed');

    writeFileSync(path, 'webhooks: [{url: "https://b.example/replace"}]\nwebhook: oops\n');
    const broken: Policy = f.current();
    assert.match(broken.error ?? '', /unknown field "webhook"/);
    assert.deepEqual(broken.webhooks, []);
    f.current();
    f.current();
    assert.equal(lines.filter((l) => l.level === 'error').length, 1, 'the same error is logged once');

    unlinkSync(path);
    assert.match(f.current().error ?? '', /cannot read it: ENOENT/);
    assert.equal(lines.filter((l) => l.level === 'error').length, 2);

    writeFileSync(path, 'webhooks: [{url: "https://b.example/replace"}]\n');
    const fixed = f.current();
    assert.equal(fixed.error, undefined);
    assert.deepEqual(fixed.webhooks.map((w) => w.text), ['https://b.example/replace']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// ---------------------------------------------------------------------------------------------------------
// The reconciler, with a fake API server: what it reads, writes and calls.

/** RFC 7386 JSON merge patch, as the API server applies the reconciler's status patches. */
function merge(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = merge(out[k], v);
  }
  return out;
}

class FakeApi {
  upgrade: ApiServerUpgrade;
  readonly requests: string[] = [];
  readonly events: { reason: string; note: string }[] = [];
  private rv = 1;

  constructor(spec: ApiServerUpgradeSpec, status?: ApiServerUpgradeStatus) {
    this.upgrade = { apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name: 'to-v1-36', uid: 'uid-1', generation: 1, resourceVersion: '1', annotations: {} }, spec, ...(status ? { status } : {}) };
  }

  client(): KubeClient {
    const api = {
      getUpgrade: async () => structuredClone(this.upgrade),
      listUpgrades: async () => ({ items: [structuredClone(this.upgrade)], resourceVersion: String(this.rv) }),
      patchUpgradeStatus: async (_name: string, patch: Partial<ApiServerUpgradeStatus>) => {
        this.upgrade = { ...this.upgrade, status: merge(this.upgrade.status ?? {}, patch) as ApiServerUpgradeStatus, metadata: { ...this.upgrade.metadata, resourceVersion: String(++this.rv) } };
        return structuredClone(this.upgrade);
      },
      createEvent: async (_src: unknown, ev: { reason: string; note: string }) => {
        this.events.push({ reason: ev.reason, note: ev.note });
        return {};
      },
      request: async (method: string, path: string) => {
        this.requests.push(`${method} ${path}`);
        if (path.includes('/secrets/')) return { data: { token: Buffer.from('s3cret-token').toString('base64') } };
        throw new Error(`unexpected request ${method} ${path}`);
      },
    };
    return api as unknown as KubeClient;
  }
}

const observer = {
  observe: async (): Promise<Observation> => ({
    peers: [peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on'), peer('cp-3', OLD, 'on')],
    analysis: { time: new Date().toISOString(), verdict: 'Healthy', signals: {}, breaches: [] },
    discovery: { converged: true, message: 'converged' },
    storage: [storage(OLD), storage(NEW)],
  }),
} as unknown as FleetObserver;

const HOOK_SPEC: ApiServerUpgradeSpec = {
  targetVersion: NEW,
  strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' },
  driver: { webhook: { url: 'https://collector.example.net/replace', authSecretRef: { namespace: 'auo', name: 'cpm-token' } } },
  analysis: { interval: '10s', failureLimit: 3, onBreach: 'Pause' },
};

function reconcilerFor(api: FakeApi, policy?: () => Policy): { r: UpgradeReconciler; built: string[]; calls: string[] } {
  const kube = api.client();
  const built: string[] = [];
  const calls: string[] = [];
  const r = new UpgradeReconciler({
    kube, observer, metrics: new OperatorMetrics(new Registry()), log: silentLogger(),
    events: { controller: 'upgrade.apiserver.dev/operator', instance: 'test' },
    // The real factory (it reads the token Secret through `kube`), with the network call itself left out.
    driverFor: async (spec, name) => {
      await driverFor(spec, kube, name);
      built.push(spec.driver.kind === 'webhook' ? spec.driver.webhook.url : spec.driver.staticPod.agentImage);
      return { call: async (req) => { calls.push(`${req.action}:${req.server.hostname}`); return { kind: 'transient', message: 'not delivered (test)' }; } };
    },
    ...(policy ? { policy } : {}),
    // Every node's command line proven (test/plan/flag-proof-sim.ts).
    flagProof: async (u, _spec, obs) => acceptedProofs(u.spec, u.status, obs.peers),
  });
  return { r, built, calls };
}

test('reconciler: a spec outside the policy never reaches the driver factory: no token Secret read, no call; allowed, both happen', async () => {
  const api = new FakeApi(HOOK_SPEC);
  let current = parsePolicyText('webhooks: [{url: "https://collector.example.net/replace"}]\n', '/etc/policy.yaml');
  const { r, built, calls } = reconcilerFor(api, () => current);
  for (let i = 0; i < 3; i++) await r.reconcile('to-v1-36');
  assert.deepEqual(api.requests, [], 'the Secret was never read');
  assert.deepEqual(built, []);
  assert.deepEqual(calls, []);
  const c = api.upgrade.status?.conditions?.find((x) => x.type === 'PreflightPassed');
  assert.equal(c?.reason, 'NotAllowedByPolicy');
  assert.match(c!.message, /spec\.driver\.webhook\.authSecretRef: the Secret auo\/cpm-token key token is not listed under webhookTokens/);
  assert.deepEqual(api.events.filter((e) => e.reason === 'NotAllowedByPolicy').length, 1);
  assert.equal(api.upgrade.status?.driverCalls, undefined);

  // The policy binds the token to the URL: the next reconcile reads the Secret and calls.
  current = parsePolicyText('webhookTokens:\n  - secret: {namespace: auo, name: cpm-token}\n    urls: [{url: "https://collector.example.net/replace"}]\n', '/etc/policy.yaml');
  await r.reconcile('to-v1-36');
  assert.deepEqual(api.requests, ['GET /api/v1/namespaces/auo/secrets/cpm-token']);
  assert.deepEqual(calls, ['Upgrade:cp-1']);
  assert.equal(api.upgrade.status?.phase, 'Upgrading');

  // Narrowed again while a call is still Requested (it was not delivered): paused, nothing read or sent.
  current = parsePolicyText('{}', '/etc/policy.yaml');
  await r.reconcile('to-v1-36');
  await r.reconcile('to-v1-36');
  assert.equal(api.upgrade.status?.phase, 'Paused');
  assert.equal(api.upgrade.status?.pause?.reason, 'NotAllowedByPolicy');
  assert.equal(api.requests.length, 1, 'no further Secret read');
  assert.deepEqual(calls, ['Upgrade:cp-1'], 'the Requested call is not re-sent while refused');
});

test('reconciler: without a policy (no --policy-file) every spec reaches the driver, as before', async () => {
  const api = new FakeApi(HOOK_SPEC);
  const { r, built, calls } = reconcilerFor(api);
  await r.reconcile('to-v1-36');
  assert.deepEqual(built, ['https://collector.example.net/replace']);
  assert.deepEqual(calls, ['Upgrade:cp-1']);
});

test('reconciler: a broken policy file refuses a run under way before the driver is built', async () => {
  const api = new FakeApi({ ...HOOK_SPEC, driver: { staticPod: { image: 'registry.k8s.io/kube-apiserver', agentImage: 'busybox:1.36' } } });
  let current: Policy = parsePolicyText([
    'apiserverImages: [{repository: registry.k8s.io/kube-apiserver}]', 'agentImages: [{image: "busybox:1.36"}]', 'manifestPaths: [{prefix: /etc/kubernetes/manifests}]',
    'backupDirs: [{prefix: /etc/kubernetes/apiserver-upgrade-backup}]', 'peerCAFiles: [{prefix: /etc/kubernetes/pki}]',
  ].join('\n'), '/etc/policy.yaml');
  const { r, calls } = reconcilerFor(api, () => current);
  await r.reconcile('to-v1-36');
  assert.deepEqual(calls, ['Upgrade:cp-1']);
  current = { ...current, error: 'cannot read it: ENOENT', apiserverImages: [], agentImages: [] };
  await r.reconcile('to-v1-36');
  assert.equal(api.upgrade.status?.pause?.reason, 'NotAllowedByPolicy');
  assert.match(api.upgrade.status?.pause?.message ?? '', /cannot be used \(cannot read it: ENOENT\)/);
  assert.deepEqual(calls, ['Upgrade:cp-1']);
});
