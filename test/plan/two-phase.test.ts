// TwoPhase upgrades (KEP-4330): phase one moves every server to the new binary emulating the old minor,
// phase two lifts the emulation; a rollback in phase one goes back to the old binary, in phase two it
// re-applies the emulation — and pauses first when that would orphan objects only the target serves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sim, peer, spec, storage, OLD, NEW } from './fleet.ts';
import type { ObservedPeer, Observation } from '../../src/plan/index.ts';

const R35 = ['/v1/pods', 'apps/v1/deployments', 'storage.k8s.io/v1/volumeattributesclasses'];
const R36 = [...R35, 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies'];
const emu = (p: ObservedPeer): string => p.emulation ?? (p.version === NEW ? '1.36' : '1.35');

/** Own discovery as the real servers answer it: an emulating v1.36.3 serves what v1.35.4 does. */
function ownDiscovery(extraWhenEmulating: string[] = []) {
  return (peers: ObservedPeer[]): Partial<Observation> => ({
    discovery: {
      converged: true,
      message: 'converged',
      own: peers.map((p) => ({ server: p.hostname, version: p.version!, emulation: emu(p), resources: emu(p) === '1.35' ? [...R35, ...(p.version === NEW ? extraWhenEmulating : [])] : R36 })),
    },
  });
}

const twoPhase = (over: Parameters<typeof spec>[0] = {}) => spec({ strategy: { batchSize: 1, soakDuration: '0s', phases: 'TwoPhase', phaseSoakDuration: '1m' }, ...over });
const fleet = () => [peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on'), peer('cp-3', OLD, 'on')];
const emulatedStorage = { ...storage(NEW), emulation: '1.35' };

function newSim(s = twoPhase(), extra: string[] = []): Sim {
  const sim = new Sim(fleet(), s);
  sim.extra.storage = [storage(OLD), emulatedStorage, storage(NEW)];
  sim.derive = ownDiscovery(extra);
  return sim;
}

/** Steps, carrying out each call at once, until paused/terminal or `max` steps; returns the calls as action:server@emulation. */
function run(sim: Sim, max = 60, advance = 1000): string[] {
  const out: string[] = [];
  for (let i = 0; i < max; i++) {
    sim.step(advance);
    for (const a of sim.last.actions) if (a.kind === 'callDriver') out.push(`${a.request.action}:${a.request.server.hostname}@${a.request.emulatedVersion ?? '-'}`);
    sim.applyDriverCalls();
    if (['Succeeded', 'RolledBack', 'Failed', 'Paused'].includes(sim.status?.phase ?? '')) break;
  }
  return out;
}

test('TwoPhase: every server to the new binary emulating 1.35, a soak between the phases, then the emulation lifted', () => {
  const sim = newSim();
  const calls = run(sim, 200, 5000);
  assert.deepEqual(calls, ['Upgrade:cp-1@1.35', 'Upgrade:cp-2@1.35', 'Upgrade:cp-3@1.35', 'Upgrade:cp-1@-', 'Upgrade:cp-2@-', 'Upgrade:cp-3@-']);
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.equal(sim.status?.stage, 'API');
  assert.deepEqual(sim.status?.plan?.batches?.map((b) => `${b.index}:${b.stage}:${b.servers.join('+')}:${b.emulatedVersion ?? '-'}`), ['1:Binaries:cp-1:1.35', '2:Binaries:cp-2:1.35', '3:Binaries:cp-3:1.35', '4:API:cp-1:-', '5:API:cp-2:-', '6:API:cp-3:-']);
  assert.deepEqual(sim.status?.plan?.fromResources, [...R35].sort());
  assert.ok(sim.peers.every((p) => p.version === NEW && p.emulation === undefined));
});

test('TwoPhase: phase two waits phaseSoakDuration after phase one', () => {
  const sim = newSim();
  let phaseOneDoneAt: number | undefined;
  let phaseTwoAt: number | undefined;
  for (let i = 0; i < 200 && sim.status?.phase !== 'Succeeded'; i++) {
    sim.step(1000);
    for (const a of sim.last.actions) {
      if (a.kind === 'event' && a.reason === 'PhaseOneDone') phaseOneDoneAt = sim.now.getTime();
      if (a.kind === 'event' && a.reason === 'PhaseTwoStarted') phaseTwoAt = sim.now.getTime();
    }
    sim.applyDriverCalls();
  }
  assert.ok(phaseOneDoneAt !== undefined && phaseTwoAt !== undefined);
  assert.ok(phaseTwoAt - phaseOneDoneAt >= 60_000, `phase two ${phaseTwoAt - phaseOneDoneAt} ms after phase one`);
});

test('TwoPhase: an emulating server that serves more than the from-version pauses EmulationIneffective', () => {
  const sim = newSim(twoPhase(), ['admissionregistration.k8s.io/v1/mutatingadmissionpolicies']);
  const calls = run(sim);
  assert.deepEqual(calls, ['Upgrade:cp-1@1.35']);
  assert.equal(sim.status?.pause?.reason, 'EmulationIneffective');
  assert.match(sim.status?.pause?.message ?? '', /cp-1 \(v1\.36\.3 emulating 1\.35\) serves admissionregistration\.k8s\.io\/v1\/mutatingadmissionpolicies/);
});

test('TwoPhase: a breach in phase one rolls back to the old binary', () => {
  const sim = newSim(twoPhase({ analysis: { failureLimit: 1, onBreach: 'Rollback' } }));
  run(sim, 3); // cp-1 on the new binary, emulating
  sim.extra.analysis = { time: new Date(sim.now.getTime() + 1).toISOString(), verdict: 'Breach', signals: {}, breaches: [{ signal: 'errorRatio' }] };
  const calls = run(sim, 40);
  assert.equal(sim.status?.phase, 'RolledBack', JSON.stringify(sim.status?.pause));
  assert.ok(calls.every((c) => c.endsWith('@-')), `rollback to the old binary carries no emulation: ${calls.join(', ')}`);
  assert.ok(sim.peers.every((p) => p.version === OLD && p.emulation === undefined));
});

function intoPhaseTwo(sim: Sim): void {
  for (let i = 0; i < 200 && sim.status?.stage !== 'API'; i++) {
    sim.step(5000);
    sim.applyDriverCalls();
  }
  sim.step(1000);
  sim.applyDriverCalls(); // cp-1 lifted: the fleet's API now differs
  assert.equal(sim.status?.stage, 'API');
}

test('TwoPhase: a breach in phase two with objects only the target serves pauses RollbackOrphans, naming them', () => {
  const sim = newSim(twoPhase({ analysis: { failureLimit: 1, onBreach: 'Rollback' } }));
  intoPhaseTwo(sim);
  sim.extra.orphans = [{ resource: 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies', count: 1, names: ['deny-privileged'] }];
  sim.extra.analysis = { time: new Date(sim.now.getTime() + 1).toISOString(), verdict: 'Breach', signals: {}, breaches: [{ signal: 'errorRatio' }] };
  const calls = run(sim, 5);
  assert.deepEqual(calls, []);
  assert.equal(sim.status?.pause?.reason, 'RollbackOrphans');
  assert.match(sim.status?.pause?.message ?? '', /deny-privileged/);
  assert.equal(sim.condition('RollbackSafe')?.reason, 'WouldOrphanObjects');
  assert.deepEqual(sim.status?.orphanedObjects?.map((o) => o.names), [['deny-privileged']]);
});

test('TwoPhase: with orphanedObjects Proceed, phase two rolls back by re-applying the emulation, and reports the orphans', () => {
  const sim = newSim(twoPhase({ analysis: { failureLimit: 1, onBreach: 'Rollback' }, rollback: { orphanedObjects: 'Proceed' } }));
  intoPhaseTwo(sim);
  sim.extra.orphans = [{ resource: 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies', count: 1, names: ['deny-privileged'] }];
  sim.extra.analysis = { time: new Date(sim.now.getTime() + 1).toISOString(), verdict: 'Breach', signals: {}, breaches: [{ signal: 'errorRatio' }] };
  const calls = run(sim, 40);
  assert.equal(sim.status?.phase, 'RolledBack', JSON.stringify(sim.status?.pause));
  assert.ok(calls.length > 0 && calls.every((c) => c.startsWith('Rollback:') && c.endsWith('@1.35')), calls.join(', '));
  assert.ok(sim.peers.every((p) => p.version === NEW && emu(p) === '1.35'), 'every server back on the 1.35 API, on the new binary');
  assert.equal(sim.status?.orphanedObjects?.[0]?.count, 1);
  assert.match(sim.condition('Complete')?.message ?? '', /emulating 1\.35/);
});

test('TwoPhase: refused for a patch upgrade (no API change to split off)', () => {
  const sim = new Sim(fleet(), twoPhase({ targetVersion: 'v1.35.5' }));
  sim.step();
  assert.equal(sim.status?.phase, 'Failed');
  assert.equal(sim.condition('PreflightPassed')?.reason, 'TwoPhaseNeedsMinorUpgrade');
});

test('TwoPhase: when the only server of the phase-one batch under way leaves, a resume goes on with the next batch (no EmulationIneffective for a server that no longer exists)', () => {
  const sim = newSim(twoPhase({ strategy: { batchSize: 1, soakDuration: '0s', phases: 'TwoPhase', phaseSoakDuration: '1m', batchTimeout: '1m' } }));
  sim.step(1000);
  assert.deepEqual(sim.calls(), ['Upgrade:cp-1']); // recorded; the driver never answers, and cp-1 is decommissioned
  sim.peers = sim.peers.filter((p) => p.hostname !== 'cp-1');
  const pauses: string[] = [];
  for (let i = 0; i < 40 && sim.status?.phase !== 'Succeeded'; i++) {
    sim.step(20_000);
    sim.applyDriverCalls();
    if (sim.status?.phase === 'Paused') {
      pauses.push(sim.status.pause?.reason ?? '?');
      sim.upgrade = { ...sim.upgrade, annotations: { 'upgrade.apiserver.dev/resume': `r${i}` } };
    }
  }
  assert.ok(!pauses.includes('EmulationIneffective'), `pauses: ${pauses.join(', ')}`);
  assert.ok(pauses.length <= 2, `paused for cp-1's call and its leaving, then no more: ${pauses.join(', ')}`);
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.deepEqual(sim.status?.plan?.members, ['cp-2', 'cp-3']);
});

test('TwoPhase: a server that joins on the target without emulation in phase one is not accepted, and what it wrote is judged for a rollback to the old binary after it left', () => {
  const sim = newSim(twoPhase({ analysis: { failureLimit: 1, onBreach: 'Rollback' } }));
  run(sim, 3); // cp-1 on the new binary, emulating 1.35
  assert.equal(sim.peers.find((p) => p.hostname === 'cp-1')?.emulation, '1.35');
  // A node provisioned with the new image joins: v1.36.3 serving its own API, writing pods at a version v1.35.4 cannot read.
  sim.peers.push(peer('cp-4', NEW, 'on'));
  sim.extra.storage = [storage(OLD), emulatedStorage, storage(NEW, 'cp-4', { '/v1/pods': 'NEWPODS' })];
  sim.step(1000);
  assert.equal(sim.status?.pause?.reason, 'MembershipChanged');
  assert.match(sim.status?.pause?.message ?? '', /cp-4 runs v1\.36\.3 without emulating 1\.35 during phase one/);
  assert.equal(sim.condition('RollbackSafe')?.status, 'False', `cp-4's storage counts for a rollback to the old binary: ${JSON.stringify(sim.status?.plan?.targetApiStorage)} ${sim.condition('RollbackSafe')?.message}`);
  assert.deepEqual(sim.status?.plan?.targetApiStorage?.map((h) => h.hash), ['NEWPODS']);
  sim.upgrade = { ...sim.upgrade, annotations: { 'upgrade.apiserver.dev/resume': 'r1' } };
  sim.step(1000);
  sim.step(1000);
  assert.equal(sim.status?.pause?.reason, 'MembershipChanged', 'a resume does not make it part of phase one');
  assert.deepEqual(sim.calls(), []);
  // The node is removed again; its pods stay in etcd. A breach with onBreach Rollback must not roll back.
  sim.peers = sim.peers.filter((p) => p.hostname !== 'cp-4');
  sim.extra.storage = [storage(OLD), emulatedStorage];
  sim.upgrade = { ...sim.upgrade, annotations: { 'upgrade.apiserver.dev/resume': 'r2' } };
  sim.step(1000);
  sim.extra.analysis = { time: new Date(sim.now.getTime() + 1).toISOString(), verdict: 'Breach', signals: {}, breaches: [{ signal: 'errorRatio' }] };
  const calls = run(sim, 10);
  assert.ok(!calls.some((c) => c.startsWith('Rollback:')), calls.join(', '));
  assert.equal(sim.status?.pause?.reason, 'RollbackUnsafe', JSON.stringify(sim.status?.pause));
  assert.match(sim.status?.pause?.message ?? '', /\/pods/);
});

for (const batchSize of [1, 3]) {
  test(`TwoPhase: a server that joins on the from-version after phase two began goes straight to the target's API; the plan's stage never moves back (batch size ${batchSize})`, () => {
    const sim = newSim(twoPhase({ strategy: { batchSize, soakDuration: '30s', phases: 'TwoPhase', phaseSoakDuration: '1m' } }));
    const calls: string[] = [];
    // Until every phase-two call has landed; the last batch then soaks.
    for (let i = 0; i < 400 && calls.filter((c) => c.endsWith('@-')).length < 3; i++) {
      sim.step(5000);
      for (const a of sim.last.actions) if (a.kind === 'callDriver') calls.push(`${a.request.action}:${a.request.server.hostname}@${a.request.emulatedVersion ?? '-'}`);
      sim.applyDriverCalls();
    }
    assert.equal(sim.status?.phase, 'Upgrading', calls.join(', '));
    assert.equal(sim.status?.stage, 'API');
    sim.peers.push(peer('cp-4', OLD, 'on'));
    const stages: string[] = [];
    const pauses: string[] = [];
    const after: string[] = [];
    const phase = (): string | undefined => sim.status?.phase;
    for (let i = 0; i < 200 && phase() !== 'Succeeded'; i++) {
      sim.step(5000);
      stages.push(sim.status?.stage ?? '-');
      for (const a of sim.last.actions) if (a.kind === 'callDriver') after.push(`${a.request.action}:${a.request.server.hostname}@${a.request.emulatedVersion ?? '-'}`);
      sim.applyDriverCalls();
      if (phase() === 'Paused') {
        pauses.push(`${sim.status?.pause?.reason}: ${sim.status?.pause?.message}`);
        sim.upgrade = { ...sim.upgrade, annotations: { 'upgrade.apiserver.dev/resume': `r${i}` } };
      }
    }
    assert.equal(pauses.length, 1, `one pause for the joiner, lifted by the resume: ${pauses.length} pauses, the first: ${pauses.slice(0, 2).join(' | ')}`);
    assert.match(pauses[0]!, /^MembershipChanged: .*joined: cp-4/);
    assert.equal(phase(), 'Succeeded', pauses.slice(0, 2).join(' | '));
    assert.deepEqual(after, ['Upgrade:cp-4@-'], 'the joiner gets one call, to the target without emulation: the fleet already serves the target API');
    assert.ok(stages.every((s) => s === 'API'), `stage stays API: ${[...new Set(stages)].join(', ')}`);
    assert.ok(sim.peers.every((p) => p.version === NEW && p.emulation === undefined));
  });
}
