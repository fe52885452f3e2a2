// The flag proof in the upgrade (src/plan/flag-proof-gate.ts, docs/flag-proof.md): the pure decisions (which node
// needs a proof Job, which proofs are done, what blocks) and the planner on a simulated fleet: preflight waits for
// every node's verdict and blocks on a refusal with the node, the flag and the binary's message, calling nothing; a
// node whose manifest changed after preflight is proven again before its call, and a refusal then pauses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiServerUpgradeSpec, DriverCall, FlagProofNode } from '../../src/api/types.generated.ts';
import { resolveSpec } from '../../src/api/defaults.ts';
import { flagProofStep, nodeProofRow, proofJobsNeeded, proofRequests, proofState, upgradeGate } from '../../src/plan/flag-proof-gate.ts';
import { PROOF_SENTINEL } from '../../src/plan/flag-proof.ts';
import type { ObservedProofJob, ObservedProofWant } from '../../src/plan/observed-preflight.ts';
import type { ObservedPeer } from '../../src/plan/index.ts';
import { kubeadmFacts, peer, spec, NEW, OLD } from './fleet.ts';
import { ShellSim } from './model/shell-sim.ts';

const NOW = '2026-12-01T10:00:00.000Z';
const want = (hostname: string, key = `k-${hostname}`): Extract<ObservedProofWant, { key: string }> => ({ hostname, key, image: `registry.k8s.io/kube-apiserver:${NEW}`, command: ['--etcd-servers=https://127.0.0.1:2379', PROOF_SENTINEL] });
const accepted = (hostname: string, key = `k-${hostname}`): ObservedProofJob => ({ key, hostname, name: `auo-proveflags-${hostname}-1`, proof: { hostname, verdict: { result: 'Accepted', warnings: [] } } });
const refused = (hostname: string, key = `k-${hostname}`): ObservedProofJob => ({
  key, hostname, name: `auo-proveflags-${hostname}-1`,
  proof: { hostname, verdict: { result: 'Refused', message: 'unrecognized feature gate: ServiceTrafficDistribution', flag: '--feature-gates', item: 'ServiceTrafficDistribution' } },
});

test('nodeProofRow: no Job for the want\'s key asks for one (Pending); a running Job waits; its verdict is recorded with the command line and key', () => {
  const w = want('cp-1');
  const first = nodeProofRow('cp-1', w, [], undefined, NOW);
  assert.equal(first.row.result, 'Pending');
  assert.deepEqual(first.create, { hostname: 'cp-1', key: 'k-cp-1', image: `registry.k8s.io/kube-apiserver:${NEW}`, command: w.command });
  const running = nodeProofRow('cp-1', w, [{ key: 'k-cp-1', hostname: 'cp-1', name: 'j' }], first.row, '2026-12-01T10:00:05.000Z');
  assert.equal(running.row.result, 'Pending');
  assert.equal(running.create, undefined, 'the Job is there: not created twice');
  assert.equal(running.row.requestedAt, NOW, 'asked for once: the time stays');
  const done = nodeProofRow('cp-1', w, [refused('cp-1')], running.row, '2026-12-01T10:00:07.000Z');
  assert.deepEqual([done.row.result, done.row.flag, done.row.item, done.row.key, done.row.provenAt], ['Refused', '--feature-gates', 'ServiceTrafficDistribution', 'k-cp-1', '2026-12-01T10:00:07.000Z']);
  assert.deepEqual(done.row.command, w.command, 'the command line proven is recorded');
  assert.match(done.row.message ?? '', /unrecognized feature gate: ServiceTrafficDistribution/);
});

test('nodeProofRow: a verdict for the same key is final (its Job lost changes nothing); a changed command line (new key) is proven again; a lost Job before its verdict is created again', () => {
  const w = want('cp-1');
  const proven = nodeProofRow('cp-1', w, [accepted('cp-1')], undefined, NOW).row;
  assert.equal(proven.result, 'Accepted');
  const lost = nodeProofRow('cp-1', w, [], proven, NOW);
  assert.deepEqual([lost.row.result, lost.create], ['Accepted', undefined]);
  const changed = nodeProofRow('cp-1', want('cp-1', 'k-cp-1-edited'), [accepted('cp-1')], proven, NOW);
  assert.equal(changed.row.result, 'Pending', 'the old key\'s verdict does not prove the new command line');
  assert.equal(changed.create?.key, 'k-cp-1-edited');
  const otherLine = nodeProofRow('cp-1', { ...w, command: ['--audit-log-maxage=3', PROOF_SENTINEL] }, [], proven, NOW);
  assert.equal(otherLine.row.result, 'Pending', 'a verdict stands only for the command line it proved (needsProofAgain)');
  const pending: FlagProofNode = { hostname: 'cp-1', result: 'Pending', key: 'k-cp-1', requestedAt: NOW };
  assert.equal(nodeProofRow('cp-1', w, [], pending, NOW).create?.key, 'k-cp-1', 'a Job deleted before its verdict is asked for again');
});

test('nodeProofRow: no want, a want that cannot be built, a command line too long to record, a Job that cannot run: NotRun (blocks); NotRun is read again', () => {
  assert.equal(nodeProofRow('cp-1', undefined, [], undefined, NOW).row.result, 'NotRun');
  const e = nodeProofRow('cp-1', { hostname: 'cp-1', error: 'no single kube-apiserver mirror Pod for cp-1' }, [], undefined, NOW);
  assert.deepEqual([e.row.result, e.create], ['NotRun', undefined]);
  assert.match(e.row.message ?? '', /mirror Pod/);
  const long = { ...want('cp-1'), command: ['--x='.padEnd(3000, 'a'), PROOF_SENTINEL] };
  assert.equal(nodeProofRow('cp-1', long, [], undefined, NOW).row.result, 'NotRun');
  const notRun = nodeProofRow('cp-1', want('cp-1'), [{ key: 'k-cp-1', hostname: 'cp-1', name: 'j', proof: { hostname: 'cp-1', notRun: 'ErrImagePull' } }], undefined, NOW).row;
  assert.equal(notRun.result, 'NotRun');
  assert.equal(nodeProofRow('cp-1', want('cp-1'), [accepted('cp-1')], notRun, NOW).row.result, 'Accepted', 'the image pulled at last: the verdict is read');
});

test('nodeProofRow: a Job of another node with the same key is not this node\'s proof', () => {
  const r = nodeProofRow('cp-1', want('cp-1', 'k'), [accepted('cp-2', 'k')], undefined, NOW);
  assert.equal(r.row.result, 'Pending');
  assert.equal(r.create?.key, 'k');
});

test('proofState and flagProofStep: Passed only when every node Accepted; Proving while one waits; Blocked names the node, the flag and the message; unread blocks', () => {
  assert.equal(proofState([{ hostname: 'a', result: 'Accepted' }, { hostname: 'b', result: 'Pending' }]), 'Proving');
  assert.equal(proofState([{ hostname: 'a', result: 'Accepted' }, { hostname: 'b', result: 'Inconclusive' }]), 'Blocked');
  assert.equal(proofState([{ hostname: 'a', result: 'Accepted' }]), 'Passed');
  const hosts = ['cp-1', 'cp-2', 'cp-3'];
  const step = flagProofStep(hosts, { wants: hosts.map((h) => want(h)), jobs: [accepted('cp-1'), refused('cp-2')] }, undefined, new Date(NOW), NEW);
  assert.equal(step.report.state, 'Blocked');
  assert.equal(step.reason, 'FlagRefusedByTarget');
  assert.match(step.message, /cp-2: kube-apiserver v1\.36\.3 refuses --feature-gates \(ServiceTrafficDistribution\): unrecognized feature gate: ServiceTrafficDistribution/);
  assert.deepEqual(step.create.map((c) => c.hostname), ['cp-3']);
  const unread = flagProofStep(hosts, { error: 'jobs: 403 forbidden' }, step.report, new Date(NOW), NEW);
  assert.equal(unread.report.state, 'Blocked', 'a read that failed proves nothing, even for nodes proven before');
  assert.deepEqual(unread.create, []);
  assert.equal(flagProofStep(hosts, undefined, undefined, new Date(NOW), NEW).report.state, 'Blocked');
  const passed = flagProofStep(hosts, { wants: hosts.map((h) => want(h)), jobs: hosts.map((h) => accepted(h)) }, undefined, new Date(NOW), NEW);
  assert.deepEqual([passed.report.state, passed.reason, passed.create.length], ['Passed', 'Passed', 0]);
});

test('proofRequests: the Upgrade call\'s gate and emulated version per node; none for the webhook driver', () => {
  const sp = resolveSpec({ ...spec(), driver: { staticPod: {} } });
  const peers: ObservedPeer[] = [peer('cp-1', OLD, 'off', { address: '10.0.0.1:6443' }), peer('cp-2', OLD, 'off')];
  const r = proofRequests(sp, undefined, peers);
  assert.deepEqual(r.map((x) => [x.hostname, x.gate, x.emulatedVersion, x.address]), [['cp-1', true, undefined, '10.0.0.1:6443'], ['cp-2', true, undefined, '10.0.0.2']]);
  const two = resolveSpec({ ...spec(), strategy: { ...spec().strategy, phases: 'TwoPhase' }, driver: { staticPod: {} } });
  assert.equal(proofRequests(two, undefined, peers)[0]!.emulatedVersion, '1.35', 'phase one runs emulating the from-version');
  assert.deepEqual(proofRequests(resolveSpec(spec()), undefined, peers), []);
  assert.deepEqual(proofRequests(sp, undefined, peers, ['CP-1', 'cp-9']).map((x) => x.hostname), ['cp-1', 'cp-2', 'cp-9'], 'a node with a kube-apiserver static Pod but no server seen is proven too');
  assert.equal(upgradeGate({ proxy: { ...sp.proxy, gate: 'Unmanaged' }, targetVersion: NEW, allowPrerelease: false }, OLD), undefined);
  assert.equal(upgradeGate({ proxy: { ...sp.proxy, gate: 'Auto' }, targetVersion: 'v1.35.5', allowPrerelease: false }, OLD), undefined, 'a patch upgrade leaves the gate alone');
});

function fleet(n: number): ObservedPeer[] {
  return Array.from({ length: n }, (_, i) => peer(`cp-${i + 1}`, OLD, 'on', { address: `10.0.0.${i + 1}:6443` }));
}

function staticPodSpec(over: Partial<ApiServerUpgradeSpec> = {}): ApiServerUpgradeSpec {
  const base = spec();
  return { ...base, driver: { staticPod: { readyTimeout: '2m' } }, strategy: { ...base.strategy, batchSize: 1, soakDuration: '0s', batchTimeout: '5m' }, ...over };
}

const upgradeCalls = (sim: ShellSim): DriverCall[] => (sim.status?.driverCalls ?? []).filter((c) => c.action === 'Upgrade');

test('planner: preflight waits (FlagProofPending) while the proofs take time, creates each node\'s Job once, and passes when every node Accepted', () => {
  const sim = new ShellSim(fleet(3), staticPodSpec());
  sim.extra = { ...sim.extra, kubeadm: kubeadmFacts(3) };
  sim.proofs.delayMs = 12_000;
  sim.reconcile(1000);
  sim.reconcile(5000);
  assert.equal(sim.status?.phase, 'Preflight');
  assert.equal(sim.status?.conditions?.find((c) => c.type === 'PreflightPassed')?.reason, 'FlagProofPending');
  assert.equal(sim.status?.flagProof?.state, 'Proving');
  assert.equal(sim.status?.waiting?.reason, 'FlagProofPending');
  assert.deepEqual(sim.proofs.created.map((c) => c.split(':')[0]), ['cp-1', 'cp-2', 'cp-3'], 'every node at once, each once');
  assert.equal(sim.delivered.length, 0, 'nothing called while proving');
  sim.runUntil((s) => s.status?.phase !== 'Preflight', 10, 5000);
  assert.equal(sim.status?.flagProof?.state, 'Passed');
  assert.equal(sim.status?.conditions?.find((c) => c.type === 'FlagProofPassed')?.status, 'True');
  assert.deepEqual((sim.status?.flagProof?.nodes ?? []).map((r) => r.result), ['Accepted', 'Accepted', 'Accepted']);
  sim.runToRest(60, 5000);
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.equal(sim.proofs.created.length, 3, 'no node proven twice: the command lines did not change');
});

test('planner: a node refused blocks preflight naming the node, the flag and the message, with an Event and no call; fixed by hand, the new command line is proven and the upgrade runs', () => {
  const sim = new ShellSim(fleet(3), staticPodSpec());
  sim.extra = { ...sim.extra, kubeadm: kubeadmFacts(3) };
  sim.proofs.mode.set('cp-2', 'refuse');
  sim.runUntil((s) => s.status?.flagProof?.state === 'Blocked', 10, 5000);
  sim.reconcile(5000);
  const pre = sim.status?.conditions?.find((c) => c.type === 'PreflightPassed');
  assert.equal(sim.status?.phase, 'Preflight');
  assert.equal(pre?.reason, 'FlagRefusedByTarget');
  assert.match(pre?.message ?? '', /cp-2: kube-apiserver v1\.36\.3 refuses --feature-gates \(ServiceTrafficDistribution\)/);
  const row = sim.status?.flagProof?.nodes?.find((r) => r.hostname === 'cp-2');
  assert.deepEqual([row?.result, row?.flag, row?.item], ['Refused', '--feature-gates', 'ServiceTrafficDistribution']);
  assert.equal(sim.events.filter((e) => e.reason === 'FlagRefusedByTarget').length, 1, 'one Event per verdict, not one per step');
  assert.equal(sim.delivered.length, 0);
  sim.proofs.mode.delete('cp-2');
  sim.proofs.edit('cp-2');
  sim.runToRest(60, 5000);
  assert.equal(sim.status?.phase, 'Succeeded');
});

test('planner: Inconclusive and NotRun block preflight too (fail closed)', () => {
  for (const mode of ['inconclusive', 'notRun'] as const) {
    const sim = new ShellSim(fleet(2), staticPodSpec());
    sim.extra = { ...sim.extra, kubeadm: kubeadmFacts(2) };
    sim.proofs.mode.set('cp-1', mode);
    sim.runUntil((s) => s.status?.flagProof?.state === 'Blocked', 10, 5000);
    for (let i = 0; i < 5; i++) sim.reconcile(5000);
    assert.equal(sim.status?.phase, 'Preflight', mode);
    assert.equal(sim.status?.conditions?.find((c) => c.type === 'PreflightPassed')?.reason, mode === 'inconclusive' ? 'FlagProofInconclusive' : 'FlagProofNotRun');
    assert.equal(sim.delivered.length, 0);
  }
});

test('planner: a node whose manifest changed after preflight is proven again before its call; refused, the upgrade pauses FlagProofRefused naming it and calls nothing to it', () => {
  const sim = new ShellSim(fleet(3), staticPodSpec());
  sim.extra = { ...sim.extra, kubeadm: kubeadmFacts(3) };
  sim.autoLand = false;
  sim.runUntil((s) => upgradeCalls(s).length === 1, 20, 5000);
  assert.equal(upgradeCalls(sim)[0]!.server, 'cp-1');
  // cp-2's manifest gets a flag the target refuses while cp-1 is replaced.
  sim.proofs.edit('cp-2');
  sim.proofs.mode.set('cp-2', 'refuse');
  sim.proofs.delayMs = 6_000;
  sim.land('cp-1');
  sim.runUntil((s) => s.status?.phase === 'Paused', 20, 5000);
  assert.equal(sim.status?.pause?.reason, 'FlagProofRefused');
  assert.match(sim.status?.pause?.message ?? '', /cp-2: kube-apiserver v1\.36\.3 refuses --feature-gates/);
  assert.deepEqual(sim.status?.pause?.servers, ['cp-2']);
  assert.deepEqual(upgradeCalls(sim).map((c) => c.server), ['cp-1'], 'no call to cp-2');
  assert.ok(sim.proofs.created.some((c) => c.startsWith('cp-2:proveflags-cp-2-1-')), 'cp-2 was proven again');
  // Fixed by hand and resumed: proven again, then called.
  sim.proofs.mode.delete('cp-2');
  sim.proofs.edit('cp-2');
  sim.resume();
  sim.autoLand = true;
  sim.runToRest(60, 5000);
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.deepEqual(upgradeCalls(sim).map((c) => c.server), ['cp-1', 'cp-2', 'cp-3']);
});

test('planner: a proof Job lost before its verdict is created again; the webhook driver is not blocked and status says the proof does not apply', () => {
  const sim = new ShellSim(fleet(2), staticPodSpec());
  sim.extra = { ...sim.extra, kubeadm: kubeadmFacts(2) };
  sim.proofs.delayMs = 20_000;
  sim.reconcile(1000);
  sim.proofs.lose('cp-1');
  sim.reconcile(5000);
  assert.equal(sim.proofs.created.filter((c) => c.startsWith('cp-1:')).length, 2, 'the lost Job is asked for again');
  sim.runToRest(60, 5000);
  assert.equal(sim.status?.phase, 'Succeeded');

  const hook = new ShellSim(fleet(2));
  hook.runToRest(60, 5000);
  assert.equal(hook.status?.phase, 'Succeeded');
  assert.equal(hook.status?.flagProof?.state, 'NotApplicable');
  assert.equal(hook.proofs.created.length, 0);
});

test('planner: a node whose kube-apiserver static Pod runs but whose server is not seen (no Lease) is proven at preflight too: refused, it blocks', () => {
  const sim = new ShellSim(fleet(2), staticPodSpec());
  sim.extra = { ...sim.extra, kubeadm: kubeadmFacts(2) };
  sim.reconcile(1000);
  const read = sim.observe().flagProof;
  assert.ok(read !== undefined && !('error' in read));
  const hidden = { hostname: 'cp-3', key: 'k-cp-3', image: `registry.k8s.io/kube-apiserver:${NEW}`, command: ['--no-such-flag=1', PROOF_SENTINEL] };
  const refusedCp3 = { key: 'k-cp-3', hostname: 'cp-3', name: 'auo-proveflags-cp-3-1', proof: { hostname: 'cp-3', verdict: { result: 'Refused' as const, message: 'unknown flag: --no-such-flag', flag: '--no-such-flag' } } };
  for (let i = 0; i < 4; i++) {
    const r = sim.observe().flagProof;
    sim.extra = { ...sim.extra, flagProof: r !== undefined && !('error' in r) ? { wants: [...r.wants.filter((w) => w.hostname !== 'cp-3'), hidden], jobs: [...r.jobs, refusedCp3] } : r! };
    sim.reconcile(5000);
    delete sim.extra.flagProof;
  }
  assert.equal(sim.status?.phase, 'Preflight');
  const pre = sim.status?.conditions?.find((c) => c.type === 'PreflightPassed');
  assert.equal(pre?.reason, 'FlagRefusedByTarget');
  assert.match(pre?.message ?? '', /cp-3: kube-apiserver v1\.36\.3 refuses --no-such-flag: unknown flag: --no-such-flag/);
  assert.equal(sim.delivered.length, 0);
});

test('proofJobsNeeded: the Jobs are read only while a node\'s command line as it is now has no final verdict', () => {
  const rows: FlagProofNode[] = [{ hostname: 'cp-1', result: 'Accepted', key: 'k-cp-1' }, { hostname: 'cp-2', result: 'Refused', key: 'k-cp-2' }];
  const status = { flagProof: { state: 'Blocked' as const, nodes: rows } };
  assert.equal(proofJobsNeeded(status, [want('cp-1'), want('cp-2')]), false);
  assert.equal(proofJobsNeeded(status, [want('cp-1'), want('cp-2', 'k-cp-2-edited')]), true, 'a changed command line');
  assert.equal(proofJobsNeeded(status, [want('cp-1'), want('cp-3')]), true, 'a node without a row');
  assert.equal(proofJobsNeeded({ flagProof: { state: 'Proving', nodes: [{ hostname: 'cp-1', result: 'Pending', key: 'k-cp-1' }] } }, [want('cp-1')]), true, 'a verdict still missing');
  assert.equal(proofJobsNeeded({ flagProof: { state: 'Blocked', nodes: [{ hostname: 'cp-1', result: 'NotRun', key: 'k-cp-1' }] } }, [want('cp-1')]), true, 'NotRun is read again');
  assert.equal(proofJobsNeeded(undefined, [want('cp-1')]), true);
});

test('planner: before a node\'s call, no command line to prove (its mirror Pod not there) waits, calling nothing to it, and does not pause', () => {
  const sim = new ShellSim(fleet(2), staticPodSpec());
  sim.extra = { ...sim.extra, kubeadm: kubeadmFacts(2) };
  sim.autoLand = false;
  sim.runUntil((s) => upgradeCalls(s).length === 1, 20, 5000);
  sim.land('cp-1');
  for (let i = 0; i < 6; i++) {
    const r = sim.observe().flagProof;
    assert.ok(r !== undefined && !('error' in r));
    sim.extra = { ...sim.extra, flagProof: { wants: r.wants.map((w) => (w.hostname === 'cp-2' ? { hostname: 'cp-2', error: 'no single kube-apiserver mirror Pod for cp-2 in kube-system' } : w)), jobs: r.jobs } };
    sim.reconcile(5000);
    delete sim.extra.flagProof;
  }
  assert.equal(sim.status?.phase, 'Upgrading');
  assert.deepEqual(upgradeCalls(sim).map((c) => c.server), ['cp-1']);
  assert.match(sim.status?.peers?.find((p) => p.hostname === 'cp-2')?.message ?? '', /cp-2: its command line is proven before its call, and no single kube-apiserver mirror Pod/);
  sim.autoLand = true;
  sim.runToRest(60, 5000);
  assert.equal(sim.status?.phase, 'Succeeded');
});
