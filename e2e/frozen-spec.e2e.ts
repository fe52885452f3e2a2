// The spec cannot move under a running upgrade (issue 21; src/api/schema-frozen.ts, docs/security.md), on a real
// kube-apiserver: the CRD is installed, an upgrade created, its status set to a phase through the status
// subresource as the operator writes it, and then the spec edited as a user would. While the upgrade is under way
// (EnablingProxy, Upgrading, RollingBack, Paused after preflight) every driver setting, the proxy policy and
// strategy.phases and strategy.phaseTwo are refused with a 422 naming the field; spec.paused, strategy.batchSize and the pause, resume
// and abort annotations stay editable. Before preflight froze a plan, and once the upgrade ended, the spec is free.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, OLD_VERSION, NEW_VERSION } from './cluster/index.ts';
import { installCrd, createUpgrade } from './support/operator.ts';
import { API_VERSION, KIND, GROUP, VERSION, PLURAL } from '../src/api/constants.ts';
import { ABORT_ANNOTATION, APPROVE_ANNOTATION, RESUME_ANNOTATION } from '../src/api/vocabulary.ts';

const UPGRADES = `/apis/${GROUP}/${VERSION}/${PLURAL}`;
const MERGE = { 'Content-Type': 'application/merge-patch+json' };
let cluster: Cluster;

before(async () => {
  cluster = await Cluster.start({ servers: 1, version: OLD_VERSION, verbose: true });
  await installCrd(cluster);
});
after(async () => {
  await cluster?.teardown();
});

interface Cause { field?: string; message?: string; reason?: string }

async function patch(name: string, body: unknown, sub = ''): Promise<{ status: number; body: string }> {
  return cluster.request(0, `${UPGRADES}/${name}${sub}`, { method: 'PATCH', headers: MERGE, body: JSON.stringify(body) });
}

/** Sets status as the operator does: a merge patch of the status subresource. */
async function setStatus(name: string, status: Record<string, unknown>): Promise<void> {
  const r = await patch(name, { status }, '/status');
  assert.equal(r.status, 200, `status patch ${JSON.stringify(status)}: ${r.body.slice(0, 800)}`);
}

/** A 422 whose causes include one at `field` saying it is frozen. */
function assertFrozen(r: { status: number; body: string }, field: string, what: string): void {
  assert.equal(r.status, 422, `${what}: expected 422, got ${r.status}: ${r.body.slice(0, 800)}`);
  const st = JSON.parse(r.body) as { message?: string; details?: { causes?: Cause[] } };
  const causes = st.details?.causes ?? [];
  assert.ok(
    causes.some((c) => c.field === field && (c.message ?? '').includes(`${field} is frozen while the upgrade is under way`)),
    `${what}: no cause at ${field} naming it frozen: ${JSON.stringify(causes)}`,
  );
  assert.ok((st.message ?? '').includes(field), `${what}: the message names ${field}: ${st.message}`);
}

function assertOk(r: { status: number; body: string }, what: string): void {
  assert.equal(r.status, 200, `${what}: expected 200, got ${r.status}: ${r.body.slice(0, 800)}`);
}

const staticPodSpec = {
  targetVersion: NEW_VERSION,
  driver: { staticPod: { agentImage: 'ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:0.1.0' } },
};
const webhookSpec = {
  targetVersion: NEW_VERSION,
  driver: { webhook: { url: 'https://cpm.example.com/replace', authSecretRef: { namespace: 'upgrade-system', name: 'cpm-token' } } },
};

async function create(name: string, spec: Record<string, unknown>): Promise<void> {
  await createUpgrade(cluster, { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec });
}

/** Edits of frozen fields, each with the field the refusal must name. */
const STATIC_POD_EDITS: [string, unknown][] = [
  ['spec.driver.staticPod.peerCAFile', { driver: { staticPod: { peerCAFile: '/etc/kubernetes/pki/front-proxy-ca.crt' } } }],
  ['spec.driver.staticPod.agentImage', { driver: { staticPod: { agentImage: 'evil.example.com/root-shell:latest' } } }],
  ['spec.driver.staticPod.image', { driver: { staticPod: { image: 'evil.example.com/kube-apiserver' } } }],
  ['spec.driver.staticPod.manifestPath', { driver: { staticPod: { manifestPath: '/etc/kubernetes/manifests/etcd.yaml' } } }],
  ['spec.driver.staticPod.backupDir', { driver: { staticPod: { backupDir: '/etc/kubernetes/manifests' } } }],
  ['spec.driver.staticPod.namespace', { driver: { staticPod: { namespace: 'default' } } }],
  ['spec.driver.staticPod.readyTimeout', { driver: { staticPod: { readyTimeout: '20s' } } }],
  ['spec.proxy.gate', { proxy: { gate: 'Unmanaged' } }],
  ['spec.proxy.revertAfter', { proxy: { revertAfter: true } }],
  ['spec.strategy.phases', { strategy: { phases: 'TwoPhase' } }],
  // Another driver altogether: the staticPod settings disappear, a webhook appears.
  ['spec.driver.webhook.url', { driver: { staticPod: null, webhook: { url: 'https://evil.example.com/replace' } } }],
];

test('under way (Upgrading): every driver setting, the proxy policy and strategy.phases are refused, each naming its field', async () => {
  const name = 'frozen-static-pod';
  await create(name, staticPodSpec);
  await setStatus(name, { phase: 'Upgrading' });
  for (const [field, spec] of STATIC_POD_EDITS) assertFrozen(await patch(name, { spec }), field, `${field} while Upgrading`);
  // A whole-object update (PUT, as kubectl replace and Argo CD's replace sync send) is judged the same way.
  const got = JSON.parse((await cluster.request(0, `${UPGRADES}/${name}`)).body) as { spec: { driver: { staticPod: Record<string, string> } } };
  got.spec.driver.staticPod.agentImage = 'evil.example.com/root-shell:latest';
  assertFrozen(await cluster.request(0, `${UPGRADES}/${name}`, { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(got) }), 'spec.driver.staticPod.agentImage', 'PUT');
});

test('under way: spec.paused, strategy.batchSize and the pause, resume and abort annotations stay editable', async () => {
  const name = 'frozen-static-pod';
  assertOk(await patch(name, { spec: { paused: true } }), 'spec.paused true');
  assertOk(await patch(name, { spec: { paused: false } }), 'spec.paused false');
  assertOk(await patch(name, { spec: { strategy: { batchSize: 2, soakDuration: '30s' } } }), 'strategy.batchSize and soakDuration');
  assertOk(await patch(name, { spec: { analysis: { failureLimit: 5 } } }), 'analysis.failureLimit');
  assertOk(await patch(name, { metadata: { annotations: { [RESUME_ANNOTATION]: 'r1' } } }), 'the resume annotation');
  assertOk(await patch(name, { metadata: { annotations: { [ABORT_ANNOTATION]: 'a1' } } }), 'the abort annotation');
  // Re-applying the same frozen values is no change.
  assertOk(await patch(name, { spec: { driver: { staticPod: { agentImage: staticPodSpec.driver.staticPod.agentImage } } } }), 'the same agentImage again');
});

test('under way: how phase two starts (strategy.phaseTwo) is refused, each leaf naming its field; the approve annotation stays editable', async () => {
  const name = 'frozen-hold';
  await create(name, { ...webhookSpec, strategy: { phases: 'TwoPhase', phaseTwo: { start: 'Approval' } } });
  await setStatus(name, { phase: 'Upgrading' });
  assertFrozen(await patch(name, { spec: { strategy: { phaseTwo: { start: 'Automatic' } } } }), 'spec.strategy.phaseTwo.start', 'phaseTwo.start Approval -> Automatic while Upgrading');
  const deadline = await patch(name, { spec: { strategy: { phaseTwo: { deadline: '1h', onDeadline: 'Proceed' } } } });
  assertFrozen(deadline, 'spec.strategy.phaseTwo.deadline', 'a deadline added while Upgrading');
  assertFrozen(deadline, 'spec.strategy.phaseTwo.onDeadline', 'onDeadline added while Upgrading');
  assertOk(await patch(name, { metadata: { annotations: { [APPROVE_ANNOTATION]: 'go' } } }), 'the approve annotation');
  // Once it ended, the spec is free again.
  await setStatus(name, { phase: 'Succeeded' });
  assertOk(await patch(name, { spec: { strategy: { phaseTwo: { start: 'Automatic' } } } }), 'phaseTwo after the end');
});

test('the phases that freeze: EnablingProxy, RollingBack and Paused after preflight; not Pending, Preflight, a pause held before preflight, or the end', async () => {
  const name = 'frozen-phases';
  await create(name, staticPodSpec);
  const edit = (v: string): Promise<{ status: number; body: string }> => patch(name, { spec: { driver: { staticPod: { peerCAFile: v } } } });
  assertOk(await edit('/etc/kubernetes/pki/ca-2.crt'), 'no status yet');
  let n = 0;
  const next = (): string => `/etc/kubernetes/pki/ca-${++n + 2}.crt`;
  for (const status of [
    { phase: 'Pending' }, { phase: 'Preflight' },
    { phase: 'Paused', pause: { reason: 'PausedBySpec', message: 'spec.paused is true', resumePhase: 'Preflight' } },
    { phase: 'Succeeded' }, { phase: 'RolledBack' }, { phase: 'Failed' },
  ]) {
    await setStatus(name, { pause: null, ...status });
    assertOk(await edit(next()), `free in ${JSON.stringify(status)}`);
  }
  for (const status of [
    { phase: 'EnablingProxy' }, { phase: 'RollingBack' },
    { phase: 'Paused', pause: { reason: 'AnalysisBreach', message: 'breach', resumePhase: 'Upgrading' } },
    { phase: 'Paused', pause: { reason: 'PausedBySpec', message: 'spec.paused is true', resumePhase: 'EnablingProxy' } },
  ]) {
    await setStatus(name, { pause: null, ...status });
    assertFrozen(await edit(next()), 'spec.driver.staticPod.peerCAFile', `in ${JSON.stringify(status)}`);
  }
});

test('the webhook driver: url, caBundle, timeout, reportsStatus and the token Secret are frozen under way', async () => {
  const name = 'frozen-webhook';
  await create(name, webhookSpec);
  await setStatus(name, { phase: 'Upgrading' });
  const edits: [string, unknown][] = [
    ['spec.driver.webhook.url', { url: 'https://evil.example.com/replace' }],
    ['spec.driver.webhook.caBundle', { caBundle: Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64') }],
    ['spec.driver.webhook.timeout', { timeout: '9m' }],
    // Turned off under way, calls would stop waiting for the hook to say it finished the last one.
    ['spec.driver.webhook.reportsStatus', { reportsStatus: true }],
    ['spec.driver.webhook.authSecretRef.name', { authSecretRef: { name: 'other-token' } }],
    ['spec.driver.webhook.authSecretRef.key', { authSecretRef: { key: 'password' } }],
  ];
  for (const [field, webhook] of edits) assertFrozen(await patch(name, { spec: { driver: { webhook } } }), field, field);
  // The status subresource (the operator's writes) is not refused by the spec's freeze.
  await setStatus(name, { phase: 'Paused', pause: { reason: 'AnalysisBreach', message: 'breach', resumePhase: 'Upgrading' } });
  await setStatus(name, { phase: 'Succeeded', pause: null });
  assertOk(await patch(name, { spec: { driver: { webhook: { url: 'https://cpm.example.com/replace-v2' } } } }), 'after the end');
});
