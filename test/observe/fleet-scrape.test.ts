// Issue 12: FleetObserver fetches /metrics only when an analysis is due or a server's lease holder changed
// (a restart: the gate state may differ); between those it keeps the gate state of the last scrape.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { V1EndpointSliceList } from '@kubernetes/client-node';
import { APISERVICES_PATH, ENDPOINTSLICES_PATH, FleetObserver, type AnalysisSettings } from '../../src/observe/fleet.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { COMPONENT_PODS_PATH } from '../../src/observe/components.ts';
import { listThroughCaches } from '../../src/runtime/cached-list.ts';
import { fixtureDirectClient, startFixtureServer, type FixtureServer } from './fixture-server.ts';
import { FakeApi, NOW } from './fake-api.ts';

const settings = (due: boolean): AnalysisSettings => ({ intervalMs: 10_000, due, proxyErrorRatio: 0.01, errorRatio: 0.05, latencyP99Seconds: 1 });
const scrapes = (s: FixtureServer) => s.requests.filter((p) => p === '/metrics').length;

describe('FleetObserver /metrics scrapes (issue 12)', () => {
  const servers: FixtureServer[] = [];
  let observer: FleetObserver;
  let api: FakeApi;

  before(async () => {
    servers.push(await startFixtureServer('v1.36.3', 1), await startFixtureServer('v1.36.3', 2));
    api = new FakeApi();
    for (const s of servers) api.add(s);
    observer = new FleetObserver(fixtureDirectClient(), api.list, silentLogger());
  });
  after(async () => {
    observer.close();
    await Promise.all(servers.map((s) => s.close()));
  });

  it('scrapes when due, not between, and again for a server whose holder changed', async () => {
    const first = await observer.observe(settings(true), NOW);
    assert.deepEqual(servers.map(scrapes), [1, 1]);
    // No previous page yet: no analysis, so the next observation scrapes for one even when not due.
    assert.equal(first.analysis, undefined);
    const second = await observer.observe(settings(false), NOW + 2_000);
    assert.deepEqual(servers.map(scrapes), [2, 2]);
    assert.ok(second.analysis);
    const gates = second.peers.map((p) => p.proxyGate);
    // The CoordinatedLeaderElection gate from the same page (beta and off by default in v1.36.3).
    assert.deepEqual(second.peers.map((p) => p.coordinatedLeaderElection), ['off', 'off']);
    for (const h of api.leases.keys()) api.renew(h);
    const third = await observer.observe(settings(false), NOW + 4_000);
    assert.deepEqual(servers.map(scrapes), [2, 2], 'not due, same holders: no scrape');
    assert.deepEqual(third.peers.map((p) => p.proxyGate), gates, 'the gate state of the last scrape is kept');
    assert.deepEqual(third.peers.map((p) => p.coordinatedLeaderElection), ['off', 'off'], 'and the CoordinatedLeaderElection gate');
    assert.equal(third.analysis, second.analysis);
    api.renew('cp-2', 'apiserver-cp-2_uuid-2');
    await observer.observe(settings(false), NOW + 6_000);
    assert.deepEqual(servers.map(scrapes), [2, 3], 'a restarted server is scraped for its gate');
    await observer.observe(settings(true), NOW + 8_000);
    assert.deepEqual(servers.map(scrapes), [3, 4], 'due: every server');
  });

  it('reads the identity Leases from a synced informer instead of listing them', async () => {
    let lists = 0;
    const list = async <T,>(path: string): Promise<T> => {
      if (path.includes('/leases')) lists++;
      return api.list<T>(path);
    };
    const cache = { hasSynced: false, list: () => [...api.leases.values()] };
    const cached = new FleetObserver(fixtureDirectClient(), list, silentLogger(), { leaseCache: cache });
    try {
      await cached.observe(settings(true), NOW);
      assert.equal(lists, 1, 'not synced: listed');
      cache.hasSynced = true;
      const obs = await cached.observe(settings(false), NOW + 2_000);
      assert.equal(lists, 1, 'synced: read from the informer');
      assert.deepEqual(obs.peers.map((p) => p.hostname).sort(), ['cp-1', 'cp-2']);
    } finally {
      cached.close();
    }
  });

  it('reads the kubernetes EndpointSlices from a synced informer instead of listing them', async () => {
    const paths: string[] = [];
    const list = async <T,>(path: string): Promise<T> => {
      paths.push(path.split('?')[0]!);
      return api.list<T>(path);
    };
    const slices = (await api.list<V1EndpointSliceList>(ENDPOINTSLICES_PATH)).items;
    const leases = { hasSynced: true, list: () => [...api.leases.values()] };
    const endpoints = { hasSynced: false, list: () => slices };
    // The control-plane component Pods come from their own informer, as main.ts wires them (listThroughCaches).
    const components = new Map([[COMPONENT_PODS_PATH, { cache: { hasSynced: true, list: () => [] }, apiVersion: 'v1', kind: 'PodList' }]]);
    const cached = new FleetObserver(fixtureDirectClient(), listThroughCaches(list, components), silentLogger(), { leaseCache: leases, endpointCache: endpoints });
    try {
      const first = await cached.observe(settings(true), NOW);
      assert.deepEqual(first.components, { pods: [] }, 'the component Pods read, from their informer');
      assert.deepEqual(paths, [ENDPOINTSLICES_PATH, APISERVICES_PATH], 'not synced: listed (and the APIServices for the first storage read)');
      endpoints.hasSynced = true;
      paths.length = 0;
      const obs = await cached.observe(settings(false), NOW + 2_000);
      assert.deepEqual(paths, [], 'both synced, storage read kept: no LIST at all');
      assert.deepEqual(obs.peers.map((p) => p.hostname).sort(), ['cp-1', 'cp-2']);
      assert.ok(obs.peers.every((p) => p.ready), 'the addresses of the cached slices are probed');
    } finally {
      cached.close();
    }
  });
});
