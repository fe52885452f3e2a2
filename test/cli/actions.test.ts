import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, newToken, type ActionCommand } from '../../src/cli/actions.ts';
import { ABORT_ANNOTATION, APPROVE_ANNOTATION, RESUME_ANNOTATION, RETRY_ANNOTATION } from '../../src/api/vocabulary.ts';
import { NOW, paused, upgrading, withPhase } from './fixtures.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

function annotationOf(patch: Record<string, unknown>): Record<string, string> | undefined {
  return (patch.metadata as { annotations?: Record<string, string> } | undefined)?.annotations;
}

function patchOf(cmd: ActionCommand, u: ApiServerUpgrade): Record<string, unknown> {
  const d = decide(cmd, u, NOW);
  assert.ok(d.ok, `${cmd} allowed: ${d.ok ? '' : d.why}`);
  return d.patch;
}

function why(cmd: ActionCommand, u: ApiServerUpgrade): string {
  const d = decide(cmd, u, NOW);
  assert.ok(!d.ok, `${cmd} refused in ${u.status?.phase}`);
  assert.doesNotMatch(d.why, /\n/, 'one line');
  return d.why;
}

test('pause sets spec.paused, guarded by the resourceVersion read, and says it is a spec edit Git tools see', () => {
  const d = decide('pause', upgrading(), NOW);
  assert.ok(d.ok);
  assert.deepEqual(d.patch, { spec: { paused: true }, metadata: { resourceVersion: '4242' } });
  assert.match(d.message, /spec\.paused set to true\. This is a spec edit: Git tools \(Argo CD, Flux\) will see it as drift/);
  for (const phase of ['Pending', 'Preflight', 'EnablingProxy', 'RollingBack'] as const) assert.ok(decide('pause', withPhase(phase), NOW).ok, phase);
});

test('pause refuses what is finished or already paused', () => {
  assert.match(why('pause', withPhase('Succeeded')), /cannot pause to-v1-36: it is Succeeded, finished/);
  assert.match(why('pause', paused('PausedBySpec')), /already paused by its spec/);
  assert.match(why('pause', paused('AnalysisBreach')), /already paused \(AnalysisBreach\)/);
});

test('resume: spec.paused true -> false (a spec edit); an automatic pause -> a new resume annotation value', () => {
  assert.deepEqual(patchOf('resume', paused('PausedBySpec')), { spec: { paused: false }, metadata: { resourceVersion: '4242' } });
  const specBeforePause = upgrading();
  specBeforePause.spec.paused = true;
  assert.deepEqual(patchOf('resume', specBeforePause), { spec: { paused: false }, metadata: { resourceVersion: '4242' } }, 'set but not acted on yet');
  const auto = paused('BatchTimeout');
  const p = patchOf('resume', auto);
  assert.deepEqual(p, { metadata: { annotations: { [RESUME_ANNOTATION]: NOW.toISOString() }, resourceVersion: '4242' } });
  const d = decide('resume', auto, NOW);
  assert.ok(d.ok && /no spec edit/.test(d.message) && /BatchTimeout/.test(d.message));
});

test('resume refuses an upgrade that is not paused, or finished', () => {
  assert.equal(why('resume', upgrading()), 'to-v1-36 is not paused (phase Upgrading)');
  assert.match(why('resume', withPhase('Failed')), /it is Failed, finished; `kubectl apiserver-upgrade retry to-v1-36` re-runs/);
  assert.match(why('resume', withPhase('Succeeded')), /it is Succeeded, finished$/);
});

test('abort sets the abort annotation in every active phase, and refuses after the end or while rolling back', () => {
  for (const u of [upgrading(), paused('AnalysisBreach'), withPhase('Pending'), withPhase('Preflight'), withPhase('EnablingProxy')]) {
    assert.equal(annotationOf(patchOf('abort', u))?.[ABORT_ANNOTATION], NOW.toISOString());
  }
  const d = decide('abort', upgrading(), NOW);
  assert.ok(d.ok && /same safety checks as onBreach Rollback/.test(d.message) && /RolledBack at once if no server was touched/.test(d.message));
  const held = decide('abort', paused('PausedBySpec'), NOW);
  assert.ok(held.ok && /spec\.paused is true: a rollback that starts is paused again/.test(held.message));
  assert.match(why('abort', withPhase('Succeeded')), /no rollback after Succeeded/);
  assert.match(why('abort', withPhase('RolledBack')), /already RolledBack/);
  assert.match(why('abort', withPhase('Failed')), /already Failed/);
  assert.match(why('abort', withPhase('RollingBack')), /already rolling back/);
});

test('retry: a Failed upgrade re-runs from preflight, a paused one resumes; spec.paused is not overridden', () => {
  assert.equal(annotationOf(patchOf('retry', withPhase('Failed')))?.[RETRY_ANNOTATION], NOW.toISOString());
  const d = decide('retry', withPhase('Failed'), NOW);
  assert.ok(d.ok && /from preflight/.test(d.message));
  assert.equal(annotationOf(patchOf('retry', paused('DriverFailed')))?.[RETRY_ANNOTATION], NOW.toISOString());
  assert.match(why('retry', paused('PausedBySpec')), /spec\.paused is true.*resume to-v1-36/);
  for (const phase of ['Upgrading', 'Succeeded', 'RolledBack', 'RollingBack', 'Pending'] as const) {
    assert.match(why('retry', withPhase(phase)), new RegExp(`it is ${phase}; retry re-runs a Failed upgrade or resumes a paused one`));
  }
});

test('a new annotation value always differs from the current one and from the last one acted on', () => {
  const u = paused('AnalysisBreach');
  u.metadata!.annotations = { [RESUME_ANNOTATION]: NOW.toISOString() };
  u.status!.observedResume = `${NOW.toISOString()}-1`;
  assert.equal(newToken(u, RESUME_ANNOTATION, 'observedResume', NOW), `${NOW.toISOString()}-2`);
  assert.equal(newToken(upgrading(), RESUME_ANNOTATION, 'observedResume', NOW), NOW.toISOString());
});

test('approve: a new approve annotation value only while phase two is held and not yet approved; refused otherwise, saying why', () => {
  const held = (hold: NonNullable<NonNullable<ApiServerUpgrade['status']>['phaseTwoHold']>, phase: 'Upgrading' | 'Paused' = 'Upgrading'): ApiServerUpgrade => {
    const u = phase === 'Paused' ? paused('AnalysisBreach') : upgrading();
    return { ...u, metadata: { ...u.metadata, annotations: { [APPROVE_ANNOTATION]: NOW.toISOString() } }, status: { ...u.status, phaseTwoHold: hold, observedApprove: NOW.toISOString() } };
  };
  const d = decide('approve', held({ heldSince: '2026-12-01T00:00:00Z' }), NOW);
  assert.ok(d.ok);
  const token = annotationOf(d.patch)?.[APPROVE_ANNOTATION];
  assert.ok(token !== undefined && token !== NOW.toISOString(), 'a value the operator has not seen');
  assert.match(d.message, /starts phase two/);
  assert.match((decide('approve', held({ heldSince: '2026-12-01T00:00:00Z' }, 'Paused'), NOW) as { message: string }).message, /phase two starts once it is resumed/);
  assert.match(why('approve', upgrading()), /nothing to approve on to-v1-36: it holds no phase two/);
  const notYet = upgrading();
  notYet.spec = { ...notYet.spec!, strategy: { phases: 'TwoPhase', phaseTwo: { start: 'Approval' } } };
  assert.match(why('approve', notYet), /phase two is not held yet/);
  assert.match(why('approve', held({ heldSince: '2026-12-01T00:00:00Z', endedBy: 'DeadlineProceeded' })), /its hold ended \(DeadlineProceeded\)/);
  assert.match(why('approve', held({ heldSince: '2026-12-01T00:00:00Z', approvedAt: '2026-12-01T01:00:00Z', approval: 'a' })), /already approved/);
  assert.match(why('approve', withPhase('Succeeded')), /cannot approve to-v1-36: it is Succeeded, finished/);
});
