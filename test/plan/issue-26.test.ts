// The planner defects of issue 26, each replayed as the sequence of observations that showed it (through the
// shell protocol: ShellSim plans, persists, delivers and records each call's outcome). Each failed before its fix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiServerUpgradeSpec } from '../../src/api/types.generated.ts';
import { ABORT_ANNOTATION, type ObservedPeer } from '../../src/plan/index.ts';
import { peer, spec, OLD, NEW } from './fleet.ts';
import { ShellSim } from './model/shell-sim.ts';

const phase = (sim: ShellSim): string => sim.status?.phase ?? 'Pending';
const fleet = (n: number, gate: ObservedPeer['proxyGate'] = 'on'): ObservedPeer[] => Array.from({ length: n }, (_, i) => peer(`cp-${i + 1}`, OLD, gate));
const versions = (sim: ShellSim): string[] => sim.peers.map((p) => `${p.hostname}@${p.version}`);

function specWith(over: Partial<ApiServerUpgradeSpec> = {}): ApiServerUpgradeSpec {
  const base = spec();
  return { ...base, ...over, strategy: { ...base.strategy, ...over.strategy }, analysis: { ...base.analysis, ...over.analysis } };
}

function abort(sim: ShellSim, token: string): void {
  sim.upgrade = { ...sim.upgrade, annotations: { ...sim.upgrade.annotations, [ABORT_ANNOTATION]: token } };
}

/**
 * As on the real servers: batch 1's Upgrade of cp-1 is Accepted, the replacement stops cp-1 (its Lease goes), and
 * the abort lands 1.5 s later, before any server of the target was read.
 */
function abortedWhileUpgradeInFlight(servers: number, storageSafe = true): ShellSim {
  const sim = new ShellSim(fleet(servers), specWith({ strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' } }));
  sim.storageSafe = storageSafe;
  sim.autoLand = false;
  sim.runUntil((s) => s.held.has('cp-1'), 6, 1000);
  sim.reconcile(1000);
  assert.equal(sim.status?.driverCalls?.find((c) => c.server === 'cp-1')?.result, 'Accepted');
  sim.stop('cp-1');
  abort(sim, 'now');
  sim.reconcile(1500);
  return sim;
}

test('an abort while batch 1\'s first Upgrade is in flight: paused RollbackSafetyUnknown until cp-1 lands and its hashes are read, then it rolls back by itself', () => {
  const sim = abortedWhileUpgradeInFlight(3);
  assert.equal(phase(sim), 'Paused');
  assert.equal(sim.status?.pause?.reason, 'RollbackSafetyUnknown');
  assert.match(sim.status?.pause?.message ?? '', /have not been read from a server running it yet/);
  assert.equal(sim.condition('RollbackSafe')?.status, 'Unknown');
  for (let i = 0; i < 3; i++) sim.reconcile(10_000);
  assert.equal(sim.status?.pause?.reason, 'RollbackSafetyUnknown', 'still unknown: still held');
  assert.deepEqual(sim.deliveries('Rollback'), []);
  // cp-1 lands on the target; the next reconcile reads its storage hashes.
  sim.land('cp-1');
  sim.reconcile(10_000);
  assert.ok((sim.status?.plan?.targetStorage?.length ?? 0) > 0, 'the target hashes are recorded');
  assert.equal(sim.condition('RollbackSafe')?.status, 'True');
  assert.notEqual(sim.status?.pause?.reason, 'RollbackSafetyUnknown', `a pause on an unknown that is known now must act: ${sim.status?.pause?.message ?? ''}`);
  assert.equal(phase(sim), 'RollingBack');
  assert.ok(sim.events.some((e) => e.reason === 'RollbackSafetyKnown'));
  assert.deepEqual(sim.deliveries('Rollback'), ['Rollback:cp-1']);
  sim.autoLand = true;
  assert.equal(sim.runToRest(30, 5000), 'RolledBack');
  assert.deepEqual(versions(sim), ['cp-1@v1.35.4', 'cp-2@v1.35.4', 'cp-3@v1.35.4']);
  assert.deepEqual(sim.distinctCalls('Upgrade'), ['Upgrade:cp-1'], 'nothing else was upgraded meanwhile');
});

test('a RollbackSafetyUnknown pause whose verdict turns out unsafe becomes RollbackUnsafe, naming the resources; nothing is rolled back', () => {
  const sim = abortedWhileUpgradeInFlight(2, false);
  assert.equal(sim.status?.pause?.reason, 'RollbackSafetyUnknown');
  sim.land('cp-1');
  sim.reconcile(10_000);
  assert.equal(phase(sim), 'Paused');
  assert.equal(sim.status?.pause?.reason, 'RollbackUnsafe');
  assert.match(sim.status?.pause?.message ?? '', /aborted by the .* annotation \(now\); rollback refused: .*widgets/);
  assert.deepEqual(sim.deliveries('Rollback'), []);
});

test('a resume of a RollbackSafetyUnknown pause continues the upgrade, even once the verdict is known', () => {
  const sim = abortedWhileUpgradeInFlight(2);
  sim.land('cp-1');
  sim.resume();
  sim.autoLand = true;
  sim.reconcile(10_000);
  assert.equal(phase(sim), 'Upgrading');
  assert.equal(sim.runToRest(30, 5000), 'Succeeded');
  assert.deepEqual(sim.deliveries('Rollback'), []);
});

test('a server that joins on the target during a rollback begun with nothing touched is not rolled back while RollbackSafe is False', () => {
  // Gate off: EnablingProxy's first call is in flight when the abort comes, so the rollback starts with no
  // server touched (no verdict judged) and waits for that call.
  const sim = new ShellSim(fleet(2, 'off'), specWith({ strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' } }));
  sim.storageSafe = false;
  sim.autoLand = false;
  sim.runUntil((s) => s.held.has('cp-1'), 6, 1000);
  sim.reconcile(1000);
  abort(sim, 'now');
  sim.reconcile(1000);
  assert.equal(phase(sim), 'RollingBack');
  sim.peers.push(peer('cp-3', NEW, 'on'));
  sim.reconcile(1000);
  assert.equal(sim.status?.pause?.reason, 'MembershipChanged');
  sim.resume();
  sim.reconcile(1000);
  assert.deepEqual(sim.deliveries('Rollback'), [], 'cp-3 writes storage v1.35.4 cannot read: no Rollback');
  assert.equal(phase(sim), 'Paused');
  assert.equal(sim.status?.pause?.reason, 'RollbackUnsafe');
  assert.match(sim.status?.pause?.message ?? '', /rolling back cp-3; rollback refused/);
  assert.equal(sim.condition('RollbackSafe')?.status, 'False');
  // A resume continues the upgrade where it stood: the gate pass, then the batches; cp-3 is already there.
  sim.land('cp-1');
  sim.autoLand = true;
  sim.resume();
  assert.equal(sim.runToRest(60, 5000), 'Succeeded');
  assert.deepEqual(sim.deliveries('Rollback'), []);
  assert.ok(sim.peers.every((p) => p.version === NEW));
});

test('a server that joins on the target during EnablingProxy keeps its version: EnableProxy targets the version it runs', () => {
  const sim = new ShellSim(fleet(2, 'off'), specWith({ strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' } }));
  sim.reconcile(1000);
  assert.equal(phase(sim), 'EnablingProxy');
  sim.peers.push(peer('cp-3', NEW, 'off'));
  sim.reconcile(1000);
  assert.equal(sim.status?.pause?.reason, 'MembershipChanged');
  sim.resume();
  assert.equal(sim.runToRest(60, 5000), 'Succeeded');
  const gateCalls = sim.delivered.filter((r) => r.action === 'EnableProxy');
  assert.deepEqual(gateCalls.map((r) => `${r.server.hostname}@${r.targetVersion}`), ['cp-1@v1.35.4', 'cp-2@v1.35.4', 'cp-3@v1.36.3']);
  assert.deepEqual(sim.distinctCalls('Upgrade'), ['Upgrade:cp-1', 'Upgrade:cp-2']);
  assert.ok(sim.peers.every((p) => p.version === NEW && p.proxyGate === 'on'));
});

test('the held rollback\'s cause is kept in status.pause.heldRollback, not read back from the message: a rewritten message changes nothing', () => {
  const sim = abortedWhileUpgradeInFlight(2);
  assert.match(sim.status?.pause?.heldRollback ?? '', /aborted by the .* annotation \(now\)/);
  // Whatever the message says (a person or a tool may shorten it), the rollback starts with the recorded cause.
  sim.status!.pause!.message = 'rewritten; rollback not started: by hand';
  sim.land('cp-1');
  sim.reconcile(10_000);
  assert.equal(phase(sim), 'RollingBack');
  const rolling = sim.events.find((e) => e.reason === 'RollingBack');
  assert.match(rolling?.note ?? '', /aborted by the .* annotation \(now\); rolling back to v1\.35\.4/);
  assert.doesNotMatch(rolling?.note ?? '', /by hand/);
});

test('a server replaced outside the upgrade after its Upgrade landed (back on the old binary) pauses naming it, and the pause lifts once it is back on the target', () => {
  // Found by the fault campaign (seed 4242 #7): cp-1 restarted on the old binary after its batch; the upgrade waited
  // for it in Upgrading for five minutes with every fault healed, since no batch looks at cp-1 again and the
  // analysis sees a healthy server.
  const sim = new ShellSim(fleet(3), specWith({ strategy: { batchSize: 1, soakDuration: '5s', batchTimeout: '10m' } }));
  sim.autoLand = false;
  sim.runUntil((s) => s.held.has('cp-1'), 8, 1000);
  sim.land('cp-1');
  sim.runUntil((s) => s.held.has('cp-2'), 30, 1000);
  // Someone restarts cp-1 on the old binary (a new process: a new holder) while cp-2 is being replaced.
  sim.peers = sim.peers.map((p) => (p.hostname === 'cp-1' ? { ...p, version: OLD, holderIdentity: `${p.identity}_by-hand` } : p));
  sim.land('cp-2');
  sim.autoLand = true;
  for (let i = 0; i < 40 && phase(sim) !== 'Paused'; i++) sim.reconcile(2000);
  assert.equal(phase(sim), 'Paused', `paused, not waiting for cp-1 forever: ${sim.phases.filter((p, i, a) => p !== a[i - 1]).join(' -> ')}`);
  assert.equal(sim.status?.pause?.reason, 'MembershipChanged');
  assert.match(sim.status?.pause?.message ?? '', /cp-1 runs v1\.35\.\d+ after its Upgrade to v1\.36\.\d+ landed: replaced outside this upgrade/);
  for (let i = 0; i < 10; i++) sim.reconcile(2000);
  assert.equal(phase(sim), 'Paused', 'it stays paused while cp-1 is off its goal');
  assert.deepEqual(sim.distinctCalls('Upgrade').filter((c) => c === 'Upgrade:cp-1'), ['Upgrade:cp-1'], 'cp-1 is not upgraded again behind anyone\'s back');
  // cp-1 brought back to the target by hand: the pause names nothing real any more and lifts; the upgrade ends.
  sim.peers = sim.peers.map((p) => (p.hostname === 'cp-1' ? { ...p, version: NEW, holderIdentity: `${p.identity}_by-hand-2` } : p));
  for (let i = 0; i < 60 && phase(sim) !== 'Succeeded'; i++) sim.reconcile(2000);
  assert.equal(phase(sim), 'Succeeded', sim.phases.filter((p, i, a) => p !== a[i - 1]).join(' -> '));
  assert.deepEqual(versions(sim), ['cp-1@' + NEW, 'cp-2@' + NEW, 'cp-3@' + NEW]);
});

test('a server that goes down while the gate pass restarts another pauses AnalysisBreach within failureLimit checks, not later by membership', () => {
  // Found by the fault campaign on real kubelets (seed 78 #7): cp-1 crash-looped while cp-3's EnableProxy was in
  // flight; the planner ran no analysis in EnablingProxy and only membership saw it, once cp-1's Lease went stale.
  for (const onBreach of ['Pause', 'Rollback'] as const) {
    const sim = new ShellSim(fleet(3, 'off'), specWith({ analysis: { interval: '10s', failureLimit: 3, onBreach } }));
    sim.autoLand = false;
    sim.runUntil((s) => s.held.has('cp-1'), 8, 1000);
    assert.equal(phase(sim), 'EnablingProxy');
    sim.land('cp-1');
    sim.runUntil((s) => s.held.has('cp-2'), 8, 1000);
    // cp-2's EnableProxy hangs; cp-1 (its gate already on) goes down, its Lease still fresh.
    sim.peers = sim.peers.map((p) => (p.hostname === 'cp-1' ? { ...p, ready: false } : p));
    const from = sim.now.getTime();
    for (let i = 0; i < 10 && phase(sim) === 'EnablingProxy'; i++) sim.reconcile(10_000);
    assert.equal(phase(sim), 'Paused', `${onBreach}: ${sim.phases.filter((p, i, a) => p !== a[i - 1]).join(' -> ')}`);
    assert.equal(sim.status?.pause?.reason, 'AnalysisBreach');
    assert.equal(sim.status?.pause?.resumePhase, 'EnablingProxy');
    assert.match(sim.status?.pause?.message ?? '', /serverReady@cp-1/);
    assert.ok(sim.now.getTime() - from <= 4 * 10_000, 'within failureLimit x interval + one interval');
    assert.deepEqual(sim.distinctCalls('Upgrade'), [], 'no version changed');
    assert.deepEqual(sim.distinctCalls('Rollback'), [], 'nothing to roll back: the gate stays on');
  }
});

test('a breaching signal during the gate pass pauses it; a resume continues the gate pass once healthy', () => {
  const sim = new ShellSim(fleet(3, 'off'), specWith({ analysis: { interval: '10s', failureLimit: 2, onBreach: 'Pause' } }));
  sim.runUntil((s) => s.status?.phase === 'EnablingProxy', 8, 1000);
  sim.verdict = 'Breach';
  for (let i = 0; i < 6 && phase(sim) === 'EnablingProxy'; i++) sim.reconcile(10_000);
  assert.equal(sim.status?.pause?.reason, 'AnalysisBreach');
  sim.verdict = 'Healthy';
  sim.resume();
  assert.equal(sim.runToRest(60, 5000), 'Succeeded');
  assert.deepEqual(versions(sim), ['cp-1@' + NEW, 'cp-2@' + NEW, 'cp-3@' + NEW]);
});
