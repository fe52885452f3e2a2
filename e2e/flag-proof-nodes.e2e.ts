// The flag proof Job on a real kubelet (docs/flag-proof.md): a kubeadm-shaped node (nodes mode: containerd, a kubelet,
// kube-apiserver v1.35.4 as a static Pod), the proof Job src/drivers/flag-proof-job.ts builds from the node's mirror
// Pod under an Upgrade's flag edit, run by the kubelet as nobody with a read-only root and nothing of the node, the
// target v1.36.3 image judging it, and its Pod read back into the node's proof (proofOfPod). A feature gate v1.36
// removed, added by hand to the node's manifest (v1.35.4 still runs with it), is refused with the node, the flag and
// the binary's message; so are an unknown flag and an admission plugin v1.36 does not have; the manifest as kubeadm
// wrote it is accepted. Nothing here touches the running server: no operator runs, no call is made.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { NodesCluster, MIRROR_REPOSITORY } from './cluster/nodes/nodes-cluster.ts';
import { NEW_VERSION, OLD_VERSION, waitFor } from './cluster/index.ts';
import { proofCommand } from '../src/drivers/flag-proof-command.ts';
import { PROOF_KEY_PATH, proofJob, proofOfPod, type ProofPod } from '../src/drivers/flag-proof-job.ts';
import { flagProofFindings, needsProofAgain, type NodeProof } from '../src/plan/flag-proof.ts';

let cluster: NodesCluster | undefined;
after(async () => {
  await cluster?.teardown();
});

const IMAGE = `${MIRROR_REPOSITORY}/kube-apiserver:${NEW_VERSION}`;
const times: number[] = [];

interface Pod { metadata: { name: string }; spec: { containers: { name: string; command?: string[] }[] } }

/** The node's kube-apiserver command as its mirror Pod shows it (the kubelet's copy of the manifest). */
async function mirrorCommand(c: NodesCluster): Promise<string[]> {
  const pod = await c.json<Pod>(`/api/v1/namespaces/kube-system/pods/kube-apiserver-${c.node(0).name}`);
  const cmd = pod.spec.containers.find((x) => x.name === 'kube-apiserver')?.command;
  assert.ok(cmd, 'the mirror Pod has the kube-apiserver command');
  return cmd;
}

let seq = 0;
/** Builds the node's proof Job for `command`, runs it, and reads its Pod into the node's proof. */
async function prove(c: NodesCluster, command: string[]): Promise<{ proof: NodeProof; args: string[] }> {
  const node = c.node(0);
  const built = proofCommand(command, { gate: true, peerCA: '/etc/kubernetes/pki/ca.crt', peerIP: node.address, peerPort: 6443, emulatedVersion: undefined }, { signingKeyPath: PROOF_KEY_PATH });
  if ('error' in built) throw new Error(built.error);
  const job = proofJob({ namespace: 'kube-system' }, { upgradeName: 'flag-proof', upgradeUid: `uid-${++seq}`, hostname: node.name, image: IMAGE, targetVersion: NEW_VERSION, args: built.args }) as { metadata: { name: string } };
  const t0 = Date.now();
  const r = await c.request('lb', '/apis/batch/v1/namespaces/kube-system/jobs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(job) });
  assert.equal(r.status, 201, r.body.slice(0, 600));
  const proof = await waitFor(`the proof Job ${job.metadata.name} to end`, 3 * 60_000, async () => {
    const pods = await c.json<{ items: ProofPod[] }>(`/api/v1/namespaces/kube-system/pods?labelSelector=${encodeURIComponent(`batch.kubernetes.io/job-name=${job.metadata.name}`)}`);
    return proofOfPod(node.name, pods.items[0]);
  }, 250);
  times.push(Date.now() - t0);
  return { proof, args: built.args };
}

test(`the proof Job on a real kubelet: ${OLD_VERSION} node, ${NEW_VERSION} image — accepted as kubeadm wrote it; a removed gate added by hand, an unknown flag and a removed admission plugin refused, naming the node, the flag and the binary's message`, { timeout: 15 * 60_000 }, async () => {
  const t0 = Date.now();
  const c = await NodesCluster.start({ nodes: 1, verbose: true });
  cluster = c;
  process.stderr.write(`[flag-proof-nodes] node ready in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  const node = c.node(0);

  const asWritten = await mirrorCommand(c);
  const first = await prove(c, asWritten);
  assert.deepEqual(first.proof, { hostname: node.name, verdict: { result: 'Accepted', warnings: [] } }, JSON.stringify(first.proof));

  // By hand, as an admin does: the gate v1.36 removed, in the node's manifest; v1.35.4 runs with it (GA, locked).
  const file = join(node.root, 'etc/kubernetes/manifests/kube-apiserver.yaml');
  const doc = parseDocument(await readFile(file, 'utf8'));
  const cmd = doc.getIn(['spec', 'containers', 0, 'command'], true) as { items: unknown[]; add: (v: unknown) => void };
  cmd.add('--feature-gates=ServiceTrafficDistribution=true');
  await writeFile(file, doc.toString());
  const edited = await waitFor('the mirror Pod to show the edited manifest', 3 * 60_000, async () => {
    const now = await mirrorCommand(c).catch(() => undefined);
    return now?.includes('--feature-gates=ServiceTrafficDistribution=true') ? now : undefined;
  }, 500);
  const second = await prove(c, edited);
  assert.ok(needsProofAgain(first.args, second.args), 'a changed manifest is proven again');
  assert.ok('verdict' in second.proof && second.proof.verdict.result === 'Refused', JSON.stringify(second.proof));
  const [finding] = flagProofFindings([node.name], [second.proof], NEW_VERSION);
  assert.deepEqual([finding!.severity, finding!.object, finding!.flag, finding!.item], ['Block', `node/${node.name}`, '--feature-gates', 'ServiceTrafficDistribution']);
  assert.equal(finding!.message, `${node.name}: kube-apiserver ${NEW_VERSION} refuses --feature-gates (ServiceTrafficDistribution): unrecognized feature gate: ServiceTrafficDistribution`);

  // Flags the old server would not start with either, so they go into the proven command line only.
  for (const [extra, flag, item, message] of [
    ['--no-such-flag=1', '--no-such-flag', undefined, 'unknown flag: --no-such-flag'],
    ['--enable-admission-plugins=NodeRestriction,PodSecurityPolicy', '--enable-admission-plugins', 'PodSecurityPolicy', 'enable-admission-plugins plugin "PodSecurityPolicy" is unknown'],
  ] as const) {
    const { proof } = await prove(c, [...asWritten, extra]);
    assert.ok('verdict' in proof && proof.verdict.result === 'Refused', JSON.stringify(proof));
    assert.deepEqual([proof.verdict.flag, proof.verdict.item, proof.verdict.message], [flag, item, message]);
  }
  process.stderr.write(`[flag-proof-nodes] ${times.length} proof Jobs, create to verdict ms: ${times.join(' ')}\n`);
});
