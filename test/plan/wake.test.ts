import { test } from 'node:test';
import assert from 'node:assert/strict';
import { leaseEventWakes, upgradesToWake, type IdentityLeaseFacts } from '../../src/plan/wake.ts';
import { RETRY_ANNOTATION } from '../../src/api/vocabulary.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

const lease = (holder: string, extra: { labels?: Record<string, string>; annotations?: Record<string, string>; renewTime?: string; resourceVersion?: string } = {}): IdentityLeaseFacts & Record<string, unknown> => ({
  metadata: { labels: { 'apiserver.kubernetes.io/identity': 'kube-apiserver', 'kubernetes.io/hostname': 'cp-1', ...extra.labels }, annotations: { ...extra.annotations }, resourceVersion: extra.resourceVersion ?? '1' } as IdentityLeaseFacts['metadata'],
  spec: { holderIdentity: holder, renewTime: extra.renewTime ?? '2026-01-01T00:00:00Z' } as IdentityLeaseFacts['spec'],
});

test('a Lease event wakes upgrades when a server comes, leaves, restarts or moves; a renewal does not', () => {
  const l = lease('apiserver-a_1');
  assert.equal(leaseEventWakes(undefined, l), true, 'add');
  assert.equal(leaseEventWakes(l, undefined), true, 'delete');
  assert.equal(leaseEventWakes(l, lease('apiserver-a_2')), true, 'a new holder: the server restarted');
  assert.equal(leaseEventWakes(l, lease('apiserver-a_1', { annotations: { 'kubernetes.io/peer-advertise-address': '10.0.0.1:6443' } })), true, 'a new peer address');
  assert.equal(leaseEventWakes(l, lease('apiserver-a_1', { labels: { 'kubernetes.io/hostname': 'cp-2' } })), true, 'a new hostname');
  assert.equal(leaseEventWakes(l, lease('apiserver-a_1', { renewTime: '2026-01-01T00:00:10Z', resourceVersion: '2' })), false, 'a renewal');
  assert.equal(leaseEventWakes({ metadata: {} }, { metadata: { labels: {}, annotations: {} } }), false, 'absent and empty maps are the same');
});

function u(name: string, phase: string | undefined, extra: { generation?: number; annotations?: Record<string, string>; observedRetry?: string } = {}): ApiServerUpgrade {
  return {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade',
    metadata: { name, generation: extra.generation ?? 1, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: { targetVersion: 'v1.36.3', driver: { webhook: { url: 'https://h/replace' } } },
    ...(phase === undefined ? {} : { status: { phase: phase as never, observedGeneration: 1, ...(extra.observedRetry ? { observedRetry: extra.observedRetry } : {}) } }),
  };
}

test('a fleet change wakes every upgrade except the finished ones', () => {
  const all = [
    u('new', undefined), u('running', 'Upgrading'), u('paused', 'Paused'), u('rolling-back', 'RollingBack'),
    u('done', 'Succeeded'), u('rolled-back', 'RolledBack'), u('failed', 'Failed'),
    u('edited-after-end', 'Succeeded', { generation: 2 }),
    u('retry-asked', 'Failed', { annotations: { [RETRY_ANNOTATION]: 'r2' }, observedRetry: 'r1' }),
    u('retry-taken', 'Failed', { annotations: { [RETRY_ANNOTATION]: 'r1' }, observedRetry: 'r1' }),
  ];
  assert.deepEqual(upgradesToWake(all).map((x) => x.metadata?.name), ['new', 'running', 'paused', 'rolling-back', 'edited-after-end', 'retry-asked']);
});
