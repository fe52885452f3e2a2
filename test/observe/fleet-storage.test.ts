// FleetObserver.observe() against servers that serve the captured pages over local HTTPS (fixture-server.ts):
// the storage hashes it reports per version (issue 8, defect 2), and the stale identity Leases it counts.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { KubeConfig, type V1EndpointSliceList, type V1PodList } from '@kubernetes/client-node';
import { FleetObserver, type AnalysisSettings } from '../../src/observe/fleet.ts';
import type { IdentityLeaseLike } from '../../src/observe/inventory.ts';
import { mergeHashes, resourceKinds, storageVersionHashes, type APIResourceList } from '../../src/observe/discovery.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { fixtureFiles, readFixture } from './fixtures.ts';
import { fixtureDirectClient, startFixtureServer, type FixtureServer } from './fixture-server.ts';

const OLD = 'v1.35.4';
const NEW = 'v1.36.3';
const NOW = Date.parse('2026-11-29T10:00:00Z');
const SETTINGS: AnalysisSettings = { intervalMs: 1, proxyErrorRatio: 0.01, errorRatio: 0.05, latencyP99Seconds: 1 };
const LEGACY = (version: string) => fixtureFiles(version, /^legacy-.*\.json$/).map((f) => JSON.parse(readFixture(version, f)) as APIResourceList);

/** What a complete read of a version's captured legacy documents gives. */
function expectedStorage(version: string): { hashes: Record<string, string>; kinds: Record<string, string> } {
  return { hashes: Object.fromEntries(mergeHashes(LEGACY(version).map(storageVersionHashes))), kinds: Object.fromEntries(mergeHashes(LEGACY(version).map(resourceKinds))) };
}

/** The cluster's API as the observer lists it: identity leases pointing at the fixture servers. */
class FakeApi {
  leases = new Map<string, IdentityLeaseLike>();
  private rv = 100;

  add(s: Pick<FixtureServer, 'hostname' | 'address'>, holder = `apiserver-${s.hostname}_uuid-1`): void {
    this.leases.set(s.hostname, {
      metadata: {
        name: `apiserver-${s.hostname}`,
        resourceVersion: String(this.rv++),
        labels: { 'apiserver.kubernetes.io/identity': 'kube-apiserver', 'kubernetes.io/hostname': s.hostname },
        annotations: { 'kubernetes.io/peer-advertise-address': s.address },
      },
      spec: { holderIdentity: holder, renewTime: new Date(NOW).toISOString(), leaseDurationSeconds: 3600 },
    });
  }

  /** A renewal: new renewTime and resourceVersion, holder kept unless given (a restart). */
  renew(hostname: string, holder?: string): void {
    const l = this.leases.get(hostname)!;
    this.leases.set(hostname, { metadata: { ...l.metadata, resourceVersion: String(this.rv++) }, spec: { ...l.spec, holderIdentity: holder ?? l.spec?.holderIdentity, renewTime: new Date(NOW + this.rv * 1000).toISOString() } });
  }

  list = async <T,>(path: string): Promise<T> => {
    if (path.includes('/leases')) return { items: [...this.leases.values()] } as unknown as T;
    if (path.includes('/endpointslices')) {
      const ips = [...this.leases.values()].map((l) => l.metadata!.annotations!['kubernetes.io/peer-advertise-address']!.split(':')[0]!);
      return { items: [{ addressType: 'IPv4', endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })), ports: [{ name: 'https', port: 6443 }] }] } as unknown as V1EndpointSliceList as T;
    }
    if (path.includes('/pods')) return { items: [] } as unknown as V1PodList as T;
    throw new Error(`unexpected list ${path}`);
  };
}

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
  const fresh = (which: number[]) => {
    observer?.close();
    api = new FakeApi();
    for (const i of which) {
      api.add(servers[i]!);
      servers[i]!.requests.length = 0;
      servers[i]!.fail.clear();
    }
    observer = new FleetObserver(new KubeConfig(), api.list, silentLogger(), fixtureDirectClient());
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
      { version: OLD, server: 'cp-1', ...expectedStorage(OLD) },
      { version: NEW, server: 'cp-3', ...expectedStorage(NEW) },
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
