// When a look reads a pre-1.35 server's process start time (a whole /metrics page), and that a call is never
// recorded against a start time this look did not read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiServerUpgradeStatus, DriverCall } from '../../src/api/types.generated.ts';
import { startTimeFresh } from '../../src/plan/process-identity.ts';
import { startTimeReads } from '../../src/plan/start-time-reads.ts';
import { reconcileContext, whatToRead } from '../../src/plan/reconcile.ts';
import { Sim, peer, spec, storage } from './fleet.ts';

const call = (server: string, result: DriverCall['result']): DriverCall => ({ key: `k-${server}`, server, batch: 1, action: 'Upgrade', target: 'v1.35.4', time: '2026-12-01T00:00:00Z', attempts: 1, result });

test('startTimeReads: the servers with a call in flight, and only them, while calls are in flight', () => {
  const status: ApiServerUpgradeStatus = { phase: 'Upgrading', driverCalls: [call('cp-3', 'Done'), call('cp-2', 'Accepted'), call('cp-1', 'Requested')] };
  assert.deepEqual(startTimeReads(status), { all: false, servers: ['cp-1', 'cp-2'] }, 'a restart to confirm on each server with a call in flight; not on cp-3 (Done)');
});

test('startTimeReads: the servers of the batch under way too (a call may go to one while another is in flight); every server while rolling back', () => {
  const calls = [call('cp-1', 'Accepted')];
  assert.deepEqual(startTimeReads({ phase: 'Upgrading', batch: { current: 1, servers: ['cp-1', 'cp-2'] }, driverCalls: calls }), { all: false, servers: ['cp-1', 'cp-2'] });
  assert.deepEqual(startTimeReads({ phase: 'RollingBack', driverCalls: calls }), { all: true, servers: [] });
  assert.deepEqual(startTimeReads({ phase: 'Paused', batch: { current: 1, servers: ['cp-1', 'cp-2'] }, driverCalls: calls }), { all: false, servers: ['cp-1'] }, 'paused: only the restart to confirm');
});

test('startTimeReads: every server while a call may be requested (no call in flight in a phase that makes calls); none when none can be', () => {
  for (const phase of ['Preflight', 'EnablingProxy', 'Upgrading', 'RollingBack'] as const) {
    assert.deepEqual(startTimeReads({ phase, driverCalls: [call('cp-1', 'Done')] }), { all: true, servers: [] }, phase);
  }
  assert.deepEqual(startTimeReads(undefined), { all: true, servers: [] }, 'no status yet: its first step may go on to call');
  for (const phase of ['Pending', 'Paused', 'Succeeded', 'RolledBack', 'Failed'] as const) {
    assert.deepEqual(startTimeReads({ phase, driverCalls: [call('cp-1', 'Done')] }), { all: false, servers: [] }, phase);
  }
});

test('whatToRead asks the observer for the start times startTimeReads names', () => {
  const u = { metadata: { name: 'u', uid: 'u', generation: 1 }, spec: spec({ targetVersion: 'v1.35.4' }), status: { phase: 'Upgrading' as const, driverCalls: [call('cp-2', 'Accepted')] } };
  const g = whatToRead(reconcileContext(u, undefined, new Date()), [], { preflightFacts: false, kubeadmFacts: false, keepKubeadmConfig: false });
  assert.ok(g.kind === 'read');
  assert.deepEqual(g.reads.observe.startTimes, { all: false, servers: ['cp-2'] });
});

test('startTimeFresh: before 1.35 only a start time this look read; from 1.35 (or without a holder) the holder is enough', () => {
  const v134 = { holderIdentity: 'apiserver-a', version: 'v1.34.4' };
  assert.equal(startTimeFresh({ ...v134, processStart: 1 }), true);
  assert.equal(startTimeFresh({ ...v134, processStart: 1, processStartKept: true }), false, 'kept from an earlier look: a restart since is unknown');
  assert.equal(startTimeFresh(v134), false, 'not read');
  assert.equal(startTimeFresh({ holderIdentity: 'apiserver-a', version: 'v1.35.4', processStartKept: true }), true);
  assert.equal(startTimeFresh({ version: 'v1.34.4' }), true, 'no Lease: no identity to record either way');
  assert.equal(startTimeFresh({ holderIdentity: 'apiserver-a' }), true, 'no /version this look (down): no page to read either; its call is not held');
});

test('v1.34: no call is requested on a server whose start time this look did not read; the next look that reads it requests it, recording that start', () => {
  const sim = new Sim(['cp-1', 'cp-2', 'cp-3'].map((h) => peer(h, 'v1.34.4', 'off', { holderIdentity: `apiserver-${h}_a`, processStart: 1_790_000_000, processStartKept: true })), spec({ targetVersion: 'v1.35.4', proxy: { gate: 'Auto' } }));
  sim.extra.storage = [storage('v1.34.4'), storage('v1.35.4')];
  for (let i = 0; i < 10; i++) sim.step(5000);
  assert.equal(sim.status?.phase, 'EnablingProxy');
  assert.equal(sim.status?.driverCalls?.length ?? 0, 0, 'kept start times: the gate pass is held back');
  sim.peers = sim.peers.map(({ processStartKept: _kept, ...p }) => ({ ...p, processStart: 1_790_000_050 }));
  sim.step(5000);
  const calls = sim.last.actions.filter((a) => a.kind === 'callDriver');
  assert.equal(calls.length, 1, 'read: called');
  assert.equal(sim.status?.driverCalls?.[0]?.holderBefore, 'apiserver-cp-1_a@1790000050', 'the start time read by this look');
});
