import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildPlanView, renderPlan, type PlanViewInput } from '../../src/cli/plan-view.ts';
import { dryRun } from '../../src/cli/dry-run.ts';
import type { WebhookPayload } from '../../src/drivers/webhook.ts';
import type { ApiServerUpgradeSpec } from '../../src/api/types.generated.ts';
import { NOW, fleet, spec } from './fixtures.ts';

function input(s: ApiServerUpgradeSpec, over: Partial<PlanViewInput> = {}): PlanViewInput {
  const observation = fleet('off');
  const upgrade = { name: 'to-v1-36', uid: 'uid-1', generation: 1, annotations: {} };
  return { name: 'to-v1-36', source: 'cluster', uid: 'uid-1', uidIsPlaceholder: false, spec: s, observation, inventory: undefined, dryRun: dryRun(upgrade, s, observation, NOW), waitsFor: undefined, ignoredAnnotations: [], ...over };
}

test('webhook driver: each call carries exactly the body the driver would POST, with its key header', () => {
  const v = buildPlanView(input(spec({ driver: { webhook: { url: 'https://hook.example/replace', authSecretRef: { namespace: 'ops', name: 'hook' } } } })));
  assert.deepEqual(v.batches.map((b) => b.servers), [['cp-1'], ['cp-2'], ['cp-3']]);
  assert.deepEqual(v.gateTurnedOn, ['cp-1', 'cp-2', 'cp-3']);
  assert.deepEqual(v.firstCalls.map((c) => `${c.action}:${c.server}`), ['EnableProxy:cp-1']);
  const calls = v.projection!.calls;
  assert.equal(calls.length, 6);
  const up = calls[3]!;
  assert.ok('webhook' in up.payload);
  const w = up.payload.webhook;
  assert.equal(w.url, 'https://hook.example/replace');
  assert.equal(w.headers['Idempotency-Key'], up.idempotencyKey);
  assert.match(w.headers.Authorization!, /Secret ops\/hook, key token/);
  const body = w.body as WebhookPayload;
  assert.equal(body.kind, 'ReplaceServerRequest');
  assert.deepEqual([body.action, body.server.hostname, body.targetVersion, body.batch], ['Upgrade', 'cp-1', 'v1.36.3', 1]);
  assert.deepEqual(body.flags, ['--peer-advertise-ip=10.0.0.1', '--peer-advertise-port=6443']);
});

test('static Pod driver: each call carries the agent Job the driver would create', () => {
  const v = buildPlanView(input(spec({ driver: { staticPod: { agentImage: 'busybox:1.36' } } })));
  const c = v.projection!.calls[3]!;
  assert.ok('staticPod' in c.payload && 'job' in c.payload.staticPod);
  const job = c.payload.staticPod.job as { kind: string; metadata: { name: string; namespace: string } };
  assert.equal(job.kind, 'Job');
  assert.equal(job.metadata.namespace, 'kube-system');
  assert.match(job.metadata.name, /^auo-upgrade-cp-1-[0-9a-f]{16}$/);
  assert.match(renderPlan(v), /batch 1, first call \(Upgrade cp-1\): Job kube-system\/auo-upgrade-cp-1-[0-9a-f]{16}/);
  assert.match(renderPlan(v), /the flag proof is assumed to pass: the operator proves each node's command line/);
  assert.doesNotMatch(renderPlan(buildPlanView(input(spec()))), /flag proof/, 'not for the webhook driver');
});

test('the human plan: inventory, preflight verdict, batches, first calls, projected calls and the first payload of each batch', () => {
  const text = renderPlan(buildPlanView(input(spec())));
  assert.match(text, /^Dry run of ApiServerUpgrade to-v1-36 \(as stored in the cluster\) -> v1\.36\.3: nothing was written, no driver was called\.$/m);
  assert.match(text, /^ {2}cp-1 +10\.0\.0\.1:6443 +v1\.35\.4 +true +off +fresh +-$/m);
  assert.match(text, /^ {2}storage version hashes of v1\.35\.4: read from cp-1 \(1 resources\)$/m);
  assert.match(text, /^Preflight: Passed \(PreflightPassed=True\)\n {2}3 servers on v1\.35\.4; minor upgrade to v1\.36\.3; the proxy gate will be turned on first on cp-1, cp-2, cp-3$/m);
  assert.match(text, /^Plan \(status\.plan, frozen at preflight\): from v1\.35\.4, 3 batch\(es\) of batchSize 1$/m);
  assert.match(text, /^ {2}2 +cp-2$/m);
  assert.match(text, /^ {2}gate +EnableProxy +cp-1 +v1\.35\.4 +UnknownVersionInteroperabilityProxy=true +enableproxy-cp-1-[0-9a-f]{16}$/m);
  assert.match(text, /^ {2}6 +3 +Upgrade +cp-3 +v1\.36\.3 /m);
  assert.match(text, /^ {2}batch gate, first call \(EnableProxy cp-1\): POST https:\/\/hook\.example\/replace$/m);
  assert.match(text, /^ {2}batch 3, first call \(Upgrade cp-3\): POST/m);
  assert.match(text, /^ {4}Idempotency-Key: upgrade-cp-3-[0-9a-f]{16}$/m);
  assert.match(text, /^ {6}"kind": "ReplaceServerRequest",$/m);
  assert.match(text, /it ends Succeeded\):$/m);
});

test('notes: a spec pause, a file without a UID, ignored annotations, another upgrade first, servers not reached', () => {
  const i = input(spec({ paused: true }), {
    source: 'file', uidIsPlaceholder: true, waitsFor: 'older', ignoredAnnotations: ['upgrade.apiserver.dev/resume'],
    inventory: [{ identity: 'apiserver-x', hostname: 'cp-1', address: '10.0.0.1:6443', addressSource: 'leaseAnnotation', version: undefined, ready: undefined, proxyGate: 'unknown', holderIdentity: 'h', restarts: 0, lastRenew: undefined, stale: false, problems: ['connect ETIMEDOUT 10.0.0.1:6443'] }],
  });
  const v = buildPlanView(i);
  const notes = v.notes.join('\n');
  assert.match(notes, /spec\.paused is true/);
  assert.match(notes, /UID the API server assigns/);
  assert.match(notes, /annotations upgrade\.apiserver\.dev\/resume were not taken into account/);
  assert.match(notes, /ApiServerUpgrade older is under way/);
  assert.match(notes, /reaches each apiserver directly, as the operator does: from here, cp-1 \(connect ETIMEDOUT 10\.0\.0\.1:6443\)/);
  assert.match(renderPlan(v), /after spec\.paused is set to false/);
});

test('plan evaluates the window and the gates once and prints them, and what the operator would wait for; the projection assumes they hold', () => {
  const now = new Date('2026-11-29T10:00:00Z');
  const s = spec({
    window: { timeZone: 'Europe/Berlin', recurring: [{ days: ['Mon'], start: '02:00', duration: '2h' }] },
    gates: { serversReady: true, prometheus: { address: 'http://prometheus.monitoring:9090' }, queries: [{ name: 'no-critical-alerts', query: 'ALERTS{alertstate="firing",severity="critical"}' }] },
    acceptRisks: ['DeprecatedAPIRemovedByTarget'],
  });
  const observation = { ...fleet('off'), gates: { queries: [{ name: 'no-critical-alerts', error: 'GET http://prometheus.monitoring:9090/api/v1/query: getaddrinfo ENOTFOUND prometheus.monitoring' }] } };
  const upgrade = { name: 'to-v1-36', uid: 'uid-1', generation: 1, annotations: {} };
  const v = buildPlanView(input(s, { observation, dryRun: dryRun(upgrade, s, observation, now), now }));
  assert.deepEqual(v.start.window, { timeZone: 'Europe/Berlin', open: false, nextStart: '2026-11-30T01:00:00.000Z' });
  assert.deepEqual(v.start.gates.map((g) => [g.name, g.holds]), [['serversReady', true], ['no-critical-alerts', undefined]]);
  assert.equal(v.start.waiting?.reason, 'OutsideWindow');
  assert.deepEqual(v.firstCalls, [], 'nothing would be called now');
  assert.equal(v.projection?.phase, 'Succeeded');
  const text = renderPlan(v);
  assert.match(text, /^ {2}window \(Europe\/Berlin\): closed; next opens at 2026-11-30T01:00:00\.000Z$/m);
  assert.match(text, /^ {2}gate no-critical-alerts \(ALERTS\{alertstate="firing",severity="critical"\}\): cannot be evaluated \(does not hold\): cannot be evaluated: GET .*ENOTFOUND/m);
  assert.match(text, /^ {2}gate serversReady: holds: 3 servers ready$/m);
  assert.match(text, /^ {2}accepted risks: DeprecatedAPIRemovedByTarget$/m);
  assert.match(text, /^ {2}=> the operator would wait: OutsideWindow until 2026-11-30T01:00:00\.000Z/m);
});

test('the human plan lists the control plane components with their versions, and a preflight that refuses a target older than one', () => {
  const s = spec();
  const observation = { ...fleet('off'), components: { pods: [{ component: 'kube-controller-manager' as const, pod: 'kube-system/kube-controller-manager-cp-2', node: 'cp-2', version: 'v1.37.2' }] } };
  const upgrade = { name: 'to-v1-36', uid: 'uid-1', generation: 1, annotations: {} };
  const v = buildPlanView(input(s, { observation, dryRun: dryRun(upgrade, s, observation, NOW) }));
  assert.deepEqual(v.components, [{ component: 'kube-controller-manager', node: 'cp-2', pod: 'kube-system/kube-controller-manager-cp-2', version: 'v1.37.2' }]);
  const text = renderPlan(v);
  assert.match(text, /^ {2}kube-controller-manager +cp-2 +v1\.37\.2 +kube-system\/kube-controller-manager-cp-2$/m);
  assert.match(text, /^Preflight: ComponentNewerThanTarget \(PreflightPassed=False\)$/m);
  const unlisted = { ...fleet('off'), components: { error: 'HTTP 403' } };
  assert.match(renderPlan(buildPlanView(input(s, { observation: unlisted, dryRun: dryRun(upgrade, s, unlisted, NOW) }))), /^Control plane components: not listed \(HTTP 403\)/m);
});

test('the human plan says each server\'s CoordinatedLeaderElection gate as read, "not read" where it was not (never off)', () => {
  const s = spec();
  const base = fleet('off');
  const observation = { ...base, peers: base.peers.map((p, i) => (i === 0 ? { ...p, coordinatedLeaderElection: 'on' as const } : i === 1 ? { ...p, coordinatedLeaderElection: 'unknown' as const } : p)) };
  const upgrade = { name: 'to-v1-36', uid: 'uid-1', generation: 1, annotations: {} };
  const v = buildPlanView(input(s, { observation, dryRun: dryRun(upgrade, s, observation, NOW) }));
  const names = observation.peers.map((p) => p.hostname);
  assert.deepEqual(v.inventory.map((r) => r.coordinatedLeaderElection), ['Enabled', 'Unknown', ...names.slice(2).map(() => undefined)]);
  assert.match(renderPlan(v), new RegExp(`^ {2}Coordinated leader election \\(CoordinatedLeaderElection gate\\): on on ${names[0]}; unknown on ${names[1]}; not read on ${names.slice(2).join(', ')}$`, 'm'));
});
