// The static Pod driver's Job name and how it reads the API server's answers (a fake client).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { KEY_ANNOTATION, StaticPodDriver, agentJob, jobName, targetImage, type JobClient } from '../../src/drivers/static-pod.ts';
import type { DriverOutcome, ReportRequest } from '../../src/drivers/driver.ts';
import { SpecError, resolveSpec } from '../../src/api/defaults.ts';
import { KubeApiError, MERGE_PATCH } from '../../src/runtime/kube.ts';
import { STOPPED_ANNOTATION } from '../../src/drivers/job-report.ts';
import { idempotencyKey } from '../../src/plan/keys.ts';
import type { DriverRequest } from '../../src/plan/actions.ts';
import type { ResolvedStaticPod } from '../../src/api/defaults.ts';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const ACTIONS = ['EnableProxy', 'Upgrade', 'Rollback', 'RevertProxy'] as const;
const SPEC: ResolvedStaticPod = { image: 'registry.k8s.io/kube-apiserver', manifestPath: '/etc/kubernetes/manifests/kube-apiserver.yaml', backupDir: '/etc/kubernetes/apiserver-upgrade-backup', peerCAFile: '/etc/kubernetes/pki/ca.crt', agentImage: 'busybox:1.36', namespace: 'kube-system', readyTimeout: '3m', readyTimeoutMs: 180_000 };
const IMAGE = 'registry.k8s.io/kube-apiserver:v1.36.3';

function assertValid(name: string): void {
  assert.ok(name.length <= 63, `${name}: ${name.length} > 63`);
  assert.match(name, DNS1123_LABEL);
}

test('static Pod Job name: a long hostname keeps the hash, so distinct keys get distinct Jobs (was auo-<key> cut to 63)', () => {
  const host = 'ip-10-0-12-34.eu-west-1.compute.internal.example-long-cluster-name';
  const k1 = idempotencyKey('uid-1', 1, host, 'Upgrade', 'v1.36.3');
  const k2 = idempotencyKey('uid-1', 2, host, 'Upgrade', 'v1.36.3');
  assert.notEqual(k1, k2);
  // The old name: the same 63 characters for both keys.
  assert.equal(`auo-${k1}`.slice(0, 63), `auo-${k2}`.slice(0, 63));
  const n1 = jobName(k1, 'Upgrade', host);
  const n2 = jobName(k2, 'Upgrade', host);
  assert.notEqual(n1, n2);
  assertValid(n1);
  assertValid(n2);
  assert.match(n1, /^auo-upgrade-ip-10-0-12-34-eu-west-1-compute-in-[0-9a-f]{16}$/);
});

test('static Pod Job name: dots, capitals, underscores and a cut that would end on "-" or "." give a valid label', () => {
  for (const host of ['CP-1.Example.COM', 'cp_1', 'node.', '-edge-', '___', '', 'a'.repeat(40) + '.b', 'x'.repeat(29) + '-y', 'ünïcödé-node']) {
    const key = idempotencyKey('uid', 1, host, 'EnableProxy', 'v1.35.4');
    const name = jobName(key, 'EnableProxy', host);
    assertValid(name);
    assert.ok(name.startsWith('auo-enableproxy-'), name);
  }
  assert.match(jobName('k', 'Upgrade', 'CP-1.Example.COM'), /^auo-upgrade-cp-1-example-com-[0-9a-f]{16}$/);
  assert.match(jobName('k', 'Upgrade', '___'), /^auo-upgrade-[0-9a-f]{16}$/);
  // The old derivation gave an invalid name for these (uppercase, dots, underscores): a 422 on every retry.
  assert.doesNotMatch(`auo-${idempotencyKey('uid', 1, 'CP_1.example', 'Upgrade', 'v1.36.3')}`.slice(0, 63), DNS1123_LABEL);
});

test('static Pod Job name (property): always a DNS-1123 label, deterministic, and injective on keys', () => {
  const hostname = fc.oneof(
    fc.stringMatching(/^[a-zA-Z0-9._-]{0,120}$/),
    fc.string({ maxLength: 80 }),
  );
  const action = fc.constantFrom(...ACTIONS);
  fc.assert(fc.property(hostname, action, fc.string({ maxLength: 300 }), (host, act, key) => {
    const name = jobName(key, act, host);
    assertValid(name);
    assert.equal(jobName(key, act, host), name);
  }), { numRuns: 2000 });
  // Distinct keys never share a name, also when the hostname and action are the same for all of them.
  fc.assert(fc.property(hostname, action, fc.uniqueArray(fc.string({ minLength: 1, maxLength: 300 }), { minLength: 2, maxLength: 200 }), (host, act, keys) => {
    const names = new Set(keys.map((k) => jobName(k, act, host)));
    assert.equal(names.size, keys.length);
  }), { numRuns: 300 });
  // And the keys the planner makes, for long hostnames that share a prefix.
  fc.assert(fc.property(fc.stringMatching(/^[a-z0-9.-]{40,100}$/), fc.uniqueArray(fc.integer({ min: -1, max: 50 }), { minLength: 2, maxLength: 30 }), (host, batches) => {
    const names = new Set(batches.map((b) => jobName(idempotencyKey('uid', b, host, 'Upgrade', 'v1.36.3'), 'Upgrade', host)));
    assert.equal(names.size, batches.length);
  }), { numRuns: 300 });
});

function request(hostname = 'cp-1', batch = 1): DriverRequest {
  return { idempotencyKey: idempotencyKey('uid', batch, hostname, 'Upgrade', 'v1.36.3'), action: 'Upgrade', upgrade: 'to-v1-36', batch, server: { identity: 'apiserver-x', hostname, address: '10.0.0.11:6443' }, targetVersion: 'v1.36.3', featureGates: {} };
}

interface Call { method: string; path: string; body?: unknown }

/** A fake API server: `answer` decides each request; the calls are recorded. */
function fakeKube(answer: (c: Call) => unknown): { kube: JobClient; calls: Call[] } {
  const calls: Call[] = [];
  const kube: JobClient = {
    request: <T>(method: string, path: string, opts: { body?: unknown } = {}): Promise<T> => {
      const c = { method, path, body: opts.body };
      calls.push(c);
      try {
        return Promise.resolve(answer(c) as T);
      } catch (err) {
        return Promise.reject(err);
      }
    },
  } as JobClient;
  return { kube, calls };
}

const conflict = (c: Call): KubeApiError => new KubeApiError(c.method, c.path, 409, JSON.stringify({ kind: 'Status', reason: 'AlreadyExists', message: 'jobs.batch "x" already exists' }), undefined);

test('static Pod driver: creates the Job, named by jobName and annotated with the key', async () => {
  const r = request();
  const { kube, calls } = fakeKube(() => ({}));
  const out = await new StaticPodDriver(SPEC, kube, 'to-v1-36').call(r);
  assert.equal(out.kind, 'accepted');
  assert.equal(calls.length, 1);
  assert.equal(calls[0]!.method, 'POST');
  assert.equal(calls[0]!.path, '/apis/batch/v1/namespaces/kube-system/jobs');
  const job = calls[0]!.body as { metadata: { name: string; annotations: Record<string, string> } };
  assert.equal(job.metadata.name, jobName(r.idempotencyKey, r.action, r.server.hostname));
  assert.equal(job.metadata.annotations[KEY_ANNOTATION], r.idempotencyKey);
  assert.ok(out.message.includes(job.metadata.name));
});

test('static Pod driver: 409 for a Job created for the same key is accepted', async () => {
  const r = request();
  const { kube, calls } = fakeKube((c) => {
    if (c.method === 'POST') throw conflict(c);
    return { metadata: { name: 'x', annotations: { [KEY_ANNOTATION]: r.idempotencyKey } } };
  });
  const out = await new StaticPodDriver(SPEC, kube, 'to-v1-36').call(r);
  assert.equal(out.kind, 'accepted');
  assert.match(out.message, /already exists for this idempotency key/);
  assert.equal(calls[1]!.method, 'GET');
  assert.equal(calls[1]!.path, `/apis/batch/v1/namespaces/kube-system/jobs/${jobName(r.idempotencyKey, r.action, r.server.hostname)}`);
});

test('static Pod driver: 409 for a Job of another key (or none) is rejected as a name collision, not read as accepted', async () => {
  for (const annotations of [{ [KEY_ANNOTATION]: 'upgrade-cp-1-ffffffffffffffff' }, {}, undefined]) {
    const r = request();
    const { kube } = fakeKube((c) => {
      if (c.method === 'POST') throw conflict(c);
      return { metadata: { name: 'x', ...(annotations ? { annotations } : {}) } };
    });
    const out = await new StaticPodDriver(SPEC, kube, 'to-v1-36').call(r);
    assert.equal(out.kind, 'rejected');
    assert.match(out.message, /name collision with a foreign Job/);
    assert.ok(out.message.includes(r.idempotencyKey));
  }
});

test('static Pod driver: 409 then the Job gone (404) is transient: create it again next time', async () => {
  const { kube } = fakeKube((c) => {
    if (c.method === 'POST') throw conflict(c);
    throw new KubeApiError(c.method, c.path, 404, '{"reason":"NotFound","message":"not found"}', undefined);
  });
  const out = await new StaticPodDriver(SPEC, kube, 'to-v1-36').call(request());
  assert.equal(out.kind, 'transient');
  assert.match(out.message, /gone now/);
});

test('static Pod driver: 5xx, 429 and connection errors are returned as transient, never thrown', async () => {
  const errors: Error[] = [
    new KubeApiError('POST', '/apis/batch/v1/namespaces/kube-system/jobs', 503, 'the server is shutting down', undefined),
    new KubeApiError('POST', '/apis/batch/v1/namespaces/kube-system/jobs', 429, 'slow down', 1000),
    Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) }),
    new Error('something nobody expected'),
  ];
  for (const e of errors) {
    const { kube } = fakeKube(() => {
      throw e;
    });
    const out = await new StaticPodDriver(SPEC, kube, 'to-v1-36').call(request());
    assert.equal(out.kind, 'transient', e.message);
    assert.match(out.message, /^creating Job kube-system\/auo-upgrade-cp-1-[0-9a-f]{16} on node cp-1 failed after \d+ ms: /);
  }
});

test('static Pod driver: 403 and 422 are rejected for good', async () => {
  for (const status of [403, 422]) {
    const { kube } = fakeKube((c) => {
      throw new KubeApiError(c.method, c.path, status, '{"reason":"Forbidden","message":"violates PodSecurity \\"baseline:latest\\": hostPath volumes"}', undefined);
    });
    const out = await new StaticPodDriver(SPEC, kube, 'to-v1-36').call(request());
    assert.equal(out.kind, 'rejected', `${status}`);
    assert.match(out.message, /hostPath volumes/);
  }
});

test('agent Job: the name is jobName of the request', () => {
  const r = request('Control-Plane_1.example.com');
  const job = agentJob(SPEC, r, 'to-v1-36', IMAGE) as { metadata: { name: string } };
  assert.equal(job.metadata.name, jobName(r.idempotencyKey, 'Upgrade', 'Control-Plane_1.example.com'));
  assertValid(job.metadata.name);
});

test('static Pod driver: an emulatedVersion that is not major.minor is rejected before any API call', async () => {
  const { kube, calls } = fakeKube(() => ({}));
  const out = await new StaticPodDriver(SPEC, kube, 'to-v1-36').call({ ...request(), emulatedVersion: '1.35; rm -rf /' });
  assert.equal(out.kind, 'rejected');
  assert.match(out.message, /emulatedVersion "1\.35; rm -rf \/" is not major\.minor/);
  assert.equal(calls.length, 0);
  const ok = await new StaticPodDriver(SPEC, kube, 'to-v1-36').call({ ...request(), emulatedVersion: '1.35' });
  assert.equal(ok.kind, 'accepted');
  const env = (calls[0]!.body as { spec: { template: { spec: { containers: { env: { name: string; value: string }[] }[] } } } }).spec.template.spec.containers[0]!.env;
  assert.deepEqual(env.find((e) => e.name === 'EMULATED_VERSION'), { name: 'EMULATED_VERSION', value: '1.35' });
});

// --- The Job's shape, the mirror Pod read, report ---

interface PodSpecView {
  nodeName: string;
  automountServiceAccountToken: boolean;
  hostNetwork: boolean;
  initContainers: { name: string; image: string; imagePullPolicy: string; command: string[]; terminationMessagePolicy: string }[];
  containers: { name: string; image: string; env: { name: string; value: string }[]; terminationMessagePolicy: string; volumeMounts: { name: string; mountPath: string }[] }[];
  volumes: { name: string; hostPath: { path: string; type: string } }[];
}
interface JobView { metadata: { name: string; annotations: Record<string, string> }; spec: { backoffLimit: number; activeDeadlineSeconds: number; template: { spec: PodSpecView } } }

const envOf = (job: JobView): Record<string, string> => Object.fromEntries(job.spec.template.spec.containers[0]!.env.map((e) => [e.name, e.value]));

test('agent Job: pulls the target image in an init container first, no API token, termination messages, the ready timeout and a deadline above it', () => {
  const job = agentJob(SPEC, request(), 'to-v1-36', 'registry.example.internal/k8s/kube-apiserver:v1.36.3') as unknown as JobView;
  const pod = job.spec.template.spec;
  assert.deepEqual(pod.initContainers, [{
    name: 'pull-kube-apiserver',
    image: 'registry.example.internal/k8s/kube-apiserver:v1.36.3',
    imagePullPolicy: 'IfNotPresent',
    command: ['kube-apiserver', '--version'],
    terminationMessagePolicy: 'FallbackToLogsOnError',
  }]);
  assert.equal(pod.automountServiceAccountToken, false);
  assert.equal(pod.hostNetwork, true);
  assert.equal(pod.containers[0]!.terminationMessagePolicy, 'FallbackToLogsOnError');
  assert.equal(pod.containers[0]!.image, 'busybox:1.36');
  const env = envOf(job);
  assert.deepEqual(Object.keys(env).sort(), ['BACKUP_DIR', 'EMULATED_VERSION', 'GATE', 'IMAGE', 'KEY', 'MANIFEST', 'PEER_CA', 'PEER_IP', 'PEER_PORT', 'READY_TIMEOUT', 'VERSION']);
  assert.equal(env.IMAGE, 'registry.example.internal/k8s/kube-apiserver:v1.36.3', 'the agent writes the image the init container pulled');
  assert.equal(env.READY_TIMEOUT, '180');
  assert.deepEqual([env.PEER_IP, env.PEER_PORT], ['10.0.0.11', '6443']);
  assert.equal(job.spec.activeDeadlineSeconds, 180 + 300);
  assert.equal(job.metadata.annotations['upgrade.apiserver.dev/image'], 'registry.example.internal/k8s/kube-apiserver:v1.36.3');
  // The temp file lives in the manifests folder (renamed within it); the backup folder is its own mount.
  assert.deepEqual(pod.volumes.map((v) => [v.name, v.hostPath.path, v.hostPath.type]), [['manifests', '/etc/kubernetes/manifests', 'Directory'], ['backup', '/etc/kubernetes/apiserver-upgrade-backup', 'DirectoryOrCreate']]);

  const slow = agentJob({ ...SPEC, readyTimeout: '90500ms', readyTimeoutMs: 90_500 }, { ...request(), server: { identity: 'x', hostname: 'cp-1', address: '[fd00::11]:16443' } }, 'to-v1-36', IMAGE) as unknown as JobView;
  assert.equal(envOf(slow).READY_TIMEOUT, '91');
  assert.deepEqual([envOf(slow).PEER_IP, envOf(slow).PEER_PORT], ['fd00::11', '16443']);
});

test('targetImage: the spec\'s repository, or the running one with the target tag; digests replaced by the tag and said so', () => {
  const ok = (spec: string, running: string | undefined): { image: string; note: string } => {
    const t = targetImage(spec, running, 'v1.36.3');
    assert.ok(!('error' in t), JSON.stringify(t));
    return t;
  };
  assert.equal(ok('', 'registry.example.internal/k8s/kube-apiserver:v1.35.4').image, 'registry.example.internal/k8s/kube-apiserver:v1.36.3');
  assert.equal(ok('', 'localhost:5000/kube-apiserver:v1.35.4').image, 'localhost:5000/kube-apiserver:v1.36.3');
  assert.equal(ok('', 'localhost:5000/kube-apiserver').image, 'localhost:5000/kube-apiserver:v1.36.3', 'no tag: the port is not a tag');
  assert.equal(ok('mirror.example.com/k8s/kube-apiserver', 'registry.k8s.io/kube-apiserver:v1.35.4').image, 'mirror.example.com/k8s/kube-apiserver:v1.36.3');
  assert.equal(ok('mirror.example.com/k8s/kube-apiserver', undefined).image, 'mirror.example.com/k8s/kube-apiserver:v1.36.3', 'the spec needs no running image');
  const pinned = ok('', `registry.example.internal/k8s/kube-apiserver:v1.35.4@sha256:${'0'.repeat(64)}`);
  assert.equal(pinned.image, 'registry.example.internal/k8s/kube-apiserver:v1.36.3');
  assert.match(pinned.note, /pinned by digest sha256:0{64} \(tag v1\.35\.4\): the target is pinned by tag v1\.36\.3 instead/);
  assert.doesNotMatch(ok('', 'registry.k8s.io/kube-apiserver:v1.35.4').note, /digest/);
  for (const [spec, running] of [['', undefined], ['', ''], ['', 'Registry.example/UPPER/kube-apiserver:v1'], ['', 'a b:v1']] as const) {
    assert.ok('error' in targetImage(spec, running, 'v1.36.3'), `${spec}|${running}`);
  }
});

const mirrorPod = (image: string | undefined, name = 'kube-apiserver'): unknown => ({
  kind: 'PodList',
  items: [{ metadata: { name: 'kube-apiserver-cp-1', namespace: 'kube-system', annotations: { 'kubernetes.io/config.mirror': 'abc' } }, spec: { nodeName: 'cp-1', containers: [{ name, ...(image ? { image } : {}) }, ...(name === 'kube-apiserver' ? [] : [{ name: 'sidecar', image: 'x:1' }])] } }],
});

test('static Pod driver without spec.image: reads the mirror Pod for the running repository before creating the Job', async () => {
  const running = `registry.example.internal/k8s/kube-apiserver:v1.35.4@sha256:${'1'.repeat(64)}`;
  const { kube, calls } = fakeKube((c) => (c.method === 'GET' ? mirrorPod(running) : {}));
  const out = await new StaticPodDriver({ ...SPEC, image: '' }, kube, 'to-v1-36').call(request());
  assert.equal(out.kind, 'accepted', out.message);
  assert.equal(calls[0]!.method, 'GET');
  assert.equal(calls[0]!.path, '/api/v1/namespaces/kube-system/pods?fieldSelector=metadata.name%3Dkube-apiserver-cp-1');
  const job = calls[1]!.body as JobView;
  assert.equal(job.spec.template.spec.initContainers[0]!.image, 'registry.example.internal/k8s/kube-apiserver:v1.36.3');
  assert.equal(envOf(job).IMAGE, 'registry.example.internal/k8s/kube-apiserver:v1.36.3');
  assert.match(out.message, /image registry\.example\.internal\/k8s\/kube-apiserver:v1\.36\.3 \(the repository the node runs/);
  assert.match(out.message, /pinned by digest sha256:1{64}/);

  // With spec.image, no read.
  const withSpec = fakeKube(() => ({}));
  assert.equal((await new StaticPodDriver(SPEC, withSpec.kube, 'to-v1-36').call(request())).kind, 'accepted');
  assert.deepEqual(withSpec.calls.map((c) => c.method), ['POST']);
});

test('static Pod driver: a mirror Pod read that fails or finds nothing is transient; forbidden or no image is rejected; no Job either way', async () => {
  const cases: [string, (c: Call) => unknown, DriverOutcome['kind'], RegExp][] = [
    ['5xx', (c) => { throw new KubeApiError(c.method, c.path, 503, 'unavailable', undefined); }, 'transient', /reading the mirror Pod kube-system\/kube-apiserver-cp-1 .* failed after \d+ ms/],
    ['connection', () => { throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } }); }, 'transient', /reading the mirror Pod/],
    ['none', () => ({ kind: 'PodList', items: [] }), 'transient', /mirror Pod kube-system\/kube-apiserver-cp-1 is not there/],
    ['forbidden', (c) => { throw new KubeApiError(c.method, c.path, 403, 'pods is forbidden', undefined); }, 'rejected', /reading the mirror Pod .*set spec\.driver\.staticPod\.image to skip this.*forbidden/],
    ['no image', () => mirrorPod(undefined), 'rejected', /has no kube-apiserver container with an image/],
    ['other container', () => mirrorPod('x:1', 'apiserver'), 'rejected', /containers: apiserver, sidecar/],
  ];
  for (const [what, answer, kind, message] of cases) {
    const { kube, calls } = fakeKube((c) => (c.method === 'GET' ? answer(c) : {}));
    const out = await new StaticPodDriver({ ...SPEC, image: '' }, kube, 'to-v1-36').call(request());
    assert.equal(out.kind, kind, `${what}: ${out.message}`);
    assert.match(out.message, message, what);
    assert.ok(!calls.some((c) => c.method === 'POST'), `${what}: no Job`);
  }
});

test('static Pod driver: a request without a server address is rejected (the agent could not check /readyz)', async () => {
  const { kube, calls } = fakeKube(() => ({}));
  const out = await new StaticPodDriver(SPEC, kube, 'to-v1-36').call({ ...request(), server: { identity: 'x', hostname: 'cp-1' } });
  assert.equal(out.kind, 'rejected');
  assert.match(out.message, /no address/);
  assert.equal(calls.length, 0);
});

/** The labels and the owner reference the Job controller puts on each Pod it creates for the Job (kubernetes/pkg/controller/job). */
const jobLabels = (job: string): Record<string, string> => ({ 'batch.kubernetes.io/job-name': job, 'job-name': job, 'batch.kubernetes.io/controller-uid': 'u1', 'controller-uid': 'u1' });
const ownedBy = (job: string, uid: string): Record<string, unknown> => ({ apiVersion: 'batch/v1', kind: 'Job', name: job, uid, controller: true, blockOwnerDeletion: true });

const reportCall = (r = request()): ReportRequest => ({ idempotencyKey: r.idempotencyKey, action: r.action, server: { hostname: r.server.hostname } });

test('static Pod driver report: reads the call\'s Job and its Pods; a missing Job, a read error or a foreign Job is unknown, never failed', async () => {
  const r = request();
  const name = jobName(r.idempotencyKey, r.action, r.server.hostname);
  const job = (conditions: unknown[], key = r.idempotencyKey): unknown => ({ metadata: { name, namespace: 'kube-system', uid: 'u1', annotations: { [KEY_ANNOTATION]: key } }, status: { conditions } });
  const reverted = { metadata: { name: `${name}-x7k2p`, labels: jobLabels(name), ownerReferences: [ownedBy(name, 'u1')] }, status: { phase: 'Failed', containerStatuses: [{ name: 'agent', image: 'busybox:1.36', state: { terminated: { exitCode: 3, reason: 'Error', message: 'reverted: the new kube-apiserver static Pod was not ready within 180s (https://10.0.0.11:6443/readyz, last: no answer within 5s); restored /b/x.yaml\n' } } }] } };
  const failed = job([{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }]);

  const { kube, calls } = fakeKube((c) => (c.path.includes('/jobs/') ? failed : { items: [reverted] }));
  const rep = await new StaticPodDriver(SPEC, kube, 'to-v1-36').report(reportCall(r));
  assert.equal(rep.kind, 'failed');
  assert.match(rep.message, /reverted: the new kube-apiserver static Pod was not ready within 180s/);
  assert.deepEqual(calls.map((c) => c.path), [`/apis/batch/v1/namespaces/kube-system/jobs/${name}`, `/api/v1/namespaces/kube-system/pods?labelSelector=batch.kubernetes.io%2Fjob-name%3D${name}`]);

  // A Job that is not there (its TTL, or a person, deleted it): no agent runs for the call.
  const gone = await new StaticPodDriver(SPEC, fakeKube((c) => { throw new KubeApiError(c.method, c.path, 404, 'not found', undefined); }).kube, 'to-v1-36').report(reportCall(r));
  assert.equal(gone.kind, 'gone', gone.message);
  assert.match(gone.message, /is not there \(deleted after it finished/);
  const unknown: [string, (c: Call) => unknown, RegExp][] = [
    ['500', (c) => { throw new KubeApiError(c.method, c.path, 500, 'etcd timeout', undefined); }, /reading Job kube-system\/auo-upgrade-cp-1-[0-9a-f]{16} failed: /],
    ['foreign', () => job([{ type: 'Failed', status: 'True' }], 'other-key'), /is not this call's/],
    ['pods unreadable, not finished', (c) => { if (c.path.includes('/jobs/')) return job([]); throw new KubeApiError(c.method, c.path, 403, 'forbidden', undefined); }, /its Pods could not be read/],
  ];
  for (const [what, answer, message] of unknown) {
    const f = fakeKube(answer);
    const got = await new StaticPodDriver(SPEC, f.kube, 'to-v1-36').report(reportCall(r));
    assert.equal(got.kind, 'unknown', `${what}: ${got.message}`);
    assert.match(got.message, message, what);
  }
  // Pods unreadable: the Job's own conditions still decide.
  const f = fakeKube((c) => { if (c.path.includes('/jobs/')) return failed; throw new KubeApiError(c.method, c.path, 403, 'forbidden', undefined); });
  const byJob = await new StaticPodDriver(SPEC, f.kube, 'to-v1-36').report(reportCall(r));
  assert.equal(byJob.kind, 'failed');
  assert.match(byJob.message, /BackoffLimitExceeded/);
});

test('static Pod driver report: a Job whose pull is stuck is stopped (suspended), and its call fails only once its Pod is gone', async () => {
  const r = request();
  const name = jobName(r.idempotencyKey, r.action, r.server.hostname);
  const jobPath = `/apis/batch/v1/namespaces/kube-system/jobs/${name}`;
  // The cluster as the driver sees it: the Job, and its Pod stuck pulling the target image.
  const job: { metadata: { name: string; namespace: string; uid: string; resourceVersion: string; annotations: Record<string, string> }; spec: { suspend?: boolean }; status: Record<string, unknown> } = {
    metadata: { name, namespace: 'kube-system', uid: 'u1', resourceVersion: '41', annotations: { [KEY_ANNOTATION]: r.idempotencyKey } },
    spec: {},
    status: { active: 1 },
  };
  const stuck = { reason: 'ErrImagePull', message: 'failed to pull and unpack image "registry.auo.test/k8s/kube-apiserver:v1.36.3": not found' };
  let pods: Record<string, unknown>[] = [{
    metadata: { name: `${name}-x7k2p`, labels: jobLabels(name), ownerReferences: [ownedBy(name, 'u1')] },
    spec: { initContainers: [{ name: 'pull-kube-apiserver', image: 'registry.auo.test/k8s/kube-apiserver:v1.36.3' }] },
    status: { phase: 'Pending', initContainerStatuses: [{ name: 'pull-kube-apiserver', state: { waiting: stuck } }] },
  }];
  const writes: { method: string; path: string; body?: unknown; contentType?: string; preconditioned?: boolean }[] = [];
  let refuse: KubeApiError | undefined;
  const kube = {
    request: <T>(method: string, path: string, opts: { body?: unknown; contentType?: string; preconditioned?: boolean } = {}): Promise<T> => {
      if (method === 'GET') return Promise.resolve((path === jobPath ? structuredClone(job) : { items: structuredClone(pods) }) as T);
      writes.push({ method, path, ...opts });
      if (refuse) return Promise.reject(refuse);
      const b = opts.body as { metadata: { annotations: Record<string, string> }; spec: { suspend: boolean } };
      Object.assign(job.metadata.annotations, b.metadata.annotations);
      job.spec.suspend = b.spec.suspend;
      job.metadata.resourceVersion = '42';
      return Promise.resolve(job as T);
    },
  } as JobClient;
  const driver = new StaticPodDriver(SPEC, kube, 'to-v1-36');

  // A refused stop is not a failure: nothing is known to have stopped.
  refuse = new KubeApiError('PATCH', jobPath, 409, 'the object has been modified', undefined);
  const refused = await driver.report(reportCall(r));
  assert.equal(refused.kind, 'unknown', refused.message);
  assert.match(refused.message, /stopping Job kube-system\/auo-upgrade-cp-1-[0-9a-f]{16} \(spec\.suspend\) failed: /);
  refuse = undefined;

  const first = await driver.report(reportCall(r));
  assert.equal(first.kind, 'running', first.message);
  assert.match(first.message, /ErrImagePull .* is stopped \(spec\.suspend\) so that its agent never runs/);
  assert.equal(writes.length, 2);
  const patch = writes[1]!;
  assert.equal(patch.method, 'PATCH');
  assert.equal(patch.path, jobPath);
  assert.equal(patch.contentType, MERGE_PATCH);
  assert.equal(patch.preconditioned, true);
  const body = patch.body as { metadata: { resourceVersion: string; annotations: Record<string, string> }; spec: Record<string, unknown> };
  assert.deepEqual(body.spec, { suspend: true });
  assert.equal(body.metadata.resourceVersion, '41');
  assert.match(body.metadata.annotations[STOPPED_ANNOTATION]!, /^init container pull-kube-apiserver of Pod .* is waiting: ErrImagePull for image registry\.auo\.test\/k8s\/kube-apiserver:v1\.36\.3: failed to pull/);

  // The Job controller deletes the Pod; until the kubelet has stopped it, the call runs.
  (pods[0]!.metadata as Record<string, unknown>).deletionTimestamp = '2026-12-05T05:00:00Z';
  const stopping = await driver.report(reportCall(r));
  assert.equal(stopping.kind, 'running', stopping.message);
  assert.match(stopping.message, /is being stopped/);
  assert.equal(writes.length, 2, 'a stopped Job is not patched again');

  pods = [];
  const done = await driver.report(reportCall(r));
  assert.equal(done.kind, 'failed', done.message);
  assert.match(done.message, /was stopped by the operator \(suspended\) because its init container pull-kube-apiserver .* ErrImagePull/);
});

test('static Pod driver report: a Pod that only carries the Job\'s labels (no controller reference to the Job) is not the Job\'s: the Job is not stopped for it, nor its call failed', async () => {
  const r = request();
  const name = jobName(r.idempotencyKey, r.action, r.server.hostname);
  const jobPath = `/apis/batch/v1/namespaces/kube-system/jobs/${name}`;
  const running = { metadata: { name, namespace: 'kube-system', uid: 'u1', resourceVersion: '41', annotations: { [KEY_ANNOTATION]: r.idempotencyKey } }, spec: {}, status: { active: 1 } };
  const pulling = { phase: 'Pending', initContainerStatuses: [{ name: 'pull-kube-apiserver', state: { waiting: { reason: 'ErrImagePull', message: 'not found' } } }] };
  const failedPod = { phase: 'Failed', containerStatuses: [{ name: 'agent', state: { terminated: { exitCode: 3, reason: 'Error', message: 'reverted: planted' } } }] };
  // Anyone who may create Pods in the namespace can copy the labels the Job's Pods are listed by; an owner
  // reference they can add too, but not as the Job's controller (only the Job controller adopts Pods), nor to a Job they name wrongly.
  const impostors: [string, Record<string, unknown>][] = [
    ['no owner', { name: `${name}-fake1`, labels: jobLabels(name) }],
    ['owner not the controller', { name: `${name}-fake2`, labels: jobLabels(name), ownerReferences: [{ ...ownedBy(name, 'u1'), controller: false }] }],
    ['another Job as controller', { name: `${name}-fake3`, labels: jobLabels(name), ownerReferences: [ownedBy(name, 'u2')] }],
    ['not a Job', { name: `${name}-fake4`, labels: jobLabels(name), ownerReferences: [{ ...ownedBy(name, 'u1'), kind: 'ReplicaSet' }] }],
  ];
  for (const [what, metadata] of impostors) {
    for (const status of [pulling, failedPod]) {
      const { kube, calls } = fakeKube((c) => (c.path === jobPath ? structuredClone(running) : { items: [{ metadata, status }] }));
      const rep = await new StaticPodDriver(SPEC, kube, 'to-v1-36').report(reportCall(r));
      assert.equal(rep.kind, 'running', `${what}, ${status.phase}: ${rep.message}`);
      assert.doesNotMatch(rep.message, /ErrImagePull|planted/, what);
      assert.deepEqual(calls.map((c) => c.method), ['GET', 'GET'], `${what}: the Job is not stopped for a Pod that is not its`);
    }
  }
  // The same Pod with the Job controller's reference is the Job's: the Job is stopped for it.
  const { kube, calls } = fakeKube((c) => (c.method === 'GET' ? (c.path === jobPath ? structuredClone(running) : { items: [{ metadata: { name: `${name}-x7k2p`, labels: jobLabels(name), ownerReferences: [ownedBy(name, 'u1')] }, status: pulling }] }) : running));
  const own = await new StaticPodDriver(SPEC, kube, 'to-v1-36').report(reportCall(r));
  assert.match(own.message, /ErrImagePull .* is stopped \(spec\.suspend\)/);
  assert.deepEqual(calls.map((c) => c.method), ['GET', 'GET', 'PATCH']);
});

test('resolveSpec: staticPod.image has no default (keep the running repository), readyTimeout defaults to 3m and must be below batchTimeout', () => {
  const r = resolveSpec({ targetVersion: 'v1.36.3', driver: { staticPod: { agentImage: 'busybox:1.36' } } });
  assert.equal(r.driver.kind, 'staticPod');
  if (r.driver.kind !== 'staticPod') return;
  assert.equal(r.driver.staticPod.image, '');
  assert.equal(r.driver.staticPod.readyTimeoutMs, 180_000);
  assert.equal(resolveSpec({ targetVersion: 'v1.36.3', strategy: { batchTimeout: '20m' }, driver: { staticPod: { agentImage: 'b', readyTimeout: '15m' } } }).driver.kind, 'staticPod');
  assert.throws(() => resolveSpec({ targetVersion: 'v1.36.3', strategy: { batchTimeout: '5m' }, driver: { staticPod: { agentImage: 'b', readyTimeout: '5m' } } }), (e: Error) => e instanceof SpecError && /readyTimeout 5m must be shorter than strategy\.batchTimeout \(300s\)/.test(e.message));
  assert.throws(() => resolveSpec({ targetVersion: 'v1.36.3', driver: { staticPod: { agentImage: 'b', readyTimeout: '3 minutes' } } }), SpecError);
});
