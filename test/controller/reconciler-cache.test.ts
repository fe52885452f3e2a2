import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import winston from 'winston';
import { UpgradeReconciler } from '../../src/controller/reconciler.ts';
import { OperatorMetrics } from '../../src/controller/metrics.ts';
import { CachedUpgrades, type UpgradeStore } from '../../src/runtime/upgrade-cache.ts';
import { KubeApiError, type KubeClient } from '../../src/runtime/kube.ts';
import type { FleetObserver } from '../../src/observe/fleet.ts';
import type { ApiServerUpgrade, ApiServerUpgradeStatus } from '../../src/api/types.generated.ts';

const up = (name: string, resourceVersion: string, created: string, status?: ApiServerUpgradeStatus): ApiServerUpgrade => ({
  apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade',
  metadata: { name, resourceVersion, generation: 1, uid: `uid-${name}`, creationTimestamp: created as unknown as Date },
  spec: { targetVersion: 'v1.36.3', driver: { webhook: { url: 'https://h/replace' } } },
  ...(status ? { status } : {}),
});

class Store implements UpgradeStore {
  hasSynced = true;
  readonly m = new Map<string, ApiServerUpgrade>();
  get(key: string): ApiServerUpgrade | undefined { return this.m.get(key); }
  list(): ApiServerUpgrade[] { return [...this.m.values()]; }
}

/** A KubeClient that records every call: reads fail the test, status patches answer with the next resourceVersion. */
function recordingKube(): { kube: KubeClient; calls: string[] } {
  const calls: string[] = [];
  let rv = 100;
  const kube = {
    getUpgrade: (n: string) => { calls.push(`GET ${n}`); throw new Error('read from the API'); },
    listUpgrades: () => { calls.push('LIST'); throw new Error('listed from the API'); },
    patchUpgradeStatus: async (n: string, status: ApiServerUpgradeStatus, o: { resourceVersion?: string }) => {
      calls.push(`PATCH ${n} rv=${o.resourceVersion}`);
      return { ...up(n, String(++rv), '2026-01-02T00:00:00Z'), status };
    },
    createEvent: async () => { calls.push('EVENT'); },
  };
  return { kube: kube as unknown as KubeClient, calls };
}

function reconciler(kube: KubeClient, store: Store, now: () => Date = () => new Date('2026-01-03T00:00:00Z')): { r: UpgradeReconciler; observed: number[] } {
  const observed: number[] = [];
  const observer = { observe: async () => { observed.push(1); throw new Error('no observation in this test'); } } as unknown as FleetObserver;
  const r = new UpgradeReconciler({
    kube, observer, metrics: new OperatorMetrics(new Registry()), log: winston.createLogger({ silent: true }),
    driverFor: () => Promise.reject(new Error('no driver in this test')),
    events: { controller: 'test', instance: 'test' },
    upgrades: new CachedUpgrades(store, kube),
    now,
  });
  return { r, observed };
}

test('a finished upgrade is reconciled from the cache: no API request, no observation', async () => {
  const store = new Store();
  store.m.set('done', up('done', '7', '2026-01-01T00:00:00Z', { phase: 'Succeeded', observedGeneration: 1 }));
  const { kube, calls } = recordingKube();
  const { r, observed } = reconciler(kube, store);
  assert.deepEqual(await r.reconcile('done'), {});
  assert.deepEqual(await r.reconcile('missing'), {});
  assert.deepEqual(calls, []);
  assert.deepEqual(observed, []);
});

test('a waiting upgrade reads itself and the others from the cache, and its next reconcile builds on its own write', async () => {
  const store = new Store();
  store.m.set('first', up('first', '5', '2026-01-01T00:00:00Z', { phase: 'Upgrading', observedGeneration: 1 }));
  store.m.set('second', up('second', '6', '2026-01-02T00:00:00Z'));
  const { kube, calls } = recordingKube();
  const { r, observed } = reconciler(kube, store);
  const res = await r.reconcile('second');
  assert.equal(res.requeueAfterMs, 15_000, 'blocked by the one under way');
  assert.deepEqual(calls, ['PATCH second rv=6']);
  assert.deepEqual(observed, [], 'a blocked upgrade observes nothing');
  // The watch event of that write has not arrived: the cache still holds rv 6, without a status. Read from there,
  // the reconcile would write the same status again (with a stale resourceVersion: a 409 on a real server).
  await r.reconcile('second');
  assert.deepEqual(calls, ['PATCH second rv=6'], 'the status written is read back: no second write, no GET, no LIST');
});

test('the delay before the next look counts from when this look began: the time the look took is not added to it', async () => {
  const store = new Store();
  store.m.set('first', up('first', '5', '2026-01-01T00:00:00Z', { phase: 'Upgrading', observedGeneration: 1 }));
  store.m.set('second', up('second', '6', '2026-01-02T00:00:00Z'));
  const { kube } = recordingKube();
  // Each reading of the clock is 400 ms after the one before: the look takes time.
  let t = Date.parse('2026-01-03T00:00:00Z');
  const { r } = reconciler(kube, store, () => new Date((t += 400)));
  const res = await r.reconcile('second');
  assert.equal(res.requeueAfterMs, 15_000 - 400, 'the plan asked for 15 s from the look\'s start');
  // A look that took longer than half the wait still leaves half of it: never back to back.
  const slow = reconciler(kube, store, () => new Date((t += 20_000))).r;
  assert.equal((await slow.reconcile('second')).requeueAfterMs, 7_500);
});

test('a status write that gets 409 from a cache the watch no longer updates is made again from the API\'s copy at the next reconcile', async () => {
  // Nodes seed 4214 #19: the informer's watch was kept to a server cut from etcd, a resume changed the object, and the
  // status (with the breach that was to pause the upgrade) could not be written for 15 s.
  const store = new Store();
  store.m.set('second', up('second', '6', '2026-01-02T00:00:00Z'));
  store.m.set('first', up('first', '5', '2026-01-01T00:00:00Z', { phase: 'Upgrading', observedGeneration: 1 }));
  const calls: string[] = [];
  let apiRv = 50;
  const kube = {
    getUpgrade: async (n: string) => { calls.push(`GET ${n}`); return up(n, String(apiRv), '2026-01-02T00:00:00Z'); },
    listUpgrades: () => { calls.push('LIST'); throw new Error('listed from the API'); },
    patchUpgradeStatus: async (n: string, status: ApiServerUpgradeStatus, o: { resourceVersion?: string }) => {
      calls.push(`PATCH ${n} rv=${o.resourceVersion}`);
      if (o.resourceVersion !== String(apiRv)) throw new KubeApiError('PATCH', `/${n}/status`, 409, '{"kind":"Status","reason":"Conflict"}', undefined);
      return { ...up(n, String(++apiRv), '2026-01-02T00:00:00Z'), status };
    },
    createEvent: async () => { calls.push('EVENT'); },
  } as unknown as KubeClient;
  const { r } = reconciler(kube, store);
  await assert.rejects(r.reconcile('second'), (err: unknown) => err instanceof KubeApiError && err.statusCode === 409);
  const res = await r.reconcile('second');
  assert.equal(res.requeueAfterMs, 15_000);
  assert.deepEqual(calls, ['PATCH second rv=6', 'GET second', 'PATCH second rv=50'], 'the API read once, and the write made from it');
  await r.reconcile('second');
  assert.equal(calls.length, 3, 'then its own write is read back, from the cache the watch still does not update');
});
