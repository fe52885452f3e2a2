// Issue 24: a v1.34 server keeps its identity Lease's holder across a restart (the lease controller copies the
// existing Lease; from 1.35 it is deleted at start). The observer reads such a server's /metrics on every look,
// and its process start time tells one process from the next where the holder cannot.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { FleetObserver, type AnalysisSettings } from '../../src/observe/fleet.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { processIdentity } from '../../src/plan/process-identity.ts';
import { fixtureDirectClient, startFixtureServer, type FixtureServer } from './fixture-server.ts';
import { readFixture } from './fixtures.ts';
import { FakeApi, NOW } from './fake-api.ts';

const notDue: AnalysisSettings = { intervalMs: 3_600_000, due: false, proxyErrorRatio: 0.01, errorRatio: 0.05, latencyP99Seconds: 1 };
const scrapes = (s: FixtureServer) => s.requests.filter((p) => p === '/metrics').length;
/** The v1.35.4 fixture's /version made to say v1.34.4 (the pages' shapes are the same for what is read here). */
const V134 = JSON.stringify({ ...(JSON.parse(readFixture('v1.35.4', 'version.json')) as object), gitVersion: 'v1.34.4', minor: '34', emulationMinor: '34' });
/** The fixture's /metrics with another process start time and the proxy gate as given. */
function page(start: number, gate: 0 | 1): string {
  return readFixture('v1.35.4', 'metrics.txt')
    .replace(/^process_start_time_seconds .*$/m, `process_start_time_seconds ${start}`)
    .replace(/^(kubernetes_feature_enabled\{name="UnknownVersionInteroperabilityProxy"[^}]*\}) \d+$/m, `$1 ${gate}`);
}

describe('FleetObserver on a v1.34 fleet: restarts told by the process start time (issue 24)', () => {
  const servers: FixtureServer[] = [];
  let observer: FleetObserver;
  let api: FakeApi;

  before(async () => {
    servers.push(await startFixtureServer('v1.35.4', 1), await startFixtureServer('v1.36.3', 2));
    servers[0]!.override.set('/version', V134);
    servers[0]!.override.set('/metrics', page(1_790_000_000, 0));
    api = new FakeApi();
    for (const s of servers) api.add(s);
    observer = new FleetObserver(fixtureDirectClient(), api.list, silentLogger());
  });
  after(async () => {
    observer.close();
    await Promise.all(servers.map((s) => s.close()));
  });

  it('scrapes the v1.34 server on every look; a restart with the holder kept changes its process identity and its gate', async () => {
    await observer.observe({ ...notDue, due: true }, NOW);
    await observer.observe({ ...notDue, due: true }, NOW + 2_000);
    const [a0, b0] = [scrapes(servers[0]!), scrapes(servers[1]!)];
    for (const h of api.leases.keys()) api.renew(h);
    const before = await observer.observe(notDue, NOW + 4_000);
    assert.deepEqual([scrapes(servers[0]!) - a0, scrapes(servers[1]!) - b0], [1, 0], 'v1.34: scraped although its holder is the same; v1.36: not');
    const old = before.peers.find((p) => p.hostname === 'cp-1')!;
    assert.equal(old.version, 'v1.34.4');
    assert.equal(old.processStart, 1_790_000_000);
    assert.equal(old.proxyGate, 'off');
    const newer = before.peers.find((p) => p.hostname === 'cp-2')!;
    assert.equal(processIdentity(newer), newer.holderIdentity, 'a v1.36 server is told apart by its holder alone');

    // cp-1 restarts with the gate on; v1.34's lease controller renews the old holder.
    servers[0]!.override.set('/metrics', page(1_790_000_100, 1));
    api.renew('cp-1');
    const after = await observer.observe(notDue, NOW + 6_000);
    const restarted = after.peers.find((p) => p.hostname === 'cp-1')!;
    assert.equal(restarted.holderIdentity, old.holderIdentity, 'the Lease holder did not change');
    assert.equal(restarted.proxyGate, 'on', 'the new gate is seen');
    assert.notEqual(processIdentity(restarted), processIdentity(old), 'the process identity did change');
  });

  it('reads the v1.34 server\'s page only on the looks the planner asks its start time for; between them, the last start time is kept and marked so', async () => {
    await observer.observe(notDue, NOW + 7_000);
    const a0 = scrapes(servers[0]!);
    const skipped = (await observer.observe({ ...notDue, startTimes: { all: false, servers: ['cp-2'] } }, NOW + 7_200)).peers.find((p) => p.hostname === 'cp-1')!;
    assert.equal(scrapes(servers[0]!) - a0, 0, 'not asked for cp-1: not scraped');
    assert.equal(skipped.processStart, 1_790_000_100);
    assert.equal(skipped.processStartKept, true, 'the start time is an earlier look\'s');
    assert.equal(skipped.proxyGate, 'on', 'the gate of the last scrape');
    const asked = (await observer.observe({ ...notDue, startTimes: { all: false, servers: ['cp-1'] } }, NOW + 7_400)).peers.find((p) => p.hostname === 'cp-1')!;
    assert.equal(scrapes(servers[0]!) - a0, 1, 'asked for cp-1: scraped');
    assert.equal(asked.processStartKept, undefined, 'read by this look');
    await observer.observe({ ...notDue, startTimes: { all: true, servers: [] } }, NOW + 7_600);
    assert.equal(scrapes(servers[0]!) - a0, 2, 'asked for every server: scraped');
  });

  it('keeps the last start time when a scrape of the v1.34 server fails (no restart invented)', async () => {
    const seen = (await observer.observe(notDue, NOW + 8_000)).peers.find((p) => p.hostname === 'cp-1')!;
    servers[0]!.fail.set('/metrics', 500);
    try {
      const failed = (await observer.observe(notDue, NOW + 10_000)).peers.find((p) => p.hostname === 'cp-1')!;
      assert.equal(failed.proxyGate, 'unknown', 'the gate of a failed scrape is unknown');
      assert.equal(processIdentity(failed), processIdentity(seen), 'a failed scrape is no restart');
    } finally {
      servers[0]!.fail.delete('/metrics');
    }
    const back = (await observer.observe(notDue, NOW + 12_000)).peers.find((p) => p.hostname === 'cp-1')!;
    assert.equal(processIdentity(back), processIdentity(seen), 'the same process once read again');
  });
});
