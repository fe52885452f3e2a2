import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sim, peer, spec, storage, OLD, NEW } from './fleet.ts';
import { ABORT_ANNOTATION, RESUME_ANNOTATION, RETRY_ANNOTATION, recordCallOutcome } from '../../src/plan/index.ts';

/** The shell's record of one delivery of the call at `index` of status.driverCalls. */
function answer(sim: Sim, index: number, kind: 'accepted' | 'rejected' | 'transient', message: string = kind): void {
  sim.status = recordCallOutcome(sim.status!, sim.status!.driverCalls![index]!.key, { kind, message }, sim.now);
}

const threeOld = (gate: 'on' | 'off' = 'off') => [peer('cp-1', OLD, gate), peer('cp-2', OLD, gate), peer('cp-3', OLD, gate)];

/** Runs the planner, applying driver calls, until a terminal or paused phase (bounded). */
function runToEnd(sim: Sim, maxSteps = 100): string[] {
  const calls: string[] = [];
  for (let i = 0; i < maxSteps; i++) {
    sim.step();
    calls.push(...sim.calls());
    sim.applyDriverCalls();
    if (['Succeeded', 'RolledBack', 'Failed', 'Paused'].includes(sim.status?.phase ?? '')) break;
  }
  return calls;
}

test('happy path: gate pass server by server, then one server per batch, then Succeeded', () => {
  const sim = new Sim(threeOld('off'));
  const calls = runToEnd(sim);
  assert.deepEqual(calls, ['EnableProxy:cp-1', 'EnableProxy:cp-2', 'EnableProxy:cp-3', 'Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.equal(sim.status?.fromVersion, OLD);
  assert.equal(sim.status?.batch?.progress, '3/3');
  assert.deepEqual(sim.status?.batch?.history?.map((h) => h.result), ['Succeeded', 'Succeeded', 'Succeeded']);
  assert.equal(sim.condition('Complete')?.status, 'True');
  assert.equal(sim.condition('PreflightPassed')?.status, 'True');
  assert.ok(sim.peers.every((p) => p.version === NEW && p.proxyGate === 'on'));
  // Every driver call recorded once, with a distinct key.
  const keys = sim.status?.driverCalls?.map((c) => c.key) ?? [];
  assert.equal(new Set(keys).size, 6);
});

test('gate already on: no proxy pass', () => {
  const sim = new Sim(threeOld('on'));
  assert.deepEqual(runToEnd(sim), ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
});

test('a delivered call is never made twice while the server is still coming back; an undelivered one is re-sent with its key', () => {
  const sim = new Sim(threeOld('off'));
  sim.step(); // Pending -> Preflight -> EnablingProxy
  sim.step();
  assert.deepEqual(sim.calls(), ['EnableProxy:cp-1']);
  assert.equal(sim.status?.driverCalls?.[0]?.result, 'Requested');
  const key = sim.status?.driverCalls?.[0]?.key;
  sim.step();
  assert.deepEqual(sim.calls(), ['EnableProxy:cp-1'], 'still Requested: delivery is retried');
  const again = sim.last.actions.find((a) => a.kind === 'callDriver');
  assert.equal(again?.kind === 'callDriver' ? again.request.idempotencyKey : '', key);
  assert.equal(sim.status?.driverCalls?.length, 1);
  answer(sim, 0, 'accepted'); // the hook accepted it; the server is restarting
  for (let i = 0; i < 5; i++) {
    sim.step();
    assert.deepEqual(sim.calls(), [], 'no second call for the same key');
  }
  assert.equal(sim.status?.peers?.find((p) => p.hostname === 'cp-1')?.state, 'EnablingProxy');
});

test('while a replaced server\'s new process comes up (new Lease holder, not ready) the step looks every 500 ms, else every 2 s', () => {
  const sim = new Sim(threeOld('off').map((p) => ({ ...p, holderIdentity: `${p.identity}_old` })));
  sim.step();
  sim.step();
  assert.deepEqual(sim.calls(), ['EnableProxy:cp-1']);
  answer(sim, 0, 'accepted');
  sim.step();
  assert.equal(sim.last.requeueAfterMs, 2_000, 'accepted, the old process still runs: the normal pace');
  const cp1 = sim.peers.find((p) => p.hostname === 'cp-1')!;
  cp1.holderIdentity = 'apiserver-cp-1_new';
  cp1.ready = false;
  sim.step();
  assert.equal(sim.last.requeueAfterMs, 500, 'the new process is up and not ready yet');
  assert.equal(sim.status?.driverCalls?.[0]?.result, 'Accepted');
  sim.step(121_000);
  assert.equal(sim.last.requeueAfterMs, 2_000, 'not back after two minutes: the normal pace again');
  cp1.ready = true;
  cp1.proxyGate = 'on';
  sim.step();
  assert.equal(sim.status?.driverCalls?.[0]?.result, 'Done', 'the look that finds it back records Done');
});

test('the fast look slows with the fleet: 10 ms per server', () => {
  const many = Array.from({ length: 120 }, (_, i) => peer(`cp-${i + 1}`, OLD, 'on', { holderIdentity: `old-${i}` }));
  const sim = new Sim(many, spec({ strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' } }));
  for (let i = 0; i < 3 && (i === 0 || sim.calls().length === 0); i++) sim.step();
  const call = sim.status?.driverCalls?.[0];
  assert.equal(call?.action, 'Upgrade');
  answer(sim, 0, 'accepted');
  const p = sim.peers.find((x) => x.hostname === call!.server)!;
  p.holderIdentity = 'new';
  p.ready = false;
  sim.step();
  assert.equal(sim.last.requeueAfterMs, 1_200);
});

test('a batch back but not converged is looked at every 500 ms for two minutes, then every 2 s; the soak starts on the look that sees convergence', () => {
  const sim = new Sim(threeOld('on').map((p) => ({ ...p, holderIdentity: `${p.identity}_old` })), spec({ analysis: { interval: '10s', failureLimit: 3, onBreach: 'Pause', thresholds: { discoveryConvergence: '10m' } } }));
  for (let i = 0; i < 5 && (i === 0 || sim.calls().length === 0); i++) sim.step();
  assert.deepEqual(sim.calls(), ['Upgrade:cp-1']);
  sim.extra = { ...sim.extra, discovery: { converged: false, message: 'cp-2 does not list the v1.36 resources yet' } };
  sim.applyDriverCalls();
  sim.step();
  assert.equal(sim.status?.driverCalls?.[0]?.result, 'Done');
  assert.equal(sim.condition('DiscoveryConverged')?.status, 'False');
  assert.equal(sim.last.requeueAfterMs, 500);
  sim.step(119_000);
  assert.equal(sim.last.requeueAfterMs, 500);
  sim.step(2_000);
  assert.equal(sim.last.requeueAfterMs, 2_000, 'not converged after two minutes: the normal pace');
  sim.extra = { ...sim.extra, discovery: { converged: true, message: 'converged' } };
  sim.step();
  assert.equal(sim.condition('DiscoveryConverged')?.status, 'True');
  assert.ok(sim.status?.batch?.soakUntil !== undefined || (sim.status?.batch?.history?.length ?? 0) > 0, 'the soak started (or, with soak 0s, the batch ended) on that look');
});

test('batch size 2 of 3 makes two batches; 50% of 3 makes batches of one', () => {
  const two = new Sim(threeOld('on'), spec({ strategy: { batchSize: 2, soakDuration: '0s' } }));
  two.step();
  two.step();
  assert.deepEqual(two.calls(), ['Upgrade:cp-1', 'Upgrade:cp-2']);
  assert.equal(two.status?.batch?.total, 2);
  const half = new Sim(threeOld('on'), spec({ strategy: { batchSize: '50%', soakDuration: '0s' } }));
  half.step();
  assert.equal(half.status?.batch?.total, 3);
});

test('soak holds the next batch until soakDuration has passed', () => {
  const sim = new Sim(threeOld('on'), spec({ strategy: { batchSize: 1, soakDuration: '2m' } }));
  sim.step();
  sim.step();
  sim.applyDriverCalls();
  sim.step();
  assert.ok(sim.status?.batch?.soakUntil, 'soak started');
  sim.step(60_000);
  assert.deepEqual(sim.calls(), []);
  assert.equal(sim.status?.batch?.current, 1);
  sim.step(61_000);
  assert.equal(sim.status?.batch?.current, 2);
  assert.deepEqual(sim.calls(), ['Upgrade:cp-2']);
});

const preflightCases: { name: string; peers: ReturnType<typeof threeOld>; target?: string; phase: string; reason: string }[] = [
  { name: 'skipping a minor fails', peers: threeOld(), target: 'v1.37.2', phase: 'Failed', reason: 'SkipsMinor' },
  { name: 'a downgrade fails', peers: threeOld(), target: 'v1.34.4', phase: 'Failed', reason: 'Downgrade' },
  { name: 'mixed versions wait in Preflight', peers: [peer('cp-1', OLD), peer('cp-2', NEW), peer('cp-3', OLD)], phase: 'Preflight', reason: 'MixedVersions' },
  { name: 'a not-ready server waits in Preflight', peers: [peer('cp-1', OLD), peer('cp-2', OLD, 'off', { ready: false }), peer('cp-3', OLD)], phase: 'Preflight', reason: 'UnhealthyFleet' },
  { name: 'a stale lease waits in Preflight', peers: [peer('cp-1', OLD), peer('cp-2', OLD, 'off', { stale: true }), peer('cp-3', OLD)], phase: 'Preflight', reason: 'UnhealthyFleet' },
  { name: 'no servers waits in Preflight', peers: [], phase: 'Preflight', reason: 'NoServers' },
  { name: 'unknown gate state waits in Preflight', peers: [peer('cp-1', OLD, 'unknown'), peer('cp-2', OLD), peer('cp-3', OLD)], phase: 'Preflight', reason: 'ProxyGateUnknown' },
  { name: 'already at target succeeds at once', peers: [peer('cp-1', NEW), peer('cp-2', NEW)], phase: 'Succeeded', reason: 'AlreadyAtTarget' },
];
for (const c of preflightCases) {
  test(`preflight: ${c.name}, touching nothing`, () => {
    const sim = new Sim(c.peers, spec(c.target ? { targetVersion: c.target } : {}));
    sim.step();
    sim.step();
    assert.equal(sim.status?.phase, c.phase);
    assert.equal(sim.condition('PreflightPassed')?.reason, c.reason);
    assert.deepEqual(sim.calls(), []);
    assert.equal(sim.status?.driverCalls, undefined);
  });
}

test('preflight: Unmanaged gate with the gate off proceeds without a proxy pass, with a warning', () => {
  const sim = new Sim(threeOld('off'), spec({ proxy: { gate: 'Unmanaged' } }));
  sim.step();
  assert.equal(sim.status?.phase, 'Upgrading');
  assert.match(sim.condition('PreflightPassed')?.message ?? '', /WARNING: proxy gate off/);
});

test('patch upgrade with Auto gate needs no proxy pass', () => {
  const sim = new Sim(threeOld('off'), spec({ targetVersion: 'v1.35.5' }));
  sim.step();
  assert.equal(sim.status?.phase, 'Upgrading');
});

function breach(sim: Sim, n: number, verdict: 'Breach' | 'Healthy' | 'Inconclusive' = 'Breach'): void {
  sim.extra.analysis = {
    time: new Date(sim.now.getTime() + n).toISOString(),
    verdict,
    signals: { proxyErrorRatio: verdict === 'Breach' ? 0.4 : 0 },
    breaches: verdict === 'Breach' ? [{ signal: 'proxyErrorRatio', observed: '0.4', threshold: '0.01', server: 'cp-2' }] : [],
  };
}

test('analysis: failureLimit consecutive breaches pause; inconclusive neither counts nor resets; healthy resets', () => {
  const sim = new Sim(threeOld('on'));
  sim.step();
  sim.step();
  const seq: ('Breach' | 'Healthy' | 'Inconclusive')[] = ['Breach', 'Breach', 'Healthy', 'Breach', 'Inconclusive', 'Breach'];
  const counts: number[] = [];
  for (const [i, v] of seq.entries()) {
    breach(sim, i + 1, v);
    sim.step();
    counts.push(sim.status?.lastAnalysis?.consecutiveBreaches ?? -1);
    assert.equal(sim.status?.phase, 'Upgrading');
  }
  assert.deepEqual(counts, [1, 2, 0, 1, 1, 2]);
  breach(sim, 99);
  sim.step();
  assert.equal(sim.status?.phase, 'Paused');
  assert.equal(sim.status?.pause?.reason, 'AnalysisBreach');
  assert.equal(sim.condition('Paused')?.status, 'True');
  assert.equal(sim.condition('Degraded')?.status, 'True');
  assert.match(sim.status?.pause?.message ?? '', /proxyErrorRatio@cp-2 0.4 > 0.01/);
  // The same analysis seen again is not a new check.
  sim.step();
  assert.equal(sim.status?.phase, 'Paused');
  assert.deepEqual(sim.calls(), []);
});

test('a soak that runs out while checks breach is extended until a healthy check, and never widens the upgrade', () => {
  const sim = new Sim(threeOld('on'), spec({ strategy: { batchSize: 1, soakDuration: '30s', batchTimeout: '10m' }, analysis: { interval: '10s', failureLimit: 3, onBreach: 'Pause' } }));
  sim.step();
  sim.step();
  sim.applyDriverCalls(); // cp-1 is back on the target and soaks
  sim.step();
  assert.ok(sim.status?.batch?.soakUntil);
  breach(sim, 1);
  sim.step(31_000); // the soak has run out, one breaching check in
  assert.equal(sim.status?.batch?.current, 1, 'batch 1 holds');
  assert.deepEqual(sim.calls(), [], 'no call for batch 2');
  assert.match(sim.condition('Progressing')?.message ?? '', /soak of batch 1 extended: 1 of 3 breaching checks \(proxyErrorRatio@cp-2 0.4 > 0.01\)/);
  const extended = () => sim.last.actions.filter((a) => a.kind === 'event' && a.reason === 'SoakExtended').length;
  assert.equal(extended(), 1, 'an event when the hold starts');
  sim.step(10_000); // the same check again: no new event
  assert.equal(extended(), 0);
  breach(sim, 2, 'Inconclusive'); // no data: the streak stands, the hold too
  sim.step(10_000);
  assert.equal(sim.status?.batch?.current, 1);
  assert.equal(extended(), 0);
  breach(sim, 3);
  sim.step(10_000);
  assert.equal(sim.status?.lastAnalysis?.consecutiveBreaches, 2);
  assert.equal(extended(), 1, 'an event per further breaching check');
  breach(sim, 4, 'Healthy'); // the streak ends: batch 1 finishes and batch 2 starts
  sim.step(10_000);
  assert.equal(sim.status?.batch?.current, 2);
  assert.deepEqual(sim.calls(), ['Upgrade:cp-2']);
  assert.equal(sim.condition('Progressing')?.message, 'batch 2: replacing cp-2');
});

test('a held soak ends in onBreach when the streak reaches failureLimit', () => {
  const sim = new Sim(threeOld('on'), spec({ strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' }, analysis: { interval: '10s', failureLimit: 2, onBreach: 'Pause' } }));
  sim.step();
  sim.step();
  sim.applyDriverCalls();
  breach(sim, 1);
  sim.step();
  assert.equal(sim.status?.batch?.current, 1);
  breach(sim, 2);
  sim.step(10_000);
  assert.equal(sim.status?.phase, 'Paused');
  assert.equal(sim.status?.pause?.reason, 'AnalysisBreach');
  assert.deepEqual(sim.calls(), []);
});

test('an automatic pause ends only when the resume annotation takes a new value', () => {
  const sim = new Sim(threeOld('on'), spec({ analysis: { failureLimit: 1, onBreach: 'Pause' } }));
  sim.step();
  breach(sim, 1);
  sim.step();
  assert.equal(sim.status?.phase, 'Paused');
  sim.upgrade = { ...sim.upgrade, annotations: { [RESUME_ANNOTATION]: 'ack-1' } };
  sim.step();
  assert.equal(sim.status?.phase, 'Upgrading');
  assert.equal(sim.status?.observedResume, 'ack-1');
  assert.equal(sim.condition('Paused')?.status, 'False');
  breach(sim, 2);
  sim.step();
  assert.equal(sim.status?.phase, 'Paused');
  sim.step();
  assert.equal(sim.status?.phase, 'Paused', 'the old annotation value does not resume a new pause');
});

test('spec.paused pauses without driver calls and unpausing returns to the same phase', () => {
  const sim = new Sim(threeOld('off'));
  sim.step();
  assert.equal(sim.status?.phase, 'EnablingProxy');
  sim.spec = { ...sim.spec, paused: true };
  sim.step();
  assert.equal(sim.status?.phase, 'Paused');
  assert.equal(sim.status?.pause?.reason, 'PausedBySpec');
  assert.deepEqual(sim.calls(), []);
  sim.spec = { ...sim.spec, paused: false };
  sim.step();
  assert.equal(sim.status?.phase, 'EnablingProxy');
  assert.deepEqual(sim.calls(), ['EnableProxy:cp-1']);
});

test('onBreach Rollback: rolls the upgraded servers back to the old version and ends RolledBack', () => {
  const sim = new Sim(threeOld('on'), spec({ analysis: { failureLimit: 1, onBreach: 'Rollback' } }));
  sim.step();
  sim.step();
  sim.applyDriverCalls(); // cp-1 upgraded
  sim.step(); // back: batch 1 waits for a check taken after that
  sim.step();
  assert.deepEqual(sim.calls(), ['Upgrade:cp-2']);
  sim.applyDriverCalls(); // cp-2 upgraded
  breach(sim, 1);
  sim.step();
  assert.equal(sim.status?.phase, 'RollingBack');
  const calls = runToEnd(sim);
  assert.deepEqual(calls, ['Rollback:cp-2', 'Rollback:cp-1'], 'newest batch first');
  assert.equal(sim.status?.phase, 'RolledBack');
  assert.ok(sim.peers.every((p) => p.version === OLD));
});

test('onBreach Rollback refused when storage moved: pause and name the resources', () => {
  const sim = new Sim(threeOld('on'), spec({ analysis: { failureLimit: 1, onBreach: 'Rollback' } }));
  // The new version stores mutatingadmissionpolicies as v1, a version the old one does not serve.
  const policies = 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies';
  sim.extra.storage = [storage(OLD, 'cp-1', { 'admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies': 'old-hash' }), storage(NEW, 'cp-1', { [policies]: 'new-hash' })];
  sim.step();
  sim.step();
  sim.applyDriverCalls(); // cp-1 upgraded: the new version's storage is read from it
  sim.step();
  breach(sim, 1);
  sim.step();
  assert.equal(sim.status?.phase, 'Paused');
  assert.equal(sim.status?.pause?.reason, 'RollbackUnsafe');
  assert.deepEqual(sim.status?.rollbackBlockedBy, ['admissionregistration.k8s.io/mutatingadmissionpolicies']);
  assert.equal(sim.condition('RollbackSafe')?.status, 'False');
});

test('a server that does not come back within batchTimeout pauses the upgrade', () => {
  const sim = new Sim(threeOld('on'), spec({ strategy: { batchSize: 1, batchTimeout: '1m', soakDuration: '0s' } }));
  sim.step();
  sim.step();
  assert.deepEqual(sim.calls(), ['Upgrade:cp-1']);
  sim.step(30_000);
  assert.equal(sim.status?.phase, 'Upgrading');
  sim.step(31_000);
  assert.equal(sim.status?.phase, 'Paused');
  assert.equal(sim.status?.pause?.reason, 'BatchTimeout');
});

test('a failed driver call pauses with its message', () => {
  const sim = new Sim(threeOld('on'));
  sim.step();
  sim.step();
  answer(sim, 0, 'rejected', 'HTTP 400 from hook');
  sim.step();
  assert.equal(sim.status?.phase, 'Paused');
  assert.equal(sim.status?.pause?.reason, 'DriverFailed');
  assert.match(sim.status?.pause?.message ?? '', /HTTP 400 from hook/);
});

test('discovery that does not converge within its threshold pauses', () => {
  const sim = new Sim(threeOld('on'), spec({ analysis: { thresholds: { discoveryConvergence: '1m' } } }));
  sim.extra.discovery = { converged: false, message: 'cp-1 peer-aggregated /apis misses mutatingadmissionpolicies' };
  sim.step();
  sim.step();
  sim.applyDriverCalls();
  sim.step();
  assert.equal(sim.condition('DiscoveryConverged')?.status, 'False');
  sim.step(30_000);
  assert.equal(sim.status?.phase, 'Upgrading');
  sim.step(31_000);
  assert.equal(sim.status?.phase, 'Paused');
  assert.equal(sim.status?.pause?.reason, 'DiscoveryNotConverged');
});

test('a server missing from the observation mid-restart stays in the table, not ready', () => {
  const sim = new Sim(threeOld('on'));
  sim.step();
  sim.step();
  sim.peers = sim.peers.filter((p) => p.hostname !== 'cp-1');
  sim.step();
  const row = sim.status?.peers?.find((p) => p.hostname === 'cp-1');
  assert.equal(row?.ready, false);
  assert.equal(sim.status?.peers?.length, 3);
  assert.equal(sim.status?.phase, 'Upgrading');
});

test('terminal phases do nothing more', () => {
  const sim = new Sim(threeOld('on'));
  runToEnd(sim);
  assert.equal(sim.status?.phase, 'Succeeded');
  const p = sim.step();
  assert.deepEqual(p.actions, []);
  assert.equal(p.requeueAfterMs, undefined);
});

test('an invalid spec is reported as Degraded InvalidSpec and nothing happens', () => {
  const sim = new Sim(threeOld('on'), spec({ targetVersion: 'latest' }));
  const p = sim.step();
  assert.equal(sim.condition('Degraded')?.reason, 'InvalidSpec');
  assert.equal(p.actions.filter((a) => a.kind === 'callDriver').length, 0);
});

test('resuming a DriverFailed pause retries that step under a new key; the failed call stays on record', () => {
  const sim = new Sim(threeOld('on'));
  sim.step();
  sim.step();
  answer(sim, 0, 'rejected', 'HTTP 400');
  sim.step();
  assert.equal(sim.status?.pause?.reason, 'DriverFailed');
  sim.upgrade = { ...sim.upgrade, annotations: { [RESUME_ANNOTATION]: 'fixed-the-hook' } };
  sim.step();
  assert.equal(sim.status?.phase, 'Upgrading');
  assert.deepEqual(sim.calls(), ['Upgrade:cp-1']);
  const calls = sim.status!.driverCalls!;
  assert.equal(calls.length, 2);
  assert.equal(calls[0]!.result, 'Rejected', 'a finished call keeps its result');
  assert.notEqual(calls[1]!.key, calls[0]!.key);
  sim.applyDriverCalls();
  assert.deepEqual(runToEnd(sim), ['Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.equal(sim.status?.phase, 'Succeeded');
});

test('resuming a BatchTimeout pause re-sends the step for the server that never came back, not for the others', () => {
  const sim = new Sim(threeOld('on'), spec({ strategy: { batchSize: 2, batchTimeout: '1m', soakDuration: '0s' } }));
  sim.step();
  sim.step();
  assert.deepEqual(sim.calls(), ['Upgrade:cp-1', 'Upgrade:cp-2']);
  // cp-1 comes back; cp-2 never does.
  answer(sim, 0, 'accepted');
  answer(sim, 1, 'accepted');
  Object.assign(sim.peers.find((p) => p.hostname === 'cp-1')!, { version: NEW, holderIdentity: 'restarted' });
  sim.step(61_000);
  assert.equal(sim.status?.pause?.reason, 'BatchTimeout');
  sim.upgrade = { ...sim.upgrade, annotations: { [RESUME_ANNOTATION]: '1' } };
  sim.step();
  assert.deepEqual(sim.calls(), ['Upgrade:cp-2']);
  assert.deepEqual(sim.status!.driverCalls!.map((c) => `${c.server}:${c.result}`), ['cp-1:Done', 'cp-2:TimedOut', 'cp-2:Requested']);
});

test('revertAfter turns the gate back off after a patch upgrade where the target still has it alpha', () => {
  const sim = new Sim(threeOld('off'), spec({ targetVersion: 'v1.35.5', proxy: { gate: 'Enabled', revertAfter: true } }));
  const calls = runToEnd(sim);
  assert.deepEqual(calls, [
    'EnableProxy:cp-1', 'EnableProxy:cp-2', 'EnableProxy:cp-3',
    'Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3',
    'RevertProxy:cp-1', 'RevertProxy:cp-2', 'RevertProxy:cp-3',
  ]);
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.ok(sim.peers.every((p) => p.version === 'v1.35.5' && p.proxyGate === 'off'));
});

test('revertAfter does nothing where the target has the gate on by default (beta from 1.36)', () => {
  const sim = new Sim(threeOld('off'), spec({ proxy: { gate: 'Auto', revertAfter: true } }));
  assert.ok(runToEnd(sim).every((c) => !c.startsWith('RevertProxy')));
  assert.equal(sim.status?.phase, 'Succeeded');
});

test('abort mid-upgrade rolls back now, through the same safety checks; a second abort value while rolling back changes nothing', () => {
  const sim = new Sim(threeOld('on'));
  sim.step();
  sim.step();
  sim.applyDriverCalls(); // cp-1 upgraded
  sim.step();
  sim.step();
  sim.applyDriverCalls(); // cp-2 upgraded
  sim.upgrade = { ...sim.upgrade, annotations: { [ABORT_ANNOTATION]: 'a1' } };
  sim.step();
  assert.equal(sim.status?.phase, 'RollingBack');
  assert.equal(sim.status?.observedAbort, 'a1');
  assert.equal(sim.condition('Degraded')?.reason, 'Aborted');
  assert.deepEqual(runToEnd(sim), ['Rollback:cp-2', 'Rollback:cp-1']);
  assert.equal(sim.status?.phase, 'RolledBack');
  assert.ok(sim.peers.every((p) => p.version === OLD));
});

test('abort with unknown rollback safety pauses (RollbackSafetyUnknown) instead of rolling back', () => {
  const sim = new Sim(threeOld('on'));
  sim.extra.storage = [storage(OLD)]; // no server of the target version was ever read
  sim.step();
  sim.step();
  sim.applyDriverCalls();
  sim.peers.find((p) => p.hostname === 'cp-1')!.ready = false; // the only new server is down
  sim.upgrade = { ...sim.upgrade, annotations: { [ABORT_ANNOTATION]: 'now' } };
  sim.step();
  assert.equal(sim.status?.phase, 'Paused');
  assert.equal(sim.status?.pause?.reason, 'RollbackSafetyUnknown');
  assert.equal(sim.condition('RollbackSafe')?.status, 'Unknown');
  assert.deepEqual(sim.calls(), []);
});

test('abort before anything was touched ends RolledBack at once, with no call', () => {
  const sim = new Sim(threeOld('on'), spec({ paused: true }));
  sim.step();
  assert.equal(sim.status?.phase, 'Paused');
  sim.upgrade = { ...sim.upgrade, annotations: { [ABORT_ANNOTATION]: 'x' } };
  sim.step();
  assert.equal(sim.status?.phase, 'RolledBack');
  assert.equal(sim.status?.driverCalls, undefined);
});

test('retry re-runs a Failed upgrade from preflight; a retry value seen before the failure does not', () => {
  const sim = new Sim(threeOld('on'), spec({ targetVersion: 'v1.37.2' }));
  sim.upgrade = { ...sim.upgrade, annotations: { [RETRY_ANNOTATION]: 'early' } };
  sim.step();
  assert.equal(sim.status?.phase, 'Failed');
  sim.step();
  assert.equal(sim.status?.phase, 'Failed', 'the value recorded before the failure does not retry');
  // The fleet was moved to v1.36 by hand meanwhile: the retry's preflight now passes.
  for (const p of sim.peers) p.version = NEW;
  sim.extra.storage = [storage(NEW)];
  sim.upgrade = { ...sim.upgrade, annotations: { [RETRY_ANNOTATION]: 'again' } };
  sim.step();
  assert.equal(sim.status?.observedRetry, 'again');
  assert.equal(sim.status?.phase, 'Upgrading');
  assert.deepEqual(sim.calls(), ['Upgrade:cp-1']);
});

test('created paused, preflight runs again at each step until it passes: the plan is frozen, the pause kept, nothing called', () => {
  const sim = new Sim(threeOld('off'), spec({ paused: true }));
  // The first look has no storage hashes yet (a new operator's first observation): preflight only waits.
  sim.extra.storage = [];
  sim.step();
  assert.equal(sim.status?.phase, 'Paused');
  assert.deepEqual([sim.condition('PreflightPassed')?.status, sim.condition('PreflightPassed')?.reason], ['False', 'StorageVersionsUnknown']);
  assert.equal(sim.status?.pause?.resumePhase, 'Preflight');
  const since = sim.status?.pause?.since;
  sim.extra.storage = [storage(OLD), storage(NEW)];
  sim.step();
  assert.equal(sim.status?.phase, 'Paused', 'still held by the spec');
  assert.deepEqual([sim.condition('PreflightPassed')?.status, sim.condition('PreflightPassed')?.reason], ['True', 'Passed']);
  assert.equal(sim.status?.pause?.resumePhase, 'EnablingProxy', 'resumes where the passed preflight leads: the gate is off');
  assert.equal(sim.status?.pause?.since, since, 'the same pause');
  assert.equal(sim.status?.plan?.batches?.length, 3);
  assert.deepEqual(sim.calls(), []);
  sim.spec = { ...sim.spec, paused: false };
  sim.step();
  assert.equal(sim.status?.phase, 'EnablingProxy');
  assert.equal(sim.calls().length, 1, 'let go: the first gate call');
});
