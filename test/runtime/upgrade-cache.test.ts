import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CachedUpgrades, type UpgradeStore } from '../../src/runtime/upgrade-cache.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

const up = (name: string, resourceVersion: string, phase = 'Upgrading'): ApiServerUpgrade => ({
  apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade',
  metadata: { name, resourceVersion },
  spec: { targetVersion: 'v1.36.3', driver: { webhook: { url: 'https://h/replace' } } },
  status: { phase: phase as never },
});

class Store implements UpgradeStore {
  hasSynced = true;
  readonly m = new Map<string, ApiServerUpgrade>();
  get(key: string): ApiServerUpgrade | undefined { return this.m.get(key); }
  list(): ApiServerUpgrade[] { return [...this.m.values()]; }
  set(u: ApiServerUpgrade): void { this.m.set(u.metadata!.name!, u); }
}

function apiCounting(): { calls: string[]; getUpgrade(n: string): Promise<ApiServerUpgrade | undefined>; listUpgrades(): Promise<{ items: ApiServerUpgrade[] }> } {
  const calls: string[] = [];
  return {
    calls,
    getUpgrade: async (n) => { calls.push(`GET ${n}`); return up(n, 'api'); },
    listUpgrades: async () => { calls.push('LIST'); return { items: [up('a', 'api')] }; },
  };
}

test('before the informer synced the API is read; after, the cache alone', async () => {
  const store = new Store();
  const api = apiCounting();
  const c = new CachedUpgrades(store, api);
  store.hasSynced = false;
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, 'api');
  await c.listUpgrades();
  assert.deepEqual(api.calls, ['GET a', 'LIST']);
  store.hasSynced = true;
  store.set(up('a', '5'));
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '5');
  assert.equal(await c.getUpgrade('gone'), undefined, 'not in the cache: does not exist');
  assert.deepEqual((await c.listUpgrades()).items.map((u) => u.metadata?.resourceVersion), ['5']);
  assert.deepEqual(api.calls, ['GET a', 'LIST'], 'no API read once synced');
});

test('our own writes are read back until the cache catches up, never an older copy', async () => {
  const store = new Store();
  const c = new CachedUpgrades(store, apiCounting());
  const v5 = up('a', '5');
  store.set(v5);
  const v6 = up('a', '6', 'Paused');
  c.written(v5, v6);
  const v7 = up('a', '7', 'Upgrading');
  c.written(v6, v7);
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '7', 'the cache still shows 5: our last write');
  assert.deepEqual((await c.listUpgrades()).items.map((u) => u.metadata?.resourceVersion), ['7']);
  store.set(v6);
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '7', 'the cache at our first write: still behind');
  store.set(v7);
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '7');
  assert.equal(c.pending, 0, 'caught up: nothing kept');
});

test('a change by someone else, or a deletion, wins over a kept write', async () => {
  const store = new Store();
  const c = new CachedUpgrades(store, apiCounting());
  store.set(up('a', '5'));
  c.written(up('a', '5'), up('a', '6'));
  store.set(up('a', '9'));
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '9');
  assert.equal(c.pending, 0);
  c.written(up('a', '9'), up('a', '10'));
  store.m.delete('a');
  assert.equal(await c.getUpgrade('a'), undefined, 'deleted: gone even though a write was kept');
  c.written(up('a', '9'), up('a', '10'));
  assert.deepEqual((await c.listUpgrades()).items, []);
  assert.equal(c.pending, 0, 'a list forgets the writes of deleted upgrades');
});

test('the cache counts as behind when the watch does not echo our write within the deadline, or the API says an upgrade it holds is gone', async () => {
  const store = new Store();
  let now = 1_000;
  const stale: string[] = [];
  const c = new CachedUpgrades(store, apiCounting(), { onStale: (why) => stale.push(why), echoDeadlineMs: 15_000, now: () => now });
  store.set(up('a', '5'));
  c.written(up('a', '5'), up('a', '6'));
  now += 15_000;
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '6');
  assert.deepEqual(stale, [], 'within the deadline: the echo may still come');
  now += 1;
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '6', 'our write is still what is read');
  assert.equal(stale.length, 1);
  assert.match(stale[0]!, /has not shown our status write of a \(resourceVersion 6\) for 15 s/);
  store.set(up('a', '6'));
  await c.getUpgrade('a');
  assert.equal(stale.length, 1, 'caught up: no more');
  c.gone('a');
  assert.match(stale[1]!, /the API says a is gone; the cache still holds it/);
  c.gone('b');
  assert.equal(stale.length, 2, 'not in the cache either: the cache is not behind on it');
});

test('after a 409 the next read asks the API, and its copy is read until the cache shows it or anything newer', async () => {
  // Nodes seed 4214 #19: the watch kept to a server cut from etcd showed nothing new, a resume changed the object, and
  // every status write from the cached copy got 409 until the echo deadline ran out.
  const store = new Store();
  let now = 1_000;
  const stale: string[] = [];
  let apiCopy: ApiServerUpgrade | undefined = up('a', '8', 'Paused');
  const calls: string[] = [];
  const api = {
    getUpgrade: async (n: string) => { calls.push(`GET ${n}`); return apiCopy; },
    listUpgrades: async () => ({ items: apiCopy ? [apiCopy] : [] }),
  };
  const c = new CachedUpgrades(store, api, { onStale: (why) => stale.push(why), echoDeadlineMs: 15_000, now: () => now });
  store.set(up('a', '5'));
  c.written(up('a', '5'), up('a', '6'));
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '6', 'our write, as before');
  c.conflicted('a');
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '8', 'the API\'s copy after a 409');
  assert.deepEqual(calls, ['GET a']);
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '8', 'kept while the cache still shows 5');
  assert.deepEqual((await c.listUpgrades()).items.map((u) => u.metadata?.resourceVersion), ['8']);
  assert.deepEqual(calls, ['GET a'], 'one API read per conflict');
  now += 15_001;
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '8');
  assert.equal(stale.length, 1, 'a cache that never shows the API\'s copy counts as behind');
  store.set(up('a', '8', 'Paused'));
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '8');
  assert.equal(c.pending, 0, 'caught up: nothing kept');
  // A conflict the cache already shows the answer to: the API's copy is the cache's, nothing is kept.
  apiCopy = up('a', '8', 'Paused');
  c.conflicted('a');
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '8');
  assert.equal(c.pending, 0);
  // Deleted meanwhile: gone, and the cache that still holds it is behind.
  apiCopy = undefined;
  c.conflicted('a');
  assert.equal(await c.getUpgrade('a'), undefined);
  assert.match(stale.at(-1)!, /the API says a is gone; the cache still holds it/);
});

test('a 409 before the informer synced is answered by the next read, from the API as every read then is', async () => {
  const store = new Store();
  store.hasSynced = false;
  const api = apiCounting();
  const c = new CachedUpgrades(store, api);
  c.conflicted('a');
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, 'api');
  store.hasSynced = true;
  store.set(up('a', '5'));
  assert.equal((await c.getUpgrade('a'))?.metadata?.resourceVersion, '5', 'synced: the cache');
  assert.deepEqual(api.calls, ['GET a']);
});
