// The static Pod driver's Job name and how it reads the API server's answers (a fake client).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { KEY_ANNOTATION, StaticPodDriver, agentJob, jobName, type JobClient } from '../../src/drivers/static-pod.ts';
import { KubeApiError } from '../../src/runtime/kube.ts';
import { idempotencyKey } from '../../src/plan/keys.ts';
import type { DriverRequest } from '../../src/plan/actions.ts';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const ACTIONS = ['EnableProxy', 'Upgrade', 'Rollback', 'RevertProxy'] as const;
const SPEC = { image: 'registry.k8s.io/kube-apiserver', manifestPath: '/etc/kubernetes/manifests/kube-apiserver.yaml', backupDir: '/etc/kubernetes/apiserver-upgrade-backup', peerCAFile: '/etc/kubernetes/pki/ca.crt', agentImage: 'busybox:1.36', namespace: 'kube-system' };

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
  const job = agentJob(SPEC, r, 'to-v1-36') as { metadata: { name: string } };
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
