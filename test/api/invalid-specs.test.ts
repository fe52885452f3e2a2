import { test } from 'node:test';
import assert from 'node:assert/strict';
import { API_VERSION, KIND } from '../../src/api/constants.ts';
import { SpecError, resolveSpec } from '../../src/api/defaults.ts';
import { rootSchema } from '../../src/api/schema.ts';
import type { Schema } from '../../src/api/schema-types.ts';
import type { ApiServerUpgradeSpec } from '../../src/api/types.generated.ts';
import { invalidSpecs, manifest, validSpec } from './invalid-specs.ts';

// Messages the OpenAPI validator of the API server produces (k8s.io/apiextensions-apiserver).
const OPENAPI_MESSAGES = ['Required value', 'should be less than or equal to', 'should be greater than or equal to', 'Unsupported value', 'should match'];

function allRuleMessages(s: Schema): string[] {
  return [
    ...(s['x-kubernetes-validations'] ?? []).map((r) => r.message),
    ...Object.values(s.properties ?? {}).flatMap(allRuleMessages),
    ...(s.items ? allRuleMessages(s.items) : []),
  ];
}

function schemaAt(path: string): Schema | undefined {
  let node: Schema | undefined = rootSchema;
  // An item's path (spec.gates.queries[0].name) walks through the array's items.
  for (const part of path.split('.')) {
    const [key, ...items] = part.split('[');
    node = node?.properties?.[key!];
    for (let i = 0; i < items.length; i++) node = node?.items;
  }
  return node;
}

test('the table has at least 14 distinct cases', () => {
  assert.ok(invalidSpecs.length >= 14);
  assert.equal(new Set(invalidSpecs.map((c) => c.name)).size, invalidSpecs.length);
  assert.equal(new Set(invalidSpecs.map((c) => JSON.stringify(c.manifest))).size, invalidSpecs.length);
});

test('the base spec is valid client-side', () => {
  assert.equal(resolveSpec(validSpec() as unknown as ApiServerUpgradeSpec).targetVersion, 'v1.36.3');
  assert.equal(manifest('x', validSpec()).apiVersion, API_VERSION);
});

for (const c of invalidSpecs) {
  test(`invalid spec ${c.name}: well-formed case`, () => {
    assert.equal(c.manifest.apiVersion, API_VERSION);
    assert.equal(c.manifest.kind, KIND);
    assert.ok(schemaAt(c.field) !== undefined, `field ${c.field} exists in the schema`);
    if (c.by === 'cel') {
      assert.ok(allRuleMessages(rootSchema).some((m) => m.includes(c.expectedMessage)), `"${c.expectedMessage}" is a rule message`);
    } else {
      assert.ok(OPENAPI_MESSAGES.some((m) => c.expectedMessage.startsWith(m)), `"${c.expectedMessage}" is an OpenAPI message`);
    }
  });
}

// What resolveSpec checks must agree with the API server; the rest (ranges, enums, URL schemes) only the server checks.
const CLIENT_CHECKED = /^(version-|batch-size-|soak-|interval-|no-driver|two-drivers|driver-missing|failure-limit-|prometheus-without-|phase-two-(deadline-without|action-without|deadline-when|approval-one|on-deadline))/;
for (const c of invalidSpecs.filter((x) => x.before === undefined && CLIENT_CHECKED.test(x.name))) {
  test(`invalid spec ${c.name}: resolveSpec refuses it too`, () => {
    // The manifest is deliberately malformed, so it is not an ApiServerUpgradeSpec.
    assert.throws(() => resolveSpec(c.manifest.spec as unknown as ApiServerUpgradeSpec), SpecError);
  });
}
