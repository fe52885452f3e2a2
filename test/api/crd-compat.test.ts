// docs/chart.md "CRD compatibility": the CRD of this checkout against the previous release's (test/fixtures/
// previous-release/crd.yaml, its crds/ file at e2e/support/previous-release.ts's commit), and an ApiServerUpgrade as
// the previous release's operator left it mid-batch on real kubelets (recorded by e2e/extended/operator-lifecycle.e2e.ts
// with AUO_RECORD_PREVIOUS_STATUS) read by this checkout's schema and planner. That crd.yaml is the pinned commit's
// file is checked where the commit's history is needed anyway: e2e/extended/operator-lifecycle.e2e.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { crdCompatProblems, schemaProblems, type Crd, type OpenApiSchema } from '../../scripts/crd-compat.ts';
import { reconcileContext } from '../../src/plan/reconcile.ts';
import { callsToReport, inFlight } from '../../src/plan/calls.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

const fixture = (name: string): string => readFileSync(new URL(`../fixtures/previous-release/${name}`, import.meta.url), 'utf8');
const previous = parse(fixture('crd.yaml')) as Crd;
const current = parse(readFileSync(new URL('../../crds/apiserverupgrades.upgrade.apiserver.dev.yaml', import.meta.url), 'utf8')) as Crd;
const chartCrd = parse(readFileSync(new URL('../../charts/apiserver-upgrade-operator/crds/apiserverupgrades.upgrade.apiserver.dev.yaml', import.meta.url), 'utf8')) as Crd;
const recorded = JSON.parse(fixture('apiserverupgrade-mid-batch.json')) as ApiServerUpgrade;

const schemaOf = (c: Crd): OpenApiSchema => c.spec.versions.find((v) => v.name === 'v1alpha1')!.schema!.openAPIV3Schema;
const clone = (c: Crd): Crd => structuredClone(c);
/** The schema node at a dotted path of property names (`status.phase`). */
function at(c: Crd, path: string): OpenApiSchema {
  let s = schemaOf(c);
  for (const p of path.split('.')) s = p === '[]' ? s.items! : s.properties![p]!;
  return s;
}

test('the CRD of this checkout (crds/ and the chart\'s) keeps the policy against the previous release\'s', () => {
  assert.deepEqual(crdCompatProblems(previous, current), []);
  assert.deepEqual(crdCompatProblems(previous, chartCrd), []);
});

test('an optional field added anywhere, a bound loosened, an enum value added, a rule dropped: compatible', () => {
  const next = clone(current);
  at(next, 'status').properties!.newField = { type: 'string', maxLength: 10 };
  at(next, 'spec').properties!.newObject = { type: 'object', required: ['a'], properties: { a: { type: 'string' } } };
  const phase = at(next, 'status.phase');
  phase.enum = [...phase.enum!, 'Archived'];
  const conds = at(next, 'status.conditions');
  conds.maxItems = conds.maxItems! * 2;
  const target = at(next, 'spec.targetVersion');
  delete target['x-kubernetes-validations'];
  assert.deepEqual(crdCompatProblems(previous, next), []);
});

test('each breach of the policy is named', () => {
  const cases: [string, (c: Crd) => void, RegExp][] = [
    ['a status field removed', (c) => { delete at(c, 'status').properties!.phase; }, /^v1alpha1\.status\.phase: removed/],
    ['a field renamed', (c) => { const s = at(c, 'spec'); s.properties!.target = s.properties!.targetVersion!; delete s.properties!.targetVersion; }, /^v1alpha1\.spec\.targetVersion: removed/],
    ['a type changed', (c) => { at(c, 'status.observedGeneration').type = 'string'; }, /status\.observedGeneration: type changed/],
    ['a field newly required', (c) => { at(c, 'spec').required = [...(at(c, 'spec').required ?? []), 'paused']; }, /^v1alpha1\.spec: paused newly required/],
    ['an enum value removed', (c) => { const p = at(c, 'status.phase'); p.enum = p.enum!.filter((x) => x !== 'RolledBack'); }, /status\.phase: enum value "RolledBack" removed/],
    ['a maxLength lowered', (c) => { const t = at(c, 'spec.targetVersion'); t.maxLength = 1; }, /spec\.targetVersion: maxLength tightened/],
    ['a maxItems lowered', (c) => { at(c, 'status.conditions').maxItems = 1; }, /status\.conditions: maxItems tightened/],
    ['a pattern changed', (c) => { at(c, 'spec.targetVersion').pattern = '^v1$'; }, /spec\.targetVersion: pattern changed/],
    ['a validation rule added', (c) => { const s = at(c, 'spec'); s['x-kubernetes-validations'] = [...(s['x-kubernetes-validations'] ?? []), { rule: 'self.paused' }]; }, /^v1alpha1\.spec: a validation rule added or changed: self\.paused/],
    ['a default changed', (c) => { at(c, 'spec.paused').default = true; }, /spec\.paused: default changed/],
    ['a list type changed', (c) => { at(c, 'status.conditions')['x-kubernetes-list-type'] = 'atomic'; }, /status\.conditions: x-kubernetes-list-type changed/],
    ['an item field removed', (c) => { delete at(c, 'status.conditions.[]').properties!.message; }, /status\.conditions\[\]\.message: removed/],
    ['the version removed', (c) => { c.spec.versions[0]!.name = 'v1beta1'; }, /^version v1alpha1 removed/],
    ['the scope changed', (c) => { c.spec.scope = 'Namespaced'; }, /^scope changed/],
  ];
  for (const [what, change, want] of cases) {
    const next = clone(current);
    change(next);
    const problems = crdCompatProblems(previous, next);
    assert.ok(problems.some((p) => want.test(p)), `${what}: ${JSON.stringify(problems)}`);
  }
});

test('an ApiServerUpgrade the previous release\'s operator wrote mid-batch: this CRD\'s schema takes it whole, nothing pruned', () => {
  assert.ok(recorded.status?.driverCalls?.some(inFlight), 'the recording is mid-batch: a call in flight');
  const problems = schemaProblems('', schemaOf(current), { apiVersion: recorded.apiVersion, kind: recorded.kind, metadata: recorded.metadata, spec: recorded.spec, status: recorded.status });
  assert.deepEqual(problems, []);
  // The check finds what the apiserver would prune or refuse, so an empty answer means something.
  const pruned = schemaProblems('', schemaOf(current), { ...recorded, status: { ...recorded.status, renamedField: 'x' } });
  assert.deepEqual(pruned, ['.status.renamedField: unknown to the schema (pruned)']);
  const bad = schemaProblems('', schemaOf(current), { ...recorded, status: { ...recorded.status, phase: 'Archived' } });
  assert.equal(bad.length, 1, JSON.stringify(bad));
});

test('an ApiServerUpgrade the previous release\'s operator wrote mid-batch: this checkout resolves its spec and asks the driver about the call in flight, instead of calling again', () => {
  const now = new Date(Date.parse(recorded.status!.driverCalls!.find(inFlight)!.time!) + 1000);
  const rc = reconcileContext(recorded, undefined, now);
  assert.ok(rc.spec.ok, rc.spec.ok ? '' : rc.spec.error.message);
  assert.equal(rc.finished, false);
  const reported = callsToReport(recorded.status!.driverCalls!, now, rc.spec.spec.strategy.batchTimeoutMs, rc.spec.spec.driver);
  // The call in flight among them (and any ended call whose Job the driver has not yet reported settled).
  const keys = reported.map((c) => c.key);
  for (const c of recorded.status!.driverCalls!.filter(inFlight)) assert.ok(keys.includes(c.key), `${c.key} asked about: ${keys.join(', ')}`);
});
