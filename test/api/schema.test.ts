import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { CRD_NAME, GROUP, KIND, PLURAL, VERSION } from '../../src/api/constants.ts';
import { renderCrdYaml } from '../../src/api/codegen/crd.ts';
import { printerColumns, rootSchema, statusSchema } from '../../src/api/schema.ts';
import type { Schema } from '../../src/api/schema-types.ts';

/** Every node with its path. */
function* walk(s: Schema, path: string): Generator<[string, Schema]> {
  yield [path, s];
  for (const [k, v] of Object.entries(s.properties ?? {})) yield* walk(v, `${path}.${k}`);
  if (s.items) yield* walk(s.items, `${path}[]`);
}

const nodes = [...walk(rootSchema, '')];

test('every string a CEL rule reads has a maxLength (CEL cost budget)', () => {
  for (const [path, s] of nodes) {
    const isString = s.type === 'string' || s['x-kubernetes-int-or-string'] === true;
    if (isString && (s['x-kubernetes-validations'] ?? []).length > 0) assert.ok(s.maxLength !== undefined, path);
  }
});

test('every array is bounded and every field is described', () => {
  for (const [path, s] of nodes) {
    if (s.type === 'array') assert.ok(s.maxItems !== undefined, `${path} maxItems`);
    if (path !== '' && !path.endsWith('.metadata') && !path.endsWith('[]')) assert.ok(s.description, `${path} description`);
  }
});

test('keyed lists have required keys', () => {
  for (const [path, s] of nodes) {
    if (s['x-kubernetes-list-type'] !== 'map') continue;
    for (const key of s['x-kubernetes-list-map-keys'] ?? []) assert.ok(s.items?.required?.includes(key), `${path} key ${key}`);
  }
  assert.deepEqual(statusSchema.properties?.conditions?.['x-kubernetes-list-map-keys'], ['type']);
  assert.deepEqual(statusSchema.properties?.peers?.['x-kubernetes-list-map-keys'], ['identity']);
});

test('int-or-string fields are structural', () => {
  for (const [path, s] of nodes.filter(([, s]) => s['x-kubernetes-int-or-string'])) {
    assert.equal(s.type, undefined, path);
    assert.deepEqual(s.anyOf, [{ type: 'integer' }, { type: 'string' }], path);
  }
});

test('the phases and conditions are the documented ones', () => {
  assert.deepEqual(statusSchema.properties?.phase?.enum, [
    'Pending', 'Preflight', 'EnablingProxy', 'Upgrading', 'Paused', 'RollingBack', 'Succeeded', 'RolledBack', 'Failed',
  ]);
});

test('the CRD names, scope, subresource and printer columns', () => {
  // The rendered YAML is the CRD object buildCrd() returns; read back the parts under test.
  const crd = parse(renderCrdYaml()) as { metadata: { name: string }; spec: Record<string, unknown> };
  assert.equal(crd.metadata.name, CRD_NAME);
  assert.deepEqual(crd.spec.names, {
    kind: KIND, listKind: `${KIND}List`, plural: PLURAL, singular: 'apiserverupgrade', shortNames: ['asu'], categories: ['upgrade'],
  });
  assert.equal(crd.spec.group, GROUP);
  assert.equal(crd.spec.scope, 'Cluster');
  const [v] = crd.spec.versions as { name: string; subresources: unknown; additionalPrinterColumns: { name: string }[] }[];
  assert.equal(v?.name, VERSION);
  assert.deepEqual(v?.subresources, { status: {} });
  assert.deepEqual(v?.additionalPrinterColumns.map((c) => c.name), ['Phase', 'From', 'To', 'Batch', 'Stage', 'Paused', 'Reason', 'Age']);
  assert.equal(printerColumns.length, v?.additionalPrinterColumns.length, 'every printer column reaches the CRD');
});

test('authoring-only keys never reach the CRD', () => {
  const yaml = renderCrdYaml();
  assert.ok(!yaml.includes('tsType'));
  assert.ok(!yaml.includes('tsExternal'));
});
