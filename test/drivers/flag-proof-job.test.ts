// The flag proof Job (src/drivers/flag-proof-job.ts): its shape, its key, the throwaway key kube-apiserver accepts in
// place of the cluster's, and how its Pod's status becomes a node's proof. (The chart's admission policy admits exactly
// this shape: test/chart/admission-policy.test.ts, e2e/admission-policy.e2e.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey } from 'node:crypto';
import fc from 'fast-check';
import { PROOF_CONTAINER, PROOF_KEY_ANNOTATION, PROOF_KEY_PATH, PROOF_THROWAWAY_KEY, proofJob, proofKey, proofOfPod, type ProofJobInput } from '../../src/drivers/flag-proof-job.ts';
import { PROOF_SENTINEL, PROOF_SENTINEL_ERROR } from '../../src/plan/flag-proof.ts';
import { proofCommand } from '../../src/drivers/flag-proof-command.ts';

const input: ProofJobInput = {
  upgradeName: 'to-v1-36', upgradeUid: 'u-1', hostname: 'cp-1', image: 'registry.k8s.io/kube-apiserver:v1.36.3', targetVersion: 'v1.36.3',
  args: ['--advertise-address=10.0.0.11', `--service-account-signing-key-file=${PROOF_KEY_PATH}`, PROOF_SENTINEL],
};

interface ProofJob {
  metadata: { name: string; annotations: Record<string, string>; labels: Record<string, string> };
  spec: { activeDeadlineSeconds: number; template: { metadata: { annotations: Record<string, string> }; spec: Record<string, unknown> & { containers: { command: string[]; image: string; securityContext: Record<string, unknown> }[]; volumes: unknown[] } } };
}

test('the Job: the target image running kube-apiserver with the flags, as nobody, nothing of the node mounted', () => {
  const j = proofJob({ namespace: 'kube-system' }, input) as unknown as ProofJob;
  assert.match(j.metadata.name, /^auo-proveflags-cp-1-[0-9a-f]{16}$/);
  assert.equal(j.metadata.labels['upgrade.apiserver.dev/action'], 'proveflags');
  assert.equal(j.metadata.annotations['upgrade.apiserver.dev/idempotency-key'], proofKey(input));
  const pod = j.spec.template.spec;
  assert.equal(pod.nodeName, 'cp-1');
  assert.equal(pod.hostNetwork, undefined);
  assert.equal(pod.automountServiceAccountToken, false);
  assert.equal(pod.initContainers, undefined);
  assert.deepEqual(pod.containers[0]!.command, ['kube-apiserver', ...input.args]);
  assert.equal(pod.containers[0]!.image, input.image);
  assert.equal(pod.containers[0]!.securityContext.runAsUser, 65534);
  assert.equal(pod.containers[0]!.securityContext.readOnlyRootFilesystem, true);
  assert.ok(JSON.stringify(pod.volumes).includes('downwardAPI') && !JSON.stringify(pod.volumes).includes('hostPath'));
  assert.equal(j.spec.template.metadata.annotations[PROOF_KEY_ANNOTATION], PROOF_THROWAWAY_KEY);
});

test('the key changes with the flags, the node, the image and the upgrade, and only with them', () => {
  const k = proofKey(input);
  assert.equal(proofKey({ ...input }), k);
  assert.notEqual(proofKey({ ...input, args: ['--v=2', PROOF_SENTINEL] }), k);
  assert.notEqual(proofKey({ ...input, hostname: 'cp-2' }), k);
  assert.notEqual(proofKey({ ...input, image: 'registry.k8s.io/kube-apiserver:v1.36.4' }), k);
  assert.notEqual(proofKey({ ...input, upgradeUid: 'u-2' }), k);
});

test('refused: flags without the sentinel last, or with a flag that would take it', () => {
  assert.throws(() => proofJob({ namespace: 'kube-system' }, { ...input, args: ['--v=2'] }), /must end in/);
  assert.throws(() => proofJob({ namespace: 'kube-system' }, { ...input, args: ['--etcd-servers', PROOF_SENTINEL] }), /has no value/);
  fc.assert(fc.property(fc.array(fc.string({ maxLength: 10 }), { maxLength: 6 }), (rest) => {
    const built = proofCommand(['kube-apiserver', ...rest], undefined, { signingKeyPath: PROOF_KEY_PATH });
    if ('error' in built) return;
    assert.doesNotThrow(() => proofJob({ namespace: 'kube-system' }, { ...input, args: built.args }));
  }), { numRuns: 500 });
});

test('the throwaway key is an EC private key (kube-apiserver takes RSA or ECDSA, measured: docs/flag-proof.md)', () => {
  const k = createPrivateKey(PROOF_THROWAWAY_KEY);
  assert.equal(k.asymmetricKeyType, 'ec');
});

const terminated = (exitCode: number, message: string) => ({ status: { containerStatuses: [{ name: PROOF_CONTAINER, state: { terminated: { exitCode, message } } }] } });

test('the Pod\'s status: the verdict from the termination message once it ended, notRun when it cannot start, nothing while it runs', () => {
  const ok = proofOfPod('cp-1', terminated(1, `E1206 18:15:00.1 1 run.go:72] "command failed" err="${PROOF_SENTINEL_ERROR}"\n`));
  assert.deepEqual(ok, { hostname: 'cp-1', verdict: { result: 'Accepted', warnings: [] } });
  const refused = proofOfPod('cp-1', terminated(1, 'E1206 18:15:00.1 1 run.go:72] "command failed" err="unrecognized feature gate: ServiceTrafficDistribution"'));
  assert.equal(refused && 'verdict' in refused && refused.verdict.result === 'Refused' && refused.verdict.item, 'ServiceTrafficDistribution');
  const pull = proofOfPod('cp-1', { status: { containerStatuses: [{ name: PROOF_CONTAINER, state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image' } } }] } });
  assert.match((pull as { notRun: string }).notRun, /cannot start on cp-1: ImagePullBackOff: Back-off pulling image/);
  assert.equal(proofOfPod('cp-1', { status: { containerStatuses: [{ name: PROOF_CONTAINER, state: { running: {} } }] } }), undefined);
  assert.equal(proofOfPod('cp-1', { status: { phase: 'Pending' } }), undefined);
  assert.equal(proofOfPod('cp-1', undefined), undefined);
  // Past the Job's deadline: a binary still running did not stop at validation (Inconclusive); one that never ran is notRun.
  const running = proofOfPod('cp-1', { status: { containerStatuses: [{ name: PROOF_CONTAINER, state: { running: {} } }] } }, true);
  assert.equal(running && 'verdict' in running && running.verdict.result, 'Inconclusive');
  assert.ok(proofOfPod('cp-1', { status: { phase: 'Pending' } }, true) && 'notRun' in proofOfPod('cp-1', { status: { phase: 'Pending' } }, true)!);
  // Exit 0 (a --version in the flags) proves nothing.
  const zero = proofOfPod('cp-1', terminated(0, 'Kubernetes v1.36.3'));
  assert.equal(zero && 'verdict' in zero && zero.verdict.result, 'Inconclusive');
});
