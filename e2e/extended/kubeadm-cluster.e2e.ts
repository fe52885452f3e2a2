// A control plane made by real kubeadm (issue 22): `kubeadm init` on cp-1, `kubeadm join --control-plane` on cp-2 and
// cp-3 (stacked etcd), in the nodes mode's per-node namespaces, haproxy as controlPlaneEndpoint. Checks what kubeadm
// made (Nodes, mirror Pods, a 3-member etcd, kubeadm-config, the kube-apiserver manifest), that every node's
// containerd pulled kubeadm's images (registry.k8s.io/..., names untouched) from the harness registry through its
// hosts.toml mirrors, and that the manifest keeps the shape of test/fixtures/kubeadm/kube-apiserver-kubeadm-v1.35.4.yaml,
// which this cluster wrote (set AUO_WRITE_KUBEADM_FIXTURE=1 to write it again). The fixture's addresses are
// normalised to the node 10.0.0.11 and the balancer 10.0.0.1:6443, so the node agent's tests (test/agent/) edit it
// as they edit every manifest of that folder.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { KubeadmCluster } from '../cluster/kubeadm/kubeadm-cluster.ts';
import { OLD_VERSION } from '../cluster/binaries.ts';
import { containerdPulls } from '../cluster/registry.ts';
import { etcdImageTag, pauseImageName } from '../cluster/kubeadm/kubeadm-images.ts';

const FIXTURE = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'kubeadm', `kube-apiserver-kubeadm-${OLD_VERSION}.yaml`);

let cluster: KubeadmCluster | undefined;
after(async () => {
  await cluster?.teardown();
});

interface PodDoc { metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec: { containers: { image: string; command: string[] }[]; volumes?: { name: string; hostPath?: { path: string } }[] } }
interface NodeDoc { metadata: { name: string; labels: Record<string, string> }; spec: { taints?: { key: string; effect: string }[] }; status: { nodeInfo: { kubeletVersion: string } } }

/** The manifest with this run's addresses and ports replaced (node 10.0.0.11, balancer 10.0.0.1:6443), so two runs compare equal. */
function normalised(text: string, c: KubeadmCluster, i: number): string {
  const lb = new URL(c.lbUrl);
  return text.replaceAll(c.node(i).address, '10.0.0.11').replaceAll(`${lb.hostname}:${lb.port}`, '10.0.0.1:6443').replaceAll(lb.hostname, '10.0.0.1');
}

function flagNames(pod: PodDoc): string[] {
  return pod.spec.containers[0]!.command.slice(1).map((f) => f.split('=')[0]!).sort();
}

test('kubeadm init + 2 x join --control-plane: 3 Nodes, stacked etcd of 3 members, every control-plane mirror Pod, kubeadm-config, the apiserver manifest as kubeadm writes it', { timeout: 40 * 60_000 }, async () => {
  const c = await KubeadmCluster.start({ nodes: 3, verbose: true });
  cluster = c;
  process.stderr.write(`[kubeadm] cluster ready: ${JSON.stringify(c.timings)}\n`);
  for (const r of c.kubeadmRuns) process.stderr.write(`[kubeadm] kubeadm ${r.args[0]} took ${r.seconds.toFixed(1)} s\n`);

  const nodes = (await c.json<{ items: NodeDoc[] }>('/api/v1/nodes')).items;
  assert.deepEqual(nodes.map((n) => n.metadata.name).sort(), ['cp-1', 'cp-2', 'cp-3']);
  for (const n of nodes) {
    assert.ok('node-role.kubernetes.io/control-plane' in n.metadata.labels, `${n.metadata.name} labelled by kubeadm's mark-control-plane`);
    assert.ok(n.spec.taints?.some((t) => t.key === 'node-role.kubernetes.io/control-plane' && t.effect === 'NoSchedule'), `${n.metadata.name} tainted by kubeadm`);
    assert.equal(n.status.nodeInfo.kubeletVersion, OLD_VERSION);
  }
  const pods = (await c.json<{ items: PodDoc[] }>('/api/v1/namespaces/kube-system/pods?labelSelector=tier%3Dcontrol-plane')).items;
  assert.equal(pods.length, 12, pods.map((p) => p.metadata.name).join(', '));
  // Stacked etcd: every member lists the other two (kubeadm added cp-2 and cp-3 as learners, then promoted them).
  const etcd = pods.filter((p) => p.metadata.labels?.component === 'etcd');
  assert.equal(etcd.length, 3);
  for (const p of etcd) {
    const cluster = p.spec.containers[0]!.command.find((f) => f.startsWith('--initial-cluster='));
    assert.ok(cluster, `${p.metadata.name} has --initial-cluster`);
    assert.match(p.spec.containers[0]!.image, /^registry\.k8s\.io\/etcd:3\.6\.16-0$/);
  }
  assert.equal((await c.request(2, '/readyz/etcd')).status, 200);

  // Every image came from the registry, by its upstream name: containerd resolved each tag there, once per node.
  const pulls = containerdPulls(readFileSync(c.registry.logPath, 'utf8'));
  const repo = 'registry.k8s.io';
  for (const img of [`${repo}/kube-apiserver:${OLD_VERSION}`, `${repo}/kube-controller-manager:${OLD_VERSION}`, `${repo}/kube-scheduler:${OLD_VERSION}`, `${repo}/etcd:${etcdImageTag()}`, pauseImageName(OLD_VERSION)]) {
    const n = pulls.filter((p) => p === img).length;
    assert.ok(n >= 3, `containerd resolved ${img} at the harness registry ${n} times, not once per node (pulls: ${[...new Set(pulls)].join(', ')})`);
  }
  for (const p of pods) assert.match(p.spec.containers[0]!.image, /^registry\.k8s\.io\//, `${p.metadata.name} runs kubeadm's image name, not rewritten`);

  const cm = await c.json<{ data: { ClusterConfiguration: string } }>('/api/v1/namespaces/kube-system/configmaps/kubeadm-config');
  const cfg = parse(cm.data.ClusterConfiguration) as { apiVersion: string; kubernetesVersion: string; controlPlaneEndpoint: string; dns?: { disabled?: boolean }; proxy?: { disabled?: boolean } };
  assert.equal(cfg.apiVersion, 'kubeadm.k8s.io/v1beta4');
  assert.equal(cfg.kubernetesVersion, OLD_VERSION);
  assert.equal(cfg.controlPlaneEndpoint, new URL(c.lbUrl).host);
  assert.deepEqual([cfg.dns?.disabled, cfg.proxy?.disabled], [true, true], 'the skipped add-ons are recorded as disabled: kubeadm upgrade skips them too');

  for (let i = 0; i < 3; i++) {
    const pod = parse(await c.manifest(i)) as PodDoc;
    assert.equal(pod.spec.containers[0]!.image, `registry.k8s.io/kube-apiserver:${OLD_VERSION}`);
    const cmd = pod.spec.containers[0]!.command;
    assert.ok(cmd.includes(`--advertise-address=${c.node(i).address}`), cmd.join(' '));
    assert.ok(cmd.includes('--etcd-servers=https://127.0.0.1:2379'), 'stacked etcd: the local member');
    assert.ok(pod.metadata.annotations?.['kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint'], 'kubeadm\'s endpoint annotation');
  }
  const written = normalised(await c.manifest(0), c, 0);
  if (process.env.AUO_WRITE_KUBEADM_FIXTURE === '1') await writeFile(FIXTURE, written);
  const fixture = parse(await readFile(FIXTURE, 'utf8')) as PodDoc;
  const now = parse(written) as PodDoc;
  assert.deepEqual(flagNames(now), flagNames(fixture), 'kubeadm writes the flags of the fixture');
  assert.deepEqual(now.spec.volumes, fixture.spec.volumes);
  assert.equal(now.spec.containers[0]!.image, fixture.spec.containers[0]!.image);
});
