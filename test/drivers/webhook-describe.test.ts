// The webhook driver's Describe (docs/drivers.md#describe) against real HTTPS hooks on loopback: the request it
// sends, flags from a 200, and "unknown" — never an error, never flags — for everything else.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { WebhookDriver } from '../../src/drivers/webhook.ts';
import { createTestPki, type TestPki } from './support/tls.ts';
import { httpsHook } from './support/https-hook.ts';

let pki: TestPki;
before(() => {
  pki = createTestPki();
});
after(() => pki.cleanup());

const SERVER = { identity: 'apiserver-abc', hostname: 'cp-2', address: '10.0.0.12:6443' };

const driver = (url: string, timeoutMs = 5000): WebhookDriver => new WebhookDriver({ url, caBundle: pki.ca.cert, timeoutMs, token: 's3cret' });

test('Describe: the request is a DescribeServerRequest (no key, no target) with the token; a 200 with flags is read', async () => {
  const h = await httpsHook(pki, (_q, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ flags: { '--requestheader-allowed-names': '', '--peer-ca-file': '/pki/ca.crt' } })));
  const out = await driver(h.url).describe(SERVER);
  await h.close();
  assert.deepEqual(out, { kind: 'flags', flags: { '--requestheader-allowed-names': '', '--peer-ca-file': '/pki/ca.crt' } });
  const body = JSON.parse(h.seen[0]!.body) as Record<string, unknown>;
  assert.deepEqual(body, { apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'DescribeServerRequest', action: 'Describe', server: SERVER });
  assert.equal(h.seen[0]!.headers.authorization, 'Bearer s3cret');
  assert.equal(h.seen[0]!.headers['idempotency-key'], undefined, 'not a replacement: no idempotency key');
});

test('Describe: 404, 400, 500, a body without flags, not JSON: unknown with what happened', async () => {
  const cases: [number, string, RegExp][] = [
    [404, '{"error":"not found"}', /HTTP 404.*does not answer Describe/],
    [400, '{"error":"idempotencyKey required"}', /HTTP 400.*does not answer Describe/],
    [500, 'boom', /HTTP 500/],
    [200, '{"accepted":true}', /without a "flags" object/],
    [200, 'not json', /not JSON/],
  ];
  for (const [status, text, want] of cases) {
    const h = await httpsHook(pki, (_q, res) => res.writeHead(status).end(text));
    const out = await driver(h.url).describe(SERVER);
    await h.close();
    assert.equal(out.kind, 'unknown', `${status} ${text}`);
    assert.match(out.kind === 'unknown' ? out.message : '', want);
  }
});

test('Describe: a hook that never answers is unknown at the deadline; a closed port is unknown at once', async () => {
  const h = await httpsHook(pki, () => undefined);
  const t0 = performance.now();
  const out = await driver(h.url, 300).describe(SERVER);
  assert.ok(performance.now() - t0 < 2000);
  await h.close();
  assert.equal(out.kind, 'unknown');
  assert.match(out.kind === 'unknown' ? out.message : '', /within 300 ms/);
  const closed = await driver(h.url).describe(SERVER);
  assert.equal(closed.kind, 'unknown');
});
