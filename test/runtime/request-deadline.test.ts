// An API call's deadline (src/runtime/kube.ts firstTimeoutMs): short at first, so a reconcile held by a server cut from
// etcd is not blind for the full request timeout (fault campaign, seed 43 #5: a status write; Event writes and driver
// Job reads wait the same way), doubling after each attempt that timed out, so an API that is only slow still gets its
// calls through; any answer resets it, an error status too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import winston from 'winston';
import { KubeApiError, KubeClient } from '../../src/runtime/kube.ts';
import { localAccess } from './local-access.ts';

type Mode = 'hold' | 'ok' | 'conflict';

async function serve(mode: () => Mode): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const m = mode();
    if (m === 'hold') return; // a server cut from etcd: it holds the call
    req.resume();
    req.on('end', () => {
      if (m === 'conflict') return res.writeHead(409, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', reason: 'Conflict', message: 'changed' }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ metadata: { name: 'u' }, status: {} }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
}

async function timedOut(call: () => Promise<unknown>): Promise<number> {
  const t0 = Date.now();
  await assert.rejects(call(), (err: Error) => err.name === 'TimeoutError');
  return Date.now() - t0;
}

const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', namespace: 'default' };
const src = { controller: 'c', instance: 'i' };

test('every call without its own deadline gives up at the short one, doubles it after each timeout up to the full one, and resets on an answer', async () => {
  let mode: Mode = 'hold';
  const { server, port } = await serve(() => mode);
  const kube = new KubeClient(localAccess(port), { logger: winston.createLogger({ silent: true }), timeoutMs: 2_000, firstTimeoutMs: 200, retry: { attempts: 1 } });
  try {
    // A status write, an Event, a read, a write, a status write: one escalation shared by all of them.
    const calls: Array<() => Promise<unknown>> = [
      () => kube.patchUpgradeStatus('u', { phase: 'Upgrading' }),
      () => kube.createEvent(src, { regarding: ref, type: 'Normal', reason: 'R', action: 'A', note: 'n' }),
      () => kube.request('GET', '/api/v1/namespaces/kube-system/pods/x'),
      () => kube.request('POST', '/apis/batch/v1/namespaces/kube-system/jobs', { body: {} }),
      () => kube.patchUpgradeStatus('u', { phase: 'Upgrading' }),
    ];
    const deadlines: number[] = [];
    for (const call of calls) deadlines.push(await timedOut(call));
    // 200, 400, 800, 1600, then the full 2000: each at least its deadline, and well short of the next one's.
    const want = [200, 400, 800, 1600, 2000];
    for (const [i, d] of deadlines.entries()) assert.ok(d >= want[i]! - 20 && d < want[i]! + 180, `call ${i + 1} gave up after ${d} ms, deadline ${want[i]} ms (${deadlines.join(', ')})`);

    // An error status is an answer: the server is reachable, so the short deadline is back.
    mode = 'conflict';
    await assert.rejects(kube.patchUpgradeStatus('u', { phase: 'Upgrading' }), (err: unknown) => err instanceof KubeApiError && err.statusCode === 409);
    mode = 'hold';
    assert.ok((await timedOut(() => kube.request('GET', '/x'))) < 380, 'an error answer reset the deadline to the short one');
    mode = 'ok';
    assert.equal((await kube.patchUpgradeStatus('u', { phase: 'Upgrading' })).metadata?.name, 'u');
    mode = 'hold';
    assert.ok((await timedOut(() => kube.createEvent(src, { regarding: ref, type: 'Normal', reason: 'R', action: 'A', note: 'n' }))) < 380, 'a success reset the deadline to the short one');

    // A call that brings its own deadline keeps it, escalation or not.
    assert.ok(Math.abs((await timedOut(() => kube.request('GET', '/x', { timeoutMs: 700 }))) - 700) < 150, 'an own deadline is kept');
  } finally {
    await close(server);
  }
});

test('a read retried on timeouts gets a longer deadline on each attempt, so a slow API answers within the retries', async () => {
  let calls = 0;
  const server = createServer((req, res) => {
    calls++;
    // Answers after 500 ms: longer than the first deadline (200) and the second (400), within the third (800).
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), 500);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const kube = new KubeClient(localAccess(port), {
    logger: winston.createLogger({ silent: true }),
    timeoutMs: 2_000,
    firstTimeoutMs: 200,
    retry: { attempts: 4, backoff: { baseMs: 10, maxMs: 10, factor: 1, jitter: 0 } },
  });
  try {
    assert.deepEqual(await kube.request('GET', '/slow'), { ok: true });
    assert.equal(calls, 3, 'two attempts timed out (200, 400 ms), the third (800 ms) got the answer');
  } finally {
    await close(server);
  }
});

test('a timeout closes the idle kept-alive sockets: behind a balancer they may lead to the same hung server', async () => {
  // Sockets open when the "cut" happens are held (the balancer keeps them with the hung server); new ones are answered.
  const hung = new Set<Socket>();
  const open = new Set<Socket>();
  const server = createServer((req, res) => {
    if (hung.has(req.socket)) return;
    req.resume();
    req.on('end', () => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 50));
  });
  server.on('connection', (s) => {
    open.add(s);
    s.on('close', () => open.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const kube = new KubeClient(localAccess(port), { logger: winston.createLogger({ silent: true }), timeoutMs: 2_000, firstTimeoutMs: 300, retry: { attempts: 1 } });
  try {
    // Two calls at once: two kept-alive sockets, both idle afterwards.
    await Promise.all([kube.request('GET', '/api/v1/namespaces/a'), kube.request('GET', '/api/v1/namespaces/b')]);
    assert.equal(open.size, 2, 'two kept-alive connections');
    for (const s of open) hung.add(s);
    await timedOut(() => kube.request('GET', '/api/v1/namespaces/c'));
    // The next call must not take the other socket kept to the hung server.
    const t0 = Date.now();
    await kube.request('GET', '/api/v1/namespaces/d');
    assert.ok(Date.now() - t0 < 300, `answered on a new connection in ${Date.now() - t0} ms`);
  } finally {
    await close(server);
  }
});
