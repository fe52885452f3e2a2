import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dryRun } from '../../src/cli/dry-run.ts';
import { idempotencyKey, type UpgradeInput } from '../../src/plan/index.ts';
import { NEW, NOW, OLD, fleet, peer, spec } from './fixtures.ts';

const U: UpgradeInput = { name: 'to-v1-36', uid: 'uid-1', generation: 1, annotations: {} };

function order(calls: { action: string; server: { hostname: string } }[]): string[] {
  return calls.map((c) => `${c.action}:${c.server.hostname}`);
}

test('gate off: preflight passes, the plan is frozen, the first call is EnableProxy cp-1, and the projection ends Succeeded', () => {
  const obs = fleet('off');
  const before = JSON.stringify(obs);
  const d = dryRun(U, spec(), obs, NOW);
  assert.equal(JSON.stringify(obs), before, 'the observation is not changed');
  assert.equal(d.preflight?.status, 'True');
  assert.equal(d.preflight?.reason, 'Passed');
  assert.equal(d.phase, 'EnablingProxy');
  assert.equal(d.stoppedBecause, 'calls');
  assert.deepEqual(d.status.plan?.batches, [{ index: 1, servers: ['cp-1'] }, { index: 2, servers: ['cp-2'] }, { index: 3, servers: ['cp-3'] }]);
  assert.deepEqual(order(d.firstCalls), ['EnableProxy:cp-1']);
  assert.deepEqual(d.events.map((e) => e.reason), ['Started', 'PreflightPassed']);
  const p = d.projection!;
  assert.equal(p.phase, 'Succeeded');
  assert.equal(p.assumedResumed, false);
  assert.deepEqual(order(p.calls), ['EnableProxy:cp-1', 'EnableProxy:cp-2', 'EnableProxy:cp-3', 'Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  // The keys are the operator's: the same derivation from the object's UID.
  assert.equal(p.calls[0]!.idempotencyKey, idempotencyKey('uid-1', 0, 'cp-1', 'EnableProxy', OLD));
  assert.equal(p.calls[3]!.idempotencyKey, idempotencyKey('uid-1', 1, 'cp-1', 'Upgrade', NEW));
  assert.deepEqual(p.calls[3]!.featureGates, { UnknownVersionInteroperabilityProxy: true });
  assert.equal(p.calls[3]!.server.address, '10.0.0.1:6443');
});

test('gate on and batchSize 2: no gate pass, two batches', () => {
  const d = dryRun(U, spec({ strategy: { batchSize: 2, soakDuration: '1m' } }), fleet('on'), NOW);
  assert.equal(d.phase, 'Upgrading');
  assert.deepEqual(d.status.plan?.batches?.map((b) => b.servers), [['cp-1', 'cp-2'], ['cp-3']]);
  assert.deepEqual(order(d.firstCalls), ['Upgrade:cp-1', 'Upgrade:cp-2']);
  assert.deepEqual(order(d.projection!.calls), ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.deepEqual(d.projection!.calls.map((c) => c.batch), [1, 1, 2]);
});

test('spec.paused: preflight runs and the plan is frozen, then it pauses without a call; the projection assumes a resume', () => {
  const d = dryRun(U, spec({ paused: true }), fleet('on'), NOW);
  assert.equal(d.phase, 'Paused');
  assert.equal(d.status.pause?.reason, 'PausedBySpec');
  assert.equal(d.stoppedBecause, 'stopped');
  assert.deepEqual(d.firstCalls, []);
  assert.equal(d.status.plan?.batches?.length, 3);
  assert.equal(d.projection?.assumedResumed, true);
  assert.equal(d.projection?.phase, 'Succeeded');
  assert.deepEqual(order(d.projection!.calls), ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
});

test('a preflight that waits (mixed versions) stops without progress and projects nothing', () => {
  const obs = fleet('on');
  obs.peers[1] = peer('cp-2', NEW, 'on');
  const d = dryRun(U, spec(), obs, NOW);
  assert.equal(d.phase, 'Preflight');
  assert.equal(d.stoppedBecause, 'noProgress');
  assert.deepEqual([d.preflight?.status, d.preflight?.reason], ['False', 'MixedVersions']);
  assert.equal(d.projection, undefined);
  assert.ok(d.steps <= 3);
});

test('a preflight that cannot pass (skips a minor) ends Failed at once', () => {
  const d = dryRun(U, spec({ targetVersion: 'v1.37.0' }), fleet('on'), NOW);
  assert.equal(d.phase, 'Failed');
  assert.equal(d.preflight?.reason, 'SkipsMinor');
  assert.equal(d.stoppedBecause, 'stopped');
  assert.equal(d.projection, undefined);
  assert.deepEqual(d.events.map((e) => e.reason), ['Started', 'PreflightFailed']);
});

test('no servers found: preflight says so', () => {
  const d = dryRun(U, spec(), { peers: [] }, NOW);
  assert.equal(d.preflight?.reason, 'NoServers');
  assert.equal(d.projection, undefined);
});

test('the fleet already at the target: Succeeded at preflight, no call', () => {
  const obs = fleet('on');
  obs.peers = obs.peers.map((p) => ({ ...p, version: NEW }));
  const d = dryRun(U, spec(), obs, NOW);
  assert.equal(d.phase, 'Succeeded');
  assert.equal(d.preflight?.reason, 'AlreadyAtTarget');
  assert.deepEqual(d.firstCalls, []);
  assert.equal(d.projection, undefined);
});

test('TwoPhase: the projection walks phase one (the new binary emulating the old minor), then phase two, to Succeeded', () => {
  const obs = fleet('on');
  obs.discovery = { ...obs.discovery!, own: obs.peers.map((p) => ({ server: p.hostname, version: OLD, resources: ['/v1/pods', 'apps/v1/deployments'] })) };
  const d = dryRun(U, spec({ strategy: { batchSize: 1, soakDuration: '30s', phases: 'TwoPhase', phaseSoakDuration: '5m' } }), obs, NOW);
  assert.equal(d.preflight?.status, 'True', d.preflight?.message);
  assert.deepEqual(d.status.plan?.fromResources, ['/v1/pods', 'apps/v1/deployments']);
  const p = d.projection!;
  assert.equal(p.phase, 'Succeeded', p.message);
  const calls = p.calls.map((c) => `${c.action}:${c.server.hostname}${c.emulatedVersion ? `@${c.emulatedVersion}` : ''}`);
  assert.deepEqual(calls.slice(0, 3), ['Upgrade:cp-1@1.35', 'Upgrade:cp-2@1.35', 'Upgrade:cp-3@1.35'], 'phase one: every server on the new binary emulating 1.35');
  assert.ok(calls.slice(3).every((c) => !c.includes('@')) && calls.length === 6, `phase two lifts the emulation: ${calls.join(', ')}`);
});

test('servers that report their emulated version (as /version does since v1.31): the projection still lands each call', () => {
  const obs = fleet('off');
  obs.peers = obs.peers.map((p) => ({ ...p, emulation: '1.35' }));
  const d = dryRun(U, spec(), obs, NOW);
  assert.equal(d.projection?.phase, 'Succeeded', d.projection?.message);
  assert.equal(d.projection?.calls.length, 6);
});
