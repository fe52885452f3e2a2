// The upgrade paths beyond v1.35 -> v1.36 on the pure planner: a patch release, v1.36 -> v1.37 (a minor whose
// facts come from its sources), a v1.34 fleet, and a minor newer than the operator knows (refused where a
// decision needs facts it does not have, carried out where the servers tell it everything).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sim, peer, spec, storage } from './fleet.ts';
import { ABORT_ANNOTATION, recordCallOutcome, type ObservedPeer, type Observation } from '../../src/plan/index.ts';
import type { ApiServerUpgradeSpec } from '../../src/api/types.generated.ts';

/**
 * Steps, carrying out each call at once, until terminal or paused; returns the calls as action:server[@emulation]
 * (the gate is shown on gate passes only: the test below checks what Upgrade and Rollback calls carry).
 */
function run(sim: Sim, max = 200): string[] {
  const out: string[] = [];
  for (let i = 0; i < max; i++) {
    sim.step(5000);
    for (const a of sim.last.actions) {
      if (a.kind !== 'callDriver') continue;
      const g = a.request.featureGates.UnknownVersionInteroperabilityProxy;
      const gate = a.request.action === 'Upgrade' || g === undefined ? '' : g ? '+gate' : '-gate';
      out.push(`${a.request.action}:${a.request.server.hostname}${gate}${a.request.emulatedVersion ? `@${a.request.emulatedVersion}` : ''}`);
    }
    sim.applyDriverCalls();
    if (['Succeeded', 'RolledBack', 'Failed', 'Paused'].includes(sim.status?.phase ?? '')) break;
  }
  return out;
}

function pathSim(from: string, to: string, gate: ObservedPeer['proxyGate'], over: Partial<ApiServerUpgradeSpec> = {}): Sim {
  const sim = new Sim(['cp-1', 'cp-2', 'cp-3'].map((h) => peer(h, from, gate)), spec({ targetVersion: to, ...over }));
  sim.extra.storage = [storage(from), storage(to)];
  return sim;
}

/** The last step's one call recorded Accepted, as the shell does after the driver took it. */
function recordAccepted(sim: Sim) {
  const call = sim.last.actions.find((a) => a.kind === 'callDriver');
  assert.ok(call && call.kind === 'callDriver');
  return recordCallOutcome(sim.status!, call.request.idempotencyKey, { kind: 'accepted', message: 'HTTP 200' }, sim.now);
}

const upgrades = (calls: string[]): string[] => calls.filter((c) => c.startsWith('Upgrade:'));

test('v1.36.1 -> v1.36.3, a patch release: no gate pass even with the gate off, one replacement per server, Succeeded', () => {
  const sim = pathSim('v1.36.1', 'v1.36.3', 'off');
  const calls = run(sim);
  assert.equal(sim.status?.phase, 'Succeeded', JSON.stringify(sim.status?.conditions));
  assert.deepEqual(calls, ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.match(sim.condition('PreflightPassed')!.message, /patch upgrade to v1\.36\.3/);
  assert.equal(sim.status?.coverage?.builtInAdded, 0);
});

test('a patch upgrade leaves each server\'s gate as it found it: no Upgrade or Rollback carries the gate (an alpha gate is never turned on without consent); a minor one carries it on', () => {
  const gates = (sim: Sim, action: string): (boolean | undefined)[] => {
    const seen: (boolean | undefined)[] = [];
    for (let i = 0; i < 200 && !['Succeeded', 'RolledBack', 'Failed', 'Paused'].includes(sim.status?.phase ?? ''); i++) {
      sim.step(5000);
      for (const a of sim.last.actions) if (a.kind === 'callDriver' && a.request.action === action) seen.push(a.request.featureGates.UnknownVersionInteroperabilityProxy);
      sim.applyDriverCalls();
    }
    return seen;
  };
  // v1.35 has the gate alpha and off by default: a patch inside it must not switch it on.
  const patch = pathSim('v1.35.1', 'v1.35.4', 'off');
  assert.deepEqual(gates(patch, 'Upgrade'), [undefined, undefined, undefined]);
  assert.equal(patch.status?.phase, 'Succeeded', JSON.stringify(patch.status?.conditions));
  assert.ok(patch.peers.every((p) => p.version === 'v1.35.4' && p.proxyGate === 'off'), JSON.stringify(patch.peers));
  // Rolled back by hand mid-way: the Rollback calls carry no gate either.
  const back = pathSim('v1.36.1', 'v1.36.3', 'off', { strategy: { batchSize: 1, soakDuration: '10m' } });
  for (let i = 0; i < 20 && back.status?.batch?.current !== 1; i++) { back.step(5000); back.applyDriverCalls(); }
  back.upgrade = { ...back.upgrade, annotations: { [ABORT_ANNOTATION]: 'a1' } };
  assert.deepEqual(gates(back, 'Rollback'), [undefined]);
  assert.equal(back.status?.phase, 'RolledBack', JSON.stringify(back.status?.conditions));
  assert.ok(back.peers.every((p) => p.version === 'v1.36.1' && p.proxyGate === 'off'));
  // Across a minor step the proxy is what keeps clients served: every Upgrade asks for the gate on.
  const minor = pathSim('v1.36.3', 'v1.37.2', 'on');
  assert.deepEqual(gates(minor, 'Upgrade'), [true, true, true]);
});

test('v1.36.3 -> v1.37.2: the gate is already on (beta since 1.36), no gate pass; the coverage report knows 1.37 from its sources', () => {
  const sim = pathSim('v1.36.3', 'v1.37.2', 'on', { proxy: { gate: 'Auto', revertAfter: true } });
  const calls = run(sim);
  assert.equal(sim.status?.phase, 'Succeeded', JSON.stringify(sim.status?.conditions));
  // revertAfter turns nothing off: 1.37 has the gate on by default.
  assert.deepEqual(calls, ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.equal(sim.status?.coverage?.targetSource, 'Catalog v1.37.2');
  assert.equal(sim.status?.coverage?.builtInAdded, 4);
});

test('v1.36.3 -> v1.37.2 with the gate turned off on the fleet: Auto turns it on first', () => {
  const sim = pathSim('v1.36.3', 'v1.37.2', 'off');
  const calls = run(sim);
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.deepEqual(calls.slice(0, 3), ['EnableProxy:cp-1+gate', 'EnableProxy:cp-2+gate', 'EnableProxy:cp-3+gate']);
  assert.equal(upgrades(calls).length, 3);
});

test('v1.34.4 -> v1.35.4: the gate pass first (alpha in both), and revertAfter turns it off again (1.35 has it off by default)', () => {
  const sim = pathSim('v1.34.4', 'v1.35.4', 'off', { proxy: { gate: 'Auto', revertAfter: true } });
  const calls = run(sim);
  assert.equal(sim.status?.phase, 'Succeeded', JSON.stringify(sim.status?.conditions));
  assert.deepEqual(calls.slice(0, 3), ['EnableProxy:cp-1+gate', 'EnableProxy:cp-2+gate', 'EnableProxy:cp-3+gate']);
  assert.deepEqual(calls.slice(3), ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3', 'RevertProxy:cp-1-gate', 'RevertProxy:cp-2-gate', 'RevertProxy:cp-3-gate']);
  assert.ok(sim.peers.every((p) => p.version === 'v1.35.4' && p.proxyGate === 'off'));
});

test('v1.34.4 -> v1.35.4 with Lease holders as v1.34 keeps them (the same holder after a restart): the gate pass lands on the process start time', () => {
  const sim = new Sim(['cp-1', 'cp-2', 'cp-3'].map((h) => peer(h, 'v1.34.4', 'off', { holderIdentity: `apiserver-${h}_a`, processStart: 1_790_000_000 })), spec({ targetVersion: 'v1.35.4', proxy: { gate: 'Auto' } }));
  sim.extra.storage = [storage('v1.34.4'), storage('v1.35.4')];
  const calls = run(sim);
  assert.equal(sim.status?.phase, 'Succeeded', JSON.stringify(sim.status?.conditions));
  assert.deepEqual(calls, ['EnableProxy:cp-1+gate', 'EnableProxy:cp-2+gate', 'EnableProxy:cp-3+gate', 'Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  const gatePass = sim.status?.driverCalls?.find((c) => c.action === 'EnableProxy' && c.server === 'cp-1');
  assert.equal(gatePass?.holderBefore, 'apiserver-cp-1_a@1790000000', 'the call records the process it found: holder and start');
});

test('v1.34: a server whose Lease holder and start time are unchanged has not restarted, whatever it runs; an unread start time lands nothing', () => {
  const sim = new Sim(['cp-1', 'cp-2', 'cp-3'].map((h) => peer(h, 'v1.34.4', 'off', { holderIdentity: `apiserver-${h}_a`, processStart: 1_790_000_000 })), spec({ targetVersion: 'v1.35.4', proxy: { gate: 'Auto' } }));
  sim.extra.storage = [storage('v1.34.4'), storage('v1.35.4')];
  sim.step(5000);
  assert.deepEqual(sim.last.actions.filter((a) => a.kind === 'callDriver').map((a) => (a.kind === 'callDriver' ? a.request.action : '')), ['EnableProxy']);
  sim.status = recordAccepted(sim);
  // The gate reads on (as a scrape of the old process never would) but holder and start are the same: not landed.
  sim.peers[0] = { ...sim.peers[0]!, proxyGate: 'on' };
  for (let i = 0; i < 3; i++) sim.step(5000);
  assert.equal(sim.status?.driverCalls?.[0]?.result, 'Accepted', 'the same process: the call is still in flight');
  // The start time not read this time (a failed scrape): still not landed.
  const { processStart: _unread, ...withoutStart } = sim.peers[0]!;
  sim.peers[0] = withoutStart;
  sim.step(5000);
  assert.equal(sim.status?.driverCalls?.[0]?.result, 'Accepted', 'an unknown start time is no restart');
  sim.peers[0] = { ...sim.peers[0]!, processStart: 1_790_000_100 };
  sim.step(5000);
  assert.equal(sim.status?.driverCalls?.[0]?.result, 'Done', 'a new process at the goal: landed');
});

test('v1.34.4 -> v1.35.4 TwoPhase: v1.35 emulates 1.32..1.35, so phase one runs it emulating 1.34', () => {
  const sim = pathSim('v1.34.4', 'v1.35.4', 'on', { strategy: { batchSize: 1, soakDuration: '0s', phases: 'TwoPhase', phaseSoakDuration: '0s' } });
  const resources = ['/v1/pods', 'apps/v1/deployments'];
  sim.derive = (peers): Partial<Observation> => ({ discovery: { converged: true, message: 'converged', own: peers.map((p) => ({ server: p.hostname, version: p.version!, emulation: p.emulation ?? (p.version === 'v1.34.4' ? '1.34' : '1.35'), resources })) } });
  sim.extra.storage = [storage('v1.34.4'), { ...storage('v1.35.4'), emulation: '1.34' }, storage('v1.35.4')];
  const calls = run(sim);
  assert.equal(sim.status?.phase, 'Succeeded', JSON.stringify(sim.status?.conditions));
  assert.deepEqual(upgrades(calls), ['Upgrade:cp-1@1.34', 'Upgrade:cp-2@1.34', 'Upgrade:cp-3@1.34', 'Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
});

test('a minor newer than the operator knows: revertAfter is refused with a reason, not guessed', () => {
  const sim = pathSim('v1.37.2', 'v1.38.0', 'on', { proxy: { gate: 'Auto', revertAfter: true } });
  assert.deepEqual(run(sim), []);
  assert.equal(sim.status?.phase, 'Failed');
  const c = sim.condition('PreflightPassed')!;
  assert.equal(c.reason, 'VersionFactsUnknown');
  assert.match(c.message, /knows Kubernetes up to 1\.37 \(facts read from v1\.37\.2\); 1\.38 is newer/);
});

test('a minor newer than the operator knows: TwoPhase is refused, its emulation range is unknown', () => {
  const sim = pathSim('v1.37.2', 'v1.38.0', 'on', { strategy: { batchSize: 1, soakDuration: '0s', phases: 'TwoPhase' } });
  assert.deepEqual(run(sim), []);
  assert.equal(sim.status?.phase, 'Failed');
  assert.equal(sim.condition('PreflightPassed')?.reason, 'CannotEmulate');
  assert.match(sim.condition('PreflightPassed')!.message, /--emulated-version=1\.37 is unknown/);
});

test('a minor newer than the operator knows, OnePhase: every fact it needs is read from the servers; the coverage says Unknown', () => {
  const sim = pathSim('v1.37.2', 'v1.38.0', 'on');
  const calls = run(sim);
  assert.equal(sim.status?.phase, 'Succeeded', JSON.stringify(sim.status?.conditions));
  assert.deepEqual(calls, ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.equal(sim.status?.coverage?.targetSource, 'Unknown');
  assert.equal(sim.status?.coverage?.builtInAdded, undefined);
});

test('TwoPhase to v1.33 from v1.32 is in range; to v1.32 is refused (compatibility versions beta from 1.33)', () => {
  const to33 = pathSim('v1.32.9', 'v1.33.0', 'on', { strategy: { batchSize: 1, soakDuration: '0s', phases: 'TwoPhase' } });
  to33.step();
  assert.notEqual(to33.condition('PreflightPassed')?.reason, 'CannotEmulate');
  const to32 = pathSim('v1.31.0', 'v1.32.0', 'on', { strategy: { batchSize: 1, soakDuration: '0s', phases: 'TwoPhase' } });
  to32.step();
  assert.equal(to32.condition('PreflightPassed')?.reason, 'CannotEmulate');
  assert.match(to32.condition('PreflightPassed')!.message, /emulates 1\.31\.\.1\.32, and TwoPhase needs a target of v1\.33 or newer/);
});
