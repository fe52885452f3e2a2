// The running process after each call (src/plan/running-process.ts, docs/version-skew.md "The running process"): a
// call's server back at its goal by /version is counted as landed only when its own /flagz and /statusz agree; a
// difference pauses RunningProcessDiffers naming the server, the flag and both values, and lifts by itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sim, peer, spec, OLD, NEW } from './fleet.ts';
import { ABORT_ANNOTATION, RESUME_ANNOTATION } from '../../src/plan/index.ts';
import type { ObservedPeer } from '../../src/plan/observation.ts';
import type { ObservedRunning } from '../../src/plan/zpages.ts';
import { judgeRunning } from '../../src/plan/running-process.ts';
import { minorOf } from '../../src/plan/version.ts';

const phaseOf = (sim: Sim): string | undefined => sim.status?.phase;
const threeOld = (): ObservedPeer[] => [peer('cp-1', OLD, 'off'), peer('cp-2', OLD, 'off'), peer('cp-3', OLD, 'off')];

/**
 * The pages each server serves as real ones do (test/fixtures/zpages): v1.35 none (its gates are alpha and off), from
 * v1.36 both, except a server emulating 1.35. `lie` makes a server's process differ from what its last call set.
 */
class Pages {
  gates = new Map<string, boolean | undefined>();
  lie = new Map<string, Partial<{ proxyGate: boolean | undefined; binaryVersion: string; emulationVersion: string }>>();
  failed = new Set<string>();
  of(peers: ObservedPeer[]): Record<string, ObservedRunning> {
    return Object.fromEntries(peers.map((p): [string, ObservedRunning] => {
      if (this.failed.has(p.hostname)) return [p.hostname, { flagz: { kind: 'failed', message: 'HTTP 403' }, statusz: { kind: 'failed', message: 'HTTP 403' } }];
      const emulation = p.emulation ?? minorOf(p.version ?? '') ?? '';
      if (emulation === '1.35') return [p.hostname, { flagz: { kind: 'notServed' }, statusz: { kind: 'notServed' } }];
      const l = this.lie.get(p.hostname) ?? {};
      return [p.hostname, {
        flagz: { kind: 'read', value: { proxyGate: 'proxyGate' in l ? l.proxyGate : this.gates.get(p.hostname), emulatedVersion: p.emulation } },
        statusz: { kind: 'read', value: { binaryVersion: l.binaryVersion ?? (p.version ?? '').slice(1), emulationVersion: l.emulationVersion ?? emulation } },
      }];
    }));
  }
}

function simWithPages(peers = threeOld(), s = spec()): { sim: Sim; pages: Pages } {
  const sim = new Sim(peers, s);
  const pages = new Pages();
  sim.derive = (ps) => ({ running: pages.of(ps) });
  // The flag each call wrote into --feature-gates, as the agent writes it.
  const apply = sim.applyDriverCalls.bind(sim);
  sim.applyDriverCalls = () => {
    for (const a of sim.last.actions) if (a.kind === 'callDriver' && a.request.featureGates.UnknownVersionInteroperabilityProxy !== undefined) pages.gates.set(a.request.server.hostname, a.request.featureGates.UnknownVersionInteroperabilityProxy);
    return apply();
  };
  return { sim, pages };
}

function runUntil(sim: Sim, done: (s: Sim) => boolean, steps = 60): string[] {
  const calls: string[] = [];
  for (let i = 0; i < steps && !done(sim); i++) {
    sim.step();
    calls.push(...sim.calls());
    sim.applyDriverCalls();
  }
  return calls;
}

test('every call of a v1.35 -> v1.36 upgrade is checked: the gate pass on v1.35 NotServed, each Upgrade Confirmed by its pages', () => {
  const { sim } = simWithPages();
  const calls = runUntil(sim, (s) => phaseOf(s) === 'Succeeded');
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.deepEqual(calls, ['EnableProxy:cp-1', 'EnableProxy:cp-2', 'EnableProxy:cp-3', 'Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  for (const row of sim.status?.peers ?? []) {
    assert.equal(row.running?.state, 'Confirmed', JSON.stringify(row.running));
    assert.equal(row.running?.flagz, 'Read');
    assert.match(row.running?.call ?? '', /./);
    assert.equal(row.running?.call, sim.status?.driverCalls?.filter((c) => c.server === row.hostname).at(-1)?.key);
  }
});

test('a server whose process runs without the gate its call set: not landed, paused RunningProcessDiffers naming the server, the flag and both values; it lifts once the pages agree', () => {
  const { sim, pages } = simWithPages();
  pages.lie.set('cp-2', { proxyGate: false });
  runUntil(sim, (s) => phaseOf(s) === 'Paused');
  assert.equal(sim.status?.pause?.reason, 'RunningProcessDiffers');
  assert.match(sim.status?.pause?.message ?? '', /cp-2 \(Upgrade to v1\.36\.3\): \/flagz --feature-gates: the call meant UnknownVersionInteroperabilityProxy=true, the process runs UnknownVersionInteroperabilityProxy=false/);
  assert.deepEqual(sim.status?.pause?.servers, ['cp-2']);
  const call = sim.status?.driverCalls?.find((c) => c.server === 'cp-2' && c.action === 'Upgrade');
  assert.equal(call?.result, 'Accepted', 'not counted as landed');
  assert.equal(sim.status?.peers?.find((p) => p.hostname === 'cp-2')?.running?.state, 'Differs');
  // Restarting (not ready: no verdict): the pause stays, nothing is called.
  const cp2 = sim.peers.find((p) => p.hostname === 'cp-2')!;
  cp2.ready = false;
  sim.step();
  assert.equal(sim.status?.pause?.reason, 'RunningProcessDiffers');
  assert.deepEqual(sim.calls(), []);
  cp2.ready = true;
  // Held past batchTimeout (10m): still in flight, not TimedOut, and nothing else is called.
  for (let i = 0; i < 3; i++) {
    sim.step(5 * 60_000);
    assert.deepEqual(sim.calls(), []);
  }
  assert.equal(sim.status?.pause?.reason, 'RunningProcessDiffers');
  assert.equal(sim.status?.driverCalls?.find((c) => c.key === call?.key)?.result, 'Accepted');
  // A resume with the process still different pauses again at once.
  sim.upgrade = { ...sim.upgrade, annotations: { [RESUME_ANNOTATION]: 'r1' } };
  sim.step();
  assert.equal(sim.status?.pause?.reason, 'RunningProcessDiffers');
  // The process restarted with the gate: the pause lifts by itself, the call is Done and the upgrade ends.
  pages.lie.delete('cp-2');
  sim.step();
  assert.notEqual(phaseOf(sim), 'Paused');
  assert.ok(sim.last.actions.some((a) => a.kind === 'event' && a.reason === 'RunningProcessConfirmed'));
  assert.equal(sim.status?.driverCalls?.find((c) => c.key === call?.key)?.result, 'Done');
  assert.equal(sim.status?.peers?.find((p) => p.hostname === 'cp-2')?.running?.state, 'Confirmed');
  runUntil(sim, (s) => phaseOf(s) === 'Succeeded');
  assert.equal(sim.status?.phase, 'Succeeded');
});

test('the binary\'s version in /statusz differing from the target holds the call the same way', () => {
  const { sim, pages } = simWithPages();
  pages.lie.set('cp-1', { binaryVersion: '1.36.2' });
  runUntil(sim, (s) => phaseOf(s) === 'Paused');
  assert.match(sim.status?.pause?.message ?? '', /cp-1 \(Upgrade to v1\.36\.3\): \/statusz binaryVersion: the call meant v1\.36\.3, the process runs 1\.36\.2/);
});

test('a page that cannot be read is unknown: held as a difference, saying why; an abort rolls back without waiting for it, and its Rollback call is checked too', () => {
  const { sim, pages } = simWithPages();
  runUntil(sim, (s) => phaseOf(s) === 'Upgrading');
  pages.failed.add('cp-1');
  runUntil(sim, (s) => phaseOf(s) === 'Paused');
  assert.equal(sim.status?.pause?.reason, 'RunningProcessDiffers');
  assert.match(sim.status?.pause?.message ?? '', /cp-1 \(Upgrade to v1\.36\.3\): \/statusz: HTTP 403; \/flagz: HTTP 403: what the process runs is unknown/);
  assert.equal(sim.status?.peers?.find((p) => p.hostname === 'cp-1')?.running?.state, 'Unknown');
  sim.upgrade = { ...sim.upgrade, annotations: { [ABORT_ANNOTATION]: 'a1' } };
  const calls = runUntil(sim, (s) => phaseOf(s) === 'Paused' && s.status?.pause?.resumePhase === 'RollingBack');
  assert.deepEqual(calls, ['Rollback:cp-1']);
  assert.match(sim.status?.pause?.message ?? '', /cp-1 \(Rollback to v1\.35\.4\): \/statusz: HTTP 403; \/flagz: HTTP 403: what the process runs is unknown\. The call is not counted as landed; the pause lifts by itself once the server's \/flagz and \/statusz agree \(restart it with the flags the call gave it\)$/);
  pages.failed.delete('cp-1');
  runUntil(sim, (s) => phaseOf(s) === 'RolledBack');
  assert.equal(sim.status?.phase, 'RolledBack');
  assert.equal(sim.status?.peers?.find((p) => p.hostname === 'cp-1')?.running?.state, 'NotServed', 'v1.35.4 serves neither page');
});

test('an observer that does not read the pages holds nothing, and records nothing', () => {
  const sim = new Sim(threeOld());
  runUntil(sim, (s) => phaseOf(s) === 'Succeeded');
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.ok((sim.status?.peers ?? []).every((p) => p.running === undefined));
});

test('judgeRunning: TwoPhase phase one means --emulated-version and the emulated minor; phase two their absence', () => {
  const read = (proxyGate: boolean | undefined, emulatedVersion: string | undefined, binaryVersion: string, emulationVersion: string): ObservedRunning => ({ flagz: { kind: 'read', value: { proxyGate, emulatedVersion } }, statusz: { kind: 'read', value: { binaryVersion, emulationVersion } } });
  const one = { action: 'Upgrade' as const, target: NEW, gate: true, emulatedVersion: '1.35' };
  assert.equal(judgeRunning('cp-1', one, read(true, '1.35', '1.36.3', '1.35')).state, 'Confirmed');
  const lost = judgeRunning('cp-1', one, read(true, undefined, '1.36.3', '1.36'));
  assert.equal(lost.state, 'Differs');
  assert.deepEqual(lost.differences.map((d) => [d.page, d.what, d.meant, d.running]), [['/statusz', 'emulationVersion', '1.35', '1.36'], ['/flagz', '--emulated-version', '1.35', '(none)']]);
  const two = { action: 'Upgrade' as const, target: NEW, gate: true };
  assert.equal(judgeRunning('cp-1', two, read(true, undefined, '1.36.3', '1.36')).state, 'Confirmed');
  assert.match(judgeRunning('cp-1', two, read(true, '1.35', '1.36.3', '1.35')).message, /--emulated-version: the call meant \(none\), the process runs 1\.35/);
  // A call that sets no gate (proxy.gate Unmanaged) is not judged on it.
  assert.equal(judgeRunning('cp-1', { action: 'Upgrade', target: NEW }, read(false, undefined, '1.36.3', '1.36')).state, 'Confirmed');
  // One page served, the other not: confirmed on what was read, saying which was not served.
  assert.match(judgeRunning('cp-1', two, { flagz: { kind: 'notServed' }, statusz: { kind: 'read', value: { binaryVersion: '1.36.3', emulationVersion: '1.36' } } }).message, /\(\/flagz not served\)/);
  assert.equal(judgeRunning('cp-1', two, undefined).state, 'Unknown');
  // Build metadata is no difference: v1.36.3+rke2r1 is the release v1.36.3.
  assert.equal(judgeRunning('cp-1', { action: 'Upgrade', target: 'v1.36.3+rke2r1' }, read(undefined, undefined, '1.36.3', '1.36')).state, 'Confirmed');
});
