// One test per defect of the planner found in review (the numbers are the review's), each a concrete
// sequence through the shell protocol (ShellSim: plan, persist, deliver, record the outcome). Each failed
// on the planner of c59126e and holds the design: docs/lifecycle.md and the planner rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiServerUpgradeSpec } from '../../src/api/types.generated.ts';
import { plan, type ObservedPeer } from '../../src/plan/index.ts';
import { kubeadmFacts, peer, spec, OLD, NEW } from './fleet.ts';
import { ShellSim } from './model/shell-sim.ts';

const TERMINAL = ['Succeeded', 'RolledBack', 'Failed'];

function fleet(n: number, version = OLD, gate: ObservedPeer['proxyGate'] = 'on'): ObservedPeer[] {
  return Array.from({ length: n }, (_, i) => peer(`cp-${i + 1}`, version, gate));
}

function specWith(over: { strategy?: ApiServerUpgradeSpec['strategy']; analysis?: ApiServerUpgradeSpec['analysis']; proxy?: ApiServerUpgradeSpec['proxy'] } & Partial<ApiServerUpgradeSpec> = {}): ApiServerUpgradeSpec {
  const base = spec();
  return {
    ...base,
    ...over,
    strategy: { ...base.strategy, ...over.strategy },
    analysis: { ...base.analysis, ...over.analysis },
  };
}

const callsOf = (sim: ShellSim) => sim.last.actions.flatMap((a) => (a.kind === 'callDriver' ? [a.request] : []));
const phase = (sim: ShellSim) => sim.status?.phase ?? 'Pending';

/** Runs to a terminal phase, resuming each pause (at most `resumes` times); returns the pauses seen. */
function runResuming(sim: ShellSim, resumes = 3, max = 150, advanceMs = 10_000): string[] {
  const pauses: string[] = [];
  for (let i = 0; i < max && !TERMINAL.includes(phase(sim)); i++) {
    sim.reconcile(advanceMs);
    if (phase(sim) === 'Paused') {
      pauses.push(`${sim.status?.pause?.reason}: ${sim.status?.pause?.message ?? ''}`);
      if (pauses.length > resumes) break;
      sim.resume();
    }
  }
  return pauses;
}

test('defect 1: rollback waits for the call in flight, then rolls back every server that had an Upgrade call, one at a time; a step that stops emits no call', async (t) => {
  await t.test('a replacement in flight is not skipped', () => {
    const sim = new ShellSim(fleet(3), specWith({ strategy: { batchSize: 2, soakDuration: '0s', batchTimeout: '10m' }, analysis: { failureLimit: 1, onBreach: 'Rollback' } }));
    sim.autoLand = false;
    sim.runUntil((s) => s.held.has('cp-1') && s.held.has('cp-2'), 6, 1000);
    assert.deepEqual(sim.distinctCalls('Upgrade'), ['Upgrade:cp-1', 'Upgrade:cp-2']);
    sim.land('cp-1'); // cp-1 is back on the target; cp-2's replacement is accepted and has not even stopped it yet
    sim.reconcile(1000);
    sim.verdict = 'Breach';
    sim.reconcile(10_000);
    assert.equal(phase(sim), 'RollingBack');
    for (let i = 0; i < 5; i++) {
      sim.reconcile(5000);
      assert.deepEqual(sim.deliveries('Rollback'), [], 'no Rollback while cp-2\'s Upgrade is in flight');
      assert.notEqual(phase(sim), 'RolledBack', 'not RolledBack while cp-2\'s Upgrade is in flight');
    }
    sim.land('cp-2'); // the replacement lands after all, on the target
    sim.autoLand = true;
    const maxPerStep = { n: 0 };
    for (let i = 0; i < 40 && !TERMINAL.includes(phase(sim)); i++) {
      sim.reconcile(5000);
      maxPerStep.n = Math.max(maxPerStep.n, callsOf(sim).filter((c) => c.action === 'Rollback').length);
    }
    assert.equal(phase(sim), 'RolledBack');
    assert.deepEqual(new Set(sim.distinctCalls('Rollback')), new Set(['Rollback:cp-1', 'Rollback:cp-2']));
    assert.equal(maxPerStep.n, 1, 'one server at a time');
    assert.deepEqual(sim.peers.map((p) => `${p.hostname}@${p.version}`), ['cp-1@v1.35.4', 'cp-2@v1.35.4', 'cp-3@v1.35.4']);
  });

  await t.test('the step that pauses on BatchTimeout does not re-send the call', () => {
    const sim = new ShellSim(fleet(1), specWith({ strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '1m' } }));
    sim.driverMode = 'unreachable'; // the Upgrade call stays Requested
    sim.runUntil((s) => s.deliveries('Upgrade').length > 0, 5, 1000);
    sim.reconcile(61_000);
    assert.equal(phase(sim), 'Paused');
    assert.deepEqual(callsOf(sim).map((c) => c.action), [], 'a step ending Paused emits no call');
  });

  await t.test('the step that turns to rollback on BatchTimeout does not re-send the Upgrade', () => {
    const sim = new ShellSim(fleet(1), specWith({ strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '1m' }, analysis: { failureLimit: 1, onBreach: 'Rollback' } }));
    sim.driverMode = 'unreachable';
    sim.runUntil((s) => s.deliveries('Upgrade').length > 0, 5, 1000);
    sim.reconcile(61_000);
    assert.ok(['Paused', 'RollingBack'].includes(phase(sim)), `phase ${phase(sim)}`);
    assert.deepEqual(callsOf(sim).filter((c) => c.action !== 'Rollback').map((c) => c.action), [], `a step ending ${phase(sim)} emits only Rollback calls`);
  });
});

test('defect 2: rollback safety is judged from the from-version storage recorded at preflight, never fails open', async (t) => {
  const rollbackSpec = () => specWith({ strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' }, analysis: { failureLimit: 1, onBreach: 'Rollback' } });

  await t.test('unsafe: after a leader change with no old server up, the breach pauses RollbackUnsafe', () => {
    const sim = new ShellSim(fleet(2), rollbackSpec());
    sim.storageSafe = false;
    sim.runUntil((s) => s.held.has('cp-2'), 20, 5000); // cp-1 upgraded, cp-2's replacement accepted
    sim.autoLand = false;
    sim.stop('cp-2'); // no server of the old version is up now; a new leader's observer never saw one
    sim.verdict = 'Breach';
    sim.reconcile(10_000);
    assert.equal(phase(sim), 'Paused');
    assert.equal(sim.status?.pause?.reason, 'RollbackUnsafe');
    assert.equal(sim.condition('RollbackSafe')?.status, 'False');
    for (let i = 0; i < 3; i++) sim.reconcile(10_000);
    assert.deepEqual(sim.deliveries('Rollback'), []);
  });

  await t.test('unknown: the target version\'s storage never read, the breach pauses RollbackSafetyUnknown', () => {
    const sim = new ShellSim(fleet(2), rollbackSpec());
    sim.runUntil((s) => s.deliveries('Upgrade').length > 0, 6, 1000);
    sim.readStorage = false; // from here on no storage read is complete
    sim.runUntil((s) => s.held.has('cp-2'), 20, 5000);
    sim.autoLand = false;
    sim.stop('cp-2');
    sim.verdict = 'Breach';
    sim.reconcile(10_000);
    assert.equal(phase(sim), 'Paused');
    assert.equal(sim.status?.pause?.reason, 'RollbackSafetyUnknown');
    assert.equal(sim.condition('RollbackSafe')?.status, 'Unknown');
    assert.deepEqual(sim.deliveries('Rollback'), []);
  });

  await t.test('preflight does not pass before the from-version storage was read', () => {
    const sim = new ShellSim(fleet(2));
    sim.readStorage = false;
    for (let i = 0; i < 3; i++) sim.reconcile(5000);
    assert.deepEqual(sim.delivered, []);
    assert.notEqual(sim.condition('PreflightPassed')?.status, 'True');
    assert.ok(['Pending', 'Preflight'].includes(phase(sim)), `phase ${phase(sim)}`);
  });
});

test('defect 3: a server not ready for one observation mid-soak is one breaching check, not a BatchTimeout', () => {
  const sim = new ShellSim(fleet(2), specWith({ strategy: { batchSize: 1, soakDuration: '2m', batchTimeout: '1m' }, analysis: { failureLimit: 3 } }));
  sim.runUntil((s) => s.peerOf('cp-1')?.version === NEW, 10, 5000);
  sim.reconcile(5000);
  sim.reconcile(70_000); // past batchTimeout since cp-1's call; cp-1 has been back for a while, soaking
  assert.equal(phase(sim), 'Upgrading');
  sim.peerOf('cp-1')!.ready = false;
  sim.reconcile(10_000);
  assert.equal(phase(sim), 'Upgrading', `one not-ready observation paused the upgrade: ${sim.status?.pause?.reason}`);
  sim.peerOf('cp-1')!.ready = true;
  assert.equal(sim.runToRest(60, 10_000), 'Succeeded');
  assert.ok(!sim.phases.some((p) => p.startsWith('Paused')), `paused: ${sim.phases.filter((p) => p.startsWith('Paused')).join(', ')}`);
});

test('defect 4: a resume annotation set before a pause does not resume it', () => {
  const sim = new ShellSim(fleet(2), specWith({ strategy: { batchSize: 1, soakDuration: '5m', batchTimeout: '10m' }, analysis: { failureLimit: 1 } }));
  sim.reconcile(1000);
  sim.reconcile(1000);
  sim.resume('ack-early'); // set while Upgrading (or left over from an earlier pause)
  sim.reconcile(1000);
  assert.equal(sim.status?.observedResume, 'ack-early', 'the annotation is recorded whenever it changes');
  sim.verdict = 'Breach';
  sim.reconcile(10_000);
  assert.equal(phase(sim), 'Paused');
  sim.verdict = 'Healthy';
  for (let i = 0; i < 3; i++) {
    sim.reconcile(10_000);
    assert.equal(phase(sim), 'Paused', 'the stale annotation does not resume the new pause');
  }
  sim.resume('ack-2');
  sim.reconcile(1000);
  assert.notEqual(phase(sim), 'Paused', 'a new value does');
});

test('defect 5: a resume never ends a batch on the breaching check it paused for', () => {
  const sim = new ShellSim(fleet(2), specWith({ strategy: { batchSize: 1, soakDuration: '30s', batchTimeout: '10m' }, analysis: { failureLimit: 2 } }));
  sim.checks = false;
  let n = 0;
  const check = (verdict: 'Healthy' | 'Breach') => {
    sim.extra.analysis = {
      time: new Date(sim.now.getTime() + ++n).toISOString(),
      verdict,
      signals: { proxyErrorRatio: verdict === 'Breach' ? 0.4 : 0 },
      breaches: verdict === 'Breach' ? [{ signal: 'proxyErrorRatio', observed: '0.4', threshold: '0.01', server: 'cp-1' }] : [],
    };
  };
  sim.runUntil((s) => s.peerOf('cp-1')?.version === NEW, 10, 2000);
  sim.reconcile(2000);
  check('Breach');
  sim.reconcile(5000);
  check('Breach');
  sim.reconcile(5000);
  assert.equal(phase(sim), 'Paused');
  assert.equal(sim.status?.pause?.reason, 'AnalysisBreach');
  sim.reconcile(60_000); // the soak's time has long passed
  sim.resume();
  sim.reconcile(1000);
  assert.equal(phase(sim), 'Upgrading');
  for (let i = 0; i < 3; i++) sim.reconcile(5000); // no new check since the resume: the last one breached
  assert.deepEqual(sim.deliveries('Upgrade').filter((c) => c === 'Upgrade:cp-2'), [], 'batch 2 must wait for a healthy check newer than the resume');
  assert.deepEqual(sim.status?.batch?.history ?? [], [], 'batch 1 has not ended');
  for (let i = 0; i < 10 && !sim.deliveries('Upgrade').includes('Upgrade:cp-2'); i++) {
    check('Healthy');
    sim.reconcile(10_000);
  }
  assert.ok(sim.deliveries('Upgrade').includes('Upgrade:cp-2'), 'healthy checks after the resume let batch 2 start');
});

test('defect 6: editing strategy.batchSize mid-upgrade re-splits the remaining servers and skips none', () => {
  const sim = new ShellSim(fleet(4));
  sim.runUntil((s) => s.deliveries('Upgrade').includes('Upgrade:cp-2'), 20, 5000);
  sim.editSpec({ strategy: { ...sim.spec.strategy, batchSize: 2 } });
  assert.equal(sim.runToRest(60, 10_000), 'Succeeded');
  assert.deepEqual(sim.peers.map((p) => `${p.hostname}@${p.version}`), ['cp-1@v1.36.3', 'cp-2@v1.36.3', 'cp-3@v1.36.3', 'cp-4@v1.36.3']);
  assert.deepEqual(new Set(sim.distinctCalls('Upgrade')), new Set(['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3', 'Upgrade:cp-4']));
});

test('defect 7: batch history has one record per batch and BatchSucceeded is emitted once per batch', () => {
  const sim = new ShellSim(fleet(3, OLD, 'off'), specWith({ targetVersion: 'v1.35.5', proxy: { gate: 'Enabled', revertAfter: true, allowAlphaGate: true } }));
  assert.equal(sim.runToRest(100, 5000), 'Succeeded');
  assert.deepEqual(sim.status?.batch?.history?.map((h) => h.index), [1, 2, 3]);
  assert.equal(sim.events.filter((e) => e.reason === 'BatchSucceeded').length, 3);
  for (let i = 0; i < 3; i++) sim.reconcile(5000);
  assert.equal(sim.status?.batch?.history?.length, 3);
});

test('defect 10: a server that joins mid-upgrade is upgraded too; a replacement back under a new hostname does not loop on BatchTimeout', async (t) => {
  await t.test('a joiner pauses MembershipChanged, and after the resume it gets a batch', () => {
    const sim = new ShellSim(fleet(3));
    sim.runUntil((s) => s.deliveries('Upgrade').length > 0, 6, 1000);
    sim.peers.push(peer('cp-4', OLD, 'on', { holderIdentity: 'apiserver-cp-4_0' }));
    sim.runToRest(5, 5000);
    assert.equal(phase(sim), 'Paused');
    assert.equal(sim.status?.pause?.reason, 'MembershipChanged');
    assert.match(sim.status?.pause?.message ?? '', /cp-4/);
    const pauses = runResuming(sim, 2, 100);
    assert.equal(phase(sim), 'Succeeded', `pauses: ${pauses.join(' | ')}`);
    assert.ok(sim.distinctCalls('Upgrade').includes('Upgrade:cp-4'));
    assert.deepEqual(sim.peers.map((p) => `${p.hostname}@${p.version}`), ['cp-1@v1.36.3', 'cp-2@v1.36.3', 'cp-3@v1.36.3', 'cp-4@v1.36.3']);
  });

  await t.test('a replaced node back as cp-2b: a membership pause, then Succeeded', () => {
    const sim = new ShellSim(fleet(3), specWith({ strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '2m' } }));
    sim.runUntil((s) => s.held.has('cp-2'), 20, 5000);
    sim.autoLand = false;
    sim.stop('cp-2');
    sim.land('cp-2', { as: 'cp-2b' }); // the node was replaced: its server comes back as cp-2b, on the target
    sim.autoLand = true;
    const pauses = runResuming(sim, 3, 120);
    assert.equal(phase(sim), 'Succeeded', `pauses: ${pauses.join(' | ')}`);
    assert.ok(!pauses.some((p) => p.startsWith('BatchTimeout')), `paused on BatchTimeout: ${pauses.join(' | ')}`);
    assert.ok(pauses.some((p) => p.startsWith('MembershipChanged') && /cp-2b?/.test(p)), `pauses: ${pauses.join(' | ')}`);
    assert.deepEqual(sim.peers.map((p) => `${p.hostname}@${p.version}`), ['cp-1@v1.36.3', 'cp-2b@v1.36.3', 'cp-3@v1.36.3']);
  });
});

test('defect 11: build metadata is ignored, pre-release targets need allowPrerelease, and a release to its own rc is a downgrade', async (t) => {
  await t.test('servers reporting +rke2r1 count as at the release', () => {
    const sim = new ShellSim(fleet(2, `${OLD}+rke2r1`));
    sim.suffix = '+rke2r1';
    assert.equal(sim.runToRest(60, 20_000), 'Succeeded', `pause: ${sim.status?.pause?.reason} ${sim.status?.pause?.message ?? ''}`);
    assert.deepEqual(sim.peers.map((p) => p.version), ['v1.36.3+rke2r1', 'v1.36.3+rke2r1']);
  });

  await t.test('a pre-release target is refused without allowPrerelease', () => {
    const sim = new ShellSim(fleet(2), specWith({ targetVersion: 'v1.36.0-rc.1' }));
    for (let i = 0; i < 3; i++) sim.reconcile(5000);
    assert.deepEqual(sim.delivered, []);
    assert.equal(sim.condition('PreflightPassed')?.status, 'False');
    assert.equal(sim.condition('PreflightPassed')?.reason, 'PrereleaseTarget');
  });

  await t.test('with allowPrerelease it proceeds', () => {
    const sim = new ShellSim(fleet(2), specWith({ targetVersion: 'v1.36.0-rc.1', allowPrerelease: true } as Partial<ApiServerUpgradeSpec>));
    for (let i = 0; i < 4; i++) sim.reconcile(5000);
    assert.ok(sim.deliveries('Upgrade').length > 0, `phase ${phase(sim)}: ${sim.condition('PreflightPassed')?.reason}`);
  });

  await t.test('v1.36.0 -> v1.36.0-rc.1 is a downgrade', () => {
    const sim = new ShellSim(fleet(2, 'v1.36.0'), specWith({ targetVersion: 'v1.36.0-rc.1', allowPrerelease: true } as Partial<ApiServerUpgradeSpec>));
    sim.reconcile(1000);
    sim.reconcile(1000);
    assert.equal(sim.condition('PreflightPassed')?.status, 'False');
    assert.equal(sim.condition('PreflightPassed')?.reason, 'Downgrade');
    assert.equal(phase(sim), 'Failed');
    assert.deepEqual(sim.delivered, []);
  });
});

test('defect 12: revertAfter turns the gate off only where the operator turned it on', () => {
  const sim = new ShellSim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'off'), peer('cp-3', OLD, 'off')], specWith({ targetVersion: 'v1.35.5', proxy: { gate: 'Enabled', revertAfter: true, allowAlphaGate: true } }));
  assert.equal(sim.runToRest(100, 5000), 'Succeeded');
  assert.deepEqual(sim.distinctCalls('EnableProxy'), ['EnableProxy:cp-2', 'EnableProxy:cp-3']);
  assert.deepEqual(new Set(sim.distinctCalls('RevertProxy')), new Set(['RevertProxy:cp-2', 'RevertProxy:cp-3']), 'cp-1 had the gate on before the upgrade');
  assert.deepEqual(sim.peers.map((p) => `${p.hostname}:${p.proxyGate}`), ['cp-1:on', 'cp-2:off', 'cp-3:off']);
  assert.deepEqual(sim.status?.plan?.gateTurnedOn, ['cp-2', 'cp-3']);
});

test('defect 13: a resume does not relabel finished calls, and retries the timed-out step under a new key', () => {
  const sim = new ShellSim(fleet(3, OLD, 'off'), specWith({ strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '1m' } }));
  sim.runUntil((s) => s.deliveries('Upgrade').includes('Upgrade:cp-2'), 40, 5000);
  sim.hang('cp-2'); // cp-2's replacement is accepted and never happens
  sim.runUntil((s) => s.status?.phase === 'Paused', 6, 30_000);
  assert.equal(phase(sim), 'Paused');
  const before = new Map((sim.status?.driverCalls ?? []).map((c) => [c.key, c.result]));
  const timedOut = (sim.status?.driverCalls ?? []).filter((c) => c.server === 'cp-2' && c.action === 'Upgrade').at(-1)?.result;
  sim.resume();
  sim.reconcile(1000);
  for (const c of sim.status?.driverCalls ?? []) {
    const was = before.get(c.key);
    if (was === undefined || was === 'Requested') continue;
    if (was === 'Accepted' && c.result === 'Done') continue;
    assert.equal(c.result, was, `${c.action} ${c.server} was ${was}, now ${c.result}`);
  }
  assert.deepEqual((sim.status?.driverCalls ?? []).filter((c) => c.result === 'Abandoned').map((c) => `${c.action}:${c.server}`), []);
  assert.equal(timedOut, 'TimedOut', 'cp-2\'s call had timed out before the resume');
  const attempts = () => (sim.status?.driverCalls ?? []).filter((c) => c.server === 'cp-2' && c.action === 'Upgrade').length;
  sim.runUntil(() => attempts() > 1, 3, 1000);
  const retries = (sim.status?.driverCalls ?? []).filter((c) => c.server === 'cp-2' && c.action === 'Upgrade');
  assert.equal(retries.length, 2, 'a new attempt for cp-2');
  assert.notEqual(retries[1]?.key, retries[0]?.key);
  assert.equal(sim.runToRest(40, 5000), 'Succeeded');
});

test('defect 14: resuming a DiscoveryNotConverged pause restarts its timer', () => {
  const sim = new ShellSim(fleet(2), specWith({ analysis: { thresholds: { discoveryConvergence: '1m' } } }));
  sim.runUntil((s) => s.peerOf('cp-1')?.version === NEW, 10, 2000);
  sim.discoveryConverged = false;
  sim.runUntil((s) => s.status?.phase === 'Paused', 8, 20_000);
  assert.equal(sim.status?.pause?.reason, 'DiscoveryNotConverged');
  sim.resume();
  sim.reconcile(1000);
  assert.equal(phase(sim), 'Upgrading', 'the resume must not re-pause at once');
  sim.reconcile(20_000);
  assert.equal(phase(sim), 'Upgrading', 'the timer counts from the resume');
  sim.discoveryConverged = true;
  assert.equal(sim.runToRest(40, 5000), 'Succeeded');
});

test('defect 17: a call left Requested by a crash after its delivery is resolved when its server lands', () => {
  const sim = new ShellSim(fleet(2));
  for (let i = 0; i < 6 && sim.delivered.length === 0; i++) sim.reconcile(1000, { after: 0 });
  assert.equal(sim.delivered.length, 1, 'delivered once, its outcome never recorded');
  assert.equal(sim.runToRest(40, 5000), 'Succeeded');
  assert.deepEqual(
    (sim.status?.driverCalls ?? []).filter((c) => c.result !== 'Done').map((c) => `${c.action}:${c.server}:${c.result}`),
    [],
    'a Succeeded upgrade lists no call still Requested or Accepted',
  );
});

test('defect 18: with proxy.gate Unmanaged a rollback leaves the gate alone', () => {
  const sim = new ShellSim(fleet(2, OLD, 'off'), specWith({ strategy: { batchSize: 1, soakDuration: '5m', batchTimeout: '10m' }, proxy: { gate: 'Unmanaged' }, analysis: { failureLimit: 1, onBreach: 'Rollback' } }));
  sim.runUntil((s) => s.peerOf('cp-1')?.version === NEW, 10, 5000);
  sim.reconcile(5000);
  sim.verdict = 'Breach';
  sim.reconcile(10_000); // batch 1 soaks: the breach rolls back
  sim.verdict = 'Healthy';
  assert.equal(sim.runToRest(60, 5000), 'RolledBack', `pause: ${sim.status?.pause?.reason} ${sim.status?.pause?.message ?? ''}`);
  assert.ok(sim.deliveries('Rollback').includes('Rollback:cp-1'));
  for (const r of sim.delivered) assert.deepEqual(r.featureGates, {}, `${r.action} ${r.server.hostname} carries ${JSON.stringify(r.featureGates)}`);
  assert.deepEqual(sim.peers.map((p) => `${p.hostname}@${p.version}:${p.proxyGate}`), ['cp-1@v1.35.4:off', 'cp-2@v1.35.4:off']);
});

test('defect 19: created with spec.paused, preflight runs and the plan shows while Paused (PausedBySpec), with no call', () => {
  const sim = new ShellSim(fleet(3, OLD, 'off'), specWith({ paused: true }));
  sim.reconcile(1000);
  sim.reconcile(1000);
  assert.equal(phase(sim), 'Paused');
  assert.equal(sim.status?.pause?.reason, 'PausedBySpec');
  assert.deepEqual(sim.delivered, []);
  assert.equal(sim.condition('PreflightPassed')?.status, 'True');
  assert.equal(sim.status?.plan?.fromVersion, OLD);
  assert.deepEqual(sim.status?.plan?.batches?.map((b) => b.servers), [['cp-1'], ['cp-2'], ['cp-3']]);
  sim.editSpec({ paused: false });
  assert.equal(sim.runToRest(100, 5000), 'Succeeded');
});

test('defect 20: a no-op upgrade is Complete; lastAnalysis carries discoveryConverged and discoveryPendingSeconds', async (t) => {
  await t.test('already at the target: Succeeded with Complete True', () => {
    const sim = new ShellSim(fleet(2, NEW));
    sim.reconcile(1000);
    sim.reconcile(1000);
    assert.equal(phase(sim), 'Succeeded');
    assert.equal(sim.condition('Complete')?.status, 'True');
    assert.deepEqual(sim.delivered, []);
  });

  await t.test('discovery signals in status.lastAnalysis', () => {
    const sim = new ShellSim(fleet(2), specWith({ analysis: { thresholds: { discoveryConvergence: '5m' } } }));
    sim.runUntil((s) => s.peerOf('cp-1')?.version === NEW, 10, 2000);
    sim.discoveryConverged = false;
    sim.reconcile(10_000);
    sim.reconcile(10_000);
    sim.reconcile(10_000);
    const signals = sim.status?.lastAnalysis?.signals;
    assert.equal(signals?.discoveryConverged, false);
    assert.ok(typeof signals?.discoveryPendingSeconds === 'number' && signals.discoveryPendingSeconds >= 10 && signals.discoveryPendingSeconds <= 40, `discoveryPendingSeconds ${signals?.discoveryPendingSeconds}`);
    sim.discoveryConverged = true;
    sim.reconcile(10_000);
    assert.equal(sim.status?.lastAnalysis?.signals?.discoveryConverged, true);
  });
});

/**
 * A fleet replaced by a driver that reports an accepted call's failure (the static Pod driver: its Job), with the
 * kubeadm facts its preflight reads. A webhook is asked only what settles an ended call (src/plan/calls.ts callsToReport).
 */
function jobSim(n: number, over: Parameters<typeof specWith>[0] = {}): ShellSim {
  const sim = new ShellSim(fleet(n), specWith({ ...over, driver: { staticPod: { readyTimeout: '30s' } } }));
  sim.extra = { ...sim.extra, kubeadm: kubeadmFacts(n) };
  return sim;
}

test('driver reports failure after acceptance: the call ends Failed, the upgrade pauses DriverFailed naming the server, nothing else is sent to it; a resume retries under a new key', async (t) => {
  const upgradeCalls = (sim: ShellSim, h: string) => (sim.status?.driverCalls ?? []).filter((c) => c.server === h && c.action === 'Upgrade');

  await t.test('the Job cannot pull the image: Failed at once, DriverFailed, then a retry under a new key', () => {
    const sim = jobSim(3, { strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' } });
    sim.autoLand = false;
    sim.runUntil((s) => s.held.has('cp-1'), 6, 1000);
    sim.reconcile(1000);
    assert.equal(upgradeCalls(sim, 'cp-1')[0]?.result, 'Accepted');
    const key = sim.failHeld('cp-1', 'ErrImagePull: registry.k8s.io/kube-apiserver:v1.36.3 not found');
    const delivered = sim.delivered.length;
    sim.reconcile(1000); // far from the 10m batchTimeout: the report ends it, not the clock
    const call = (sim.status?.driverCalls ?? []).find((c) => c.key === key);
    assert.equal(call?.result, 'Failed');
    assert.equal(call?.message, 'ErrImagePull: registry.k8s.io/kube-apiserver:v1.36.3 not found', 'the driver\'s words');
    assert.ok(call?.completedAt, 'a Failed call is finished');
    assert.equal(phase(sim), 'Paused');
    assert.equal(sim.status?.pause?.reason, 'DriverFailed');
    assert.match(sim.status?.pause?.message ?? '', /Upgrade of cp-1 failed .*ErrImagePull: registry\.k8s\.io\/kube-apiserver:v1\.36\.3 not found/);
    assert.equal(sim.status?.pause?.resumePhase, 'Upgrading');
    assert.equal(sim.status?.peers?.find((p) => p.hostname === 'cp-1')?.state, 'Failed');
    assert.ok(sim.events.some((e) => e.reason === 'Paused' && e.note.includes('cp-1') && e.note.includes('ErrImagePull')), 'the Paused event names the server and the driver\'s words');
    for (let i = 0; i < 5; i++) sim.reconcile(30_000);
    assert.equal(sim.delivered.length, delivered, 'nothing is sent while paused on it (to cp-1 or anyone)');
    assert.equal(sim.status?.pause?.reason, 'DriverFailed', 'the pause holds: no BatchTimeout or second failure on top');
    assert.equal((sim.status?.driverCalls ?? []).find((c) => c.key === key)?.result, 'Failed', 'Failed is final');
    sim.resume();
    sim.reconcile(1000);
    const attempts = upgradeCalls(sim, 'cp-1');
    assert.equal(attempts.length, 2, 'the resume retries the step');
    assert.notEqual(attempts[1]?.key, key, 'under a new key');
    assert.equal(attempts[0]?.result, 'Failed', 'the failed attempt keeps its result');
    assert.deepEqual(sim.deliveries().slice(delivered), ['Upgrade:cp-1']);
    sim.autoLand = true;
    assert.equal(sim.runToRest(60, 5000), 'Succeeded');
    assert.deepEqual(sim.peers.map((p) => `${p.hostname}@${p.version}`), ['cp-1@v1.36.3', 'cp-2@v1.36.3', 'cp-3@v1.36.3']);
  });

  await t.test('the agent restored the backup: Failed though the server restarted (at the old version)', () => {
    const sim = jobSim(2, { strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' } });
    sim.autoLand = false;
    sim.runUntil((s) => s.held.has('cp-1'), 6, 1000);
    sim.reconcile(1000);
    const key = sim.failHeld('cp-1', 'the new static Pod never got ready within 5m; /etc/kubernetes/manifests/kube-apiserver.yaml restored', { restart: true });
    sim.reconcile(1000);
    assert.equal((sim.status?.driverCalls ?? []).find((c) => c.key === key)?.result, 'Failed');
    assert.equal(sim.status?.pause?.reason, 'DriverFailed');
    assert.match(sim.status?.pause?.message ?? '', /cp-1.*never got ready/);
  });

  await t.test('the agent restored the backup while the server was still down (its Lease gone): DriverFailed, not MembershipChanged', () => {
    const sim = jobSim(3, { strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' } });
    sim.autoLand = false;
    sim.runUntil((s) => s.held.has('cp-1'), 6, 1000);
    sim.reconcile(1000);
    sim.stop('cp-1'); // graceful stop of the old server: its identity Lease is deleted
    const key = sim.failHeld('cp-1', 'reverted: the new kube-apiserver static Pod was not ready within 30s');
    sim.reconcile(1000);
    assert.equal((sim.status?.driverCalls ?? []).find((c) => c.key === key)?.result, 'Failed');
    assert.equal(sim.status?.pause?.reason, 'DriverFailed', 'seen on real kubelets: the revert restarts the server, its Lease comes back later');
    assert.match(sim.status?.pause?.message ?? '', /cp-1.*reverted/);
  });

  await t.test('a server of the batch under way crash-loops after its replacement landed, its Lease gone: serverReady breaches and onBreach acts (Rollback), not MembershipChanged', () => {
    // Seen on real kubelets: the new static Pod, killed again and again in its soak, never wrote its identity Lease
    // (the old server's graceful stop had deleted it); a MembershipChanged pause left the fleet mixed instead of
    // the rollback the spec asked for.
    const sim = jobSim(3, { strategy: { batchSize: 1, soakDuration: '2m', batchTimeout: '10m' }, analysis: { failureLimit: 3, onBreach: 'Rollback' } });
    sim.runUntil((s) => s.status?.batch?.current === 2 && s.status.batch.soakUntil !== undefined, 40, 2000);
    const soaking = sim.status!.batch!.servers![0]!;
    assert.equal(sim.peerOf(soaking)?.version, NEW);
    sim.peers = sim.peers.filter((p) => p.hostname !== soaking); // down, with no Lease
    for (let i = 0; i < 6 && phase(sim) === 'Upgrading'; i++) sim.reconcile(10_000);
    assert.notEqual(sim.status?.pause?.reason, 'MembershipChanged', sim.status?.pause?.message);
    assert.equal(phase(sim), 'RollingBack', JSON.stringify(sim.status?.pause));
    assert.ok((sim.status?.lastAnalysis?.breaches ?? []).some((b) => b.signal === 'serverReady' && b.server === soaking), 'the missing server is the breach');
  });

  await t.test('a member outside the batch under way that vanishes is still a fleet change: MembershipChanged', () => {
    const sim = jobSim(3, { strategy: { batchSize: 1, soakDuration: '2m', batchTimeout: '10m' }, analysis: { failureLimit: 3, onBreach: 'Rollback' } });
    sim.runUntil((s) => s.status?.batch?.current === 2 && s.status.batch.soakUntil !== undefined, 40, 2000);
    const untouched = sim.peers.find((p) => p.version !== NEW)!.hostname; // the last batch's
    sim.peers = sim.peers.filter((p) => p.hostname !== untouched);
    sim.reconcile(1000);
    assert.equal(sim.status?.pause?.reason, 'MembershipChanged');
    assert.match(sim.status?.pause?.message ?? '', new RegExp(`gone: ${untouched}`));
  });

  await t.test('observation wins: a call seen landed is Done whatever the driver reports', () => {
    const sim = jobSim(2, { strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' } });
    sim.autoLand = false;
    sim.runUntil((s) => s.held.has('cp-1'), 6, 1000);
    sim.reconcile(1000);
    const key = sim.held.get('cp-1')!.idempotencyKey;
    sim.land('cp-1');
    sim.reports.set(key, { kind: 'failed', message: 'the post-upgrade check timed out' });
    sim.reconcile(1000);
    assert.equal((sim.status?.driverCalls ?? []).find((c) => c.key === key)?.result, 'Done');
    assert.notEqual(phase(sim), 'Paused');
  });

  await t.test('running, succeeded, unknown and unreadable reports change nothing: only the clock or observation ends the call', () => {
    for (const report of [{ kind: 'running', message: 'Job runs' }, { kind: 'succeeded', message: 'Job succeeded' }, { kind: 'unknown', message: 'reading the Job failed: HTTP 503' }, 'throws'] as const) {
      const sim = jobSim(2, { strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '1m' } });
      sim.autoLand = false;
      sim.runUntil((s) => s.held.has('cp-1'), 6, 1000);
      sim.reconcile(1000);
      const key = sim.held.get('cp-1')!.idempotencyKey;
      sim.reports.set(key, report);
      sim.reconcile(20_000);
      const what = typeof report === 'string' ? report : report.kind;
      assert.equal((sim.status?.driverCalls ?? []).find((c) => c.key === key)?.result, 'Accepted', `${what}: still in flight`);
      assert.equal(phase(sim), 'Upgrading', what);
      sim.reconcile(60_000);
      assert.equal((sim.status?.driverCalls ?? []).find((c) => c.key === key)?.result, 'TimedOut', `${what}: ends by the clock`);
      assert.equal(sim.status?.pause?.reason, 'BatchTimeout', what);
    }
  });

  await t.test('a failed report for a call not Accepted is no decision', () => {
    const sim = jobSim(2);
    sim.driverMode = 'lost'; // accepted at the driver, the answer lost: the call stays Requested
    sim.runUntil((s) => s.deliveries('Upgrade').length > 0, 6, 1000);
    const call = (sim.status?.driverCalls ?? []).find((c) => c.action === 'Upgrade')!;
    assert.equal(call.result, 'Requested');
    const p = plan({ ...sim.upgrade, driverReports: { [call.key]: { kind: 'failed', message: 'no' } } }, sim.spec, sim.status, sim.observe(), new Date(sim.now.getTime() + 1000));
    assert.equal(p.status.driverCalls?.find((c) => c.key === call.key)?.result, 'Requested');
    assert.notEqual(p.status.phase, 'Paused');
  });

  await t.test('a failed Rollback call pauses DriverFailed in RollingBack; a resume sends a new Rollback under a new key', () => {
    const sim = jobSim(2, { strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' }, analysis: { failureLimit: 1, onBreach: 'Rollback' } });
    sim.runUntil((s) => s.peerOf('cp-1')?.version === NEW && s.status?.driverCalls?.find((c) => c.server === 'cp-1')?.result === 'Done', 20, 2000);
    sim.autoLand = false;
    sim.verdict = 'Breach';
    sim.runUntil((s) => s.held.has('cp-1') && s.held.get('cp-1')!.action === 'Rollback', 10, 10_000);
    sim.reconcile(1000);
    const rollbackKey = sim.held.get('cp-1')!.idempotencyKey;
    assert.equal((sim.status?.driverCalls ?? []).find((c) => c.key === rollbackKey)?.result, 'Accepted');
    sim.failHeld('cp-1', 'ErrImagePull: registry.k8s.io/kube-apiserver:v1.35.4 not found');
    const delivered = sim.delivered.length;
    sim.reconcile(1000);
    assert.equal((sim.status?.driverCalls ?? []).find((c) => c.key === rollbackKey)?.result, 'Failed');
    assert.equal(sim.status?.pause?.reason, 'DriverFailed');
    assert.equal(sim.status?.pause?.resumePhase, 'RollingBack');
    assert.match(sim.status?.pause?.message ?? '', /Rollback of cp-1 failed .*v1\.35\.4 not found/);
    for (let i = 0; i < 3; i++) sim.reconcile(30_000);
    assert.equal(sim.delivered.length, delivered, 'nothing sent while paused on it');
    sim.verdict = 'Healthy';
    sim.resume();
    sim.reconcile(1000);
    const rollbacks = (sim.status?.driverCalls ?? []).filter((c) => c.server === 'cp-1' && c.action === 'Rollback');
    assert.equal(rollbacks.length, 2);
    assert.notEqual(rollbacks[1]?.key, rollbackKey);
    sim.autoLand = true;
    assert.equal(sim.runToRest(40, 5000), 'RolledBack');
    assert.deepEqual(sim.peers.map((p) => `${p.hostname}@${p.version}`), ['cp-1@v1.35.4', 'cp-2@v1.35.4']);
  });

  await t.test('with onBreach Rollback, a failed Upgrade rolls back only what it may have moved', () => {
    // cp-1 (batch 1) is upgraded; cp-2's Upgrade (batch 2) is accepted, then reported failed.
    const failedInBatch2 = (how: (sim: ShellSim) => void): ShellSim => {
      const sim = jobSim(3, { strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' }, analysis: { onBreach: 'Rollback' } });
      sim.runUntil((s) => s.held.has('cp-2') || s.deliveries('Upgrade').includes('Upgrade:cp-2'), 20, 2000);
      sim.autoLand = false;
      sim.runUntil((s) => s.status?.driverCalls?.find((c) => c.server === 'cp-2')?.result === 'Accepted', 5, 1000);
      assert.equal(sim.peerOf('cp-1')?.version, NEW);
      how(sim);
      sim.autoLand = true;
      assert.equal(sim.runToRest(40, 5000), 'RolledBack');
      return sim;
    };
    // cp-2 seen back up on the from-version: nothing of it to undo, as for a refused call.
    const restored = failedInBatch2((sim) => sim.failHeld('cp-2', 'the new static Pod never got ready; the backup manifest is restored', { restart: true }));
    assert.deepEqual(restored.distinctCalls('Rollback'), ['Rollback:cp-1']);
    // cp-2 not seen back up (the failed replacement left it not ready): it may have moved, so it is rolled back first.
    const notReady = failedInBatch2((sim) => {
      sim.failHeld('cp-2', 'the new static Pod never got ready; restoring the backup failed');
      sim.peers.find((p) => p.hostname === 'cp-2')!.ready = false;
      sim.reconcile(1000);
      assert.equal(phase(sim), 'RollingBack');
    });
    assert.deepEqual(notReady.distinctCalls('Rollback'), ['Rollback:cp-2', 'Rollback:cp-1']);
  });
});
