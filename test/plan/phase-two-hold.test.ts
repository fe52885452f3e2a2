// A TwoPhase upgrade whose phase two is held for an approval (spec.strategy.phaseTwo): the fleet stays on the new
// binary emulating the old version, status says the hold and the rollback window, and only an approval seen while the
// hold is on, or the deadline, ends it. Everything a decision needs is in status: a fresh planner (a leader change)
// decides the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sim, peer, spec, storage, OLD, NEW } from './fleet.ts';
import type { ObservedPeer, Observation } from '../../src/plan/index.ts';
import type { PhaseTwoPolicy } from '../../src/api/types.generated.ts';
import { APPROVE_ANNOTATION, ABORT_ANNOTATION, APPROVAL_WAIT } from '../../src/api/vocabulary.ts';
import { HOLD_WAIT } from '../../src/plan/phase-two-hold.ts';
import { resolveSpec, SpecError } from '../../src/api/defaults.ts';

const R35 = ['/v1/pods', 'apps/v1/deployments'];
const R36 = [...R35, 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies'];
const emu = (p: ObservedPeer): string => p.emulation ?? (p.version === NEW ? '1.36' : '1.35');
const derive = (peers: ObservedPeer[]): Partial<Observation> => ({
  discovery: { converged: true, message: 'converged', own: peers.map((p) => ({ server: p.hostname, version: p.version!, emulation: emu(p), resources: emu(p) === '1.35' ? R35 : R36 })) },
});

const held = (phaseTwo: PhaseTwoPolicy, over: Parameters<typeof spec>[0] = {}) =>
  spec({ strategy: { batchSize: 1, soakDuration: '0s', phases: 'TwoPhase', phaseSoakDuration: '1m', phaseTwo }, ...over });

function newSim(s = held({ start: 'Approval' })): Sim {
  const sim = new Sim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on'), peer('cp-3', OLD, 'on')], s);
  sim.extra.storage = [storage(OLD), { ...storage(NEW), emulation: '1.35' }, storage(NEW)];
  sim.derive = derive;
  return sim;
}

/** Steps (each driver call carried out at once) until `until` holds or the upgrade stops; returns the calls made. */
function runUntil(sim: Sim, until: (s: Sim) => boolean, max = 300, advance = 5000): string[] {
  const out: string[] = [];
  for (let i = 0; i < max && !until(sim); i++) {
    sim.step(advance);
    for (const a of sim.last.actions) if (a.kind === 'callDriver') out.push(`${a.request.action}:${a.request.server.hostname}@${a.request.emulatedVersion ?? '-'}`);
    sim.applyDriverCalls();
    if (['Succeeded', 'RolledBack', 'Failed', 'Paused'].includes(sim.status?.phase ?? '')) break;
  }
  return out;
}

const inHold = (s: Sim): boolean => s.status?.waiting?.reason === 'AwaitingApproval';
const allEmulating = (sim: Sim): boolean => sim.peers.every((p) => p.version === NEW && p.emulation === '1.35');
const events = (sim: Sim, reason: string): string[] => sim.last.actions.flatMap((a) => (a.kind === 'event' && a.reason === reason ? [a.note] : []));

test('Approval: phase two is held after the soak, the fleet stays emulating, status shows the hold and the rollback window', () => {
  const sim = newSim();
  const calls = runUntil(sim, inHold);
  assert.deepEqual(calls, ['Upgrade:cp-1@1.35', 'Upgrade:cp-2@1.35', 'Upgrade:cp-3@1.35']);
  assert.equal(sim.status?.phase, 'Upgrading');
  assert.equal(sim.status?.stage, 'Binaries');
  const since = sim.status?.phaseTwoHold?.heldSince;
  assert.ok(since);
  assert.equal(sim.status?.phaseTwoHold?.deadline, undefined);
  assert.equal(sim.condition('Waiting')?.reason, 'AwaitingApproval');
  assert.equal(HOLD_WAIT.reason, APPROVAL_WAIT, 'the vocabulary\'s word');
  assert.deepEqual(
    { available: sim.status?.rollbackWindow?.available, toVersion: sim.status?.rollbackWindow?.toVersion, safe: sim.status?.rollbackWindow?.safe, until: sim.status?.rollbackWindow?.until },
    { available: true, toVersion: OLD, safe: 'True', until: undefined },
  );
  // A week later: nothing called, still held, the same hold.
  const more = runUntil(sim, () => false, 200, 3_600_000);
  assert.deepEqual(more, []);
  assert.ok(allEmulating(sim));
  assert.equal(sim.status?.phaseTwoHold?.heldSince, since);
  assert.ok(inHold(sim));
});

test('Approval: a new value of the approve annotation while held starts phase two and the upgrade ends Succeeded; after it, status says a rollback to the from-version would read what was written', () => {
  const sim = newSim();
  runUntil(sim, inHold);
  sim.upgrade = { ...sim.upgrade, annotations: { [APPROVE_ANNOTATION]: 'a1' } };
  sim.step(1000);
  assert.deepEqual(sim.calls(), ['Upgrade:cp-1']);
  assert.equal(events(sim, 'PhaseTwoApproved').length, 1);
  assert.equal(events(sim, 'PhaseTwoStarted').length, 1);
  assert.deepEqual([sim.status?.phaseTwoHold?.endedBy, sim.status?.phaseTwoHold?.approval], ['Approved', 'a1']);
  assert.equal(sim.status?.waiting, undefined);
  sim.applyDriverCalls();
  runUntil(sim, () => false);
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.ok(sim.peers.every((p) => p.version === NEW && p.emulation === undefined));
  assert.deepEqual([sim.status?.rollbackWindow?.available, sim.status?.rollbackWindow?.toVersion, sim.status?.rollbackWindow?.safe, sim.status?.rollbackWindow?.reason], [false, OLD, 'True', 'StorageVersionsReadable']);
});

test('after Succeeded, a target storage version the from-version cannot read says RollbackWindow safe False; unread says Unknown', () => {
  const moved = newSim();
  moved.extra.storage = [storage(OLD), { ...storage(NEW), emulation: '1.35' }, storage(NEW, 'cp-1', { '/v1/pods': 'zzzzzzzzzzz=' })];
  runUntil(moved, inHold);
  moved.upgrade = { ...moved.upgrade, annotations: { [APPROVE_ANNOTATION]: 'go' } };
  runUntil(moved, () => false);
  assert.equal(moved.status?.phase, 'Succeeded');
  assert.deepEqual([moved.status?.rollbackWindow?.safe, moved.status?.rollbackWindow?.reason], ['False', 'StorageVersionsMoved']);

  const unread = newSim();
  runUntil(unread, inHold);
  unread.extra.storage = [storage(OLD), { ...storage(NEW), emulation: '1.35' }];
  unread.upgrade = { ...unread.upgrade, annotations: { [APPROVE_ANNOTATION]: 'go' } };
  runUntil(unread, () => false);
  assert.equal(unread.status?.phase, 'Succeeded');
  assert.equal(unread.status?.rollbackWindow?.safe, 'Unknown');
});

test('Approval: a value set before the hold approves nothing later; a new one does; a second one changes nothing', () => {
  const sim = newSim();
  sim.upgrade = { ...sim.upgrade, annotations: { [APPROVE_ANNOTATION]: 'early' } };
  runUntil(sim, inHold);
  assert.equal(sim.status?.observedApprove, 'early');
  const more = runUntil(sim, () => false, 50, 60_000);
  assert.deepEqual(more, [], 'the early value is no approval of this hold');
  assert.ok(inHold(sim));
  assert.equal(sim.status?.phaseTwoHold?.approvedAt, undefined);
  sim.upgrade = { ...sim.upgrade, annotations: { [APPROVE_ANNOTATION]: 'late' } };
  sim.step(1000);
  assert.deepEqual(sim.calls(), ['Upgrade:cp-1']);
  const approvedAt = sim.status?.phaseTwoHold?.approvedAt;
  sim.applyDriverCalls();
  sim.upgrade = { ...sim.upgrade, annotations: { [APPROVE_ANNOTATION]: 'twice' } };
  sim.step(1000);
  assert.equal(events(sim, 'ApprovalIgnored').length, 1);
  assert.deepEqual([sim.status?.phaseTwoHold?.approval, sim.status?.phaseTwoHold?.approvedAt], ['late', approvedAt]);
});

test('a leader change during the hold changes nothing: a planner started from the stored status holds the same hold, and an approval seen twice acts once', () => {
  const sim = newSim(held({ start: 'Approval', deadline: '1h', onDeadline: 'Rollback' }));
  runUntil(sim, inHold);
  const hold = structuredClone(sim.status?.phaseTwoHold);
  const stored = structuredClone(sim.status);
  // The new leader: the stored status only, 30 s later.
  const next = newSim(sim.spec);
  next.peers = sim.peers;
  next.status = stored;
  next.now = sim.now;
  next.step(30_000);
  assert.deepEqual(next.status?.phaseTwoHold, hold);
  assert.deepEqual(next.calls(), []);
  assert.equal(next.status?.waiting?.until, hold?.deadline);
  // The approval reaches both the old leader's last step and the new leader's first: it is recorded once.
  next.upgrade = { ...next.upgrade, annotations: { [APPROVE_ANNOTATION]: 'x' } };
  next.step(1000);
  const after = structuredClone(next.status);
  next.applyDriverCalls();
  const replay = newSim(sim.spec);
  replay.peers = next.peers;
  replay.status = after;
  replay.now = next.now;
  replay.upgrade = next.upgrade;
  replay.step(1000);
  assert.equal(events(replay, 'PhaseTwoApproved').length, 0);
  assert.equal(replay.status?.phaseTwoHold?.approvedAt, after?.phaseTwoHold?.approvedAt);
});

test('deadline Proceed: without an approval, phase two starts when the deadline passes, not before', () => {
  const sim = newSim(held({ start: 'Approval', deadline: '2h', onDeadline: 'Proceed' }));
  runUntil(sim, inHold);
  const deadline = Date.parse(sim.status!.phaseTwoHold!.deadline!);
  assert.equal(deadline - Date.parse(sim.status!.phaseTwoHold!.heldSince!), 2 * 3_600_000);
  assert.equal(sim.status?.rollbackWindow?.until, sim.status?.phaseTwoHold?.deadline);
  let firstPhaseTwoCall: number | undefined;
  for (let i = 0; i < 400 && sim.status?.phase === 'Upgrading'; i++) {
    sim.step(60_000);
    if (firstPhaseTwoCall === undefined && sim.calls().length > 0) firstPhaseTwoCall = sim.now.getTime();
    sim.applyDriverCalls();
  }
  assert.ok(firstPhaseTwoCall !== undefined && firstPhaseTwoCall >= deadline, 'nothing moved before the deadline');
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.equal(sim.status?.phaseTwoHold?.endedBy, 'DeadlineProceeded');
});

test('deadline Rollback: without an approval, the fleet goes back to the old binaries and ends RolledBack', () => {
  const sim = newSim(held({ start: 'Approval', deadline: '30m', onDeadline: 'Rollback' }));
  runUntil(sim, inHold);
  const calls = runUntil(sim, () => false, 400, 60_000);
  assert.equal(sim.status?.phase, 'RolledBack', JSON.stringify(sim.status?.pause));
  assert.ok(calls.length === 3 && calls.every((c) => c.startsWith('Rollback:') && c.endsWith('@-')), calls.join(', '));
  assert.ok(sim.peers.every((p) => p.version === OLD && p.emulation === undefined));
  assert.equal(sim.status?.phaseTwoHold?.endedBy, 'DeadlineRolledBack');
  assert.equal(sim.status?.rollbackWindow?.available, false);
});

test('abort during the hold rolls back to the old binaries (RolledBack), and ends the hold', () => {
  const sim = newSim();
  runUntil(sim, inHold);
  sim.upgrade = { ...sim.upgrade, annotations: { [ABORT_ANNOTATION]: 'stop' } };
  runUntil(sim, () => false);
  assert.equal(sim.status?.phase, 'RolledBack');
  assert.ok(sim.peers.every((p) => p.version === OLD && p.emulation === undefined));
  assert.equal(sim.status?.phaseTwoHold?.endedBy, 'RollbackStarted');
});

test('a pause holds the deadline: under spec.paused nothing moves when it passes; once unpaused, it applies', () => {
  const sim = newSim(held({ start: 'Approval', deadline: '10m', onDeadline: 'Rollback' }));
  runUntil(sim, inHold);
  sim.spec = { ...sim.spec, paused: true };
  const during = runUntil(sim, () => false, 30, 60_000);
  assert.deepEqual(during, []);
  assert.equal(sim.status?.phase, 'Paused');
  sim.spec = { ...sim.spec, paused: false };
  runUntil(sim, () => false, 100, 60_000);
  assert.equal(sim.status?.phase, 'RolledBack');
});

test('the policy is frozen in the plan: editing the spec to Automatic during the hold does not release it', () => {
  const sim = newSim();
  runUntil(sim, inHold);
  assert.deepEqual(sim.status?.plan?.phaseTwo, { start: 'Approval' });
  sim.spec = held({ start: 'Automatic' });
  const calls = runUntil(sim, () => false, 20, 60_000);
  assert.deepEqual(calls, []);
  assert.ok(inHold(sim));
});

test('Automatic (the default) never holds: no phaseTwoHold, phase two after the soak', () => {
  const sim = newSim(spec({ strategy: { batchSize: 1, soakDuration: '0s', phases: 'TwoPhase', phaseSoakDuration: '1m' } }));
  runUntil(sim, () => false);
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.equal(sim.status?.phaseTwoHold, undefined);
  assert.deepEqual(sim.status?.plan?.phaseTwo, { start: 'Automatic' });
});

test('the resolver refuses what the CRD refuses: a deadline without onDeadline, a deadline under Automatic, Approval without TwoPhase', () => {
  const bad: [PhaseTwoPolicy, string | undefined, RegExp][] = [
    [{ start: 'Approval', deadline: '1h' }, 'TwoPhase', /go together/],
    [{ start: 'Approval', onDeadline: 'Proceed' }, 'TwoPhase', /go together/],
    [{ start: 'Automatic', deadline: '1h', onDeadline: 'Proceed' }, 'TwoPhase', /needs start Approval/],
    [{ start: 'Approval' }, 'OnePhase', /needs phases TwoPhase/],
  ];
  for (const [phaseTwo, phases, re] of bad) {
    assert.throws(() => resolveSpec(spec({ strategy: { phases: phases as 'OnePhase' | 'TwoPhase', phaseTwo } })), (e: unknown) => e instanceof SpecError && re.test(e.message), JSON.stringify(phaseTwo));
  }
  assert.deepEqual(resolveSpec(spec({ strategy: { phases: 'TwoPhase', phaseTwo: { start: 'Approval', deadline: '1h30m', onDeadline: 'Rollback' } } })).strategy.phaseTwo, { start: 'Approval', deadlineMs: 5_400_000, onDeadline: 'Rollback' });
});

test('status.rollbackWindow.checkedAt moves only when the window changes: a step that finds the same writes the same status', () => {
  const sim = newSim();
  runUntil(sim, inHold);
  const at = sim.status?.rollbackWindow?.checkedAt;
  sim.step(10_000);
  assert.equal(sim.status?.rollbackWindow?.checkedAt, at);
  // Keys reordered, as a stored status may be: still the same window.
  const w = sim.status!.rollbackWindow!;
  sim.status!.rollbackWindow = Object.fromEntries(Object.entries(w).reverse());
  sim.step(10_000);
  assert.equal(sim.status?.rollbackWindow?.checkedAt, at);
  sim.upgrade = { ...sim.upgrade, annotations: { [ABORT_ANNOTATION]: 'x' } };
  sim.step(1000);
  assert.equal(sim.status?.rollbackWindow?.available, false);
  assert.notEqual(sim.status?.rollbackWindow?.checkedAt, at);
});
