// The spec fields frozen under a running upgrade (src/api/schema-frozen.ts): which ones, and that the CRD carries a
// rule naming each. That the API server enforces them is e2e/frozen-spec.e2e.ts, on a real kube-apiserver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { frozenFieldRules, RUNNING } from '../../src/api/schema-frozen.ts';
import { rootSchema, specSchema } from '../../src/api/schema.ts';

const root = join(import.meta.dirname, '..', '..');

test('frozen: every driver setting, the proxy policy, strategy.phases and strategy.phaseTwo; never paused, batchSize, analysis or the annotations', () => {
  const fields = frozenFieldRules(specSchema).map((r) => r.fieldPath);
  for (const f of [
    '.spec.driver.webhook.url', '.spec.driver.webhook.caBundle', '.spec.driver.webhook.timeout', '.spec.driver.webhook.reportsStatus', '.spec.driver.webhook.authSecretRef.name',
    '.spec.driver.webhook.authSecretRef.namespace', '.spec.driver.webhook.authSecretRef.key', '.spec.driver.staticPod.image', '.spec.driver.staticPod.agentImage',
    '.spec.driver.staticPod.manifestPath', '.spec.driver.staticPod.backupDir', '.spec.driver.staticPod.peerCAFile', '.spec.driver.staticPod.namespace',
    '.spec.driver.staticPod.readyTimeout', '.spec.proxy.gate', '.spec.proxy.revertAfter', '.spec.strategy.phases',
    '.spec.strategy.phaseTwo.start', '.spec.strategy.phaseTwo.deadline', '.spec.strategy.phaseTwo.onDeadline',
  ]) assert.ok(fields.includes(f), f);
  for (const f of fields) assert.match(f!, /^\.spec\.(driver|proxy|strategy\.phases|strategy\.phaseTwo)/, `${f}: only what a call or the agent uses, and how phase two starts`);
  assert.ok(!fields.some((f) => /paused|batchSize|soakDuration|batchTimeout|analysis|metadata/.test(f!)));
});

test('frozen: each rule names its field, compares presence then value (a driver switched kind is a change, not an error), and only while under way', () => {
  for (const r of frozenFieldRules(specSchema)) {
    const field = r.fieldPath!.slice(1);
    assert.ok(r.message.startsWith(`${field} is frozen while the upgrade is under way`), r.message);
    assert.equal(r.reason, 'FieldValueForbidden');
    assert.ok(r.rule.startsWith(`!(${RUNNING}) || (`), r.rule);
    const cel = field.replace(/\.namespace$/, '.__namespace__');
    assert.ok(r.rule.endsWith(`oldSelf.${cel} == self.${cel}))`), r.rule);
    assert.ok(r.rule.includes(`has(oldSelf.${cel})`) && r.rule.includes(`has(self.${cel})`), 'presence compared first');
  }
  for (const phase of ['EnablingProxy', 'Upgrading', 'RollingBack', 'Paused']) assert.ok(RUNNING.includes(`'${phase}'`), phase);
  for (const free of ['Pending', 'Preflight', 'Succeeded', 'Failed', 'RolledBack']) assert.ok(!RUNNING.includes(`'${free}'`) || free === 'Preflight', free);
  assert.match(RUNNING, /resumePhase == 'Preflight'/, 'a pause held before preflight froze nothing yet');
});

test('frozen: the generated CRD (both copies) carries the rules on the root of the schema', () => {
  const want = rootSchema['x-kubernetes-validations'];
  assert.ok(want && want.length === frozenFieldRules(specSchema).length);
  for (const file of ['crds/apiserverupgrades.upgrade.apiserver.dev.yaml', 'charts/apiserver-upgrade-operator/crds/apiserverupgrades.upgrade.apiserver.dev.yaml']) {
    const crd = parse(readFileSync(join(root, file), 'utf8')) as { spec: { versions: { schema: { openAPIV3Schema: { 'x-kubernetes-validations'?: unknown[] } } }[] } };
    assert.deepEqual(crd.spec.versions[0]!.schema.openAPIV3Schema['x-kubernetes-validations'], want, file);
  }
});
