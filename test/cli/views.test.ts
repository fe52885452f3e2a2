import { test } from 'node:test';
import assert from 'node:assert/strict';
import { batchStates, buildGetView, renderGet } from '../../src/cli/get-view.ts';
import { listRows, renderList } from '../../src/cli/list-view.ts';
import { eventsAbout } from '../../src/cli/events.ts';
import { NOW, ago, event, paused, upgrading, withPhase } from './fixtures.ts';

test('batch states come from the batch in progress and the history', () => {
  assert.deepEqual(batchStates(upgrading().status).map((b) => b.state), ['done', 'current', 'pending']);
  assert.deepEqual(batchStates(withPhase('Succeeded').status).map((b) => b.state), ['done', 'done', 'done']);
  const rolled = withPhase('RolledBack');
  rolled.status!.batch!.history!.push({ index: 2, servers: ['cp-2'], result: 'RolledBack' });
  assert.deepEqual(batchStates(rolled.status).map((b) => b.state), ['done', 'rolledBack', 'pending']);
  assert.deepEqual(batchStates(undefined), []);
});

test('get: the view compares each signal with the spec threshold and keeps the driver calls and Events', () => {
  const v = buildGetView(upgrading(), [event('BatchStarted', 'batch 2/3: cp-2 -> v1.36.3', 60), event('Started', 'upgrade to v1.36.3 started', 290)]);
  assert.equal(v.phase, 'Upgrading');
  assert.deepEqual([v.fromVersion, v.targetVersion], ['v1.35.4', 'v1.36.3']);
  assert.deepEqual([v.progress.current, v.progress.total, v.progress.done], [2, 3, 1]);
  const sig = Object.fromEntries(v.analysis!.signals.map((s) => [s.signal, s]));
  assert.deepEqual(sig.proxyErrorRatio, { signal: 'proxyErrorRatio', value: '0.0200', threshold: '<= 0.01', ok: false });
  assert.deepEqual(sig.errorRatio, { signal: 'errorRatio', value: '0.0010', threshold: '<= 0.05', ok: true });
  assert.deepEqual(sig.latencyP99, { signal: 'latencyP99', value: '0.043s', threshold: '<= 1s', ok: true });
  assert.equal(sig.discovery!.value, 'converged');
  assert.equal(v.analysis!.failureLimit, 3);
  assert.equal(v.calls.length, 2);
  assert.deepEqual(v.events.map((e) => e.reason), ['Started', 'BatchStarted'], 'oldest first');
  assert.deepEqual(v.proxyGate.on, ['cp-1', 'cp-2', 'cp-3']);
});

test('get: the human view shows phase, progress bar, servers, signals, calls and Events', () => {
  const text = renderGet(buildGetView(upgrading(), [event('BatchStarted', 'batch 2/3: cp-2 -> v1.36.3', 60)]), NOW);
  assert.match(text, /^Name: +to-v1-36$/m);
  assert.match(text, /^Phase: +◌ Upgrading$/m);
  assert.match(text, /^Versions: +v1\.35\.4 -> v1\.36\.3$/m);
  assert.match(text, /^Progress: +batch 2\/3 +\[█{10}▒{10}░{10}\] +1\/3 done$/m);
  assert.match(text, /^Batches: +✔ 1: cp-1 +▶ 2: cp-2 +· 3: cp-3$/m);
  assert.match(text, /^Proxy gate: +on for 3\/3 servers; turned on by this upgrade: cp-1, cp-2, cp-3$/m);
  assert.match(text, /^Soak until: +2026-03-01T12:00:20\.000Z \(in 20s\)$/m);
  assert.match(text, /^ {2}cp-3 +v1\.35\.4 +true +Enabled +Pending +- +- +-$/m);
  assert.match(text, /^Analysis: Breach at .*\(4s ago\); 1 breaching check\(s\) in a row of failureLimit 3 \(then Pause\)$/m);
  assert.match(text, /^ {2}proxyErrorRatio +0\.0200 +<= 0\.01 +✖$/m);
  assert.match(text, /^ {2}breach: proxyErrorRatio@cp-3 0\.02 > 0\.01$/m);
  assert.match(text, /^ {2}3m20s +Upgrade +cp-1 +1 +v1\.36\.3 +on +Done +1 +upgrade-cp-1-aaaaaaaaaaaaaaaa/m);
  assert.match(text, /^ {2}1m +Normal +BatchStarted +batch 2\/3: cp-2 -> v1\.36\.3$/m);
  assert.doesNotMatch(text, /^Paused:/m);
});

test('get: a pause shows its reason, message and how to resume it (spec edit or annotation)', () => {
  const bySpec = renderGet(buildGetView(paused('PausedBySpec'), []), NOW);
  assert.match(bySpec, /^Phase: +॥ Paused \(PausedBySpec\)$/m);
  assert.match(bySpec, /^Paused: PausedBySpec since .*\(30s ago\), resumes into Upgrading$/m);
  assert.match(bySpec, /resume: kubectl apiserver-upgrade resume to-v1-36 \(sets spec\.paused to false: a spec edit/);
  const member = paused('MembershipChanged');
  member.status!.pause!.servers = ['cp-4'];
  assert.match(renderGet(buildGetView(member, []), NOW), /^ {2}servers: cp-4$/m);
  const auto = renderGet(buildGetView(paused('AnalysisBreach'), []), NOW);
  assert.match(auto, /^ {2}3 consecutive breaching checks$/m);
  assert.match(auto, /resume: once the cause is fixed: kubectl apiserver-upgrade resume to-v1-36 \(sets the upgrade\.apiserver\.dev\/resume annotation, no spec edit\); or roll back: kubectl apiserver-upgrade abort to-v1-36/);
});

test('get: an upgrade the operator has not seen yet still renders', () => {
  const u = upgrading();
  delete u.status;
  const text = renderGet(buildGetView(u, []), NOW);
  assert.match(text, /^Phase: +· Pending$/m);
  assert.match(text, /^Progress: +no plan yet/m);
  assert.match(text, /^Analysis: no check yet$/m);
  assert.match(text, /^Driver calls: none$/m);
  assert.match(text, /^Events: none$/m);
  assert.match(renderGet(buildGetView(u, [], 10, 'GET /apis/events.k8s.io/v1/namespaces/default/events: 403 Forbidden'), NOW), /^Events: not listed: GET .*403 Forbidden$/m);
});

test('Events: only those regarding this object (same uid), oldest first, the last N, ties in creation order', () => {
  const u = upgrading();
  const items = [
    event('B', 'second', 10),
    event('A', 'first', 20),
    event('X', 'other object', 5, { regarding: { kind: 'ApiServerUpgrade', name: 'other', uid: 'uid-2' } }),
    event('Y', 'earlier object of the same name', 5, { regarding: { kind: 'ApiServerUpgrade', name: 'to-v1-36', uid: 'uid-0' } }),
    { ...event('D', 'same ms, created later', 1), eventTime: ago(1), metadata: { name: 'z', resourceVersion: '2000' } },
    { ...event('C', 'same ms, created first', 1), eventTime: ago(1), metadata: { name: 'y', resourceVersion: '1999' } },
  ];
  assert.deepEqual(eventsAbout(u, items).map((e) => e.reason), ['A', 'B', 'C', 'D']);
  assert.deepEqual(eventsAbout(u, items, 2).map((e) => e.reason), ['C', 'D']);
});

test('list: one row per upgrade, oldest first, with phase, versions, progress, pause and age', () => {
  const a = upgrading();
  const b = paused('AnalysisBreach');
  b.metadata!.name = 'older';
  b.metadata!.creationTimestamp = ago(3600) as unknown as Date;
  const c = withPhase('Succeeded');
  c.metadata!.name = 'done';
  c.metadata!.creationTimestamp = ago(7200) as unknown as Date;
  const rows = listRows([a, b, c]);
  assert.deepEqual(rows.map((r) => [r.name, r.phase, r.progress, r.pauseReason]), [['done', 'Succeeded', '3/3', undefined], ['older', 'Paused', '1/3', 'AnalysisBreach'], ['to-v1-36', 'Upgrading', '1/3', undefined]]);
  assert.equal(renderList(rows, NOW), [
    'NAME       PHASE       FROM      TO        DONE   BATCH   PAUSED           WAITING   AGE',
    'done       Succeeded   v1.35.4   v1.36.3   3/3    2/3     -                -         2h',
    'older      Paused      v1.35.4   v1.36.3   1/3    2/3     AnalysisBreach   -         1h',
    'to-v1-36   Upgrading   v1.35.4   v1.36.3   1/3    2/3     -                -         5m',
    '',
  ].join('\n'));
  assert.equal(renderList([], NOW), 'No ApiServerUpgrades found.\n');
});

test('list and get: an upgrade waiting for its window says why and until when; one held by a gate names the gate, its query and value; accepted risks are listed', () => {
  const w = upgrading();
  w.status!.waiting = { reason: 'OutsideWindow', message: 'batch 2 waits for the maintenance window: next opens at 2026-11-30T02:00:00.000Z (Europe/Berlin)', since: ago(600), until: '2026-11-30T02:00:00.000Z' };
  w.status!.window = { open: false, nextStart: '2026-11-30T02:00:00.000Z' };
  const rows = listRows([w]);
  assert.equal(rows[0]!.waiting, 'OutsideWindow until 2026-11-30T02:00:00.000Z');
  assert.match(renderList(rows, NOW), /^to-v1-36 +Upgrading .* OutsideWindow until 2026-11-30T02:00:00\.000Z +5m$/m);
  const out = renderGet(buildGetView(w, []), NOW);
  assert.match(out, /^Waiting: OutsideWindow since .*, until 2026-11-30T02:00:00\.000Z/m);
  assert.match(out, /batch 2 waits for the maintenance window/);
  assert.match(out, /^Window: closed; next opens 2026-11-30T02:00:00\.000Z/m);
  const g = upgrading();
  g.status!.waiting = { reason: 'GateNotHeld', gate: 'no-critical-alerts', message: 'batch 2 waits: gate no-critical-alerts (ALERTS{alertstate="firing",severity="critical"}) does not hold: 1 series: {alertname="EtcdDown"} 1', since: ago(60) };
  g.status!.acceptedRisks = [{ name: 'DeprecatedAPIRemovedByTarget', object: 'flowcontrol.apiserver.k8s.io/v1beta3/flowschemas (requested on cp-1)', value: 'removed in 1.32', generation: 4, time: ago(900) }];
  const gout = renderGet(buildGetView(g, []), NOW);
  assert.match(gout, /^Waiting: GateNotHeld/m);
  assert.match(gout, /gate no-critical-alerts \(ALERTS\{alertstate="firing",severity="critical"\}\) does not hold: 1 series/);
  assert.match(gout, /^ {2}DeprecatedAPIRemovedByTarget +4 +flowcontrol/m);
  assert.equal(listRows([g])[0]!.waiting, 'GateNotHeld');
});

test('list and get: a phase two held for an approval says so, how to approve or abort, the hold and where a rollback goes until when', () => {
  const u = upgrading();
  const deadline = '2026-03-04T12:00:00.000Z';
  u.status!.waiting = { reason: 'AwaitingApproval', message: 'phase two waits for an approval', since: ago(600), until: deadline };
  u.status!.phaseTwoHold = { heldSince: ago(600), deadline, onDeadline: 'Rollback' };
  u.status!.rollbackWindow = { available: true, toVersion: 'v1.35.4', until: deadline, safe: 'True', reason: 'StorageVersionsReadable' };
  assert.equal(listRows([u])[0]!.waiting, `AwaitingApproval until ${deadline}`);
  const out = renderGet(buildGetView(u, []), NOW);
  assert.match(out, /^Waiting: AwaitingApproval since .*, until 2026-03-04T12:00:00\.000Z/m);
  assert.match(out, /^ {2}approve: kubectl apiserver-upgrade approve to-v1-36; or roll back: kubectl apiserver-upgrade abort to-v1-36$/m);
  assert.match(out, /^Phase two hold: since .*, deadline 2026-03-04T12:00:00\.000Z.* \(then Rollback\)$/m);
  assert.match(out, /^Rollback: available to v1\.35\.4 until 2026-03-04T12:00:00\.000Z.*; safe True \(StorageVersionsReadable\)$/m);
  const done = withPhase('Succeeded');
  done.status!.rollbackWindow = { available: false, toVersion: 'v1.35.4', safe: 'Unknown', reason: 'StorageVersionsUnknown' };
  assert.match(renderGet(buildGetView(done, []), NOW), /^Rollback: not by this upgrade \(to v1\.35\.4\); safe Unknown \(StorageVersionsUnknown\)$/m);
});

test('get: the control plane components are listed with their versions, an unknown one as unknown', () => {
  const u = upgrading();
  u.status!.components = [
    { component: 'kube-controller-manager', pod: 'kube-system/kube-controller-manager-cp-1', node: 'cp-1', image: 'registry.k8s.io/kube-controller-manager:v1.36.3', version: 'v1.36.3' },
    { component: 'kube-scheduler', pod: 'kube-system/kube-scheduler-cp-1', node: 'cp-1' },
  ];
  const v = buildGetView(u, []);
  assert.deepEqual(v.components.map((c) => `${c.component}/${c.node}=${c.version ?? '?'}`), ['kube-controller-manager/cp-1=v1.36.3', 'kube-scheduler/cp-1=?']);
  const text = renderGet(v, NOW);
  assert.match(text, /^Control plane components \(must not be newer than kube-apiserver\):$/m);
  assert.match(text, /^ {2}kube-controller-manager +cp-1 +v1\.36\.3 +kube-system\/kube-controller-manager-cp-1$/m);
  assert.match(text, /^ {2}kube-scheduler +cp-1 +unknown +kube-system\/kube-scheduler-cp-1$/m);
  assert.doesNotMatch(renderGet(buildGetView(upgrading(), []), NOW), /Control plane components/);
});

test('get shows each server\'s running-process check and its CoordinatedLeaderElection gate; a gate never read is "not read", never off', () => {
  const u = upgrading();
  const peers = u.status!.peers!;
  peers[0]!.coordinatedLeaderElection = 'Disabled';
  peers[0]!.running = { state: 'Confirmed', call: 'upgrade-cp-1-aaaaaaaaaaaaaaaa', checkedAt: ago(100), flagz: 'Read', statusz: 'Read', message: 'cp-1 runs what the call meant' };
  peers[1]!.coordinatedLeaderElection = 'Enabled';
  peers[1]!.running = { state: 'Differs', call: 'upgrade-cp-2-bbbbbbbbbbbbbbbb', checkedAt: ago(10), message: 'cp-2 (Upgrade to v1.36.3): /flagz --feature-gates: the call meant UnknownVersionInteroperabilityProxy=true, the process runs UnknownVersionInteroperabilityProxy=false' };
  const v = buildGetView(u, []);
  assert.deepEqual(v.servers.map((s) => [s.hostname, s.running, s.leaderElection]), [['cp-1', 'Confirmed', 'Disabled'], ['cp-2', 'Differs', 'Enabled'], ['cp-3', undefined, undefined]]);
  const text = renderGet(v, NOW);
  assert.match(text, /^ {2}cp-1 +v1\.36\.3 +true +Enabled +Upgraded +1 +Confirmed +-$/m);
  assert.match(text, /^ {2}cp-2 .* Differs +cp-2 \(Upgrade to v1\.36\.3\): \/flagz --feature-gates/m);
  assert.match(text, /^Coordinated leader election \(CoordinatedLeaderElection gate\): on on cp-2; off on cp-1; not read on cp-3$/m);
});
