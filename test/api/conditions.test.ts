import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConditionReasonError,
  getCondition,
  isCurrent,
  isFalse,
  isTrue,
  isUnknown,
  removeCondition,
  setCondition,
} from '../../src/api/conditions.ts';

const t0 = new Date('2026-01-01T00:00:00Z');
const t1 = new Date('2026-01-01T00:05:00Z');

test('setCondition adds a condition with the transition time', () => {
  const list = setCondition(undefined, { type: 'Progressing', status: 'True', reason: 'BatchStarted', message: 'batch 1/3', observedGeneration: 2 }, t0);
  assert.deepEqual(list, [
    { type: 'Progressing', status: 'True', reason: 'BatchStarted', message: 'batch 1/3', lastTransitionTime: t0.toISOString(), observedGeneration: 2 },
  ]);
});

test('setCondition keeps lastTransitionTime while the status does not change', () => {
  const a = setCondition([], { type: 'Progressing', status: 'True', reason: 'BatchStarted', message: 'batch 1/3' }, t0);
  const b = setCondition(a, { type: 'Progressing', status: 'True', reason: 'BatchStarted', message: 'batch 2/3' }, t1);
  assert.equal(b[0]?.lastTransitionTime, t0.toISOString());
  assert.equal(b[0]?.message, 'batch 2/3');
  const c = setCondition(b, { type: 'Progressing', status: 'False', reason: 'Paused', message: 'paused' }, t1);
  assert.equal(c[0]?.lastTransitionTime, t1.toISOString());
  assert.equal(c.length, 1);
});

test('setCondition does not mutate its input', () => {
  const a = setCondition([], { type: 'Paused', status: 'False', reason: 'Running', message: '' }, t0);
  const frozen = structuredClone(a);
  setCondition(a, { type: 'Paused', status: 'True', reason: 'AnalysisBreach', message: 'x' }, t1);
  setCondition(a, { type: 'Degraded', status: 'True', reason: 'StalePeer', message: 'x' }, t1);
  assert.deepEqual(a, frozen);
});

test('setCondition refuses a reason the API server would reject', () => {
  for (const reason of ['', 'has space', '1Leading', 'trailing-', 'dash-ed']) {
    assert.throws(() => setCondition([], { type: 'Paused', status: 'True', reason, message: '' }, t0), ConditionReasonError, reason);
  }
});

test('getters read status and staleness', () => {
  let list = setCondition([], { type: 'RollbackSafe', status: 'True', reason: 'StorageVersionsUnchanged', message: '', observedGeneration: 3 }, t0);
  list = setCondition(list, { type: 'Complete', status: 'False', reason: 'InProgress', message: '' }, t0);
  assert.equal(isTrue(list, 'RollbackSafe'), true);
  assert.equal(isFalse(list, 'Complete'), true);
  assert.equal(isUnknown(list, 'Degraded'), true);
  assert.equal(isTrue(undefined, 'Complete'), false);
  assert.equal(getCondition(list, 'Complete')?.reason, 'InProgress');
  assert.equal(isCurrent(list, 'RollbackSafe', 3), true);
  assert.equal(isCurrent(list, 'RollbackSafe', 4), false);
  assert.deepEqual(removeCondition(list, 'Complete').map((c) => c.type), ['RollbackSafe']);
});
