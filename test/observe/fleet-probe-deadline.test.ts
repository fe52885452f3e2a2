// A look waits for each server's probe less than one analysis interval (src/plan/probe-deadline.ts): a server that
// holds its answers is not ready for that check, and the look ends within the interval (fault campaign, nodes
// seed 102 #0: a server cut from etcd held every look 5 s, and checks meant 2 s apart came 6 s apart).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { FleetObserver, type AnalysisSettings } from '../../src/observe/fleet.ts';
import { probeDeadlineMs, PROBE_DEADLINE_MAX_MS, PROBE_DEADLINE_MIN_MS } from '../../src/plan/probe-deadline.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { fixtureDirectClient, startFixtureServer, type FixtureServer } from './fixture-server.ts';
import { FakeApi, NOW } from './fake-api.ts';

const settings = (intervalMs: number): AnalysisSettings => ({ intervalMs, due: true, proxyErrorRatio: 0.01, errorRatio: 0.05, latencyP99Seconds: 1 });

describe('probe deadline', () => {
  it('is one interval less the rest of the look (a quarter, at most 500 ms), from 1 s to 5 s; the default 10 s keeps 5 s', () => {
    assert.equal(probeDeadlineMs(2_000), 1_500);
    assert.equal(probeDeadlineMs(3_000), 2_500);
    assert.equal(probeDeadlineMs(5_000), 4_500);
    assert.equal(probeDeadlineMs(1_600), 1_200);
    assert.equal(probeDeadlineMs(10_000), 5_000);
    assert.equal(probeDeadlineMs(600_000), PROBE_DEADLINE_MAX_MS);
    assert.equal(probeDeadlineMs(500), PROBE_DEADLINE_MIN_MS, 'a 500 ms interval still gives a server 1 s');
    for (const bad of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) assert.equal(probeDeadlineMs(bad), PROBE_DEADLINE_MAX_MS, String(bad));
  });
});

/**
 * Two v1.36.3 fixture servers and an observer of them, started before the suite's tests and closed after. The
 * fixture client's own deadline is 5 s: only the look's deadline can end a wait sooner.
 */
function twoServers(): { servers: FixtureServer[]; observer: () => FleetObserver } {
  const servers: FixtureServer[] = [];
  let observer: FleetObserver | undefined;
  before(async () => {
    servers.push(await startFixtureServer('v1.36.3', 1), await startFixtureServer('v1.36.3', 2));
    const api = new FakeApi();
    for (const s of servers) api.add(s);
    observer = new FleetObserver(fixtureDirectClient(), api.list, silentLogger());
  });
  after(async () => {
    observer?.close();
    await Promise.all(servers.map((s) => s.close()));
  });
  return { servers, observer: () => observer! };
}

describe('FleetObserver and a server that holds its probes', () => {
  const { servers, observer } = twoServers();

  it('counts it not ready once a 1 s interval passed, and the look ends soon after', async () => {
    const before = await observer().observe(settings(1_000), NOW);
    assert.deepEqual(before.peers.map((p) => [p.hostname, p.ready]).sort(), [['cp-1', true], ['cp-2', true]]);
    servers[1]!.hold.add('/readyz');
    servers[1]!.hold.add('/metrics');
    const started = Date.now();
    const held = await observer().observe(settings(1_000), NOW + 1_000);
    const tookMs = Date.now() - started;
    assert.deepEqual(held.peers.map((p) => [p.hostname, p.ready]).sort(), [['cp-1', true], ['cp-2', false]]);
    assert.ok(tookMs >= 900 && tookMs < 2_000, `the look took ${tookMs} ms: it waits the 1 s deadline, not the client's 5 s`);
  });

  it('ends a look with a held server before its 2 s interval is up, with room left for the status write', async () => {
    // Nodes seed 191 #9: looks that waited the whole 2 s interval on a server cut from etcd overran it by their status
    // write, and the reconciler's gap after an overrunning look put checks 3 s apart: a 3 x 2 s limit acted on late.
    const started = Date.now();
    const held = await observer().observe(settings(2_000), NOW + 3_000);
    const tookMs = Date.now() - started;
    assert.deepEqual(held.peers.map((p) => [p.hostname, p.ready]).sort(), [['cp-1', true], ['cp-2', false]]);
    assert.ok(tookMs < 1_800, `the look took ${tookMs} ms of its 2 s interval`);
  });
});

describe('FleetObserver and discovery within the look', () => {
  const { servers, observer } = twoServers();
  before(() => observer().observe(settings(3_000), NOW));

  it("reads a ready server's discovery while a held server's probe runs: the look waits once, not twice", async () => {
    // Nodes seed 351 #1: a server cut from etcd held its probe for the 2.5 s deadline, then the others' discovery
    // (slow at load 22-25) came after it, so looks took 4-8 s at a 3 s interval.
    servers[1]!.hold.add('/readyz');
    servers[0]!.delay.set('/apis', 1_500);
    try {
      const started = Date.now();
      const obs = await observer().observe(settings(3_000), NOW + 3_000);
      const tookMs = Date.now() - started;
      assert.deepEqual(obs.peers.map((p) => [p.hostname, p.ready]).sort(), [['cp-1', true], ['cp-2', false]]);
      assert.deepEqual(obs.discovery?.own?.map((o) => o.server), ['cp-1'], 'the slow discovery was read within the look');
      assert.ok(tookMs < probeDeadlineMs(3_000) + 400, `the look took ${tookMs} ms: the 2.5 s probe and then 1.5 s of discovery, in turn`);
    } finally {
      servers[1]!.hold.delete('/readyz');
      servers[0]!.delay.delete('/apis');
    }
  });

  it("ends a look whose discovery a server holds within the interval, and that server's discovery is unknown", async () => {
    servers[0]!.hold.add('/apis');
    try {
      const started = Date.now();
      const obs = await observer().observe(settings(3_000), NOW + 6_000);
      const tookMs = Date.now() - started;
      assert.deepEqual(obs.peers.map((p) => [p.hostname, p.ready]).sort(), [['cp-1', true], ['cp-2', true]]);
      assert.equal(obs.discovery?.converged, false);
      assert.deepEqual(obs.discovery?.own?.map((o) => o.server), ['cp-2'], "cp-1's own discovery is unknown, not guessed");
      assert.ok(tookMs < 3_000, `the look took ${tookMs} ms: discovery kept the client's 5 s deadline, past the 3 s interval`);
    } finally {
      servers[0]!.hold.delete('/apis');
    }
  });
});
