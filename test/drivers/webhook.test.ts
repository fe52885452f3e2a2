// The webhook driver against real HTTPS servers on loopback, with a test CA made by openssl.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createTlsServer, type Server as TlsServer, type TLSSocket } from 'node:tls';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RESPONSE_BODY_CAP, WebhookDriver, webhookPayload, type WebhookConfig } from '../../src/drivers/webhook.ts';
import type { DriverRequest } from '../../src/plan/actions.ts';
import { createTestPki, type KeyPair, type TestPki } from './support/tls.ts';

let pki: TestPki;
before(() => {
  pki = createTestPki();
});
after(() => pki.cleanup());

const REQUEST: DriverRequest = {
  idempotencyKey: 'upgrade-cp-2-3f2a9c0d1e4b5a67',
  action: 'Upgrade',
  upgrade: 'to-v1-36',
  batch: 2,
  server: { identity: 'apiserver-4xq2', hostname: 'cp-2', address: '10.0.0.12:6443' },
  targetVersion: 'v1.36.3',
  featureGates: { UnknownVersionInteroperabilityProxy: true },
};

interface Hook {
  url: string;
  /** Requests the hook received. */
  seen: { headers: IncomingMessage['headers']; body: string }[];
  close(): Promise<void>;
}

/** An HTTPS hook on 127.0.0.1 answering with `handler` after reading the whole request. */
async function hook(handler: (req: IncomingMessage, res: ServerResponse) => void, pair: KeyPair = pki.serving): Promise<Hook> {
  const seen: Hook['seen'] = [];
  const server: HttpsServer = createHttpsServer({ cert: pair.cert, key: pair.key }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      seen.push({ headers: req.headers, body });
      handler(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}/v1/apiservers/replace`,
    seen,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function driver(url: string, o: Partial<WebhookConfig> = {}): WebhookDriver {
  return new WebhookDriver({ url, caBundle: pki.ca.cert, timeoutMs: 5000, ...o });
}

async function timed<T>(p: Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  const value = await p;
  return { value, ms: performance.now() - t0 };
}

test('webhook: 2xx is accepted; the request carries the payload, the key and the token', async () => {
  const h = await hook((_req, res) => res.writeHead(202, { 'Content-Type': 'text/plain' }).end('replacing cp-2'));
  try {
    const out = await driver(h.url, { token: 's3cret' }).call(REQUEST);
    assert.equal(out.kind, 'accepted');
    assert.match(out.message, /HTTP 202 Accepted/);
    assert.match(out.message, /replacing cp-2/);
    assert.equal(h.seen.length, 1);
    assert.equal(h.seen[0]!.headers['idempotency-key'], REQUEST.idempotencyKey);
    assert.match(String(h.seen[0]!.headers['user-agent']), /^apiserver-upgrade-operator\//, 'the operator names itself to the webhook');
    assert.equal(h.seen[0]!.headers.authorization, 'Bearer s3cret');
    const body = JSON.parse(h.seen[0]!.body) as { kind: string; idempotencyKey: string; flags: string[] };
    assert.equal(body.kind, 'ReplaceServerRequest');
    assert.equal(body.idempotencyKey, REQUEST.idempotencyKey);
    assert.deepEqual(body.flags, ['--peer-advertise-ip=10.0.0.12', '--peer-advertise-port=6443']);
  } finally {
    await h.close();
  }
});

test('webhook: emulatedVersion travels in the payload and as --emulated-version in flags; absent, neither', async () => {
  const h = await hook((_req, res) => res.writeHead(202).end());
  try {
    const out = await driver(h.url).call({ ...REQUEST, emulatedVersion: '1.35' });
    assert.equal(out.kind, 'accepted');
    const body = JSON.parse(h.seen[0]!.body) as Record<string, unknown>;
    assert.equal(body.targetVersion, 'v1.36.3');
    assert.equal(body.emulatedVersion, '1.35');
    assert.deepEqual(body.flags, ['--peer-advertise-ip=10.0.0.12', '--peer-advertise-port=6443', '--emulated-version=1.35']);
  } finally {
    await h.close();
  }
  const plain = webhookPayload(REQUEST);
  assert.ok(!('emulatedVersion' in plain), 'absent, not null: a hook reading the field sees no emulation');
  assert.ok(!JSON.stringify(plain).includes('emulated'));
  // Gate off (no peer flags): the emulation flag alone.
  const gateOff = webhookPayload({ ...REQUEST, featureGates: {}, emulatedVersion: '1.35' });
  assert.deepEqual(gateOff.flags, ['--emulated-version=1.35']);
  // The contract's field order: emulatedVersion right after targetVersion.
  assert.deepEqual(Object.keys(webhookPayload({ ...REQUEST, emulatedVersion: '1.35' })), ['apiVersion', 'kind', 'idempotencyKey', 'action', 'upgrade', 'batch', 'server', 'targetVersion', 'emulatedVersion', 'featureGates', 'flags']);
});

test('webhook: 409 is accepted (the hook already holds the key)', async () => {
  const h = await hook((_req, res) => res.writeHead(409).end('key already seen'));
  try {
    const out = await driver(h.url).call(REQUEST);
    assert.equal(out.kind, 'accepted');
    assert.match(out.message, /HTTP 409 Conflict/);
    assert.match(out.message, /already holds this idempotency key/);
  } finally {
    await h.close();
  }
});

test('webhook: 429 and 503 are transient, returned (not thrown) with the URL and the time taken', async () => {
  for (const status of [429, 503]) {
    const h = await hook((_req, res) => res.writeHead(status, { 'Retry-After': '1' }).end('busy, try later'));
    try {
      const out = await driver(h.url).call(REQUEST);
      assert.equal(out.kind, 'transient', `${status}`);
      assert.ok(out.message.includes(`POST ${h.url}`), out.message);
      assert.match(out.message, new RegExp(`HTTP ${status} .* after \\d+ ms.*busy, try later`));
    } finally {
      await h.close();
    }
  }
});

test('webhook: 400, 403 and 422 are rejected for good', async () => {
  for (const status of [400, 403, 422]) {
    const h = await hook((_req, res) => res.writeHead(status).end('unknown server cp-2'));
    try {
      const out = await driver(h.url).call(REQUEST);
      assert.equal(out.kind, 'rejected', `${status}`);
      assert.match(out.message, /unknown server cp-2/);
    } finally {
      await h.close();
    }
  }
});

test('webhook: 302 is rejected and the redirect is not followed', async () => {
  const target = await hook((_req, res) => res.writeHead(200).end('ok'));
  const h = await hook((_req, res) => res.writeHead(302, { Location: target.url }).end());
  try {
    const out = await driver(h.url).call(REQUEST);
    assert.equal(out.kind, 'rejected');
    assert.match(out.message, /HTTP 302 Found/);
    assert.match(out.message, /does not follow redirects for a POST carrying a replacement/);
    assert.ok(out.message.includes(target.url), out.message);
    assert.equal(target.seen.length, 0, 'the redirect target never got the replacement');
  } finally {
    await h.close();
    await target.close();
  }
});

test('webhook deadline: a hook trickling its answer a byte every 400 ms is transient at the 1 s deadline', { timeout: 10_000 }, async () => {
  // Raw TLS so that even the status line trickles: every byte would reset a socket idle timeout.
  const answer = 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 20\r\n\r\naccepted eventually.';
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<TLSSocket>();
  const server: TlsServer = createTlsServer({ cert: pki.serving.cert, key: pki.serving.key }, (sock) => {
    sockets.add(sock);
    sock.on('error', () => {});
    let i = 0;
    const t = setInterval(() => {
      if (sock.destroyed || i >= answer.length) return void clearInterval(t);
      sock.write(answer[i++]!);
    }, 400);
    timers.add(t);
    sock.on('close', () => clearInterval(t));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/replace`;
  try {
    const { value: out, ms } = await timed(driver(url, { timeoutMs: 1000 }).call(REQUEST));
    assert.equal(out.kind, 'transient');
    assert.ok(ms >= 950 && ms < 1500, `answered after ${ms} ms`);
    assert.match(out.message, /no complete answer within the 1000 ms deadline/);
    assert.ok(out.message.includes(url), out.message);
  } finally {
    for (const t of timers) clearInterval(t);
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('webhook deadline: headers on time, then a body trickling a byte every 400 ms, is transient at the deadline', { timeout: 10_000 }, async () => {
  const timers = new Set<NodeJS.Timeout>();
  const h = await hook((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.flushHeaders();
    const t = setInterval(() => res.write('.'), 400);
    timers.add(t);
    res.on('close', () => clearInterval(t));
  });
  try {
    const { value: out, ms } = await timed(driver(h.url, { timeoutMs: 1000 }).call(REQUEST));
    assert.equal(out.kind, 'transient');
    assert.ok(ms >= 950 && ms < 1500, `answered after ${ms} ms`);
    assert.match(out.message, /deadline.*HTTP 200 OK and \d+ bytes of body, not the end/);
  } finally {
    for (const t of timers) clearInterval(t);
    await h.close();
  }
});

test('webhook deadline: a hook that accepts the connection and never answers is transient', { timeout: 10_000 }, async () => {
  const h = await hook(() => { /* never answers */ });
  try {
    const { value: out, ms } = await timed(driver(h.url, { timeoutMs: 300 }).call(REQUEST));
    assert.equal(out.kind, 'transient');
    assert.ok(ms < 1000, `answered after ${ms} ms`);
    assert.match(out.message, /no response headers/);
  } finally {
    await h.close();
  }
});

test('webhook body cap: an endless body is cut at 64 KiB, the socket closed, and the status still decides', { timeout: 10_000 }, async () => {
  for (const [status, kind] of [[200, 'accepted'], [503, 'transient']] as const) {
    let written = 0;
    let closed = false;
    const h = await hook((_req, res) => {
      res.writeHead(status, { 'Content-Type': 'text/plain' });
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = (): void => {
        while (!closed && written < 64 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (!closed) res.end();
      };
      res.on('close', () => (closed = true));
      pump();
    });
    try {
      const out = await driver(h.url).call(REQUEST);
      assert.equal(out.kind, kind, `${status}`);
      assert.match(out.message, new RegExp(`HTTP ${status}`));
      assert.match(out.message, new RegExp(`response body truncated: read the first ${RESPONSE_BODY_CAP} bytes`));
      // Only the first 512 characters of the body go into the message.
      assert.ok(out.message.length < 1200, `message is ${out.message.length} chars`);
      // The close reaches the hook's side within a few event-loop turns; at load 10 that was more than 100 ms.
      for (let i = 0; i < 60 && !closed; i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(closed, 'the hook saw the connection closed (within 3 s)');
      assert.ok(written < 8 * 1024 * 1024, `the hook wrote ${written} bytes before the driver hung up`);
    } finally {
      await h.close();
    }
  }
});

test('webhook TLS: a certificate from a CA the operator does not trust is rejected, naming the problem and caBundle', async () => {
  const h = await hook((_req, res) => res.writeHead(200).end('ok'));
  try {
    for (const caBundle of [pki.otherCa.cert, Buffer.from(pki.otherCa.cert).toString('base64'), undefined]) {
      const out = await new WebhookDriver({ url: h.url, timeoutMs: 5000, ...(caBundle ? { caBundle } : {}) }).call(REQUEST);
      assert.equal(out.kind, 'rejected', out.message);
      assert.match(out.message, /^POST https:\/\/127\.0\.0\.1:\d+\/v1\/apiservers\/replace: TLS: /);
      assert.match(out.message, /UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY/);
      assert.match(out.message, /spec\.driver\.webhook\.caBundle/);
    }
    assert.equal(h.seen.length, 0);
  } finally {
    await h.close();
  }
});

test('webhook TLS: a certificate for another host name is rejected as a hostname mismatch', async () => {
  const h = await hook((_req, res) => res.writeHead(200).end('ok'), pki.wrongHost);
  try {
    const out = await driver(h.url).call(REQUEST);
    assert.equal(out.kind, 'rejected', out.message);
    assert.match(out.message, /hostname mismatch/);
    assert.match(out.message, /ERR_TLS_CERT_ALTNAME_INVALID/);
    assert.match(out.message, /spec\.driver\.webhook\.caBundle/);
    assert.equal(h.seen.length, 0);
  } finally {
    await h.close();
  }
});

test('webhook: connection refused is transient, with the URL', async () => {
  // A port that was just free: listen, note it, close.
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const url = `https://127.0.0.1:${port}/replace`;
  const out = await driver(url).call(REQUEST);
  assert.equal(out.kind, 'transient');
  assert.match(out.message, /connection refused \(ECONNREFUSED\)/);
  assert.ok(out.message.includes(`POST ${url}`), out.message);
  assert.match(out.message, /after \d+ ms$/);
});

test('webhook: the hook closing the connection mid-body is transient', async () => {
  const h = await hook((_req, res) => {
    res.writeHead(200, { 'Content-Length': '1000' });
    res.write('partial');
    setTimeout(() => res.socket?.destroy(), 50);
  });
  try {
    const out = await driver(h.url).call(REQUEST);
    assert.equal(out.kind, 'transient', out.message);
  } finally {
    await h.close();
  }
});

test('webhook: a plain-HTTP port is rejected as a TLS handshake failure', async () => {
  const { createServer } = await import('node:http');
  const server = createServer((_req, res) => res.end('plain'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const out = await driver(`https://127.0.0.1:${(server.address() as AddressInfo).port}/`).call(REQUEST);
    assert.equal(out.kind, 'rejected', out.message);
    assert.match(out.message, /ERR_SSL_WRONG_VERSION_NUMBER|ERR_SSL_PACKET_LENGTH_TOO_LONG/);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('webhook TLS: a caBundle without a usable certificate is rejected, naming caBundle, before any connection', async () => {
  const h = await hook((_req, res) => res.writeHead(200).end('ok'));
  try {
    for (const caBundle of ['-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n', Buffer.from('not a certificate').toString('base64')]) {
      const out = await driver(h.url, { caBundle }).call(REQUEST);
      assert.equal(out.kind, 'rejected', out.message);
      assert.match(out.message, /spec\.driver\.webhook\.caBundle holds no usable PEM certificate/);
    }
    assert.equal(h.seen.length, 0);
  } finally {
    await h.close();
  }
});
