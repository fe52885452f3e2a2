// A KubeApiError's message from an answer that is not a Status object (a proxy's page, a load balancer's text): a
// part of the body, redacted before it is cut, so a credential across the cut leaves nothing of itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { KubeApiError } from '../../src/runtime/kube-request.ts';
import { INVISIBLES, disguised, leakedRuns, token40 } from '../support/hidden-token.ts';

test('KubeApiError: a credential across the cut of a body that is not a Status leaves no run of 8 in the message', () => {
  const hidden = token40.chain((t) => fc.tuple(fc.constant(t), disguised(t, INVISIBLES)));
  fc.assert(fc.property(hidden, fc.integer({ min: 250, max: 300 }), fc.constantFrom('Authorization: Bearer ', 'token=', 'Basic '), ([t, d], at, carrier) => {
    const body = `<html>${'p'.repeat(at - carrier.length - 7)} ${carrier}${d} </html>`;
    const err = new KubeApiError('GET', '/api/v1/pods', 502, body, undefined);
    assert.match(err.message, /^GET \/api\/v1\/pods: 502: <html>p/);
    assert.deepEqual(leakedRuns(err.message, t), [], err.message);
    assert.equal(err.body, body, 'the whole body stays on the error for the code that reads it');
  }), { numRuns: 500 });
});

test('KubeApiError: a Status whose message or reason carries a credential, control sequences or invisible characters is shown plain and redacted', () => {
  const hidden = token40.chain((t) => fc.tuple(fc.constant(t), disguised(t, INVISIBLES)));
  const noise = fc.constantFrom('\u001b[2J\u001b[H', '\r', '\u001b]0;owned\u0007', '\u202e', '\u200b', '\n', '\u009b31m');
  fc.assert(fc.property(hidden, noise, fc.integer({ min: 0, max: 3000 }), ([t, d], n, pad) => {
    const body = JSON.stringify({ kind: 'Status', reason: `Forbidden${n}`, message: `admission webhook denied the request:${n} ${'m'.repeat(pad)} Authorization: Bearer ${d} ${n}` });
    const err = new KubeApiError('POST', '/api/v1/namespaces/x/pods', 403, body, undefined);
    assert.deepEqual(leakedRuns(err.message, t), [], err.message);
    assert.ok(!/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(err.message), JSON.stringify(err.message));
    assert.equal(err.reason, `Forbidden${n}`, 'the reason as sent stays on the error for the code that compares it');
  }), { numRuns: 300 });
  const plain = new KubeApiError('GET', '/api/v1/pods/x', 404, JSON.stringify({ kind: 'Status', reason: 'NotFound', message: 'pods "x" not found' }), undefined);
  assert.equal(plain.message, 'GET /api/v1/pods/x: 404 NotFound: pods "x" not found');
});
