// A TwoPhase upgrade whose phase two is held for an approval (spec.strategy.phaseTwo, docs/two-phase.md "Holding phase
// two"), on real servers: three kube-apiservers v1.35.4 behind haproxy, the operator as a process (two replicas in the
// first scenario) and the e2e webhook that really replaces servers.
// - held: every server stays on v1.36.3 emulating 1.35, status shows the hold and the rollback window; an approve
//   value set before the hold approves nothing; a leader change during the hold changes nothing; the plugin's
//   `approve` ends it and the upgrade ends Succeeded;
// - `abort` in the hold ends RolledBack on the v1.35.4 binaries;
// - a 20 s deadline with onDeadline Rollback ends RolledBack on the v1.35.4 binaries, not before the deadline.
// Extended tier: three phase ones on real servers (about 6 minutes).
//   node_modules/.bin/node --test --test-reporter=spec e2e/extended/two-phase-hold.e2e.ts   (as root)
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { NEW_VERSION, OLD_VERSION, waitFor, sleep, type Cluster } from '../cluster/index.ts';
import { createUpgrade, getUpgrade, startOperator } from '../support/operator.ts';
import { startRig, upgradeManifest, type Rig } from '../support/rig.ts';
import { run } from '../support/tools.ts';
import { APPROVE_ANNOTATION } from '../../src/api/vocabulary.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

/** healthPorts 18530-18539 belong to this file. */
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const PLUGIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'kubectl-apiserver_upgrade');
const twoPhase = { soakDuration: '2s', batchTimeout: '3m', phases: 'TwoPhase', phaseSoakDuration: '5s' };

function report(msg: string): void {
  process.stderr.write(`[two-phase-hold] ${msg}\n`);
}

interface ServerVersion { gitVersion: string; emulationMinor?: string }
async function versions(cluster: Cluster): Promise<string[]> {
  return Promise.all(cluster.servers.map(async (s) => {
    const v = JSON.parse((await cluster.request(s.index, '/version')).body) as ServerVersion;
    return `${v.gitVersion}/1.${v.emulationMinor ?? '?'}`;
  }));
}

/** Waits until `want`, or until the upgrade stops anywhere else (then the caller's assertions say what happened). */
async function until(cluster: Cluster, name: string, want: (u: ApiServerUpgrade) => boolean, within = 6 * 60_000): Promise<ApiServerUpgrade> {
  let last = '';
  return waitFor(name, within, async () => {
    const u = await getUpgrade(cluster, name);
    const line = `${u?.status?.phase} ${u?.status?.stage ?? ''} ${u?.status?.batch?.progress ?? ''} ${u?.status?.waiting?.reason ?? ''} ${u?.status?.pause?.message ?? ''}`;
    if (line !== last) report(`${name}: ${(last = line)}`);
    if (u && want(u)) return u;
    const p = u?.status?.phase;
    if (p === 'Paused' || p === 'Failed' || p === 'RolledBack' || p === 'Succeeded') return u;
    return undefined;
  }, 500);
}

const held = (u: ApiServerUpgrade): boolean => u.status?.waiting?.reason === 'AwaitingApproval';

function manifest(rig: Rig, name: string, phaseTwo: object, annotations: Record<string, string> = {}): Record<string, unknown> {
  const m = upgradeManifest(name, rig.hook, { strategy: { ...twoPhase, phaseTwo } });
  (m.metadata as { annotations?: Record<string, string> }).annotations = annotations;
  return m;
}

const callsSince = (rig: Rig, t: number): string[] => [...rig.hook.calls.values()].filter((c) => c.at >= t).sort((a, b) => a.at - b.at).map((c) => `${c.action}:${c.hostname}@${c.emulatedVersion ?? '-'}`);

/** The hold as status shows it after phase one: the fleet emulating 1.35, the window to the old binaries. */
async function assertHeld(rig: Rig, u: ApiServerUpgrade): Promise<void> {
  assert.equal(u.status?.phase, 'Upgrading', JSON.stringify(u.status?.pause ?? u.status?.conditions));
  assert.equal(u.status?.stage, 'Binaries');
  assert.deepEqual(await versions(rig.cluster), rig.cluster.servers.map(() => `${NEW_VERSION}/1.35`), 'held: every server on the new binary emulating 1.35');
  assert.ok(u.status?.phaseTwoHold?.heldSince, 'status.phaseTwoHold.heldSince');
  assert.equal(u.status?.conditions?.find((c) => c.type === 'Waiting')?.reason, 'AwaitingApproval');
  const w = u.status?.rollbackWindow;
  assert.deepEqual([w?.available, w?.toVersion, w?.safe], [true, OLD_VERSION, 'True'], `status.rollbackWindow: ${JSON.stringify(w)}`);
}

test('held phase two: an early approve value counts for nothing, a leader change changes nothing, `approve` ends Succeeded', async () => {
  const rig = await startRig({ gate: true, healthPort: 18530 });
  cleanups.push(() => rig.teardown());
  const { cluster } = rig;
  const first = rig.op;
  await waitFor('the first replica to lead', 30_000, async () => (first.logLines().some((l) => l.message === 'started leading') ? true : undefined));
  const second = await startOperator(cluster, { healthPort: 18531 });
  cleanups.push(() => second.stop());
  const name = 'hold-approve';
  const t0 = Date.now();
  await createUpgrade(cluster, manifest(rig, name, { start: 'Approval' }, { [APPROVE_ANNOTATION]: 'set-before-the-hold' }));
  const h = await until(cluster, name, held);
  report(`phase one and the phase soak: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  await assertHeld(rig, h);
  assert.equal(h.status?.observedApprove, 'set-before-the-hold', 'the early value was seen');
  assert.equal(h.status?.phaseTwoHold?.approvedAt, undefined, 'and approved nothing');
  assert.deepEqual(callsSince(rig, t0), ['Upgrade:cp-1@1.35', 'Upgrade:cp-2@1.35', 'Upgrade:cp-3@1.35']);

  const get = await run(PLUGIN, ['get', name, '--kubeconfig', cluster.kubeconfig], { timeoutMs: 120_000 });
  assert.equal(get.code, 0, get.stderr);
  assert.match(get.stdout, /^Waiting: AwaitingApproval/m);
  assert.match(get.stdout, new RegExp(`^Rollback: available to ${OLD_VERSION.replaceAll('.', '\\.')}; safe True`, 'm'));
  const list = await run(PLUGIN, ['list', '--kubeconfig', cluster.kubeconfig], { timeoutMs: 120_000 });
  assert.match(list.stdout, new RegExp(`^${name} .*AwaitingApproval`, 'm'));

  // The leader stops in the hold; the standby takes over from status alone.
  const stoppedAt = Date.now();
  await first.stop();
  await waitFor('the standby to lead', 60_000, async () => (second.logLines().some((l) => l.message === 'started leading') ? true : undefined), 300);
  report(`leader stopped -> standby leading in ${Date.now() - stoppedAt} ms`);
  await sleep(15_000);
  const after = await getUpgrade(cluster, name);
  assert.ok(after && held(after), `still held after the leader change: ${JSON.stringify(after?.status?.waiting)}`);
  assert.deepEqual(after.status?.phaseTwoHold, h.status?.phaseTwoHold, 'the hold is the same hold');
  assert.deepEqual(callsSince(rig, t0), ['Upgrade:cp-1@1.35', 'Upgrade:cp-2@1.35', 'Upgrade:cp-3@1.35'], 'nothing called in the hold');
  assert.deepEqual(await versions(cluster), cluster.servers.map(() => `${NEW_VERSION}/1.35`));

  const approve = await run(PLUGIN, ['approve', name, '--kubeconfig', cluster.kubeconfig], { timeoutMs: 120_000 });
  assert.equal(approve.code, 0, approve.stderr);
  report(`$ kubectl apiserver-upgrade approve ${name}: ${approve.stdout.trim()}`);
  const t1 = Date.now();
  const final = await until(cluster, name, (u) => u.status?.phase === 'Succeeded');
  await rig.hook.idle();
  report(`phase two after the approval: ${((Date.now() - t1) / 1000).toFixed(0)} s`);
  assert.equal(final.status?.phase, 'Succeeded', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.deepEqual(await versions(cluster), cluster.servers.map(() => `${NEW_VERSION}/1.36`));
  assert.equal(final.status?.phaseTwoHold?.endedBy, 'Approved');
  assert.notEqual(final.status?.phaseTwoHold?.approval, 'set-before-the-hold');
  assert.deepEqual(callsSince(rig, t0), ['Upgrade:cp-1@1.35', 'Upgrade:cp-2@1.35', 'Upgrade:cp-3@1.35', 'Upgrade:cp-1@-', 'Upgrade:cp-2@-', 'Upgrade:cp-3@-']);
  for (const c of rig.hook.calls.values()) assert.equal(c.deliveries, 1, `${c.key} delivered once across the leader change`);
  const w = final.status?.rollbackWindow;
  report(`after Succeeded: status.rollbackWindow ${JSON.stringify(w)}`);
  assert.equal(w?.available, false);
  assert.equal(w?.toVersion, OLD_VERSION);
  assert.ok(w?.safe === 'True' || w?.safe === 'False' || w?.safe === 'Unknown', 'a storage verdict after Succeeded');
});

test('held phase two: `abort` ends RolledBack on the old binaries; a 20 s deadline with onDeadline Rollback does the same by itself', async () => {
  const rig = await startRig({ gate: true, healthPort: 18532 });
  cleanups.push(() => rig.teardown());
  const { cluster } = rig;

  const aborted = 'hold-abort';
  const t0 = Date.now();
  await createUpgrade(cluster, manifest(rig, aborted, { start: 'Approval' }));
  await assertHeld(rig, await until(cluster, aborted, held));
  const abort = await run(PLUGIN, ['abort', aborted, '--kubeconfig', cluster.kubeconfig], { timeoutMs: 120_000 });
  assert.equal(abort.code, 0, abort.stderr);
  const a = await until(cluster, aborted, (u) => u.status?.phase === 'RolledBack');
  await rig.hook.idle();
  assert.equal(a.status?.phase, 'RolledBack', JSON.stringify(a.status?.pause ?? a.status?.conditions));
  assert.equal(a.status?.observedAbort !== undefined, true);
  assert.deepEqual(await versions(cluster), cluster.servers.map(() => `${OLD_VERSION}/1.35`), 'every server back on the v1.35.4 binary');
  assert.equal(a.status?.phaseTwoHold?.endedBy, 'RollbackStarted');
  const rb = callsSince(rig, t0).filter((c) => c.startsWith('Rollback:'));
  assert.ok(rb.length === 3 && rb.every((c) => c.endsWith('@-')), `rollback to the old binary, no emulation: ${rb.join(', ')}`);
  report(`abort in the hold: RolledBack ${((Date.now() - t0) / 1000).toFixed(0)} s after create`);

  // The same fleet, back on v1.35.4: a new upgrade whose hold has a 20 s deadline that rolls back.
  const deadlined = 'hold-deadline';
  const t1 = Date.now();
  await createUpgrade(cluster, manifest(rig, deadlined, { start: 'Approval', deadline: '20s', onDeadline: 'Rollback' }));
  const h = await until(cluster, deadlined, held);
  await assertHeld(rig, h);
  const hold = h.status?.phaseTwoHold;
  assert.equal(Date.parse(hold?.deadline ?? '') - Date.parse(hold?.heldSince ?? ''), 20_000, 'deadline = heldSince + 20s');
  assert.equal(h.status?.waiting?.until, hold?.deadline, 'status.waiting.until is the deadline');
  assert.equal(h.status?.rollbackWindow?.until, hold?.deadline, 'status.rollbackWindow.until is the deadline');
  const d = await until(cluster, deadlined, (u) => u.status?.phase === 'RolledBack', 4 * 60_000);
  await rig.hook.idle();
  assert.equal(d.status?.phase, 'RolledBack', JSON.stringify(d.status?.pause ?? d.status?.conditions));
  assert.deepEqual(await versions(cluster), cluster.servers.map(() => `${OLD_VERSION}/1.35`), 'every server back on the v1.35.4 binary');
  assert.equal(d.status?.phaseTwoHold?.endedBy, 'DeadlineRolledBack');
  assert.equal(d.status?.conditions?.find((c) => c.type === 'Degraded')?.reason, 'PhaseTwoDeadline');
  const rollbacks = [...rig.hook.calls.values()].filter((c) => c.at >= t1 && c.action === 'Rollback');
  assert.equal(rollbacks.length, 3);
  const firstRollback = Math.min(...rollbacks.map((c) => c.at));
  assert.ok(firstRollback >= Date.parse(hold!.deadline!), `no rollback before the deadline (${new Date(firstRollback).toISOString()} vs ${hold!.deadline})`);
  report(`deadline: first Rollback call ${firstRollback - Date.parse(hold!.deadline!)} ms after the deadline; RolledBack ${((Date.now() - t1) / 1000).toFixed(0)} s after create`);
});
