// One reconcile resolves the spec once and checks it against the policy once (src/plan/reconcile.ts): every
// later step (the observation's settings, preflight's facts, the driver's reports, the planner, the calls)
// reads that one resolution. Counted from the outside: resolveSpec enumerates the spec's keys once per call
// (schema defaulting), and checkSpec reads the policy's `error` once per call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import type { ApiServerUpgrade, ApiServerUpgradeSpec, ApiServerUpgradeStatus } from '../../src/api/types.generated.ts';
import { resolveSpec } from '../../src/api/defaults.ts';
import type { KubeClient } from '../../src/runtime/kube.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import type { FleetObserver } from '../../src/observe/fleet.ts';
import { acceptedProofs } from '../plan/flag-proof-sim.ts';
import { UpgradeReconciler } from '../../src/controller/reconciler.ts';
import { OperatorMetrics } from '../../src/controller/metrics.ts';
import { parsePolicyText } from '../../src/controller/policy-file.ts';
import { checkSpec, type Policy } from '../../src/plan/policy.ts';
import type { Observation } from '../../src/plan/index.ts';
import type { Driver } from '../../src/drivers/driver.ts';
import { ShellSim } from '../plan/model/shell-sim.ts';
import { peer, storage, spec as baseSpec, OLD, NEW } from '../plan/fleet.ts';

interface Counts { resolved: number; checked: number }

function countingSpec(spec: ApiServerUpgradeSpec, n: Counts): ApiServerUpgradeSpec {
  return new Proxy(spec, { ownKeys: (t) => { n.resolved++; return Reflect.ownKeys(t); } });
}

function countingPolicy(p: Policy, n: Counts): Policy {
  return new Proxy(p, { get: (t, k, r) => { if (k === 'error') n.checked++; return Reflect.get(t, k, r) as unknown; } });
}

function reconciler(spec: ApiServerUpgradeSpec, status: ApiServerUpgradeStatus | undefined, obs: Observation, o: { policy?: Policy; preflightFacts: boolean; now: Date; driver: Driver }): { r: UpgradeReconciler; n: Counts; patches: ApiServerUpgradeStatus[] } {
  const n: Counts = { resolved: 0, checked: 0 };
  const patches: ApiServerUpgradeStatus[] = [];
  const u = (): ApiServerUpgrade => ({
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade',
    metadata: { name: 'to-v1-36', uid: 'uid-1', generation: 1, resourceVersion: '1', annotations: {} },
    spec: countingSpec(spec, n), ...(status ? { status: structuredClone(status) } : {}),
  });
  const kube = {
    getUpgrade: async () => u(),
    listUpgrades: async () => ({ items: [u()] }),
    patchUpgradeStatus: async (_n: string, patch: ApiServerUpgradeStatus) => {
      patches.push(patch);
      return { ...u(), status: { ...status, ...patch } };
    },
    createEvent: async () => ({}),
    request: async (_method: string, path: string) => {
      if (path.startsWith('/api/v1/namespaces/kube-system/pods')) return { kind: 'PodList', items: [] };
      if (path === '/apis/apiregistration.k8s.io/v1/apiservices') return { kind: 'APIServiceList', items: [] };
      throw new Error(`unexpected request ${path}`);
    },
  } as unknown as KubeClient;
  const policy = o.policy ? countingPolicy(o.policy, n) : undefined;
  const r = new UpgradeReconciler({
    kube, observer: { lastInventory: undefined, observe: async () => obs } as unknown as FleetObserver,
    metrics: new OperatorMetrics(new Registry()), log: silentLogger(),
    events: { controller: 'upgrade.apiserver.dev/operator', instance: 'test' },
    driverFor: async () => o.driver,
    preflightFacts: o.preflightFacts,
    now: () => o.now,
    ...(policy ? { policy: () => policy } : {}),
    // Every node's command line proven (test/plan/flag-proof-sim.ts): a Requested call is sent again only under a proof.
    flagProof: async (up, _spec, ob) => acceptedProofs(spec, up.status, ob.peers),
  });
  return { r, n, patches };
}

test('the counters count: two resolutions and two checks are seen as two', () => {
  const n: Counts = { resolved: 0, checked: 0 };
  const spec = countingSpec(baseSpec(), n);
  const policy = countingPolicy(parsePolicyText('webhooks: []\n', '/p'), n);
  checkSpec(policy, resolveSpec(spec));
  checkSpec(policy, resolveSpec(spec));
  assert.deepEqual(n, { resolved: 2, checked: 2 });
});

test('at preflight, with the preflight facts read and a policy that allows the spec: resolved once, checked once', async () => {
  const spec: ApiServerUpgradeSpec = { ...baseSpec(), targetVersion: NEW, paused: true, driver: { webhook: { url: 'https://collector.example.net/replace' } } };
  const obs: Observation = { peers: [peer('cp-1', OLD, 'on', { address: undefined }), peer('cp-2', OLD, 'on', { address: undefined })], discovery: { converged: true, message: 'converged' }, storage: [storage(OLD)] };
  let described = 0;
  const driver: Driver = { call: async () => ({ kind: 'transient', message: 'test' }), describe: async () => { described++; return { kind: 'flags', flags: {} }; } };
  const { r, n, patches } = reconciler(spec, undefined, obs, { preflightFacts: true, policy: parsePolicyText('webhooks:\n  - url: https://collector.example.net/replace\n', '/etc/policy.yaml'), now: new Date('2026-01-01T00:00:00Z'), driver });
  await r.reconcile('to-v1-36');
  assert.equal(described, 2, 'the preflight facts were read (the driver described each server)');
  assert.ok(patches.at(-1)?.trust, 'and written');
  assert.deepEqual(n, { resolved: 1, checked: 1 });
});

test('with a call Accepted (the driver\'s reports read), and with a call Requested (the call made): resolved once each', async () => {
  const spec: ApiServerUpgradeSpec = {
    ...baseSpec(),
    driver: { staticPod: { manifestPath: '/etc/kubernetes/manifests/kube-apiserver.yaml', backupDir: '/var/lib/auo', peerCAFile: '/etc/kubernetes/pki/ca.crt', agentImage: 'auo-agent:1', namespace: 'kube-system', readyTimeout: '5m' } },
  };
  const sim = new ShellSim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on')], spec);
  sim.autoLand = false;
  sim.runUntil((x) => x.status?.driverCalls?.some((c) => c.action === 'Upgrade' && c.result === 'Accepted') ?? false, 8, 1000);
  const accepted = sim.status!;
  const reports: string[] = [];
  const calls: string[] = [];
  const driver: Driver = {
    call: async (req) => { calls.push(req.idempotencyKey); return { kind: 'transient', message: 'test' }; },
    report: async (c) => { reports.push(c.idempotencyKey); return { kind: 'running', message: 'the agent Job runs' }; },
  };
  const now = new Date(sim.now.getTime() + 1000);
  {
    const { r, n } = reconciler(spec, accepted, sim.observe(), { preflightFacts: true, now, driver });
    await r.reconcile('to-v1-36');
    assert.equal(reports.length, 1, 'the driver\'s report on the Accepted call was read');
    assert.equal(n.resolved, 1);
  }
  {
    // The same call not yet delivered (Requested): the step sends it again, same key.
    const requested = structuredClone(accepted);
    for (const c of requested.driverCalls ?? []) if (c.result === 'Accepted') c.result = 'Requested';
    const { r, n, patches } = reconciler(spec, requested, sim.observe(), { preflightFacts: true, now, driver });
    await r.reconcile('to-v1-36');
    assert.deepEqual(calls, reports, `the call was made: ${JSON.stringify(patches.at(-1)?.peers?.map((p) => p.message))}`);
    assert.equal(n.resolved, 1);
  }
});
