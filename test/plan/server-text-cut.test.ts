// Server text that becomes a message is made plain and redacted before it is cut (src/plan/redact.ts safeMessage):
// an Authorization header a server echoes back, with its token straddling where the message is cut or with
// invisible characters inside, shows no run of the token in an apiserver's HTTP error, a Prometheus error or
// kubeadm's etcd finding.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DirectHttpError } from '../../src/observe/direct-client.ts';
import { parseQueryResponse } from '../../src/observe/prometheus-source.ts';
import { etcdFindings } from '../../src/plan/kubeadm-preflight.ts';
import { disguised, INVISIBLES, leakedRuns, token40 } from '../support/hidden-token.ts';

/** A body whose echoed header puts the token across `cut` characters (where a plain slice would end). */
const echoed = (cut: number): fc.Arbitrary<{ token: string; body: string }> =>
  fc.tuple(token40, fc.integer({ min: 1, max: 39 })).chain(([token, inside]) =>
    disguised(token, INVISIBLES).map((d) => {
      const head = 'Authorization: Bearer ';
      const pad = 'x '.repeat(Math.max(0, Math.ceil((cut - inside - head.length) / 2)));
      return { token, body: `${pad.slice(0, Math.max(0, cut - inside - head.length))}${head}${d} and more` };
    }));

const sites: [string, number, (body: string) => string][] = [
  ['an apiserver answer (DirectHttpError)', 200, (body) => new DirectHttpError('10.0.0.1:6443', '/readyz', 500, body).message],
  ['a Prometheus answer that is not JSON', 200, (body) => {
    try {
      parseQueryResponse(`<html>${body}`);
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('parsed');
  }],
  ['a Prometheus error answer', 512, (body) => {
    try {
      parseQueryResponse(JSON.stringify({ status: 'error', errorType: 'bad_data', error: body }));
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('parsed');
  }],
  ['kubeadm preflight: /readyz/etcd not 200', 300, (body) => etcdFindings({
    hostname: 'cp-1', etcd: { status: 500, body }, certificate: { ok: true, dnsNames: [], notAfter: new Date(0).toISOString() }, deprecated: [], mirrorPod: { name: 'kube-apiserver-cp-1', nodeName: 'cp-1' },
  } as never).map((f) => f.message).join('\n')],
];

for (const [what, cut, message] of sites) {
  test(`${what}: a token the server echoes is redacted before the message is cut`, () => {
    fc.assert(fc.property(echoed(cut), ({ token, body }) => {
      const out = message(body);
      assert.deepEqual(leakedRuns(out, token), [], out);
    }), { numRuns: 300 });
  });
}
