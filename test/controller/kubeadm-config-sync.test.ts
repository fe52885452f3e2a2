// The reconciler's kubeadm-config step (src/controller/kubeadm-config-write.ts syncKubeadmConfig): an ended upgrade marked
// Pending gets kube-system/kubeadm-config read and edited; written back with the resourceVersion read only when the
// operator's write is on (kubeadmConfig.write), else never written and what to set by hand reported (NotWritten); the
// outcome recorded once (a restart finds it done); 404, 403, 422 and 409 each handled; an upgrade without the mark untouched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { parse } from 'yaml';
import type { ApiServerUpgrade, ApiServerUpgradeStatus } from '../../src/api/types.generated.ts';
import { KubeApiError, type KubeClient } from '../../src/runtime/kube.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import type { FleetObserver } from '../../src/observe/fleet.ts';
import { UpgradeReconciler } from '../../src/controller/reconciler.ts';
import { OperatorMetrics } from '../../src/controller/metrics.ts';
import { NEW, OLD, spec } from '../plan/fleet.ts';

const CM = '/api/v1/namespaces/kube-system/configmaps/kubeadm-config';
const TEXT = '# kubeadm\napiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nkubernetesVersion: v1.35.4\n';
const ENDED: ApiServerUpgradeStatus = {
  phase: 'Succeeded', observedGeneration: 1, fromVersion: OLD, targetVersion: NEW,
  driverCalls: [{ key: 'k1', server: 'cp-1', action: 'Upgrade', batch: 0, target: NEW, gate: true, time: '2026-01-01T00:00:00Z', attempts: 1, result: 'Done' }],
  kubeadmConfig: { phase: 'Succeeded', result: 'Pending' },
};

interface Fake {
  kube: KubeClient;
  requests: { method: string; path: string; body?: unknown }[];
  events: string[];
  get: () => ApiServerUpgrade;
}

function fake(status: ApiServerUpgradeStatus, cm: (method: string) => unknown): Fake {
  let u: ApiServerUpgrade = { apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name: 'to-v1-36', uid: 'uid-1', generation: 1, resourceVersion: '1', annotations: {} }, spec: spec(), status };
  const requests: Fake['requests'] = [];
  const events: string[] = [];
  const kube = {
    getUpgrade: async () => structuredClone(u),
    listUpgrades: async () => ({ items: [structuredClone(u)], resourceVersion: '1' }),
    patchUpgradeStatus: async (_n: string, patch: Partial<ApiServerUpgradeStatus>) => {
      u = { ...u, status: { ...(u.status ?? {}), ...patch } as ApiServerUpgradeStatus };
      return structuredClone(u);
    },
    createEvent: async (_s: unknown, e: { reason: string }) => {
      events.push(e.reason);
      return {};
    },
    request: async (method: string, path: string, opts: { body?: unknown } = {}) => {
      requests.push({ method, path, ...(opts.body === undefined ? {} : { body: opts.body }) });
      if (path !== CM) throw new Error(`unexpected request ${method} ${path}`);
      return cm(method);
    },
  };
  return { kube: kube as unknown as KubeClient, requests, events, get: () => u };
}

function reconciler(kube: KubeClient, keep = true, write = true): UpgradeReconciler {
  return new UpgradeReconciler({
    kube, observer: { observe: async () => { throw new Error('a finished upgrade is not observed'); } } as unknown as FleetObserver,
    metrics: new OperatorMetrics(new Registry()), log: silentLogger(),
    events: { controller: 'upgrade.apiserver.dev/operator', instance: 'test' },
    driverFor: async () => { throw new Error('no driver for a finished upgrade'); },
    keepKubeadmConfig: keep,
    writeKubeadmConfig: write,
    now: () => new Date('2026-01-01T01:00:00Z'),
  });
}

test('Pending: read, edited, PUT with the resourceVersion read; Updated recorded with the new resourceVersion; the next reconcile touches nothing', async () => {
  const f = fake(ENDED, (method) => (method === 'GET'
    ? { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kubeadm-config', namespace: 'kube-system', resourceVersion: '700' }, data: { ClusterConfiguration: TEXT, Other: 'kept' } }
    : { metadata: { resourceVersion: '701' } }));
  await reconciler(f.kube).reconcile('to-v1-36');
  assert.deepEqual(f.requests.map((r) => r.method), ['GET', 'PUT']);
  const put = f.requests[1]!.body as { metadata: { resourceVersion: string }; data: Record<string, string> };
  assert.equal(put.metadata.resourceVersion, '700', 'optimistic concurrency: the version read');
  assert.equal(put.data.Other, 'kept');
  assert.ok(put.data.ClusterConfiguration!.startsWith('# kubeadm\n'));
  const cfg = parse(put.data.ClusterConfiguration!) as { kubernetesVersion: string; apiServer: { extraArgs: Record<string, string> } };
  assert.equal(cfg.kubernetesVersion, NEW);
  assert.equal(cfg.apiServer.extraArgs['feature-gates'], 'UnknownVersionInteroperabilityProxy=true');
  const s = f.get().status!;
  assert.equal(s.kubeadmConfig?.result, 'Updated');
  assert.equal(s.kubeadmConfig?.resourceVersion, '701');
  assert.equal(s.conditions?.find((c) => c.type === 'KubeadmConfigUpdated')?.reason, 'KubeadmConfigUpdated');
  assert.deepEqual(f.events, ['KubeadmConfigUpdated']);
  // Recorded: a restart (or any later reconcile) does not read or write it again.
  await reconciler(f.kube).reconcile('to-v1-36');
  assert.equal(f.requests.length, 2);
});

test('no kubeadm-config (404): NotFound, True NotKubeadmCluster, nothing written', async () => {
  const f = fake(ENDED, () => { throw new KubeApiError('GET', CM, 404, '{"reason":"NotFound"}', undefined); });
  await reconciler(f.kube).reconcile('to-v1-36');
  assert.deepEqual(f.requests.map((r) => r.method), ['GET']);
  assert.equal(f.get().status?.kubeadmConfig?.result, 'NotFound');
  const c = f.get().status?.conditions?.find((x) => x.type === 'KubeadmConfigUpdated');
  assert.deepEqual([c?.status, c?.reason], ['True', 'NotKubeadmCluster']);
});

test('forbidden (403): Refused, False KubeadmConfigForbidden naming what to set by hand', async () => {
  const f = fake(ENDED, () => { throw new KubeApiError('GET', CM, 403, '{"reason":"Forbidden","message":"configmaps \\"kubeadm-config\\" is forbidden"}', undefined); });
  await reconciler(f.kube).reconcile('to-v1-36');
  const c = f.get().status?.conditions?.find((x) => x.type === 'KubeadmConfigUpdated');
  assert.deepEqual([c?.status, c?.reason], ['False', 'KubeadmConfigForbidden']);
  assert.match(c!.message, /set by hand: kubernetesVersion: v1\.36\.3/);
  assert.equal(f.get().status?.kubeadmConfig?.result, 'Refused');
  assert.deepEqual(f.events, ['KubeadmConfigForbidden']);
});

test('a concurrent edit (409 on the PUT): thrown to the work queue, still Pending; the retry reads again and writes', async () => {
  let puts = 0;
  const f = fake(ENDED, (method) => {
    if (method === 'GET') return { metadata: { resourceVersion: String(800 + puts) }, data: { ClusterConfiguration: TEXT } };
    if (puts++ === 0) throw new KubeApiError('PUT', CM, 409, '{"reason":"Conflict"}', undefined);
    return { metadata: { resourceVersion: '900' } };
  });
  await assert.rejects(reconciler(f.kube).reconcile('to-v1-36'), (err: unknown) => err instanceof KubeApiError && err.statusCode === 409);
  assert.equal(f.get().status?.kubeadmConfig?.result, 'Pending');
  await reconciler(f.kube).reconcile('to-v1-36');
  assert.deepEqual(f.requests.map((r) => `${r.method}${r.method === 'PUT' ? (r.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion : ''}`), ['GET', 'PUT800', 'GET', 'PUT801']);
  assert.equal(f.get().status?.kubeadmConfig?.result, 'Updated');
});

test('an unknown apiVersion: Refused, nothing written', async () => {
  const f = fake(ENDED, () => ({ metadata: { resourceVersion: '1' }, data: { ClusterConfiguration: 'apiVersion: kubeadm.k8s.io/v1beta2\nkind: ClusterConfiguration\n' } }));
  await reconciler(f.kube).reconcile('to-v1-36');
  assert.deepEqual(f.requests.map((r) => r.method), ['GET']);
  assert.equal(f.get().status?.conditions?.find((x) => x.type === 'KubeadmConfigUpdated')?.reason, 'KubeadmConfigUnknownAPIVersion');
});

test('an upgrade that ended without the mark (before this feature), or the step turned off: never read', async () => {
  const { kubeadmConfig: _, ...old } = ENDED;
  const f = fake(old, () => { throw new Error('must not be read'); });
  await reconciler(f.kube).reconcile('to-v1-36');
  const g = fake(ENDED, () => { throw new Error('must not be read'); });
  await reconciler(g.kube, false).reconcile('to-v1-36');
  assert.deepEqual([...f.requests, ...g.requests], []);
});

test('the write off (the default): read, never written; NotWritten, False KubeadmConfigNotWritten naming the setting and each edit to make by hand; done once', async () => {
  const V1BETA4 = '# kubeadm init\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.35.4\napiServer:\n  extraArgs:\n  - name: feature-gates\n    value: SomeOtherGate=false\n';
  const f = fake(ENDED, (method) => {
    if (method !== 'GET') throw new Error(`the write is off: no ${method}`);
    return { metadata: { name: 'kubeadm-config', namespace: 'kube-system', resourceVersion: '700' }, data: { ClusterConfiguration: V1BETA4 } };
  });
  await reconciler(f.kube, true, false).reconcile('to-v1-36');
  assert.deepEqual(f.requests.map((r) => r.method), ['GET'], 'read, not written');
  const s = f.get().status!;
  assert.equal(s.kubeadmConfig?.result, 'NotWritten');
  assert.equal(s.kubeadmConfig?.resourceVersion, '700', 'the version the report was made against');
  assert.deepEqual(s.kubeadmConfig?.changes, ['kubernetesVersion v1.35.4 -> v1.36.3', 'apiServer.extraArgs feature-gates SomeOtherGate=false -> SomeOtherGate=false,UnknownVersionInteroperabilityProxy=true']);
  const c = s.conditions?.find((x) => x.type === 'KubeadmConfigUpdated');
  assert.deepEqual([c?.status, c?.reason], ['False', 'KubeadmConfigNotWritten']);
  assert.match(c!.message, /not written: the operator does not write it unless the chart value kubeadmConfig\.write \(--kubeadm-config-write\) is on; set by hand in ClusterConfiguration: kubernetesVersion v1\.35\.4 -> v1\.36\.3; apiServer\.extraArgs feature-gates SomeOtherGate=false -> SomeOtherGate=false,UnknownVersionInteroperabilityProxy=true/);
  assert.deepEqual(f.events, ['KubeadmConfigNotWritten']);
  await reconciler(f.kube, true, false).reconcile('to-v1-36');
  assert.equal(f.requests.length, 1, 'reported once');
});

test('the write off, kubeadm-config already consistent: True KubeadmConfigConsistent, nothing written', async () => {
  const done = 'apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.3\napiServer:\n  extraArgs:\n    feature-gates: UnknownVersionInteroperabilityProxy=true\n';
  const f = fake(ENDED, (method) => {
    if (method !== 'GET') throw new Error(`the write is off: no ${method}`);
    return { metadata: { resourceVersion: '5' }, data: { ClusterConfiguration: done } };
  });
  await reconciler(f.kube, true, false).reconcile('to-v1-36');
  assert.equal(f.get().status?.kubeadmConfig?.result, 'Unchanged');
  assert.equal(f.get().status?.conditions?.find((x) => x.type === 'KubeadmConfigUpdated')?.reason, 'KubeadmConfigConsistent');
});

test('the write on, the PUT denied by the chart\'s admission policy (403 Forbidden, or 422 Invalid): Refused with what to set by hand, not retried', async () => {
  for (const status of [403, 422]) {
    const f = fake(ENDED, (method) => {
      if (method === 'GET') return { metadata: { resourceVersion: '10' }, data: { ClusterConfiguration: TEXT } };
      throw new KubeApiError('PUT', CM, status, '{"message":"configmaps \\"kubeadm-config\\" is forbidden: ValidatingAdmissionPolicy denied request"}', undefined);
    });
    await reconciler(f.kube).reconcile('to-v1-36');
    assert.deepEqual(f.requests.map((r) => r.method), ['GET', 'PUT'], String(status));
    assert.equal(f.get().status?.kubeadmConfig?.result, 'Refused', String(status));
    const c = f.get().status?.conditions?.find((x) => x.type === 'KubeadmConfigUpdated');
    assert.deepEqual([c?.status, c?.reason], ['False', 'KubeadmConfigForbidden'], String(status));
    assert.match(c!.message, /set by hand: kubernetesVersion: v1\.36\.3/);
  }
});
