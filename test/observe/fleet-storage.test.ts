// FleetObserver.observe() against servers that serve the captured pages over local HTTPS (fixture-server.ts):
// the storage hashes it reports per version (issue 8, defect 2), aggregated APIs left out of them, and the
// stale identity Leases it counts. Emulating servers: fleet-emulation.test.ts.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { FleetObserver, APISERVICES_PATH, type AnalysisSettings } from '../../src/observe/fleet.ts';
import { legacyDiscoveryPaths, mergeHashes, resourceKinds, storageVersionHash, storageVersionHashes, type APIResourceList, type APIServiceLike } from '../../src/observe/discovery.ts';
import { silentLogger, type Logger } from '../../src/runtime/logger.ts';
import { fixtureFiles, readFixture } from './fixtures.ts';
import { fixtureDirectClient, startFixtureServer, type FixtureServer } from './fixture-server.ts';
import { FakeApi, capturingLogger } from './fake-api.ts';

const OLD = 'v1.35.4';
const NEW = 'v1.36.3';
const NOW = Date.parse('2026-11-29T10:00:00Z');
const SETTINGS: AnalysisSettings = { intervalMs: 1, proxyErrorRatio: 0.01, errorRatio: 0.05, latencyP99Seconds: 1 };
const LEGACY = (version: string) => fixtureFiles(version, /^legacy-.*\.json$/).map((f) => JSON.parse(readFixture(version, f)) as APIResourceList);

/** What a complete read of a version's captured legacy documents gives. */
function expectedStorage(version: string): { hashes: Record<string, string>; kinds: Record<string, string> } {
  return { hashes: Object.fromEntries(mergeHashes(LEGACY(version).map(storageVersionHashes))), kinds: Object.fromEntries(mergeHashes(LEGACY(version).map(resourceKinds))) };
}

/** metrics-server's legacy discovery (with a hash, though the real one has none, to show it is left out even so). */
const METRICS_PATH = '/apis/metrics.k8s.io/v1beta1';
const METRICS: APIResourceList = {
  kind: 'APIResourceList',
  groupVersion: 'metrics.k8s.io/v1beta1',
  resources: [
    { name: 'nodes', kind: 'NodeMetrics', namespaced: false, verbs: ['get', 'list'], storageVersionHash: storageVersionHash('metrics.k8s.io', 'v1beta1', 'NodeMetrics') },
    { name: 'pods', kind: 'PodMetrics', namespaced: true, verbs: ['get', 'list'], storageVersionHash: storageVersionHash('metrics.k8s.io', 'v1beta1', 'PodMetrics') },
  ],
};
/** A CRD's group/version: served by kube-apiserver (apiextensions) and stored by it. */
const CRD_PATH = '/apis/stable.example.com/v1';
const CRONTAB_HASH = storageVersionHash('stable.example.com', 'v1', 'CronTab');
const CRD: APIResourceList = {
  kind: 'APIResourceList',
  groupVersion: 'stable.example.com/v1',
  resources: [
    { name: 'crontabs', kind: 'CronTab', namespaced: true, verbs: ['get', 'list', 'create'], storageVersionHash: CRONTAB_HASH },
    { name: 'crontabs/status', kind: 'CronTab', namespaced: true, verbs: ['get', 'patch'] },
  ],
};
/** An APIService as kube-apiserver lists it: local (`spec.service` null) unless a service is given. */
const apiService = (group: string, version: string, service: { namespace: string; name: string; port?: number } | null = null): APIServiceLike => (
  { metadata: { name: `${version}.${group}` }, spec: { group, version, service } }
);
const METRICS_SERVICE = { namespace: 'kube-system', name: 'metrics-server', port: 443 };

const legacyRequests = (s: FixtureServer) => s.requests.filter((p) => p.split('/').length >= 3 && (p.startsWith('/apis/') || p.startsWith('/api/'))).length;

describe('FleetObserver storage hashes (issue 8, defect 2)', () => {
  const servers: FixtureServer[] = [];
  let observer: FleetObserver;
  let api: FakeApi;

  before(async () => {
    servers.push(await startFixtureServer(OLD, 1), await startFixtureServer(OLD, 2), await startFixtureServer(NEW, 3));
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });
  const fresh = (which: number[], log: Logger = silentLogger()) => {
    observer?.close();
    api = new FakeApi();
    for (const s of servers) s.extra.clear();
    for (const i of which) {
      api.add(servers[i]!);
      servers[i]!.requests.length = 0;
      servers[i]!.fail.clear();
    }
    observer = new FleetObserver(fixtureDirectClient(), api.list, log);
  };
  after(() => observer?.close());

  it('defect 2: a partly failed legacy discovery read is neither reported nor kept; the next observation reads it whole', async () => {
    fresh([0, 2]);
    servers[0]!.fail.set('/apis/batch/v1', 500);
    const first = await observer.observe(SETTINGS, NOW);
    assert.deepEqual(first.peers.map((p) => [p.hostname, p.ready, p.version, p.stale]), [['cp-1', true, OLD, false], ['cp-3', true, NEW, false]]);
    assert.deepEqual(first.storage?.map((s) => s.version), [NEW], 'no entry for the version whose read was partial');

    servers[0]!.fail.clear();
    const second = await observer.observe(SETTINGS, NOW + 10_000);
    const old = second.storage?.find((s) => s.version === OLD);
    assert.ok(old, 'the next observation read the old version again, completely');
    assert.equal(old.server, 'cp-1');
    assert.deepEqual({ hashes: old.hashes, kinds: old.kinds }, expectedStorage(OLD));
    assert.equal(old.hashes['batch/v1/jobs'], expectedStorage(OLD).hashes['batch/v1/jobs']);
  });

  it('one entry per version of the up servers, complete hashes and kinds as plain objects, read once while the binary runs', async () => {
    fresh([0, 2]);
    const first = await observer.observe(SETTINGS, NOW);
    assert.deepEqual(first.storage, [
      { version: OLD, emulation: '1.35', server: 'cp-1', ...expectedStorage(OLD) },
      { version: NEW, emulation: '1.36', server: 'cp-3', ...expectedStorage(NEW) },
    ]);
    assert.equal(first.storage?.[0]?.hashes['/v1/pods'], 'xPOwRZ+Yhw8=');
    assert.equal(JSON.parse(JSON.stringify(first.storage)).length, 2, 'plain JSON, ready for status');
    const reads = legacyRequests(servers[0]!);
    assert.equal(reads, fixtureFiles(OLD, /^legacy-/).length);

    api.renew('cp-1');
    const second = await observer.observe(SETTINGS, NOW + 10_000);
    assert.deepEqual(second.storage, first.storage);
    assert.equal(legacyRequests(servers[0]!), reads, 'kept: no legacy discovery request while the same binary runs');

    api.renew('cp-1', 'apiserver-cp-1_uuid-2');
    await observer.observe(SETTINGS, NOW + 20_000);
    assert.equal(legacyRequests(servers[0]!), 2 * reads, 'read again after the server restarted (new lease holder)');
  });

  it('after a failed read, the next observation reads from another server of that version', async () => {
    fresh([0, 1]);
    servers[0]!.fail.set('/api/v1', 503);
    const first = await observer.observe(SETTINGS, NOW);
    assert.deepEqual(first.storage, []);
    const second = await observer.observe(SETTINGS, NOW + 10_000);
    assert.deepEqual(second.storage?.map((s) => [s.version, s.server]), [[OLD, 'cp-2']]);
    assert.deepEqual({ hashes: second.storage?.[0]?.hashes, kinds: second.storage?.[0]?.kinds }, expectedStorage(OLD));
  });

  it('a version whose servers are all gone is no longer reported (the planner keeps what it recorded)', async () => {
    fresh([0, 2]);
    assert.equal((await observer.observe(SETTINGS, NOW)).storage?.length, 2);
    api.leases.delete('cp-1');
    assert.deepEqual((await observer.observe(SETTINGS, NOW + 10_000)).storage?.map((s) => s.version), [NEW]);
  });

  it('an aggregated API (APIService with spec.service) answering 503 forever is left out: the entry is reported without it', async () => {
    const { log, lines } = capturingLogger();
    fresh([0], log);
    servers[0]!.extra.set(METRICS_PATH, METRICS);
    servers[0]!.fail.set(METRICS_PATH, 503);
    // The local APIServices (kube-apiserver's own groups) stay in the read; only metrics.k8s.io is aggregated.
    api.apiServices = [apiService('', 'v1'), apiService('apps', 'v1'), apiService('batch', 'v1'), apiService('metrics.k8s.io', 'v1beta1', METRICS_SERVICE)];
    const direct = fixtureDirectClient();
    try {
      const listed = legacyDiscoveryPaths(await direct.discovery(servers[0]!.address, { peer: false, core: false }));
      assert.ok(listed.includes(METRICS_PATH), 'the server lists the broken aggregated API in its own discovery');
    } finally {
      direct.close();
    }

    const first = await observer.observe(SETTINGS, NOW);
    assert.deepEqual(first.storage, [{ version: OLD, emulation: '1.35', server: 'cp-1', ...expectedStorage(OLD) }], 'every built-in group/version, nothing of metrics.k8s.io');
    assert.equal(first.storage?.[0]?.hashes['apps/v1/deployments'], expectedStorage(OLD).hashes['apps/v1/deployments'], 'a local APIService stays in the read');
    assert.ok(!servers[0]!.requests.includes(METRICS_PATH), 'the aggregated group/version is not even asked for');
    assert.equal(api.apiServiceLists, 1);
    assert.deepEqual(lines.find((l) => l.message === 'storage hashes: aggregated APIs left out')?.aggregated, [METRICS_PATH]);

    // Answering or not, an aggregated API is never part of the hashes: a read after a restart gives the same entry.
    servers[0]!.fail.clear();
    api.renew('cp-1', 'apiserver-cp-1_uuid-2');
    const second = await observer.observe(SETTINGS, NOW + 10_000);
    assert.deepEqual(second.storage, first.storage);
    assert.ok(!Object.keys(second.storage?.[0]?.hashes ?? {}).some((k) => k.startsWith('metrics.k8s.io/')));
  });

  it('the same 503 for a group/version that is not aggregated (local APIService) still withholds the entry', async () => {
    fresh([0]);
    servers[0]!.extra.set(METRICS_PATH, METRICS);
    servers[0]!.fail.set(METRICS_PATH, 503);
    api.apiServices = [apiService('apps', 'v1'), apiService('metrics.k8s.io', 'v1beta1')];
    assert.deepEqual((await observer.observe(SETTINGS, NOW)).storage, [], 'a local group/version kube-apiserver failed to list: fail closed');
    assert.ok(servers[0]!.requests.includes(METRICS_PATH));

    servers[0]!.fail.clear();
    const second = await observer.observe(SETTINGS, NOW + 10_000);
    assert.equal(second.storage?.[0]?.hashes['metrics.k8s.io/v1beta1/nodes'], METRICS.resources![0]!.storageVersionHash, 'read once it answers');
  });

  it('a CRD\'s group/version stays in the read: its 503 withholds the entry, and once it answers its hashes are in', async () => {
    fresh([0]);
    servers[0]!.extra.set(CRD_PATH, CRD);
    servers[0]!.fail.set(CRD_PATH, 503);
    // CRDs get local APIServices (the crd-registration controller); an unrelated aggregated API is listed too.
    api.apiServices = [apiService('stable.example.com', 'v1'), apiService('metrics.k8s.io', 'v1beta1', METRICS_SERVICE)];
    assert.deepEqual((await observer.observe(SETTINGS, NOW)).storage, []);

    servers[0]!.fail.clear();
    const second = await observer.observe(SETTINGS, NOW + 10_000);
    const old = second.storage?.[0];
    assert.equal(old?.hashes['stable.example.com/v1/crontabs'], CRONTAB_HASH);
    assert.equal(old?.kinds['stable.example.com/v1/crontabs'], 'CronTab');
    assert.deepEqual(old?.hashes, { ...expectedStorage(OLD).hashes, 'stable.example.com/v1/crontabs': CRONTAB_HASH });
  });

  it('APIServices that cannot be listed: no entry for a version without a kept read, a log line says why; kept reads stay', async () => {
    const { log, lines } = capturingLogger();
    fresh([0, 2], log);
    assert.equal((await observer.observe(SETTINGS, NOW)).storage?.length, 2);
    assert.equal(api.apiServiceLists, 1, 'listed once per observation that reads, not once per version');

    api.renew('cp-1');
    api.renew('cp-3', 'apiserver-cp-3_uuid-2');
    api.apiServicesError = new Error(`GET ${APISERVICES_PATH}: 403 Forbidden: apiservices.apiregistration.k8s.io is forbidden`);
    const reads = legacyRequests(servers[2]!);
    const second = await observer.observe(SETTINGS, NOW + 10_000);
    assert.deepEqual(second.storage?.map((s) => s.version), [OLD], 'the kept read of the old version stays; the restarted new server is not read');
    assert.equal(legacyRequests(servers[2]!), reads, 'nothing read without knowing what is aggregated');
    const why = lines.find((l) => typeof l.message === 'string' && l.message.startsWith('storage hashes not read: cannot list APIServices'));
    assert.ok(why, `log lines: ${lines.map((l) => String(l.message)).join(' | ')}`);
    assert.equal(why.level, 'info');
    assert.match(String(why.error), /403 Forbidden/);

    api.apiServicesError = undefined;
    const third = await observer.observe(SETTINGS, NOW + 20_000);
    assert.deepEqual(third.storage?.map((s) => [s.version, s.server]), [[OLD, 'cp-1'], [NEW, 'cp-3']]);
  });

  it('stalePeers: the analysis counts identity Leases unchanged for the window on the operator\'s clock', async () => {
    fresh([0, 2]);
    // A third lease whose server is gone: it never changes, and nobody answers at its address.
    api.add({ hostname: 'cp-9', address: '127.0.0.9:1' });
    const first = await observer.observe(SETTINGS, NOW);
    assert.equal(first.analysis, undefined, 'no window after one scrape');
    api.renew('cp-1');
    api.renew('cp-3');
    const second = await observer.observe(SETTINGS, NOW + 10_000);
    assert.equal(second.analysis?.signals.stalePeers, 0);
    api.renew('cp-1');
    api.renew('cp-3');
    const third = await observer.observe(SETTINGS, NOW + 41_000);
    assert.deepEqual(third.peers.map((p) => [p.hostname, p.stale]), [['cp-1', false], ['cp-3', false], ['cp-9', true]]);
    assert.equal(third.analysis?.signals.stalePeers, 1);
  });
});
