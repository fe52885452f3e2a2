// What a reconcile reads for preflight (src/plan/reconcile.ts whatToRead): the preflight facts, with the kubeadm ones,
// whenever the planner runs preflight — in Pending and Preflight, and while spec.paused holds an upgrade whose
// preflight has not passed (the planner runs it again at every step then: src/plan/planner.ts). Without them a
// paused step would pass preflight on kubeadm checks it never made (a kubelet newer than the target, an expiring
// serving certificate), and record no accepted risk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';
import { reconcileContext, whatToRead } from '../../src/plan/reconcile.ts';
import { spec as baseSpec } from './fleet.ts';

const ON = { preflightFacts: true, kubeadmFacts: true, keepKubeadmConfig: false };

function reads(status: ApiServerUpgrade['status']): ReturnType<typeof whatToRead> {
  const u: ApiServerUpgrade = { apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name: 'u', uid: 'u', generation: 1 }, spec: { ...baseSpec(), paused: true }, ...(status ? { status } : {}) };
  return whatToRead(reconcileContext(u, undefined, new Date('2026-12-07T03:30:00Z')), [], ON);
}

test('preflight facts, kubeadm ones included, are read while spec.paused holds an upgrade before its preflight passed', () => {
  const held = reads({ phase: 'Paused', pause: { reason: 'PausedBySpec', message: 'spec.paused is true', resumePhase: 'Preflight' } });
  assert.ok(held.kind === 'read' && held.reads.preflight?.kubeadm !== undefined, JSON.stringify(held));
  for (const phase of [undefined, 'Pending', 'Preflight'] as const) {
    const r = reads(phase ? { phase } : undefined);
    assert.ok(r.kind === 'read' && r.reads.preflight?.kubeadm !== undefined, `${phase ?? 'no status'}`);
  }
});

test('not once preflight passed: a pause that resumes to Upgrading, or one for another reason, reads no preflight facts', () => {
  const after = reads({ phase: 'Paused', pause: { reason: 'PausedBySpec', message: 'spec.paused is true', resumePhase: 'Upgrading' } });
  assert.ok(after.kind === 'read' && after.reads.preflight === undefined);
  const other = reads({ phase: 'Paused', pause: { reason: 'AnalysisBreach', message: 'breach', resumePhase: 'Preflight' } });
  assert.ok(other.kind === 'read' && other.reads.preflight === undefined);
  const running = reads({ phase: 'Upgrading' });
  assert.ok(running.kind === 'read' && running.reads.preflight === undefined);
});
