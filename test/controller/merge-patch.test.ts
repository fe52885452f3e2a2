import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createMergePatch } from '../../src/controller/merge-patch.ts';

/** RFC 7386 apply, to check that applying the patch gives the target back. */
function apply(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = apply(out[k], v);
  }
  return out;
}

const cases: { name: string; from: unknown; to: unknown }[] = [
  { name: 'removed nested key becomes null', from: { pause: { reason: 'X' }, batch: { current: 1, soakUntil: 't' } }, to: { batch: { current: 2 } } },
  { name: 'arrays replaced whole', from: { conditions: [{ type: 'A' }, { type: 'B' }] }, to: { conditions: [{ type: 'A' }] } },
  { name: 'added keys', from: {}, to: { phase: 'Upgrading', peers: [{ hostname: 'cp-1' }] } },
  { name: 'scalar change', from: { phase: 'Preflight', observedGeneration: 1 }, to: { phase: 'Upgrading', observedGeneration: 1 } },
];
for (const c of cases) {
  test(`merge patch: ${c.name}`, () => {
    const p = createMergePatch(c.from, c.to);
    assert.notEqual(p, undefined);
    assert.deepEqual(apply(c.from, p), c.to);
  });
}

test('merge patch: no change gives undefined, so nothing is written', () => {
  assert.equal(createMergePatch({ a: { b: [1, 2] } }, { a: { b: [1, 2] } }), undefined);
});

test('merge patch: a removed key is sent as null', () => {
  assert.deepEqual(createMergePatch({ pause: { reason: 'X' }, phase: 'Paused' }, { phase: 'Upgrading' }), { pause: null, phase: 'Upgrading' });
});
