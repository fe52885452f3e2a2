// The leader's renewal against a fixture lease server whose answers are slow: an attempt's look and write together
// fit the attempt's deadline (a renewal that ends past renewDeadline would have the leader act into the takeover
// margin), and a server slower than one retry period but faster than renewDeadline keeps its leader (at an apiserver
// p99 of 3-13 s, the CI campaign's nodes seed 10 lost its only replica's lease three times, every attempt cut at 2 s).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LeaderElector } from '../../src/runtime/leader.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { localAccess } from './local-access.ts';

interface Fixture {
  server: Server;
  port: number;
  /** Delay of each GET and each PUT, ms; a PUT delay of Infinity never answers. */
  delays: { get: number; put: number };
  /** When each GET arrived: an attempt starts with one. */
  gets: number[];
  /** The GET arrival of each attempt whose write was answered. */
  renewedFrom: number[];
}

/** A lease endpoint: one Lease in memory; writes are answered after their delay, so a late answer still lands. */
async function leaseServer(): Promise<Fixture> {
  let lease: Record<string, unknown> | undefined;
  let rv = 1;
  const f: Fixture = { server: createServer(), port: 0, delays: { get: 0, put: 0 }, gets: [], renewedFrom: [] };
  f.server.on('request', (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const send = (code: number, body: unknown): void => void res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.method === 'GET') {
        const at = Date.now();
        f.gets.push(at);
        setTimeout(() => (lease ? send(200, lease) : send(404, { kind: 'Status', code: 404 })), f.delays.get);
        return;
      }
      const started = f.gets.at(-1) ?? Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      if (req.method === 'POST' || req.method === 'PUT') {
        if (f.delays.put === Number.POSITIVE_INFINITY) return;
        setTimeout(() => {
          lease = { ...body, metadata: { ...(body.metadata as object), name: 'x', namespace: 'kube-system', resourceVersion: String(++rv) } };
          f.renewedFrom.push(started);
          send(req.method === 'POST' ? 201 : 200, lease);
        }, f.delays.put);
        return;
      }
      send(405, {});
    });
  });
  await new Promise<void>((r) => f.server.listen(0, '127.0.0.1', r));
  f.port = (f.server.address() as AddressInfo).port;
  return f;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Run {
  f: Fixture;
  e: LeaderElector;
  events: { started?: number; stopped?: number };
  end(): Promise<void>;
}

/** A leader of the fixture's lease (fast answers until the test slows them), leading when this returns. */
async function leading(): Promise<Run> {
  const f = await leaseServer();
  const events: { started?: number; stopped?: number } = {};
  const e = new LeaderElector({
    kubeConfig: localAccess(f.port), namespace: 'kube-system', name: 'x', identity: 'me', logger: silentLogger(),
    leaseDurationMs: 5_000, renewDeadlineMs: 3_000, retryPeriodMs: 500, standbyPollMs: 100,
    onStartedLeading: () => void (events.started = Date.now()),
    onStoppedLeading: () => void (events.stopped = Date.now()),
  });
  const end = async (): Promise<void> => {
    await e.stop({ release: false });
    f.server.close();
  };
  e.start();
  for (let i = 0; i < 50 && events.started === undefined; i++) await sleep(50);
  if (events.started === undefined) {
    await end();
    assert.fail('did not lead on a fast server within 2.5 s');
  }
  return { f, e, events, end };
}

test('a server that answers each write in longer than one retry period, within renewDeadline, keeps its leader', async () => {
  const { f, e, events, end } = await leading();
  try {
    // Each write now takes 800 ms: more than the first attempt's 500 ms, less than the second's 1 s.
    f.delays.put = 800;
    await sleep(7_000);
    assert.equal(events.stopped, undefined, 'still leading after more than two renew deadlines of slow writes');
    assert.ok(e.isLeader);
    assert.ok(f.renewedFrom.filter((t) => t > events.started! + 1_000).length >= 3, `renewed since the writes slowed: ${f.renewedFrom.length}`);
  } finally {
    await end();
  }
});

test('a renewal\'s look and write together end within renewDeadline: the leader steps down on time', async () => {
  const { f, events, end } = await leading();
  try {
    await sleep(1_200);
    // From now on a look takes 350 ms and a write never answers: every attempt fails, and one that starts with
    // little time left must not use a full attempt for its write after its look.
    f.delays.get = 350;
    f.delays.put = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 120 && events.stopped === undefined; i++) await sleep(50);
    assert.ok(events.stopped !== undefined, 'stepped down');
    const lastRenewal = f.renewedFrom.at(-1)!;
    const late = events.stopped - (lastRenewal + 3_000);
    assert.ok(late <= 300, `stepped down ${late} ms after the renew deadline of the last renewal's attempt (at most a timer's slack; 500 ms before the change)`);
  } finally {
    await end();
  }
});
