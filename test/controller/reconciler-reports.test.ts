// The shell's half of driver reports (Driver.report): read on every reconcile for the calls Accepted in the
// status, handed to the planner, never kept; a read that throws or says unknown changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import winston from 'winston';
import { UpgradeReconciler } from '../../src/controller/reconciler.ts';
import { OperatorMetrics } from '../../src/controller/metrics.ts';
import type { KubeClient } from '../../src/runtime/kube.ts';
import type { FleetObserver } from '../../src/observe/fleet.ts';
import type { ApiServerUpgrade, ApiServerUpgradeSpec, ApiServerUpgradeStatus } from '../../src/api/types.generated.ts';
import type { Driver, DriverReport, ReportRequest } from '../../src/drivers/driver.ts';
import type { Observation } from '../../src/plan/index.ts';
import { ShellSim } from '../plan/model/shell-sim.ts';
import { peer, spec as baseSpec, OLD } from '../plan/fleet.ts';

const STATIC_POD: ApiServerUpgradeSpec = {
  ...baseSpec(),
  driver: { staticPod: { manifestPath: '/etc/kubernetes/manifests/kube-apiserver.yaml', backupDir: '/var/lib/auo', peerCAFile: '/etc/kubernetes/pki/ca.crt', agentImage: 'auo-agent:1', namespace: 'kube-system', readyTimeout: '5m' } },
};

/** A status with cp-1's Upgrade call Accepted and not landed, made by the planner itself, and what is observed then. */
function upgradeInFlight(s: ApiServerUpgradeSpec): { status: ApiServerUpgradeStatus; obs: Observation; key: string; now: Date } {
  const sim = new ShellSim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on')], s);
  sim.autoLand = false;
  sim.runUntil((x) => x.status?.driverCalls?.some((c) => c.action === 'Upgrade' && c.result === 'Accepted') ?? false, 8, 1000);
  const call = sim.status!.driverCalls!.find((c) => c.action === 'Upgrade' && c.result === 'Accepted')!;
  return { status: sim.status!, obs: sim.observe(), key: call.key, now: new Date(sim.now.getTime() + 1000) };
}

interface Harness {
  r: UpgradeReconciler;
  patches: ApiServerUpgradeStatus[];
  reads: ReportRequest[];
  built: number;
  registry: Registry;
  /** How many reports had been read when the fleet was observed, per observation. */
  readsBeforeObserve: number[];
}

function harness(s: ApiServerUpgradeSpec, status: ApiServerUpgradeStatus, obs: Observation, now: Date, report: ((c: ReportRequest) => Promise<DriverReport>) | undefined, build: 'ok' | 'throws' = 'ok'): Harness {
  const u: ApiServerUpgrade = {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade',
    metadata: { name: 'to-v1-36', resourceVersion: '7', generation: 1, uid: 'uid-1', annotations: {} },
    spec: s, status,
  };
  const h: Harness = { patches: [], reads: [], built: 0, registry: new Registry(), readsBeforeObserve: [] } as unknown as Harness;
  const kube = {
    getUpgrade: async () => u,
    listUpgrades: async () => ({ items: [u] }),
    patchUpgradeStatus: async (_n: string, patch: ApiServerUpgradeStatus) => {
      h.patches.push(patch);
      return { ...u, metadata: { ...u.metadata, resourceVersion: '8' }, status: { ...status, ...patch } };
    },
    createEvent: async () => undefined,
  } as unknown as KubeClient;
  const driver: Driver = {
    call: async () => ({ kind: 'transient', message: 'not delivered in this test' }),
    ...(report ? { report: (c: ReportRequest) => { h.reads.push(c); return report(c); } } : {}),
  };
  h.r = new UpgradeReconciler({
    kube,
    observer: {
      observe: async () => {
        h.readsBeforeObserve.push(h.reads.length);
        return obs;
      },
    } as unknown as FleetObserver,
    metrics: new OperatorMetrics(h.registry),
    log: winston.createLogger({ silent: true }),
    driverFor: async () => {
      h.built++;
      if (build === 'throws') throw new Error('secret kube-system/token has no key token');
      return driver;
    },
    events: { controller: 'test', instance: 'test' },
    now: () => now,
    // The flag proof as the sim's shell read it with the fleet.
    flagProof: async () => obs.flagProof ?? { error: 'not simulated' },
  });
  return h;
}

const resultOf = (h: Harness, key: string): string | undefined => h.patches.at(-1)?.driverCalls?.find((c) => c.key === key)?.result ?? undefined;

test('a failed report ends the Accepted call Failed at once: DriverFailed naming the server, counted once as outcome "failed"', async () => {
  const { status, obs, key, now } = upgradeInFlight(STATIC_POD);
  const h = harness(STATIC_POD, status, obs, now, async () => ({ kind: 'failed', message: 'ErrImagePull: registry.k8s.io/kube-apiserver:v1.36.3 not found' }));
  await h.r.reconcile('to-v1-36');
  assert.deepEqual(h.reads, [{ idempotencyKey: key, action: 'Upgrade', server: { hostname: 'cp-1' } }], 'asked once, about the Accepted call only');
  const written = h.patches.at(-1)!;
  assert.equal(resultOf(h, key), 'Failed');
  assert.equal(written.phase, 'Paused');
  assert.equal(written.pause?.reason, 'DriverFailed');
  assert.match(written.pause?.message ?? '', /cp-1.*ErrImagePull/);
  assert.match(await h.registry.metrics(), /apiserver_upgrade_driver_calls_total\{action="Upgrade",outcome="failed"\} 1/);
});

test('a report that throws, says unknown, running or succeeded changes nothing: the call stays Accepted', async () => {
  const answers: [string, (c: ReportRequest) => Promise<DriverReport>][] = [
    ['throws', () => Promise.reject(new Error('connect ECONNREFUSED'))],
    ['unknown', async () => ({ kind: 'unknown', message: 'reading Job kube-system/x failed: HTTP 503' })],
    ['running', async () => ({ kind: 'running', message: 'the agent Job runs' })],
    ['succeeded', async () => ({ kind: 'succeeded', message: 'the agent Job succeeded' })],
  ];
  for (const [what, report] of answers) {
    const { status, obs, key, now } = upgradeInFlight(STATIC_POD);
    const h = harness(STATIC_POD, status, obs, now, report);
    await h.r.reconcile('to-v1-36');
    assert.equal(h.reads.length, 1, what);
    const after = h.patches.at(-1)?.driverCalls?.find((c) => c.key === key)?.result ?? status.driverCalls!.find((c) => c.key === key)!.result;
    assert.equal(after, 'Accepted', `${what}: never a failure on a guess`);
    assert.notEqual(h.patches.at(-1)?.phase, 'Paused', what);
    assert.doesNotMatch(await h.registry.metrics(), /outcome="failed"/, what);
  }
});

test('a driver that cannot be built, or has no report, changes nothing; the webhook driver is not even built for it', async () => {
  {
    const { status, obs, key, now } = upgradeInFlight(STATIC_POD);
    const h = harness(STATIC_POD, status, obs, now, async () => ({ kind: 'failed', message: 'unreachable' }), 'throws');
    await h.r.reconcile('to-v1-36');
    assert.equal(h.built, 1);
    assert.deepEqual(h.reads, []);
    assert.notEqual(resultOf(h, key), 'Failed');
  }
  {
    const { status, obs, key, now } = upgradeInFlight(STATIC_POD);
    const h = harness(STATIC_POD, status, obs, now, undefined);
    await h.r.reconcile('to-v1-36');
    assert.notEqual(resultOf(h, key), 'Failed');
  }
  {
    const webhook = baseSpec();
    const { status, obs, now } = upgradeInFlight(webhook);
    const h = harness(webhook, status, obs, now, async () => ({ kind: 'failed', message: 'never asked' }));
    await h.r.reconcile('to-v1-36');
    assert.equal(h.built, 0, 'no driver built (its token Secret not read) for reports it does not give');
    assert.deepEqual(h.reads, []);
  }
});

test('the fleet is observed after the reports are read, so a slow report does not age what the plan trusts (campaign nodes seed 83 #0)', async () => {
  const { status, obs, key, now } = upgradeInFlight(STATIC_POD);
  const h = harness(STATIC_POD, status, obs, now, async () => ({ kind: 'running', message: 'the Job runs' }));
  await h.r.reconcile('to-v1-36');
  assert.equal(h.reads.length, 1, `cp-1's report was read (${key})`);
  assert.deepEqual(h.readsBeforeObserve, [1], 'one observation, made after the report was read');
});

test('with no call Accepted the driver is not asked', async () => {
  const { status, obs, now } = upgradeInFlight(STATIC_POD);
  const requested = structuredClone(status);
  for (const c of requested.driverCalls ?? []) if (c.result === 'Accepted') c.result = 'Requested';
  const h = harness(STATIC_POD, requested, obs, now, async () => ({ kind: 'failed', message: 'never asked' }));
  await h.r.reconcile('to-v1-36');
  assert.deepEqual(h.reads, [], 'a Requested call is re-sent, never asked about');
});
