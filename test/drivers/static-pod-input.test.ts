// The static Pod driver refuses, before any Job, every value that must not reach its node agent, naming the field;
// and the Job it builds has the shape the chart's admission policy allows (a contract).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AGENT_COMMAND, AgentInputError, PULL_ALLOWANCE_SECONDS, StaticPodDriver, agentJob, type JobClient } from '../../src/drivers/static-pod.ts';
import type { ResolvedStaticPod } from '../../src/api/defaults.ts';
import type { DriverRequest } from '../../src/plan/actions.ts';
import { idempotencyKey } from '../../src/plan/keys.ts';
import { readFileSync } from 'node:fs';
import { AGENT_READY_TIMEOUT_MAX_SECONDS, AGENT_READY_TIMEOUT_MIN_SECONDS } from '../../src/api/constants.ts';
import { readInput } from '../../src/agent/input.ts';
import { parseDuration } from '../../src/api/duration.ts';

const OPERATOR_IMAGE = 'ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:0.1.0';
const SPEC: ResolvedStaticPod = { image: 'registry.k8s.io/kube-apiserver', manifestPath: '/etc/kubernetes/manifests/kube-apiserver.yaml', backupDir: '/etc/kubernetes/apiserver-upgrade-backup', peerCAFile: '/etc/kubernetes/pki/ca.crt', agentImage: '', namespace: 'kube-system', readyTimeout: '3m', readyTimeoutMs: 180_000 };

function request(over: Partial<DriverRequest> = {}): DriverRequest {
  return { idempotencyKey: idempotencyKey('uid', 1, 'cp-1', 'Upgrade', 'v1.36.3'), action: 'Upgrade', upgrade: 'u', batch: 1, server: { identity: 'apiserver-x', hostname: 'cp-1', address: '10.0.0.11:6443' }, targetVersion: 'v1.36.3', featureGates: { UnknownVersionInteroperabilityProxy: true }, ...over };
}

function fakeKube(): { kube: JobClient; calls: { method: string; body?: unknown }[] } {
  const calls: { method: string; body?: unknown }[] = [];
  const kube = { request: (method: string, _path: string, opts: { body?: unknown } = {}) => { calls.push({ method, body: opts.body }); return Promise.resolve({}); } } as unknown as JobClient;
  return { kube, calls };
}

test('the issue 21 injection is refused before any Job, naming spec.driver.staticPod.peerCAFile', async () => {
  const { kube, calls } = fakeKube();
  const spec = { ...SPEC, peerCAFile: '/etc/kubernetes/pki/ca.crt\n    - --authorization-mode=AlwaysAllow\n    - --anonymous-auth=true' };
  const out = await new StaticPodDriver(spec, kube, 'u', OPERATOR_IMAGE).call(request());
  assert.equal(out.kind, 'rejected');
  assert.equal(out.message, 'building the agent Job for node cp-1: spec.driver.staticPod.peerCAFile "/etc/kubernetes/pki/ca.crt\\n    - --authorization-mode=AlwaysAllow\\n    - --ano…(93 characters) must be an absolute path of [A-Za-z0-9._-] segments without . or .. (at most 1024 characters)');
  assert.deepEqual(calls, [], 'no API call at all');
  assert.throws(() => agentJob(spec, request(), 'u', 'registry.k8s.io/kube-apiserver:v1.36.3', { operatorImage: OPERATOR_IMAGE }), AgentInputError);
});

test('every field that reaches the agent is checked, and the refusal names it', async () => {
  const cases: [Partial<ResolvedStaticPod>, Partial<DriverRequest>, RegExp][] = [
    [{ manifestPath: 'manifests/kube-apiserver.yaml' }, {}, /^building the agent Job for node cp-1: spec\.driver\.staticPod\.manifestPath "manifests\/kube-apiserver\.yaml" must be an absolute path/],
    [{ manifestPath: '/etc/kubernetes/../manifests/kube-apiserver.yaml' }, {}, /spec\.driver\.staticPod\.manifestPath/],
    [{ backupDir: '/etc/kubernetes/backup dir' }, {}, /spec\.driver\.staticPod\.backupDir "\/etc\/kubernetes\/backup dir" must be/],
    [{ backupDir: `/${'a'.repeat(1024)}` }, {}, /spec\.driver\.staticPod\.backupDir ".*…\(1025 characters\) must be/],
    [{ peerCAFile: '/etc/kubernetes/pki/ca.crt;id' }, {}, /spec\.driver\.staticPod\.peerCAFile/],
    [{ agentImage: 'busybox:1.36 --privileged' }, {}, /spec\.driver\.staticPod\.agentImage "busybox:1\.36 --privileged" is not an image reference/],
    [{ image: 'registry.k8s.io/kube-apiserver\n- --x' }, {}, /the target image "registry\.k8s\.io\/kube-apiserver\\n- --x:v1\.36\.3" is not an image reference/],
    [{}, { targetVersion: 'v1.36.3\n- --x' }, /spec\.targetVersion "v1\.36\.3\\n- --x" is not a Kubernetes version/],
    [{}, { emulatedVersion: '1.35\n- --x' }, /the call's emulatedVersion "1\.35\\n- --x" is not major\.minor/],
    [{}, { idempotencyKey: 'upgrade-cp-1\n-0123456789abcdef' }, /the call's idempotency key "upgrade-cp-1\\n-0123456789abcdef" is not/],
    [{}, { idempotencyKey: 'upgrade-../../etc-0123456789abcdef' }, /the call's idempotency key/],
    [{}, { server: { identity: 'x', hostname: 'cp-1', address: '10.0.0.11:6443\n- --x' } }, /the address "10\.0\.0\.11:6443\\n- --x" of server "cp-1" \(from its identity Lease or the EndpointSlice\) is not an IP address with a port 1-65535/],
    [{}, { server: { identity: 'x', hostname: 'cp-1', address: 'cp-1.example.com:6443' } }, /the address "cp-1\.example\.com:6443"/],
    [{}, { server: { identity: 'x', hostname: 'cp-1', address: '10.0.0.11:99999' } }, /the address "10\.0\.0\.11:99999"/],
    [{}, { server: { identity: 'x', hostname: 'cp-1' } }, /the server "cp-1" has no address/],
  ];
  for (const [spec, req, why] of cases) {
    const { kube, calls } = fakeKube();
    const out = await new StaticPodDriver({ ...SPEC, ...spec }, kube, 'u', OPERATOR_IMAGE).call(request(req));
    assert.equal(out.kind, 'rejected', why.source);
    assert.match(out.message, why);
    assert.doesNotMatch(out.message, /\n/);
    assert.deepEqual(calls, [], `no Job: ${why.source}`);
  }
});

test('the agent runs from the operator\'s own image unless the spec names one; with neither, the call is refused', async () => {
  const own = fakeKube();
  assert.equal((await new StaticPodDriver(SPEC, own.kube, 'u', OPERATOR_IMAGE).call(request())).kind, 'accepted');
  const image = (own.calls[0]!.body as { spec: { template: { spec: { containers: { image: string }[] } } } }).spec.template.spec.containers[0]!.image;
  assert.equal(image, OPERATOR_IMAGE);
  const named = fakeKube();
  await new StaticPodDriver({ ...SPEC, agentImage: 'registry.example.com/ops/agent:1.0' }, named.kube, 'u', OPERATOR_IMAGE).call(request());
  assert.equal((named.calls[0]!.body as { spec: { template: { spec: { containers: { image: string }[] } } } }).spec.template.spec.containers[0]!.image, 'registry.example.com/ops/agent:1.0');
  const none = fakeKube();
  const out = await new StaticPodDriver(SPEC, none.kube, 'u').call(request());
  assert.equal(out.kind, 'rejected');
  assert.match(out.message, /spec\.driver\.staticPod\.agentImage is empty and the operator has no --agent-image/);
  assert.deepEqual(none.calls, []);
});

interface JobShape {
  metadata: { labels: Record<string, string>; annotations: Record<string, string> };
  spec: { backoffLimit: number; template: { metadata: { labels: Record<string, string> }; spec: {
    nodeName: string; hostNetwork: boolean; automountServiceAccountToken: boolean; restartPolicy: string;
    initContainers: { name: string; image: string; command: string[] }[];
    containers: { name: string; image: string; command: string[]; args?: unknown; env: { name: string; value: string }[]; securityContext: unknown; volumeMounts: { name: string; mountPath: string }[] }[];
    volumes: { name: string; hostPath: { path: string; type: string } }[];
  } } };
}

test('the Job\'s shape is the contract the chart\'s admission policy checks', () => {
  const job = agentJob(SPEC, request(), 'u', 'registry.k8s.io/kube-apiserver:v1.36.3', { operatorImage: OPERATOR_IMAGE }) as unknown as JobShape;
  const pod = job.spec.template.spec;
  assert.deepEqual(AGENT_COMMAND, ['node', '/app/dist/agent/main.js']);
  assert.equal(pod.containers.length, 1);
  const c = pod.containers[0]!;
  assert.equal(c.name, 'agent');
  assert.deepEqual(c.command, ['node', '/app/dist/agent/main.js']);
  assert.equal(c.args, undefined);
  assert.equal(c.image, OPERATOR_IMAGE);
  assert.deepEqual(c.env.map((e) => e.name).sort(), ['BACKUP_DIR', 'EMULATED_VERSION', 'GATE', 'IMAGE', 'KEY', 'MANIFEST', 'PEER_CA', 'PEER_IP', 'PEER_PORT', 'READY_TIMEOUT', 'VERSION']);
  assert.deepEqual(c.securityContext, { runAsUser: 0 });
  assert.deepEqual(c.volumeMounts, [{ name: 'manifests', mountPath: '/etc/kubernetes/manifests' }, { name: 'backup', mountPath: '/etc/kubernetes/apiserver-upgrade-backup' }]);
  assert.deepEqual(pod.volumes, [{ name: 'manifests', hostPath: { path: '/etc/kubernetes/manifests', type: 'Directory' } }, { name: 'backup', hostPath: { path: '/etc/kubernetes/apiserver-upgrade-backup', type: 'DirectoryOrCreate' } }]);
  assert.deepEqual(pod.initContainers.map((x) => [x.name, x.image, x.command]), [['pull-kube-apiserver', 'registry.k8s.io/kube-apiserver:v1.36.3', ['kube-apiserver', '--version']]]);
  assert.deepEqual([pod.nodeName, pod.hostNetwork, pod.automountServiceAccountToken, pod.restartPolicy, job.spec.backoffLimit], ['cp-1', true, false, 'Never', 0]);
  assert.equal(job.metadata.labels['app.kubernetes.io/managed-by'], 'apiserver-upgrade-operator');
  assert.deepEqual(job.spec.template.metadata.labels, job.metadata.labels);
});

test('a preview (kubectl apiserver-upgrade plan) shows the Job with placeholder images, and still refuses a bad value', () => {
  const job = agentJob(SPEC, request(), 'u', '<repository of kube-system/kube-apiserver-cp-1>:v1.36.3', { preview: true }) as unknown as JobShape;
  assert.equal(job.spec.template.spec.containers[0]!.image, '<the operator\'s image>');
  assert.throws(() => agentJob({ ...SPEC, backupDir: '/x/../y' }, request(), 'u', 'x', { preview: true }), /spec\.driver\.staticPod\.backupDir/);
});

test('readyTimeout: the driver sends READY_TIMEOUT = ceil(seconds) only within the agent\'s range, which is the CRD\'s (10s to 1h); the agent takes every value it sends', async () => {
  const MIN = AGENT_READY_TIMEOUT_MIN_SECONDS;
  const MAX = AGENT_READY_TIMEOUT_MAX_SECONDS;
  // The CRD as generated: readyTimeout between MIN and MAX seconds.
  const crd = readFileSync(new URL('../../crds/apiserverupgrades.upgrade.apiserver.dev.yaml', import.meta.url), 'utf8');
  const range = /readyTimeout:\n(?:.*\n)*?.*duration\(self\) >= duration\('([^']+)'\) && duration\(self\) <= duration\('([^']+)'\)/.exec(crd);
  assert.ok(range, 'the CRD bounds readyTimeout');
  assert.deepEqual([parseDuration(range[1]!) / 1000, parseDuration(range[2]!) / 1000], [MIN, MAX]);
  const envOf = (job: Record<string, unknown>): Record<string, string> => Object.fromEntries(((job.spec as { template: { spec: { containers: { env: { name: string; value: string }[] }[] } } }).template.spec.containers[0]!.env).map((e) => [e.name, e.value]));
  for (const ms of [10_000, 10_001, 59_500, 180_000, 3_599_001, 3_600_000]) {
    const job = agentJob({ ...SPEC, readyTimeout: `${ms}ms`, readyTimeoutMs: ms }, request(), 'u', 'registry.k8s.io/kube-apiserver:v1.36.3', { operatorImage: OPERATOR_IMAGE });
    const env = envOf(job);
    assert.equal(env.READY_TIMEOUT, String(Math.ceil(ms / 1000)));
    // The Job always carries a deadline: the agent's wait plus the pull allowance, so no agent waits for days.
    assert.equal((job.spec as { activeDeadlineSeconds?: unknown }).activeDeadlineSeconds, Math.ceil(ms / 1000) + PULL_ALLOWANCE_SECONDS);
    const read = readInput({ ...env, MANIFEST: SPEC.manifestPath });
    assert.ok(!('error' in read), `${ms} ms: ${'error' in read ? read.error : ''}`);
  }
  for (const [ms, shown] of [[9_999, '9999ms'], [3_600_001, '3600001ms'], [86_400_000, '24h'], [Number.NaN, 'x']] as const) {
    const { kube, calls } = fakeKube();
    const out = await new StaticPodDriver({ ...SPEC, readyTimeout: shown, readyTimeoutMs: ms }, kube, 'u', OPERATOR_IMAGE).call(request());
    assert.equal(out.kind, 'rejected', shown);
    assert.match(out.message, new RegExp(`spec\\.driver\\.staticPod\\.readyTimeout "${shown}" is not between 10s and 3600s$`));
    assert.deepEqual(calls, [], 'no Job');
  }
});

test('a backupDir that is the manifest\'s folder is refused before any Job (the kubelet would run the backup as a static Pod)', async () => {
  const { kube, calls } = fakeKube();
  const out = await new StaticPodDriver({ ...SPEC, backupDir: '/etc/kubernetes/manifests' }, kube, 'u', OPERATOR_IMAGE).call(request());
  assert.equal(out.kind, 'rejected');
  assert.match(out.message, /spec\.driver\.staticPod\.backupDir "\/etc\/kubernetes\/manifests" is the manifest's folder/);
  assert.deepEqual(calls, []);
});
