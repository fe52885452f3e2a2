// jobReport on batch/v1 Jobs and v1 Pods shaped as the API server returns them for the agent Job.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { STOPPED_ANNOTATION, jobReport, type JobVerdict } from '../../src/drivers/job-report.ts';
import { safeMessage } from '../../src/plan/redact.ts';
import { INVISIBLES, disguised, leakedRuns, token40 } from '../support/hidden-token.ts';

const NAME = 'auo-upgrade-cp-1-5d41402abc4b2a76';
const UID = '8a1c2f0e-4b7d-4c39-9f51-0d6c3e2b9a17';
const TARGET = 'registry.example.internal/k8s/kube-apiserver:v1.36.3';
const T0 = '2026-03-02T10:00:00Z';
const T1 = '2026-03-02T10:03:41Z';

function job(status: Record<string, unknown>, stopped?: { because?: string }): Record<string, unknown> {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: NAME, namespace: 'kube-system', uid: UID, labels: { 'app.kubernetes.io/managed-by': 'apiserver-upgrade-operator' },
      ...(stopped?.because ? { annotations: { [STOPPED_ANNOTATION]: stopped.because } } : {}),
    },
    spec: { backoffLimit: 0, activeDeadlineSeconds: 480, completions: 1, parallelism: 1, ...(stopped ? { suspend: true } : {}) },
    status,
  };
}

/** A Pod the Job controller is deleting: the kubelet has not stopped it yet. */
const deleting = (p: Record<string, unknown>): Record<string, unknown> => ({ ...p, metadata: { ...(p.metadata as object), deletionTimestamp: T1, deletionGracePeriodSeconds: 30 } });
const STUCK_PULL = `init container pull-kube-apiserver of Pod ${NAME}-x7k2p is waiting: ErrImagePull for image ${TARGET}: not found`;

const cond = (type: string, reason: string, message: string): Record<string, unknown> => ({ type, status: 'True', reason, message, lastProbeTime: T1, lastTransitionTime: T1 });

const backoffLimit = [cond('FailureTarget', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit'), cond('Failed', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit')];

function pod(phase: string, init: Record<string, unknown>, agent: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${NAME}-x7k2p`,
      namespace: 'kube-system',
      labels: { 'batch.kubernetes.io/controller-uid': UID, 'batch.kubernetes.io/job-name': NAME, 'controller-uid': UID, 'job-name': NAME },
      ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: NAME, uid: UID, controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      nodeName: 'cp-1',
      initContainers: [{ name: 'pull-kube-apiserver', image: TARGET, command: ['kube-apiserver', '--version'] }],
      containers: [{ name: 'agent', image: 'busybox:1.36', command: ['node', '/app/dist/agent/main.js'] }],
    },
    status: {
      phase,
      hostIP: '10.0.0.11',
      startTime: T0,
      initContainerStatuses: [{ name: 'pull-kube-apiserver', image: TARGET, imageID: '', ready: false, restartCount: 0, started: false, lastState: {}, ...init }],
      containerStatuses: [{ name: 'agent', image: 'busybox:1.36', imageID: '', ready: false, restartCount: 0, started: false, lastState: {}, ...agent }],
      ...extra,
    },
  };
}

/** The same Pod made by someone else: the Job's labels, no owner. */
const unowned = (p: Record<string, unknown>): Record<string, unknown> => {
  const { ownerReferences: _, ...metadata } = p.metadata as Record<string, unknown>;
  return { ...p, metadata: { ...metadata, name: `fake-${String(metadata.name)}` } };
};
/** The same Pod with these owner references in place of the Job's controller reference. */
const ownedBy = (...owners: Record<string, unknown>[]) => (p: Record<string, unknown>): Record<string, unknown> => ({
  ...p, metadata: { ...(p.metadata as object), name: `fake-${String((p.metadata as { name: string }).name)}`, ownerReferences: owners.map((o) => ({ apiVersion: 'batch/v1', name: NAME, ...o })) },
});

const initing = { state: { waiting: { reason: 'PodInitializing' } } };
const initDone = { state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: T0, finishedAt: T0, containerID: 'containerd://a1' } }, ready: true };

const cases: { name: string; job: unknown; pods: unknown[] | undefined; kind: JobVerdict['kind']; message?: RegExp }[] = [
  {
    name: 'the target image cannot be pulled (ErrImagePull in the init container)',
    job: job({ active: 1, ready: 0, startTime: T0, uncountedTerminatedPods: {} }),
    pods: [pod('Pending', { state: { waiting: { reason: 'ErrImagePull', message: `failed to pull and unpack image "${TARGET}": failed to resolve reference "${TARGET}": ${TARGET}: not found` } } }, initing)],
    kind: 'stop',
    message: new RegExp(`^Job kube-system/${NAME}: init container pull-kube-apiserver of Pod ${NAME}-x7k2p is waiting: ErrImagePull for image registry\\.example\\.internal/k8s/kube-apiserver:v1\\.36\\.3: failed to pull and unpack image .*not found$`),
  },
  {
    name: 'ImagePullBackOff after the first failure',
    job: job({ active: 1, ready: 0, startTime: T0 }),
    pods: [pod('Pending', { state: { waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${TARGET}"` } } }, initing)],
    kind: 'stop',
    message: /ImagePullBackOff for image registry\.example\.internal\/k8s\/kube-apiserver:v1\.36\.3: Back-off pulling image/,
  },
  {
    name: 'the agent image cannot be pulled',
    job: job({ active: 1, ready: 0, startTime: T0 }),
    pods: [pod('Pending', initDone, { state: { waiting: { reason: 'ErrImagePull', message: 'failed to pull and unpack image "docker.io/library/busybox:1.36": 429 Too Many Requests' } } })],
    kind: 'stop',
    message: /container agent of Pod .* is waiting: ErrImagePull for image busybox:1\.36: .*429 Too Many Requests/,
  },
  {
    name: 'InvalidImageName',
    job: job({ active: 1, ready: 0 }),
    pods: [pod('Pending', { state: { waiting: { reason: 'InvalidImageName', message: 'Failed to apply default image tag "x::y": couldn\'t parse image name' } } }, initing)],
    kind: 'stop',
    message: /InvalidImageName/,
  },
  {
    name: 'CreateContainerConfigError in the agent',
    job: job({ active: 1, ready: 0 }),
    pods: [pod('Pending', initDone, { state: { waiting: { reason: 'CreateContainerConfigError', message: 'container has runAsNonRoot and image will run as root' } } })],
    kind: 'stop',
    message: /CreateContainerConfigError for image busybox:1\.36: container has runAsNonRoot/,
  },
  {
    name: 'the agent reverted: BackoffLimitExceeded, its termination message carried',
    job: job({ failed: 1, ready: 0, startTime: T0, conditions: backoffLimit, uncountedTerminatedPods: {} }),
    pods: [pod('Failed', initDone, { state: { terminated: { exitCode: 3, reason: 'Error', message: 'reverted: the new kube-apiserver static Pod was not ready within 180s (https://10.0.0.11:6443/readyz, last: wget: server returned error: HTTP/1.1 500 Internal Server Error); restored /etc/kubernetes/apiserver-upgrade-backup/upgrade-cp-1-5d41402abc4b2a76.yaml\n', startedAt: T0, finishedAt: T1, containerID: 'containerd://b2' } } })],
    kind: 'failed',
    message: new RegExp(`^Job kube-system/${NAME} failed \\(BackoffLimitExceeded: Job has reached the specified backoff limit\\): container agent \\(busybox:1\\.36\\) of Pod ${NAME}-x7k2p ended \\(Error, exit code 3\\): reverted: the new kube-apiserver static Pod was not ready within 180s .*restored /etc/kubernetes/apiserver-upgrade-backup/upgrade-cp-1-5d41402abc4b2a76\\.yaml$`),
  },
  {
    name: 'the init container failed (the image has no kube-apiserver binary)',
    job: job({ failed: 1, conditions: backoffLimit }),
    pods: [pod('Failed', { state: { terminated: { exitCode: 128, reason: 'StartError', message: 'failed to create containerd task: exec: "kube-apiserver": executable file not found in $PATH' } } }, initing)],
    kind: 'failed',
    message: /init container pull-kube-apiserver \(registry\.example\.internal\/k8s\/kube-apiserver:v1\.36\.3\) of Pod .* ended \(StartError, exit code 128\): failed to create containerd task/,
  },
  {
    name: 'DeadlineExceeded (the Pod was deleted by the Job controller)',
    job: job({ failed: 1, conditions: [cond('FailureTarget', 'DeadlineExceeded', 'Job was active longer than specified deadline'), cond('Failed', 'DeadlineExceeded', 'Job was active longer than specified deadline')] }),
    pods: [],
    kind: 'failed',
    message: new RegExp(`^Job kube-system/${NAME} failed \\(DeadlineExceeded: Job was active longer than specified deadline\\)$`),
  },
  {
    name: 'FailureTarget alone: the controller decided, the Pods are terminating',
    job: job({ active: 1, terminating: 1, conditions: [cond('FailureTarget', 'DeadlineExceeded', 'Job was active longer than specified deadline')] }),
    pods: [],
    kind: 'failed',
    message: /DeadlineExceeded/,
  },
  {
    name: 'FailureTarget (the deadline) while its Pod is being deleted: the agent may be restoring the manifest',
    job: job({ terminating: 1, conditions: [cond('FailureTarget', 'DeadlineExceeded', 'Job was active longer than specified deadline')] }),
    pods: [deleting(pod('Running', initDone, { state: { running: { startedAt: T0 } }, started: true }))],
    kind: 'running',
    message: new RegExp(`^Job kube-system/${NAME} failed \\(DeadlineExceeded: .*\\), but its Pod is still stopping \\(${NAME}-x7k2p Running\\)`),
  },
  {
    name: 'FailureTarget whose Pods could not be read',
    job: job({ terminating: 1, conditions: [cond('FailureTarget', 'DeadlineExceeded', 'Job was active longer than specified deadline')] }),
    pods: undefined,
    kind: 'unknown',
    message: /whether its agent still runs .* is not known/,
  },
  {
    name: 'a Failed condition with a Pod counted terminating, whose Pods could not be read',
    job: job({ failed: 1, terminating: 1, conditions: backoffLimit }),
    pods: undefined,
    kind: 'unknown',
  },
  {
    name: 'stopped by the operator, its Pod still being deleted',
    job: job({ active: 0, terminating: 1, conditions: [cond('Suspended', 'JobSuspended', 'Job suspended')] }, { because: STUCK_PULL }),
    pods: [deleting(pod('Pending', { state: { waiting: { reason: 'ErrImagePull' } } }, initing))],
    kind: 'running',
    message: /is being stopped \(init container pull-kube-apiserver .*ErrImagePull.*\); its Pod is still there/,
  },
  {
    name: 'stopped by the operator, its Pod gone',
    job: job({ active: 0, conditions: [cond('Suspended', 'JobSuspended', 'Job suspended')] }, { because: STUCK_PULL }),
    pods: [],
    kind: 'failed',
    message: new RegExp(`^Job kube-system/${NAME} was stopped by the operator \\(suspended\\) because its init container pull-kube-apiserver .* ErrImagePull .*not found; no Pod of it runs now$`),
  },
  {
    name: 'stopped by the operator, its Pods could not be read',
    job: job({ active: 0, conditions: [cond('Suspended', 'JobSuspended', 'Job suspended')] }, { because: STUCK_PULL }),
    pods: undefined,
    kind: 'unknown',
  },
  {
    name: 'suspended by someone else: runs again when resumed',
    job: job({ active: 0, conditions: [cond('Suspended', 'JobSuspended', 'Job suspended')] }, {}),
    pods: [],
    kind: 'running',
    message: /suspended, not by the operator/,
  },
  {
    name: 'a Failed condition whose Pods could not be read',
    job: job({ failed: 1, conditions: backoffLimit }),
    pods: undefined,
    kind: 'failed',
    message: /BackoffLimitExceeded/,
  },
  {
    name: 'Complete',
    job: job({ succeeded: 1, ready: 0, startTime: T0, completionTime: T1, conditions: [cond('SuccessCriteriaMet', 'CompletionsReached', 'Reached expected number of succeeded pods'), cond('Complete', 'CompletionsReached', 'Reached expected number of succeeded pods')] }),
    pods: [pod('Succeeded', initDone, { state: { terminated: { exitCode: 0, reason: 'Completed' } } })],
    kind: 'succeeded',
    message: new RegExp(`^Job kube-system/${NAME} completed$`),
  },
  {
    name: 'running: the agent waits for /readyz',
    job: job({ active: 1, ready: 1, startTime: T0 }),
    pods: [pod('Running', initDone, { state: { running: { startedAt: T0 } }, started: true, ready: true })],
    kind: 'running',
    message: new RegExp(`Pod ${NAME}-x7k2p Running`),
  },
  {
    name: 'pulling (ContainerCreating) is running, not failed',
    job: job({ active: 1, ready: 0, startTime: T0 }),
    pods: [pod('Pending', { state: { waiting: { reason: 'ContainerCreating' } } }, initing)],
    kind: 'running',
  },
  {
    name: 'just created, no status, no Pod',
    job: { metadata: { name: NAME, namespace: 'kube-system', uid: UID } },
    pods: [],
    kind: 'running',
    message: /no Pod yet/,
  },
  {
    name: 'a Failed condition that is not True',
    job: job({ active: 1, conditions: [{ type: 'Failed', status: 'False' }] }),
    pods: [],
    kind: 'running',
  },
  {
    name: 'a stuck Pod of another Job (another owner) is not this Job\'s',
    job: job({ active: 1 }),
    pods: [{ ...pod('Pending', { state: { waiting: { reason: 'ErrImagePull' } } }, initing), metadata: { name: 'other-abc', labels: { 'batch.kubernetes.io/job-name': 'other' }, ownerReferences: [{ kind: 'Job', uid: 'another-uid' }] } }],
    kind: 'running',
  },
  {
    name: 'a stuck Pod with the Job\'s labels but no owner is not the Job\'s: the Job is not stopped for it',
    job: job({ active: 1 }),
    pods: [unowned(pod('Pending', { state: { waiting: { reason: 'ErrImagePull' } } }, initing)), pod('Running', initDone, { state: { running: { startedAt: T0 } }, started: true })],
    kind: 'running',
    message: new RegExp(`Pod ${NAME}-x7k2p Running\\)$`),
  },
  {
    name: 'a stuck Pod naming the Job\'s uid, but not as its controller, or not as a Job, is not the Job\'s',
    job: job({ active: 1 }),
    pods: [
      ownedBy({ kind: 'Job', uid: UID })(pod('Pending', { state: { waiting: { reason: 'ErrImagePull' } } }, initing)),
      ownedBy({ kind: 'Job', uid: UID, controller: false })(pod('Pending', { state: { waiting: { reason: 'ImagePullBackOff' } } }, initing)),
      ownedBy({ kind: 'ReplicaSet', uid: UID, controller: true })(pod('Pending', { state: { waiting: { reason: 'InvalidImageName' } } }, initing)),
    ],
    kind: 'running',
    message: /no Pod yet/,
  },
  {
    name: 'a live Pod with the Job\'s labels but no owner does not hold a failed Job\'s call open',
    job: job({ failed: 1, conditions: backoffLimit }),
    pods: [unowned(pod('Running', initDone, { state: { running: { startedAt: T0 } }, started: true }))],
    kind: 'failed',
    message: new RegExp(`^Job kube-system/${NAME} failed \\(BackoffLimitExceeded: [^)]*\\)$`),
  },
  {
    name: 'a Job without a uid: no Pod can be told to be its, as if they could not be read',
    job: { metadata: { name: NAME }, status: { active: 1 } },
    pods: [{ ...pod('Pending', { state: { waiting: { reason: 'ErrImagePull' } } }, initing), metadata: { name: 'p', labels: { 'job-name': NAME } } }],
    kind: 'unknown',
    message: /its Pods could not be read/,
  },
  {
    name: 'not finished and its Pods could not be read',
    job: job({ active: 1 }),
    pods: undefined,
    kind: 'unknown',
  },
  { name: 'no Job', job: undefined, pods: [], kind: 'unknown' },
  { name: 'null', job: null, pods: [], kind: 'unknown' },
  { name: 'a list instead of a Job', job: [job({})], pods: [], kind: 'unknown' },
  { name: 'no name', job: { metadata: {}, status: { conditions: backoffLimit } }, pods: [], kind: 'unknown' },
  {
    name: 'junk in status and in the Pod list',
    job: { metadata: { name: NAME, uid: UID }, status: { conditions: 'Failed', active: 'x' } },
    pods: [null, 'pod', 7, { status: { initContainerStatuses: 'no', containerStatuses: [null, { state: 'waiting' }] } }],
    kind: 'running',
  },
];

for (const c of cases) {
  test(`jobReport: ${c.name} -> ${c.kind}`, () => {
    const r = jobReport(c.job, c.pods);
    assert.equal(r.kind, c.kind, r.message);
    if (c.message) assert.match(r.message, c.message);
    assert.ok(r.message.length > 0 && r.message.length < 1500, r.message);
  });
}

test('jobReport: a long termination message (a log tail) is kept to its end, on one line', () => {
  const tail = `${'line\n'.repeat(1000)}reverted: the new kube-apiserver static Pod was not ready within 180s; restored /b/x.yaml`;
  const r = jobReport(job({ failed: 1, conditions: backoffLimit }), [pod('Failed', initDone, { state: { terminated: { exitCode: 3, reason: 'Error', message: tail } } })]);
  assert.equal(r.kind, 'failed');
  assert.match(r.message, /restored \/b\/x\.yaml$/);
  assert.doesNotMatch(r.message, /\n/);
  assert.ok(r.message.length < 900, `${r.message.length}`);
});

test('jobReport: a credential in a termination message is redacted before the message is cut to its end', () => {
  // The message keeps its last 600 characters: the credential straddles where they start. What is written is the
  // report's message made safe (src/controller/driver-calls.ts), with no secret named: only its shape tells.
  const hidden = token40.chain((t) => fc.tuple(fc.constant(t), disguised(t, INVISIBLES)));
  const carriers = fc.constantFrom(['Authorization: Bearer ', ''], ['token=', ''], ['"password": "', '"']);
  fc.assert(fc.property(hidden, fc.integer({ min: 8, max: 40 }), carriers, ([t, d], inTail, [open, close]) => {
    const tail = `${close} ${'z'.repeat(600 - inTail - close.length - 1)}`;
    const message = `reverted; the hook said ${open}${d}${tail}`;
    const r = jobReport(job({ failed: 1, conditions: backoffLimit }), [pod('Failed', initDone, { state: { terminated: { exitCode: 3, reason: 'Error', message } } })]);
    assert.equal(r.kind, 'failed');
    const written = safeMessage(r.message, { maxChars: 1024 });
    assert.deepEqual(leakedRuns(written, t), [], written);
  }), { numRuns: 500 });
});

test('jobReport: never failed while a Pod of the Job may still run a container, whatever the Job says; Pods not the Job\'s change nothing', () => {
  const conditionArb = fc.constantFrom('Failed', 'FailureTarget', 'Complete', 'Suspended', 'SuccessCriteriaMet').chain((type) =>
    fc.record({ type: fc.constant(type), status: fc.constantFrom('True', 'False'), reason: fc.constantFrom('BackoffLimitExceeded', 'DeadlineExceeded', 'JobSuspended') }));
  const jobArb = fc.record({
    status: fc.record({ active: fc.nat(2), terminating: fc.nat(2), failed: fc.nat(1), conditions: fc.array(conditionArb, { maxLength: 3 }) }, { requiredKeys: [] }),
    stopped: fc.option(fc.record({ because: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }) }, { requiredKeys: [] }), { nil: undefined }),
  });
  const waiting = fc.constantFrom('ErrImagePull', 'ImagePullBackOff', 'PodInitializing', 'ContainerCreating', 'CreateContainerConfigError');
  const livePod = fc.record({ phase: fc.constantFrom('Pending', 'Running', 'Unknown', undefined), reason: waiting, deleting: fc.boolean() })
    .map(({ phase, reason, deleting: d }) => {
      const p = pod(phase ?? '', { state: { waiting: { reason } } }, initing);
      if (phase === undefined) delete (p.status as Record<string, unknown>).phase;
      return d ? deleting(p) : p;
    });
  const endedPod = fc.constantFrom(pod('Failed', initDone, { state: { terminated: { exitCode: 3, reason: 'Error' } } }), pod('Succeeded', initDone, { state: { terminated: { exitCode: 0 } } }));
  // Pods that are not the Job's, in any state: its labels copied without an owner, or owner references that are not
  // the Job's controller reference (another uid, not the controller, another kind).
  const disguise = fc.constantFrom(
    unowned,
    (p: Record<string, unknown>) => ({ ...unowned(p), metadata: { ...(unowned(p).metadata as object), ownerReferences: [] } }),
    ownedBy({ kind: 'Job', uid: 'another-uid', controller: true }),
    ownedBy({ kind: 'Job', uid: UID }),
    ownedBy({ kind: 'Job', uid: UID, controller: false }),
    ownedBy({ kind: 'Job', uid: UID, controller: 'true' }),
    ownedBy({ kind: 'ReplicaSet', uid: UID, controller: true }),
    ownedBy({ kind: 'job', uid: UID, controller: true }),
    ownedBy({ kind: 'Node', uid: 'n' }, { kind: 'Job', uid: UID }),
  );
  const foreignPod = fc.tuple(fc.oneof(livePod, endedPod), disguise).map(([p, d]) => d(p));
  fc.assert(fc.property(jobArb, livePod, fc.array(endedPod, { maxLength: 2 }), fc.array(foreignPod, { maxLength: 3 }), fc.nat(3), ({ status, stopped }, alive, ended, foreign, at) => {
    const pods = [...ended];
    pods.splice(Math.min(at, pods.length), 0, alive);
    const r = jobReport(job(status, stopped), [...foreign, ...pods]);
    assert.notEqual(r.kind, 'failed', r.message);
  }), { numRuns: 3000 });
  // Pods that are not the Job's change nothing: the verdict is the one without them, whatever they say.
  fc.assert(fc.property(jobArb, fc.array(fc.oneof(livePod, endedPod), { maxLength: 2 }), fc.array(foreignPod, { minLength: 1, maxLength: 3 }), fc.nat(3), ({ status, stopped }, own, foreign, at) => {
    const mixed = [...own];
    mixed.splice(Math.min(at, mixed.length), 0, ...foreign);
    assert.deepEqual(jobReport(job(status, stopped), mixed), jobReport(job(status, stopped), own));
  }), { numRuns: 3000 });
});
