// The webhook driver's status request (docs/drivers.md "Status") against real HTTPS hooks on loopback: the request
// it sends, the four states read from a 2xx, and "unknown" — never a failure, never a settlement — for everything
// else, including hostile bodies.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { WebhookDriver } from '../../src/drivers/webhook.ts';
import { reportFromStatusBody, STATUS_DEADLINE_MS, STATUS_MESSAGE_CHARS } from '../../src/drivers/webhook-status.ts';
import { createTestPki, type TestPki } from './support/tls.ts';
import { httpsHook } from './support/https-hook.ts';

let pki: TestPki;
before(() => {
  pki = createTestPki();
});
after(() => pki.cleanup());

const CALL = { idempotencyKey: 'upgrade-cp-2-3f2a9c0d1e4b5a67', action: 'Upgrade' as const, server: { hostname: 'cp-2' } };
const TOKEN = 's3cret-token-value';
const driver = (url: string, timeoutMs = 5000): WebhookDriver => new WebhookDriver({ url, caBundle: pki.ca.cert, timeoutMs, token: TOKEN });

test('Status: a ReplaceStatusRequest naming the key (no target, no Idempotency-Key header); each state is read', async () => {
  const states: [string, string][] = [['Running', 'running'], ['Succeeded', 'succeeded'], ['Failed', 'failed'], ['NotFound', 'gone']];
  for (const [state, kind] of states) {
    const h = await httpsHook(pki, (_q, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ state, message: `cp-2: ${state}` })));
    const out = await driver(h.url).report(CALL);
    await h.close();
    assert.deepEqual(out, { kind, message: `cp-2: ${state}` });
    assert.deepEqual(JSON.parse(h.seen[0]!.body), { apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ReplaceStatusRequest', action: 'Status', idempotencyKey: CALL.idempotencyKey, callAction: 'Upgrade', server: { hostname: 'cp-2' } });
    assert.equal(h.seen[0]!.headers.authorization, `Bearer ${TOKEN}`);
    assert.equal(h.seen[0]!.headers['idempotency-key'], undefined, 'not a replacement: a hook keyed on the header does not take it for one');
  }
});

test('Status: 404, 409, 500, a duplicate answer without a state, a state in the wrong case, not JSON: unknown', async () => {
  const cases: [number, string, RegExp][] = [
    [404, '{"error":"not found"}', /HTTP 404.*ReplaceStatusRequest/],
    [409, '{"duplicate":true}', /HTTP 409/],
    [500, 'boom', /HTTP 500/],
    [200, '{"key":"upgrade-cp-2","duplicate":true,"outcome":"done"}', /no "state"/],
    [200, '{"state":"succeeded"}', /no "state"/],
    [200, '{"state":"Succeeded","message":42}', /"message" is not a string/],
    [200, 'not json', /not JSON/],
    [200, '["Succeeded"]', /not a JSON object/],
  ];
  for (const [status, text, want] of cases) {
    const h = await httpsHook(pki, (_q, res) => res.writeHead(status).end(text));
    const out = await driver(h.url).report(CALL);
    await h.close();
    assert.equal(out.kind, 'unknown', `${status} ${text}`);
    assert.match(out.message, want);
  }
});

test('Status: a hook that does not answer is unknown within the status deadline, not the call\'s timeout', async () => {
  const h = await httpsHook(pki, () => undefined);
  const t0 = performance.now();
  const out = await driver(h.url, 30_000).report(CALL);
  const took = performance.now() - t0;
  await h.close();
  assert.equal(out.kind, 'unknown');
  assert.match(out.message, new RegExp(`within ${STATUS_DEADLINE_MS} ms`));
  assert.ok(took >= STATUS_DEADLINE_MS - 50 && took < STATUS_DEADLINE_MS + 1500, `took ${Math.round(took)} ms`);
});

test('Status: an answer past the body cap is unknown; the token never reaches the message', async () => {
  const h = await httpsHook(pki, (_q, res) => res.writeHead(200).end(`{"state":"Succeeded","message":"s3cret ${'x'.repeat(70 * 1024)}"}`));
  const big = await driver(h.url).report(CALL);
  await h.close();
  assert.equal(big.kind, 'unknown');
  assert.match(big.message, /larger than/);
  const h2 = await httpsHook(pki, (_q, res) => res.writeHead(200).end(`{"state":"Failed","message":"token ${TOKEN} rejected\\u001b[31m"}`));
  const failed = await driver(h2.url).report(CALL);
  await h2.close();
  assert.equal(failed.kind, 'failed');
  assert.ok(!failed.message.includes(TOKEN), failed.message);
  assert.ok(!failed.message.includes('\u001b'), 'no escape character');
});

test('property: any body is a known state only when it is exactly one of the four; a message is capped', () => {
  const known = new Set(['Running', 'Succeeded', 'Failed', 'NotFound']);
  const hostile = fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('Succeeded ', ' Running', 'SUCCEEDED', 'Succeeded\n', '__proto__', 'constructor', 'toString', 'NotFound\u0000'), fc.constantFrom(...known));
  fc.assert(fc.property(hostile, fc.oneof(fc.string({ maxLength: 2000 }), fc.integer(), fc.constant(undefined)), (state, message) => {
    const r = reportFromStatusBody(JSON.stringify({ state, ...(message === undefined ? {} : { message }) }), 'POST hook');
    if (!known.has(state) || (message !== undefined && typeof message !== 'string')) assert.equal(r.kind, 'unknown');
    else assert.notEqual(r.kind, 'unknown');
    assert.ok(r.message.length <= STATUS_MESSAGE_CHARS + 100);
  }));
  fc.assert(fc.property(fc.string({ maxLength: 300 }), (text) => {
    const r = reportFromStatusBody(text, 'POST hook');
    assert.ok(['unknown', 'running', 'succeeded', 'failed', 'gone'].includes(r.kind));
  }));
});
