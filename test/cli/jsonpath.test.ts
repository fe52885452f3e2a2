import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonPath, JsonPathError, parseJsonPath } from '../../src/cli/jsonpath.ts';

const U = {
  metadata: { name: 'to-v1-36', labels: { 'app.kubernetes.io/name': 'x' } },
  status: {
    phase: 'Paused',
    batch: { current: 2, total: 3 },
    conditions: [
      { type: 'Progressing', status: 'False', reason: 'Paused', message: 'paused' },
      { type: 'PreflightPassed', status: 'True', reason: 'Passed', message: '3 servers on v1.35.4' },
    ],
    peers: [{ hostname: 'cp-1', ready: true }, { hostname: 'cp-2', ready: false }],
  },
};

test('the paths the docs use: fields, [n], [*], range with literals, filters, quoted keys', () => {
  assert.equal(jsonPath('{.status.phase}', U), 'Paused');
  assert.equal(jsonPath('{.status.batch.current}/{.status.batch.total}', U), '2/3');
  assert.equal(jsonPath('{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\\n"}{end}', U), 'Progressing=False Paused: paused\nPreflightPassed=True Passed: 3 servers on v1.35.4\n');
  assert.equal(jsonPath('{.status.conditions[?(@.type=="PreflightPassed")].message}', U), '3 servers on v1.35.4');
  assert.equal(jsonPath("{.status.peers[?(@.ready==false)].hostname}", U), 'cp-2');
  assert.equal(jsonPath('{.status.peers[*].hostname}', U), 'cp-1 cp-2');
  assert.equal(jsonPath('{.status.peers[-1].hostname}', U), 'cp-2');
  assert.equal(jsonPath("{.metadata.labels['app.kubernetes.io/name']}", U), 'x');
  assert.equal(jsonPath('{.status.batch}', U), '{"current":2,"total":3}');
  assert.equal(jsonPath('{.status.nothing}', U), '', 'a missing field prints nothing, as kubectl does');
  assert.equal(jsonPath('name: {.metadata.name}\t{"}"}', U), 'name: to-v1-36\t}');
});

test('templates it cannot read are errors that say where', () => {
  for (const [t, why] of [['{.a', /unclosed \{/], ['{range .a}', /without \{end\}/], ['{end}', /without \{range\}/], ['{..a}', /recursive descent/], ['{.a[?(@.b>1)]}', /cannot read/], ['{a}', /unexpected/]] as const) {
    assert.throws(() => parseJsonPath(t), (e: unknown) => e instanceof JsonPathError && why.test(e.message), t);
  }
});
