// Issue 12: what DirectClient sends and how it reads the answer: a User-Agent and Accept-Encoding gzip on
// every request, gzipped bodies decoded (discovery and /metrics), and one retry when the server closed the
// kept-alive socket the request was sent on.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import { gzipSync } from 'node:zlib';
import type { AddressInfo, Socket } from 'node:net';
import { fixtureDirectClient, tlsMaterial } from './fixture-server.ts';
import { readFixture } from './fixtures.ts';
import { USER_AGENT } from '../../src/runtime/kube-request.ts';
import { SIGNAL_FAMILIES } from '../../src/observe/signals.ts';
import type { DirectClient } from '../../src/observe/direct-client.ts';

describe('DirectClient over HTTP (issue 12)', () => {
  let server: Server;
  let address: string;
  let client: DirectClient;
  const seen: { path: string; ua: string | undefined; encoding: string | undefined }[] = [];
  /** Requests answered per socket; `closeSecond` makes the second request on a socket close it unanswered. */
  const perSocket = new Map<Socket, number>();
  let closeSecond = false;
  const metrics = readFixture('v1.36.3', 'metrics.txt');

  before(async () => {
    server = createServer(tlsMaterial(1), (req, res) => {
      const n = (perSocket.get(req.socket) ?? 0) + 1;
      perSocket.set(req.socket, n);
      seen.push({ path: req.url ?? '', ua: req.headers['user-agent'], encoding: req.headers['accept-encoding'] });
      if (closeSecond && n === 2) {
        req.socket.destroy();
        return;
      }
      const gzip = /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
      const body = req.url === '/metrics' ? metrics : readFixture('v1.36.3', 'version.json');
      res.writeHead(200, { 'Content-Type': 'text/plain', ...(gzip ? { 'Content-Encoding': 'gzip' } : {}) });
      res.end(gzip ? gzipSync(body) : body);
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    client = fixtureDirectClient();
  });
  after(async () => {
    client.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('sends the User-Agent and Accept-Encoding gzip, and decodes gzipped answers', async () => {
    const info = await client.getVersion(address);
    assert.match(info.gitVersion, /^v1\.36\./);
    const parsed = await client.metrics(address, SIGNAL_FAMILIES);
    assert.ok(parsed.has('apiserver_request_total'));
    assert.match(USER_AGENT, /^apiserver-upgrade-operator\/\d+\.\d+\.\d+/);
    assert.ok(seen.length >= 2);
    for (const s of seen) {
      assert.equal(s.ua, USER_AGENT);
      assert.equal(s.encoding, 'gzip');
    }
  });

  it('sends a request again, once, when the server closed the reused socket', async () => {
    client.close();
    perSocket.clear();
    closeSecond = true;
    try {
      await client.getVersion(address);
      // Same kept-alive socket: the server drops it unanswered; the client asks again on a new socket.
      const info = await client.getVersion(address);
      assert.match(info.gitVersion, /^v1\.36\./);
      assert.equal(perSocket.size, 2);
    } finally {
      closeSecond = false;
    }
  });
});
