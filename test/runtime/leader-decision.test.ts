import { test } from 'node:test';
import assert from 'node:assert/strict';
import { candidateWaitMs, decide, MIN_TAKEOVER_MARGIN_MS, mustStepDown, observe, renewAttemptMs, type LeaseRecord } from '../../src/runtime/leader-decision.ts';
import { DEFAULTS } from '../../src/runtime/leader.ts';

const base = { identity: 'me', leaseDurationSeconds: 15, nowText: 'T' };

test('no lease: create one held by us', () => {
  const d = decide({ ...base, lease: undefined, observed: observe(undefined, undefined, 0), now: 0 });
  assert.equal(d.action, 'create');
});

test('our own lease: renew, keeping acquireTime and transitions', () => {
  const lease: LeaseRecord = { holderIdentity: 'me', acquireTime: 'A', leaseTransitions: 3, leaseDurationSeconds: 15 };
  const d = decide({ ...base, lease, observed: observe(undefined, lease, 0), now: 1000 });
  assert.deepEqual(d, { action: 'update', renew: true, record: { holderIdentity: 'me', leaseDurationSeconds: 15, acquireTime: 'A', renewTime: 'T', leaseTransitions: 3 } });
});

test('another holder: wait until leaseDuration after we observed its last change, then take over', () => {
  const lease: LeaseRecord = { holderIdentity: 'other', renewTime: 'R1', leaseDurationSeconds: 15, leaseTransitions: 1 };
  const obs = observe(undefined, lease, 10_000);
  const w = decide({ ...base, lease, observed: obs, now: 20_000 });
  assert.deepEqual(w, { action: 'wait', holder: 'other', expiresInMs: 5000 });
  // The same record seen again does not restart the clock...
  assert.equal(observe(obs, { ...lease }, 24_000), obs);
  const t = decide({ ...base, lease, observed: observe(obs, lease, 25_000), now: 25_000 });
  assert.equal(t.action, 'update');
  assert.equal(t.action === 'update' && t.record.leaseTransitions, 2);
  // ...but a renewal does.
  const renewed = { ...lease, renewTime: 'R2' };
  assert.equal(decide({ ...base, lease: renewed, observed: observe(obs, renewed, 24_000), now: 25_000 }).action, 'wait');
});

test('a released lease (empty holder) is free at once', () => {
  const lease: LeaseRecord = { holderIdentity: '', leaseDurationSeconds: 1, leaseTransitions: 4 };
  const d = decide({ ...base, lease, observed: observe(undefined, lease, 0), now: 0 });
  assert.equal(d.action, 'update');
});

test('a leader steps down once renewDeadline passed without a successful renewal', () => {
  assert.equal(mustStepDown(0, 9_999, 10_000), false);
  assert.equal(mustStepDown(0, 10_000, 10_000), true);
});

test('a candidate looks again at its poll period, or at the lease\'s expiry by its own clock when that is sooner', () => {
  assert.equal(candidateWaitMs(12_000, 500), 500);
  assert.equal(candidateWaitMs(120, 500), 121, 'just past the expiry, so the next look takes over');
  assert.equal(candidateWaitMs(-5, 500), 0);
});

test('the default timings keep the takeover margin: a leader steps down before any candidate may take over', () => {
  assert.ok(DEFAULTS.leaseDurationMs - DEFAULTS.renewDeadlineMs >= MIN_TAKEOVER_MARGIN_MS);
  assert.ok(DEFAULTS.renewDeadlineMs > DEFAULTS.retryPeriodMs);
  // The worst case of a candidate, by its own clock: it saw the renewal the instant it was written, which was
  // no earlier than the leader's attempt started; the leader steps down renewDeadline after that start.
  const attemptStart = 0;
  const candidateTakesOver = attemptStart + DEFAULTS.leaseDurationMs;
  const leaderStepsDown = attemptStart + DEFAULTS.renewDeadlineMs;
  assert.ok(candidateTakesOver - leaderStepsDown >= MIN_TAKEOVER_MARGIN_MS);
});

test('a renewal attempt gets one retry period, doubled after each failed attempt, never past the time left', () => {
  assert.deepEqual([0, 1, 2].map((n) => renewAttemptMs(10_000, 2_000, n)), [2_000, 4_000, 8_000]);
  assert.equal(renewAttemptMs(3_500, 2_000, 1), 3_500, 'the third attempt of a 10 s deadline: what is left');
  assert.equal(renewAttemptMs(-20, 2_000, 0), 0);
  assert.equal(renewAttemptMs(10_000, 2_000, 1_000), 10_000, 'no overflow to Infinity or NaN');
});
