// The webhook driver against a real HTTPS hook that echoes its bearer token back — in a failure's body, in a status
// answer's message — placed across the point where the answer is cut, with invisible characters and look-alikes
// inside: what the driver returns (what status, Events and logs get) holds no run of 8 of the token's characters.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MESSAGE_BODY_CHARS, WebhookDriver } from '../../src/drivers/webhook.ts';
import { STATUS_MESSAGE_CHARS } from '../../src/drivers/webhook-status.ts';
import type { DriverRequest } from '../../src/plan/actions.ts';
import { createTestPki, type TestPki } from './support/tls.ts';
import { httpsHook } from './support/https-hook.ts';
import { disguised, filler, leakedRuns, token40 } from '../support/hidden-token.ts';

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

const hidden = token40.chain((t) => fc.tuple(fc.constant(t), disguised(t)));
/** `cut` characters of text before the token, so that it starts from 45 characters before the cut to 5 after it. */
const lead = (cut: number): fc.Arbitrary<string> =>
  fc.tuple(filler(200), fc.integer({ min: -45, max: 5 })).map(([words, delta]) => `${words}${'y'.repeat(cut + 200)}`.slice(0, cut + delta));

test('call: a token the hook echoes across the cut of its body, invisible characters inside, leaves no run of 8 in the message', { timeout: 120_000 }, async () => {
  let body = '';
  const h = await httpsHook(pki, (_q, res) => res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8' }).end(body));
  try {
    // The 40-character token starting 39 characters before the cut: all but its last character were in the message.
    const t = 'tkAbCdEfGhIjKlMnOpQrStUvWxYz0123456789ab';
    body = `${'y'.repeat(MESSAGE_BODY_CHARS - 39)}${t} and the rest`;
    const straddling = await new WebhookDriver({ url: h.url, caBundle: pki.ca.cert, timeoutMs: 5000, token: t }).call(REQUEST);
    assert.equal(straddling.kind, 'rejected');
    assert.deepEqual(leakedRuns(straddling.message, t), [], straddling.message);

    await fc.assert(fc.asyncProperty(hidden, lead(MESSAGE_BODY_CHARS), filler(100), async ([token, d], before, rest) => {
      body = `${before}${d}${rest}`;
      const out = await new WebhookDriver({ url: h.url, caBundle: pki.ca.cert, timeoutMs: 5000, token }).call(REQUEST);
      assert.equal(out.kind, 'rejected', out.message);
      assert.deepEqual(leakedRuns(out.message, token), [], JSON.stringify(out.message));
    }), { numRuns: 150 });
  } finally {
    await h.close();
  }
});

test('report: a token in a status answer\'s message, across its cut, invisible characters inside, leaves no run of 8', { timeout: 120_000 }, async () => {
  let message = '';
  const h = await httpsHook(pki, (_q, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ state: 'Failed', message })));
  try {
    await fc.assert(fc.asyncProperty(hidden, lead(STATUS_MESSAGE_CHARS), filler(100), async ([token, d], before, rest) => {
      message = `${before}${d}${rest}`;
      const out = await new WebhookDriver({ url: h.url, caBundle: pki.ca.cert, timeoutMs: 5000, token }).report({ idempotencyKey: REQUEST.idempotencyKey, action: 'Upgrade', server: { hostname: 'cp-2' } });
      assert.equal(out.kind, 'failed', out.message);
      assert.deepEqual(leakedRuns(out.message, token), [], JSON.stringify(out.message));
    }), { numRuns: 150 });
  } finally {
    await h.close();
  }
});
