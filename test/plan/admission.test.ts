import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockingUpgrade, isFinished, updateNeedsReconcile } from '../../src/plan/admission.ts';
import { RETRY_ANNOTATION } from '../../src/api/vocabulary.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

function u(name: string, phase: string | undefined, created: string, extra: Partial<ApiServerUpgrade['metadata']> = {}, status: object = {}): ApiServerUpgrade {
  return {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade',
    metadata: { name, creationTimestamp: created as unknown as Date, generation: 1, ...extra },
    spec: { targetVersion: 'v1.36.3', driver: { webhook: { url: 'https://h/replace' } } },
    ...(phase === undefined ? {} : { status: { phase: phase as never, observedGeneration: 1, ...status } }),
  };
}

test('one upgrade at a time: one under way goes first; among waiting ones the oldest; finished ones never block', () => {
  const running = u('a', 'Upgrading', '2026-01-02T00:00:00Z');
  const waiting = u('b', undefined, '2026-01-01T00:00:00Z');
  assert.equal(blockingUpgrade(waiting, [running, waiting]), 'a', 'an upgrade under way blocks an older waiting one');
  assert.equal(blockingUpgrade(running, [running, waiting]), undefined, 'one under way is never held back');
  const older = u('c', 'Preflight', '2025-12-31T00:00:00Z');
  assert.equal(blockingUpgrade(waiting, [waiting, older]), 'c', 'the oldest waiting one goes first');
  assert.equal(blockingUpgrade(older, [waiting, older]), undefined);
  assert.equal(blockingUpgrade(waiting, [waiting, u('d', 'Succeeded', '2025-01-01T00:00:00Z'), u('e', 'RolledBack', '2025-01-01T00:00:00Z')]), undefined);
});

test('finished: terminal at the observed generation, unless a new retry value waits on a Failed one', () => {
  assert.equal(isFinished(u('a', 'Succeeded', 'x')), true);
  assert.equal(isFinished(u('a', 'Succeeded', 'x', { generation: 2 })), false, 'a spec edit after the end is acknowledged once');
  assert.equal(isFinished(u('a', 'Paused', 'x')), false);
  assert.equal(isFinished(u('a', 'Failed', 'x', { annotations: { [RETRY_ANNOTATION]: '1' } })), false);
  assert.equal(isFinished(u('a', 'Failed', 'x', { annotations: { [RETRY_ANNOTATION]: '1' } }, { observedRetry: '1' })), true);
  assert.equal(isFinished(u('a', 'Succeeded', 'x', { annotations: { [RETRY_ANNOTATION]: '1' } })), true, 'retry applies to Failed only');
});

test('updates that call for a reconcile: spec, annotations, deletion — never the operator\'s own status writes', () => {
  const before = u('a', 'Upgrading', 'x', { resourceVersion: '1' });
  assert.equal(updateNeedsReconcile(before, { ...before, metadata: { ...before.metadata, resourceVersion: '2' }, status: { phase: 'Paused' } }), false);
  assert.equal(updateNeedsReconcile(before, { ...before, metadata: { ...before.metadata, generation: 2 } }), true);
  assert.equal(updateNeedsReconcile(before, { ...before, metadata: { ...before.metadata, annotations: { 'upgrade.apiserver.dev/resume': '1' } } }), true);
  assert.equal(updateNeedsReconcile(before, { ...before, metadata: { ...before.metadata, deletionTimestamp: new Date(0) } }), true);
});
