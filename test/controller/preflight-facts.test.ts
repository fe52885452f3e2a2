// The reconciler's preflight facts (docs/trust.md): read only before the upgrade starts, the driver's Describe
// only for a spec the operator's policy allows (a refused spec's driver is never built: no token Secret read).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import type { ApiServerUpgrade, ApiServerUpgradeSpec, ApiServerUpgradeStatus } from '../../src/api/types.generated.ts';
import type { KubeClient } from '../../src/runtime/kube.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import type { FleetObserver } from '../../src/observe/fleet.ts';
import { UpgradeReconciler } from '../../src/controller/reconciler.ts';
import { OperatorMetrics } from '../../src/controller/metrics.ts';
import { parsePolicyText } from '../../src/controller/policy-file.ts';
import type { Observation } from '../../src/plan/index.ts';
import { peer, storage, OLD, NEW } from '../plan/fleet.ts';

const SPEC: ApiServerUpgradeSpec = {
  targetVersion: NEW,
  paused: true,
  strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' },
  driver: { webhook: { url: 'https://collector.example.net/replace' } },
  analysis: { interval: '10s', failureLimit: 3, onBreach: 'Pause' },
};

function fake(): { kube: KubeClient; requests: string[]; get: () => ApiServerUpgrade } {
  let u: ApiServerUpgrade = { apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name: 'to-v1-36', uid: 'uid-1', generation: 1, resourceVersion: '1', annotations: {} }, spec: SPEC };
  const requests: string[] = [];
  let rv = 1;
  const kube = {
    getUpgrade: async () => structuredClone(u),
    listUpgrades: async () => ({ items: [structuredClone(u)], resourceVersion: String(rv) }),
    // The whole status is replaced: enough for these tests, which only read what the last step wrote.
    patchUpgradeStatus: async (_n: string, patch: Partial<ApiServerUpgradeStatus>) => {
      u = { ...u, status: { ...(u.status ?? {}), ...patch } as ApiServerUpgradeStatus, metadata: { ...u.metadata, resourceVersion: String(++rv) } };
      return structuredClone(u);
    },
    createEvent: async () => ({}),
    request: async (method: string, path: string) => {
      requests.push(`${method} ${path}`);
      if (path.startsWith('/api/v1/namespaces/kube-system/pods')) return { kind: 'PodList', items: [] };
      if (path === '/apis/apiregistration.k8s.io/v1/apiservices') return { kind: 'APIServiceList', items: [{ metadata: { name: 'v1beta1.metrics.k8s.io' }, spec: { group: 'metrics.k8s.io', version: 'v1beta1', service: { namespace: 'kube-system', name: 'metrics-server' } } }] };
      throw new Error(`unexpected request ${method} ${path}`);
    },
  };
  return { kube: kube as unknown as KubeClient, requests, get: () => u };
}

// No addresses: the TLS handshakes are not made (their rows are Unknown), so the test touches no network.
const observer = {
  lastInventory: undefined,
  observe: async (): Promise<Observation> => ({
    peers: [peer('cp-1', OLD, 'on', { address: undefined }), peer('cp-2', OLD, 'on', { address: undefined })],
    discovery: { converged: true, message: 'converged' },
    storage: [storage(OLD)],
  }),
} as unknown as FleetObserver;

function reconciler(kube: KubeClient, o: { preflightFacts: boolean; policy?: string }): { r: UpgradeReconciler; built: string[]; described: string[] } {
  const built: string[] = [];
  const described: string[] = [];
  const r = new UpgradeReconciler({
    kube, observer, metrics: new OperatorMetrics(new Registry()), log: silentLogger(),
    events: { controller: 'upgrade.apiserver.dev/operator', instance: 'test' },
    driverFor: async (spec) => {
      built.push(spec.driver.kind);
      return {
        call: async () => ({ kind: 'transient', message: 'test' }),
        describe: async (s) => {
          described.push(s.hostname);
          return { kind: 'flags', flags: { '--requestheader-allowed-names': s.hostname === 'cp-2' ? '' : 'front-proxy-client', '--requestheader-client-ca-file': '/ca', '--proxy-client-cert-file': '/c', '--proxy-client-key-file': '/k', '--peer-ca-file': '/p' } };
        },
      };
    },
    preflightFacts: o.preflightFacts,
    ...(o.policy !== undefined ? { policy: () => parsePolicyText(o.policy!, '/etc/policy.yaml') } : {}),
  });
  return { r, built, described };
}

test('allowed: each server is described; status.trust names cp-2; the coverage report lists the aggregated API', async () => {
  const f = fake();
  const { r, described } = reconciler(f.kube, { preflightFacts: true });
  await r.reconcile('to-v1-36');
  assert.deepEqual(described.sort(), ['cp-1', 'cp-2']);
  const st = f.get().status!;
  const finding = st.trust!.checks!.find((c) => c.result === 'Finding')!;
  assert.deepEqual([finding.server, finding.reason, finding.source], ['cp-2', 'AnyFrontProxyCertTrusted', 'Webhook']);
  assert.equal(st.conditions?.find((c) => c.type === 'ProxyTrustVerified')?.reason, 'AnyFrontProxyCertTrusted');
  assert.deepEqual(st.coverage?.entries?.filter((e) => e.kind === 'Aggregated').map((e) => e.name), ['v1beta1.metrics.k8s.io']);
  // Paused by spec after preflight: the next reconcile is no longer at preflight and reads nothing more.
  const before = f.requests.length;
  await r.reconcile('to-v1-36');
  assert.equal(f.get().status?.phase, 'Paused');
  assert.equal(f.requests.length, before);
  assert.equal(described.length, 2);
});

test('a spec outside the policy: no driver built, no Describe; the flags are unknown saying why', async () => {
  const f = fake();
  const { r, built, described } = reconciler(f.kube, { preflightFacts: true, policy: 'webhooks: []\n' });
  await r.reconcile('to-v1-36');
  assert.deepEqual(built, []);
  assert.deepEqual(described, []);
  assert.ok(!f.requests.some((q) => q.includes('/secrets/')));
  const st = f.get().status!;
  assert.equal(st.conditions?.find((c) => c.type === 'PreflightPassed')?.reason, 'NotAllowedByPolicy');
  // The policy refusal comes before preflight's checks: no trust report for a spec that is refused anyway.
  assert.equal(st.trust, undefined);
});

test('without preflightFacts (the default) nothing is read: no trust report; the coverage report says what it lacks', async () => {
  const f = fake();
  const { r, built, described } = reconciler(f.kube, { preflightFacts: false });
  await r.reconcile('to-v1-36');
  assert.deepEqual([built, described, f.requests], [[], [], []]);
  assert.equal(f.get().status?.trust, undefined);
  const cov = f.get().status?.coverage;
  assert.equal(cov?.aggregated, undefined, 'APIServices not read: unknown, not zero');
  assert.match(cov?.message ?? '', /APIServices not read/);
  assert.equal(cov?.fromSource, `Catalog ${OLD}`);
});
