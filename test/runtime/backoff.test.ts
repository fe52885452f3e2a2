import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Backoff, exponentialDelay, withJitter } from '../../src/runtime/backoff.ts';
import { ItemExponentialRateLimiter } from '../../src/runtime/rate-limiter.ts';
import { classifyWatchEnd } from '../../src/runtime/watch-outcome.ts';
import { isTransient } from '../../src/runtime/retry.ts';
import { KubeApiError } from '../../src/runtime/kube-request.ts';
import { microTime } from '../../src/runtime/kube.ts';

test('exponential delay doubles from the base and stops at the cap', () => {
  const o = { baseMs: 200, maxMs: 30_000 };
  assert.deepEqual([0, 1, 2, 3, 7, 8, 100, 5000].map((a) => exponentialDelay(a, o)), [200, 400, 800, 1600, 25_600, 30_000, 30_000, 30_000]);
});

test('jitter stays within ±fraction and Backoff caps jittered delays', () => {
  assert.equal(withJitter(1000, 0.2, () => 0), 800);
  assert.equal(Math.round(withJitter(1000, 0.2, () => 1)), 1200);
  assert.equal(withJitter(1000, 0, () => 1), 1000);
  const b = new Backoff({ baseMs: 100, maxMs: 300, jitter: 0.5 }, () => 1);
  assert.deepEqual([b.next(), b.next(), b.next(), b.next()].map(Math.round), [150, 300, 300, 300]);
  b.reset();
  assert.equal(b.attempts, 0);
  assert.equal(Math.round(b.next()), 150);
});

test('item exponential rate limiter: 5 ms doubling per key up to 1000 s, forget resets', () => {
  const r = new ItemExponentialRateLimiter();
  assert.deepEqual([r.when('a'), r.when('a'), r.when('a'), r.when('b')], [5, 10, 20, 5]);
  assert.equal(r.numRequeues('a'), 3);
  for (let i = 0; i < 40; i++) r.when('a');
  assert.equal(r.when('a'), 1_000_000);
  r.forget('a');
  assert.equal(r.numRequeues('a'), 0);
  assert.equal(r.when('a'), 5);
});

test('watch ends are classified as seen against real servers (docs/runtime.md)', () => {
  // As node:https reports them: a response cut mid-stream, a refused connect, a certificate that does not verify.
  const cut = Object.assign(new Error('aborted'), { code: 'ECONNRESET' });
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
  const tls = Object.assign(new Error('unable to verify the first certificate'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
  const http = (s: number): Error => Object.assign(new Error('x'), { statusCode: s });
  assert.equal(classifyWatchEnd(null, false, undefined), 'closed');
  assert.equal(classifyWatchEnd(null, true, undefined), 'gone');
  assert.equal(classifyWatchEnd(null, false, { code: 500 }), 'http');
  assert.equal(classifyWatchEnd(http(410), false, undefined), 'gone');
  assert.equal(classifyWatchEnd(http(503), false, undefined), 'http');
  assert.equal(classifyWatchEnd(cut, false, undefined), 'network');
  assert.equal(classifyWatchEnd(refused, false, undefined), 'network');
  assert.equal(classifyWatchEnd(tls, false, undefined), 'network');
  assert.equal(classifyWatchEnd(new SyntaxError('a watch event that is not JSON'), false, undefined), 'error');
});

test('transient errors: network, timeouts, 429 and 5xx; not 4xx or caller aborts', () => {
  const api = (s: number): KubeApiError => new KubeApiError('GET', '/x', s, '{"reason":"R","message":"m"}', undefined);
  assert.equal(isTransient(api(503)), true);
  assert.equal(isTransient(api(429)), true);
  assert.equal(isTransient(api(409)), false);
  assert.equal(isTransient(api(404)), false);
  assert.equal(isTransient(Object.assign(new Error('x'), { cause: { code: 'ECONNREFUSED' } })), true);
  assert.equal(isTransient(Object.assign(new Error('x'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' })), false, 'a certificate that does not verify needs a fix, not a retry');
  assert.equal(isTransient(new DOMException('t', 'TimeoutError')), true);
  assert.equal(isTransient(new DOMException('a', 'AbortError')), false);
  assert.equal(isTransient(Object.assign(new Error('x'), { code: 'ECONNRESET' })), true);
  assert.equal(api(409).reason, 'R');
});

test('microTime has exactly six fractional digits, as Go parses MicroTime', () => {
  assert.equal(microTime(new Date('2026-11-29T08:47:18.123Z')), '2026-11-29T08:47:18.123000Z');
});
