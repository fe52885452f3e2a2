// FleetObserver.observe() with a server that emulates an older version (KEP-4330, two-phase upgrades, issue
// 10), against fixture servers: per-server emulation from /version, each server's own discovery, storage per
// (version, emulation), and the orphaned objects the settings ask for.
//
// The emulating server is made from the captured pages as the real one measured (docs/observe.md): a v1.36.3
// binary with --emulated-version=1.35 answers /version with v1.36.3 and emulation 1.35, serves v1.35.4's own
// discovery, and stores volumeattributesclasses as v1 (v1.35.4 stores v1beta1).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { FleetObserver, type AnalysisSettings } from '../../src/observe/fleet.ts';
import { emulationOf } from '../../src/observe/direct-client.ts';
import { mergeHashes, resourceKinds, resourceSet, storageVersionHash, storageVersionHashes, type APIGroupDiscoveryList, type APIResourceList } from '../../src/observe/discovery.ts';
import { silentLogger, type Logger } from '../../src/runtime/logger.ts';
import type { Observation } from '../../src/plan/observation.ts';
import { fixtureFiles, readFixture } from './fixtures.ts';
import { fixtureDirectClient, startFixtureServer, type FixtureServer } from './fixture-server.ts';
import { FakeApi, NOW, capturingLogger } from './fake-api.ts';

const OLD = 'v1.35.4';
const NEW = 'v1.36.3';
const SETTINGS: AnalysisSettings = { intervalMs: 1, proxyErrorRatio: 0.01, errorRatio: 0.05, latencyP99Seconds: 1 };
const ORPHANS: AnalysisSettings = { ...SETTINGS, orphansOf: { fromVersion: OLD, targetVersion: NEW } };
const STORAGE_PATH = '/apis/storage.k8s.io/v1';
const VAC = 'storage.k8s.io/v1/volumeattributesclasses';
const MAP = 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies';
const MAPB = 'admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings';
const MAP_PATH = '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies';
const MAPB_PATH = '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings';

const legacy = (version: string) => fixtureFiles(version, /^legacy-.*\.json$/).map((f) => JSON.parse(readFixture(version, f)) as APIResourceList);
const hashesOf = (version: string) => Object.fromEntries(mergeHashes(legacy(version).map(storageVersionHashes)));
const kindsOf = (version: string) => Object.fromEntries(mergeHashes(legacy(version).map(resourceKinds)));

/** A v1.36.3 binary's /version with --emulated-version=1.35, as measured on the real binary. */
const EMULATING_VERSION = JSON.stringify({
  ...JSON.parse(readFixture(NEW, 'version.json')) as Record<string, string>,
  emulationMajor: '1',
  emulationMinor: '35',
  minCompatibilityMajor: '1',
  minCompatibilityMinor: '34',
});

/** v1.35.4's storage.k8s.io/v1 document with volumeattributesclasses stored as v1, as the emulating binary writes it. */
function emulatingStorageDoc(): string {
  const doc = JSON.parse(readFixture(OLD, 'legacy-storage_k8s_io_v1.json')) as APIResourceList;
  for (const r of doc.resources ?? []) if (r.name === 'volumeattributesclasses') r.storageVersionHash = storageVersionHash('storage.k8s.io', 'v1', 'VolumeAttributesClass');
  return JSON.stringify(doc);
}

/** The own (nopeer) resource set the fixture server serves for a version's captured pages. */
async function ownSet(s: FixtureServer): Promise<string[]> {
  const direct = fixtureDirectClient();
  try {
    const [apis, api] = await Promise.all([direct.discovery(s.address, { peer: false, core: false }), direct.discovery(s.address, { peer: false, core: true })]);
    return [...resourceSet(apis as APIGroupDiscoveryList, api as APIGroupDiscoveryList)].sort();
  } finally {
    direct.close();
  }
}

describe('emulationOf (/version, KEP-4330)', () => {
  it('reads emulationMajor.emulationMinor; absent or odd fields give undefined', () => {
    assert.equal(emulationOf(JSON.parse(EMULATING_VERSION) as Record<string, string>), '1.35');
    assert.equal(emulationOf(JSON.parse(readFixture(OLD, 'version.json')) as Record<string, string>), '1.35');
    assert.equal(emulationOf(JSON.parse(readFixture(NEW, 'version.json')) as Record<string, string>), '1.36');
    assert.equal(emulationOf({}), undefined, 'a server before 1.31');
    assert.equal(emulationOf({ emulationMajor: '1' }), undefined);
    assert.equal(emulationOf({ emulationMajor: '1', emulationMinor: '' }), undefined);
    assert.equal(emulationOf({ emulationMajor: '1', emulationMinor: '35+' }), undefined);
  });
});

describe('FleetObserver with an emulating server (two-phase upgrades, issue 10)', () => {
  // cp-1: v1.35.4. cp-2: v1.36.3 with --emulated-version=1.35. cp-3: v1.36.3.
  const servers: FixtureServer[] = [];
  let observer: FleetObserver;
  let api: FakeApi;

  before(async () => {
    servers.push(await startFixtureServer(OLD, 1), await startFixtureServer(OLD, 2), await startFixtureServer(NEW, 3));
  });
  after(async () => {
    observer?.close();
    await Promise.all(servers.map((s) => s.close()));
  });
  const fresh = (which: number[], log: Logger = silentLogger()) => {
    observer?.close();
    api = new FakeApi();
    for (const s of servers) {
      s.extra.clear();
      s.fail.clear();
      s.override.clear();
      s.requests.length = 0;
    }
    servers[1]!.override.set('/version', EMULATING_VERSION);
    servers[1]!.override.set(STORAGE_PATH, emulatingStorageDoc());
    for (const i of which) api.add(servers[i]!);
    observer = new FleetObserver(fixtureDirectClient(), api.list, log);
  };
  const peer = (o: Observation, hostname: string) => o.peers.find((p) => p.hostname === hostname);

  it('each peer carries its emulated version from /version; a /version without the fields leaves it out', async () => {
    fresh([0, 1, 2]);
    const obs = await observer.observe(SETTINGS, NOW);
    assert.deepEqual(obs.peers.map((p) => [p.hostname, p.version, p.emulation, p.ready]), [['cp-1', OLD, '1.35', true], ['cp-2', NEW, '1.35', true], ['cp-3', NEW, '1.36', true]]);
    assert.equal(observer.lastInventory?.servers.find((r) => r.hostname === 'cp-2')?.emulation, '1.35');

    const { emulationMajor: _m, emulationMinor: _n, ...before131 } = JSON.parse(readFixture(NEW, 'version.json')) as Record<string, string>;
    servers[2]!.override.set('/version', JSON.stringify(before131));
    const again = await observer.observe(SETTINGS, NOW + 10_000);
    assert.equal(peer(again, 'cp-3')?.version, NEW);
    assert.ok(!('emulation' in peer(again, 'cp-3')!), 'absent, not undefined-valued: the field is left out');
  });

  it('discovery.own: every up server\'s own resource set with version and emulation; the emulating one equals v1.35.4\'s', async () => {
    fresh([0, 1, 2]);
    const obs = await observer.observe(SETTINGS, NOW);
    const own = obs.discovery?.own;
    assert.ok(own);
    assert.deepEqual(own.map((d) => [d.server, d.version, d.emulation]), [['cp-1', OLD, '1.35'], ['cp-2', NEW, '1.35'], ['cp-3', NEW, '1.36']]);
    assert.deepEqual(own[0]!.resources, await ownSet(servers[0]!));
    assert.deepEqual(own[2]!.resources, await ownSet(servers[2]!));
    assert.deepEqual(own[1]!.resources, own[0]!.resources, 'the emulating server serves what v1.35.4 serves');
    assert.ok(own[2]!.resources.includes(MAP) && !own[1]!.resources.includes(MAP));
    assert.deepEqual(own[0]!.resources, [...own[0]!.resources].sort(), 'sorted');
    assert.equal(JSON.parse(JSON.stringify(own)).length, 3, 'plain JSON');
    // Two v1.36.3 servers with different own sets are not a version disagreement: they emulate different versions.
    assert.doesNotMatch(obs.discovery?.message ?? '', /versionDisagreement/);
  });

  it('discovery.own leaves out a server whose own discovery could not be read', async () => {
    fresh([0, 2]);
    servers[2]!.fail.set('/apis', 503);
    const obs = await observer.observe(SETTINGS, NOW);
    assert.deepEqual(obs.discovery?.own?.map((d) => d.server), ['cp-1']);
    assert.equal(obs.discovery?.converged, false);
  });

  it('storage: one entry per (version, emulation) pair, each with its emulation; the emulating binary stores volumeattributesclasses as v1', async () => {
    fresh([0, 1, 2]);
    const obs = await observer.observe(SETTINGS, NOW);
    assert.deepEqual(obs.storage?.map((s) => [s.version, s.emulation, s.server]), [[OLD, '1.35', 'cp-1'], [NEW, '1.35', 'cp-2'], [NEW, '1.36', 'cp-3']]);
    const [old, emulating, plain] = obs.storage!;
    assert.deepEqual(old!.hashes, hashesOf(OLD));
    assert.deepEqual(plain!.hashes, hashesOf(NEW));
    assert.deepEqual(emulating!.hashes, { ...hashesOf(OLD), [VAC]: hashesOf(NEW)[VAC]! });
    assert.notEqual(emulating!.hashes[VAC], old!.hashes[VAC]);
    assert.deepEqual(emulating!.kinds, kindsOf(OLD));
  });

  it('storage: a kept read is forgotten when its server reports another emulation; two servers of one pair give one entry', async () => {
    fresh([1, 2]);
    const first = await observer.observe(SETTINGS, NOW);
    assert.deepEqual(first.storage?.map((s) => [s.version, s.emulation, s.server]), [[NEW, '1.35', 'cp-2'], [NEW, '1.36', 'cp-3']]);
    const storageReads = (s: FixtureServer) => s.requests.filter((p) => p === STORAGE_PATH).length;
    assert.equal(storageReads(servers[1]!), 1);

    // Phase two lifts the emulation on cp-2 (the same lease holder, to show the pair alone forgets the read).
    servers[1]!.override.set('/version', readFixture(NEW, 'version.json'));
    api.renew('cp-2');
    const second = await observer.observe(SETTINGS, NOW + 10_000);
    assert.deepEqual(second.storage?.map((s) => [s.version, s.emulation]), [[NEW, '1.36']], 'both servers now one pair: one entry');
    assert.equal(second.storage?.[0]?.server, 'cp-3', 'the kept read of cp-3 answers for the pair');
    assert.equal(storageReads(servers[1]!), 1, 'nothing read again: the pair had a kept read');

    // cp-3 restarts: the pair has no kept read left (cp-2's emulating read was forgotten), so cp-2 is read.
    api.renew('cp-3', 'apiserver-cp-3_uuid-2');
    const third = await observer.observe(SETTINGS, NOW + 20_000);
    assert.deepEqual(third.storage?.map((s) => [s.version, s.emulation, s.server]), [[NEW, '1.36', 'cp-2']]);
    assert.equal(storageReads(servers[1]!), 2);
  });

  it('orphans: the target\'s own resources the from-version lacks, listed through the balancer with limit=20', async () => {
    fresh([0, 2]);
    api.objects.set(MAP_PATH, { items: Array.from({ length: 23 }, (_, i) => ({ name: `policy-${String(i).padStart(2, '0')}` })) });
    api.objects.set(MAPB_PATH, { items: [] });
    const obs = await observer.observe(ORPHANS, NOW);
    assert.deepEqual(obs.orphans, [
      { resource: MAP, count: 23, names: Array.from({ length: 20 }, (_, i) => `policy-${String(i).padStart(2, '0')}`) },
      { resource: MAPB, count: 0, names: [] },
    ]);
    assert.deepEqual([...api.objectLists].sort(), [`${MAP_PATH}?limit=20`, `${MAPB_PATH}?limit=20`], 'one list each; the count from remainingItemCount');
  });

  it('orphans: with no v1.35.4 up, the emulating v1.36.3 speaks for the from-version', async () => {
    fresh([1, 2]);
    api.objects.set(MAP_PATH, { items: [{ name: 'p' }] });
    api.objects.set(MAPB_PATH, { items: [{ name: 'b' }] });
    const obs = await observer.observe(ORPHANS, NOW);
    assert.deepEqual(obs.orphans?.map((o) => [o.resource, o.count, o.names]), [[MAP, 1, ['p']], [MAPB, 1, ['b']]]);
  });

  it('orphans: a resource of the target whose objects are namespaced is named namespace/name; without remainingItemCount the count follows continue; create-only resources are not listed', async () => {
    fresh([0, 2]);
    // A group/version only the target serves (as a CRD or a new built-in would be), namespaced.
    // A create-only resource (a review: nothing stored) beside it is not listed: it would answer 405.
    servers[2]!.extra.set('/apis/stable.example.com/v1', { kind: 'APIResourceList', groupVersion: 'stable.example.com/v1', resources: [{ name: 'crontabs', kind: 'CronTab', namespaced: true, verbs: ['list'] }, { name: 'cronreviews', kind: 'CronReview', namespaced: false, verbs: ['create'] }] });
    api.objects.set(MAP_PATH, { items: [] });
    api.objects.set(MAPB_PATH, { items: [] });
    const crontabs = Array.from({ length: 1234 }, (_, i) => ({ name: `c${i}`, namespace: i % 2 ? 'team-a' : 'team-b' }));
    api.objects.set('/apis/stable.example.com/v1/crontabs', { items: crontabs, noRemainingItemCount: true });
    const obs = await observer.observe(ORPHANS, NOW);
    assert.ok(obs.discovery?.own?.find((d) => d.server === 'cp-3')?.resources.includes('stable.example.com/v1/cronreviews'), 'served, so in the own set');
    assert.deepEqual(obs.orphans?.map((o) => o.resource), [MAP, MAPB, 'stable.example.com/v1/crontabs'], 'the create-only resource is left out');
    const c = obs.orphans?.find((o) => o.resource === 'stable.example.com/v1/crontabs');
    assert.ok(c, JSON.stringify(obs.orphans));
    assert.equal(c.count, 1234);
    assert.deepEqual(c.names.slice(0, 2), ['team-b/c0', 'team-a/c1']);
    assert.equal(c.names.length, 20);
    assert.deepEqual(api.objectLists.filter((p) => p.startsWith('/apis/stable.example.com/')), [
      '/apis/stable.example.com/v1/crontabs?limit=20',
      '/apis/stable.example.com/v1/crontabs?limit=500&continue=20',
      '/apis/stable.example.com/v1/crontabs?limit=500&continue=520',
      '/apis/stable.example.com/v1/crontabs?limit=500&continue=1020',
    ]);
  });

  it('orphans: not reported when no from-version side is up (debug line), nor when no target is up', async () => {
    const { log, lines } = capturingLogger();
    fresh([2], log);
    const onlyTarget = await observer.observe(ORPHANS, NOW);
    assert.equal(onlyTarget.orphans, undefined);
    assert.ok(!('orphans' in onlyTarget));
    assert.deepEqual(api.objectLists, [], 'nothing listed');
    const why = lines.find((l) => l.message === 'orphaned objects not read');
    assert.equal(why?.level, 'debug');
    assert.match(String(why?.reason), /no up server of v1\.35\.4, nor of v1\.36\.3 with --emulated-version=1\.35/);

    const { log: log2, lines: lines2 } = capturingLogger();
    fresh([0, 1], log2);
    assert.equal((await observer.observe(ORPHANS, NOW)).orphans, undefined, 'only v1.35.4 and an emulating v1.36.3: no target side');
    assert.match(String(lines2.find((l) => l.message === 'orphaned objects not read')?.reason), /no up server of v1\.36\.3 emulating 1\.36/);
  });

  it('orphans: with no from-version side up, the from-version\'s stored resources recorded at preflight speak for it (phase two, every server past the emulation)', async () => {
    fresh([2]);
    api.objects.set(MAP_PATH, { items: [{ name: 'p' }] });
    api.objects.set(MAPB_PATH, { items: [] });
    const recorded: AnalysisSettings = { ...SETTINGS, orphansOf: { fromVersion: OLD, targetVersion: NEW, fromStored: Object.keys(hashesOf(OLD)) } };
    const obs = await observer.observe(recorded, NOW);
    assert.deepEqual(obs.orphans?.map((o) => [o.resource, o.count]), [[MAP, 1], [MAPB, 0]], 'what v1.36.3 stores and v1.35.4 did not');
  });

  it('orphans: not read unless the settings ask; a failed list withholds them all (info line)', async () => {
    fresh([0, 2]);
    const plain = await observer.observe(SETTINGS, NOW);
    assert.ok(!('orphans' in plain));
    assert.deepEqual(api.objectLists, []);

    const { log, lines } = capturingLogger();
    fresh([0, 2], log);
    api.objects.set(MAP_PATH, { items: [{ name: 'p' }] });
    api.objectErrors.set(MAPB_PATH, new Error(`GET ${MAPB_PATH}: 403 Forbidden`));
    const obs = await observer.observe(ORPHANS, NOW);
    assert.equal(obs.orphans, undefined);
    const why = lines.find((l) => typeof l.message === 'string' && l.message.startsWith('orphaned objects not reported'));
    assert.equal(why?.level, 'info');
    assert.match(String(why?.first), /mutatingadmissionpolicybindings: .*403 Forbidden/);

    api.objectErrors.clear();
    api.objects.set(MAPB_PATH, { items: [] });
    assert.deepEqual((await observer.observe(ORPHANS, NOW + 10_000)).orphans?.map((o) => [o.resource, o.count]), [[MAP, 1], [MAPB, 0]], 'read again at the next observation');
  });

  it('orphans: none when the target serves nothing new', async () => {
    fresh([0, 2]);
    const same = await observer.observe({ ...SETTINGS, orphansOf: { fromVersion: NEW, targetVersion: NEW } }, NOW);
    assert.deepEqual(same.orphans, []);
  });
});
