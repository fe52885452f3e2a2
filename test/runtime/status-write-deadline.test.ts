// A status write's deadline (src/runtime/kube.ts statusWriteTimeoutMs): short at first, so a reconcile held by a server
// cut from etcd is not blind for the full request timeout (fault campaign, seed 43 #5), doubling after each write that
// timed out, so an API that is only slow still gets its writes through; an answer resets it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import winston from 'winston';
import { KubeClient } from '../../src/runtime/kube.ts';
import { localAccess } from './local-access.ts';

test('a status write gives up at its short deadline, doubles it after each timeout up to the full one, and resets on an answer', async () => {
  let answer = false;
  const server = createServer((req, res) => {
    if (!answer) return; // a server cut from etcd: it holds the write
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ metadata: { name: 'u' }, status: {} })));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const kube = new KubeClient(localAccess(port), { logger: winston.createLogger({ silent: true }), timeoutMs: 2_000, statusWriteTimeoutMs: 200 });
  const deadlines: number[] = [];
  try {
    for (let i = 0; i < 5; i++) {
      const t0 = Date.now();
      await assert.rejects(kube.patchUpgradeStatus('u', { phase: 'Upgrading' }), (err: Error) => err.name === 'TimeoutError');
      deadlines.push(Date.now() - t0);
    }
    // 200, 400, 800, 1600, then the full 2000: each at least its deadline, and well short of the next one's.
    const want = [200, 400, 800, 1600, 2000];
    for (const [i, d] of deadlines.entries()) assert.ok(d >= want[i]! - 20 && d < want[i]! + 180, `write ${i + 1} gave up after ${d} ms, deadline ${want[i]} ms (${deadlines.join(', ')})`);
    answer = true;
    const u = await kube.patchUpgradeStatus('u', { phase: 'Upgrading' });
    assert.equal(u.metadata?.name, 'u');
    answer = false;
    const t0 = Date.now();
    await assert.rejects(kube.patchUpgradeStatus('u', { phase: 'Upgrading' }));
    assert.ok(Date.now() - t0 < 380, 'an answer reset the deadline to the short one');
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});
