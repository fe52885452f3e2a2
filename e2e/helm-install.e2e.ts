// The operator in the cluster it upgrades (issue 14): `helm install` of the chart into a kubeadm-shaped 3-node
// cluster on real kubelets (nodes mode: containerd, kube-proxy, CNI), the operator's image built from this repo
// without Docker and imported into every node, 2 replicas under exactly the chart's RBAC reaching the API through
// the `kubernetes` Service as in-cluster config does. An ApiServerUpgrade applied with kubectl runs to Succeeded
// with the static Pod driver; the leader Pod is deleted mid-upgrade and another replica (the standby or the Pod
// that replaces the deleted one) finishes; no Job is created twice; `kubectl auth can-i` as the ServiceAccount shows what it may and may not do; the cluster's
// kube-system/kubeadm-config (as `kubeadm init` writes it) is brought in line by the operator Pod once it Succeeded, the
// write turned on (kubeadmConfig.write, off by default) and passing the chart's admission policy on that ConfigMap.
// The install, the paused upgrade, its review and the resume are docs/quickstart.md's Path A blocks, run as written
// (only the chart and images of the checkout, the durations and helm's --wait put in), so the page cannot drift from what ran.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { MIRROR_REPOSITORY, NodesCluster } from './cluster/nodes/nodes-cluster.ts';
import { NEW_VERSION, OLD_VERSION, PROXY_GATE, waitFor } from './cluster/index.ts';
import { importImages } from './cluster/images.ts';
import { operatorImage, OPERATOR_IMAGE } from './cluster/operator-image.ts';
import { getUpgrade } from './support/operator.ts';
import { tool, runOk, run } from './support/tools.ts';
import { docBlock, substitute } from './support/doc-blocks.ts';
import { RELEASE_VERSION } from './support/release.ts';
import { kubeadmClusterConfiguration } from './support/kubeadm-config.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

const REPO = join(import.meta.dirname, '..');
const QUICKSTART = join(REPO, 'docs', 'quickstart.md');
const DOC_TAG = 'e2e/helm-install.e2e.ts';
// The quickstart's names: the release and namespace are the chart's, the upgrade is its example's.
const RELEASE = 'apiserver-upgrade-operator';
const NS = 'apiserver-upgrade-operator';
const UPGRADE = 'kubeadm-to-v1-36-3';
const SA = `system:serviceaccount:${NS}:${RELEASE}`;
const LEASE = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/${RELEASE}`;

const KUBEADM_ENDPOINT = 'cp.auo.test:6443';
const KUBEADM_CLUSTER_CONFIGURATION = kubeadmClusterConfiguration({ version: OLD_VERSION, endpoint: KUBEADM_ENDPOINT, comment: 'kubeadm init', imageRepository: 'registry.auo.test/k8s' });

let cluster: NodesCluster | undefined;
after(async () => {
  await cluster?.teardown();
});

interface Pod { metadata: { name: string; uid: string }; spec: { nodeName?: string }; status?: { phase?: string; podIP?: string; containerStatuses?: { ready: boolean; restartCount: number }[] } }
interface NodeObject { metadata: { name: string }; spec?: { taints?: { key: string; effect: string }[] }; status?: { conditions?: { type: string; status: string; reason?: string }[] } }
interface JobList { items: { metadata: { name: string; annotations?: Record<string, string> }; status?: { succeeded?: number; failed?: number } }[] }

/**
 * Runs a block of docs/quickstart.md (marked `<!-- e2e/helm-install.e2e.ts: <name> -->`) with bash, as a reader
 * would paste it: helm and kubectl first on PATH, the cluster's kubeconfig in KUBECONFIG. Answers its output.
 */
async function runDocBlock(c: NodesCluster, name: string, cwd: string, replacements: [string, string][]): Promise<string> {
  const script = substitute(docBlock(QUICKSTART, DOC_TAG, name), replacements);
  const path = [...new Set([dirname(tool('kubectl')), dirname(tool('helm'))])].join(':');
  const prelude = `set -euo pipefail\nexport PATH=${path}:"$PATH" KUBECONFIG=${c.kubeconfig}\n`;
  const out = await runOk('bash', ['-c', prelude + script], { cwd, timeoutMs: 6 * 60_000 });
  process.stderr.write(`[helm] ran the quickstart's ${name}:\n${out}`);
  return out;
}

function kubectl(c: NodesCluster, args: string[], input?: string): Promise<string> {
  return runOk(tool('kubectl'), ['--kubeconfig', c.kubeconfig, ...args], input === undefined ? {} : { input });
}

async function operatorPods(c: NodesCluster): Promise<Pod[]> {
  return (await c.json<{ items: Pod[] }>(`/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(`app.kubernetes.io/name=${RELEASE}`)}`)).items;
}

async function leaderPod(c: NodesCluster): Promise<string | undefined> {
  const lease = await c.json<{ spec?: { holderIdentity?: string } }>(LEASE).catch(() => undefined);
  // The identity is `<hostname>_<pid>_<random>`; a Pod's hostname is its name. A leader that stops releases the
  // Lease (holderIdentity emptied): nobody leads then.
  const holder = lease?.spec?.holderIdentity;
  return holder ? holder.split('_')[0] : undefined;
}

test('helm install on real kubelets: 2 operator Pods carry a static Pod upgrade to Succeeded through the kubernetes Service; the leader Pod deleted mid-upgrade, another replica finishes; no Job twice; RBAC as the chart grants it', { timeout: 30 * 60_000 }, async () => {
  const c = await NodesCluster.start({ nodes: 3, verbose: true });
  cluster = c;
  // What kubeadm's mark-control-plane phase does: the label the chart's nodeSelector names, the taint it tolerates.
  for (const n of c.nodes) {
    await kubectl(c, ['label', 'node', n.name, 'node-role.kubernetes.io/control-plane=']);
    await kubectl(c, ['taint', 'node', n.name, 'node-role.kubernetes.io/control-plane:NoSchedule']);
  }
  // Every control-plane Pod runs (the scheduler above all: until now only node-pinned Pods had to run here).
  await waitFor('every kube-system Pod ready', 2 * 60_000, async () => {
    const ps = (await c.json<{ items: Pod[] }>('/api/v1/namespaces/kube-system/pods')).items;
    return ps.length >= 9 && ps.every((p) => p.status?.containerStatuses?.every((s) => s.ready)) ? true : undefined;
  }, 1000);
  // The chart's anti-affinity is a preference: a node the scheduler cannot use (NotReady, or tainted unreachable after
  // a missed heartbeat on a loaded machine) leaves it nothing to spread onto. Install on a cluster whose three nodes
  // are all usable, so a stacked pair means the chart's spreading failed, not a node.
  await waitFor('every node Ready with no node.kubernetes.io taint', 2 * 60_000, async () => {
    const ns = (await c.json<{ items: NodeObject[] }>('/api/v1/nodes')).items;
    const usable = ns.filter((n) => n.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') && !(n.spec?.taints ?? []).some((t) => t.key.startsWith('node.kubernetes.io/')));
    return usable.length === c.nodes.length ? true : undefined;
  }, 1000);
  const t0 = Date.now();
  const image = await operatorImage();
  await Promise.all(c.nodes.map((n) => importImages(c.containerdSocket(n.index), [image])));
  process.stderr.write(`[helm] operator image ${OPERATOR_IMAGE} ready and imported in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);

  // The chart installed as docs/quickstart.md's Path A says, its block run as written: only the images (the ones this
  // test built and imported) are put in, and the test adds debug logs and helm's --wait.
  const tInstall = Date.now();
  const tag = OPERATOR_IMAGE.slice(OPERATOR_IMAGE.lastIndexOf(':') + 1);
  // The page installs the release's OCI chart (e2e/extended/release-install-nodes.e2e.ts runs it so); here the
  // checkout's chart and the image this test built take its place.
  await runDocBlock(c, 'helm-install.sh', REPO, [
    [`oci://ghcr.io/apiserver-upgrade-operator/charts/apiserver-upgrade-operator --version ${RELEASE_VERSION}`, `charts/apiserver-upgrade-operator --set image.repository=${OPERATOR_IMAGE.slice(0, OPERATOR_IMAGE.lastIndexOf(':'))} --set image.tag=${tag}`],
    // The nodes run kube-apiserver from the cluster's own registry name (as a private mirror does): the policy lists
    // that repository (preflight refuses a node whose repository it does not list), and the operator writes kubeadm-config.
    ['--create-namespace\n', `--create-namespace --set logLevel=debug --wait --timeout 5m --set-json 'policy.apiserverImages=[{"repository":"${MIRROR_REPOSITORY}/kube-apiserver"}]' --set kubeadmConfig.write=true\n`],
  ]);
  const pods = await waitFor('2 ready operator Pods on 2 nodes', 3 * 60_000, async () => {
    const ps = (await operatorPods(c)).filter((p) => p.status?.containerStatuses?.every((s) => s.ready));
    return ps.length === 2 ? ps : undefined;
  }, 1000);
  process.stderr.write(`[helm] installed, 2 Pods ready in ${((Date.now() - tInstall) / 1000).toFixed(1)} s on ${pods.map((p) => p.spec.nodeName).join(', ')}\n`);
  if (pods[0]!.spec.nodeName === pods[1]!.spec.nodeName) {
    const nodes = (await c.json<{ items: NodeObject[] }>('/api/v1/nodes')).items.map((n) => ({ name: n.metadata.name, taints: n.spec?.taints, ready: n.status?.conditions?.find((x) => x.type === 'Ready') }));
    const events = await kubectl(c, ['get', 'events', '-n', NS, '-o', 'wide']);
    assert.fail(`the replicas spread across nodes: both on ${pods[0]!.spec.nodeName}\nnodes: ${JSON.stringify(nodes)}\n${events}`);
  }
  for (const p of pods) assert.match(p.status?.podIP ?? '', /^10\.244\./, `${p.metadata.name} runs on the Pod network, not the host's`);
  const firstLeader = await waitFor('a leader', 60_000, async () => leaderPod(c), 1000);
  assert.ok(pods.some((p) => p.metadata.name === firstLeader), `the leader ${firstLeader} is one of the chart's Pods`);

  // RBAC: exactly what the upgrade needs, nothing beyond it.
  const can = async (args: string[]): Promise<boolean> => (await run(tool('kubectl'), ['--kubeconfig', c.kubeconfig, 'auth', 'can-i', '--as', SA, ...args])).stdout.trim() === 'yes';
  for (const a of [
    ['get', 'apiserverupgrades.upgrade.apiserver.dev'], ['patch', 'apiserverupgrades.upgrade.apiserver.dev', '--subresource=status'],
    ['list', 'leases.coordination.k8s.io', '-n', 'kube-system'], ['create', 'jobs.batch', '-n', 'kube-system'], ['list', 'jobs.batch', '-n', 'kube-system'],
    ['list', 'pods', '-n', 'kube-system'], ['update', `leases.coordination.k8s.io/${RELEASE}`, '-n', NS], ['create', 'events.events.k8s.io', '-n', 'default'],
    ['update', 'configmaps/kubeadm-config', '-n', 'kube-system'],
  ]) assert.ok(await can(a), `the operator may ${a.join(' ')}`);
  for (const a of [
    ['get', 'secrets', '-n', 'kube-system'], ['list', 'secrets', '--all-namespaces'], ['create', 'pods/exec', '-n', 'kube-system'],
    ['create', 'clusterrolebindings'], ['escalate', 'clusterroles'], ['bind', 'clusterroles'], ['create', 'jobs.batch', '-n', 'default'],
    ['delete', 'nodes'], ['create', 'pods', '-n', 'kube-system'], ['*', '*'], ['update', 'configmaps/coredns', '-n', 'kube-system'],
  ]) assert.equal(await can(a), false, `the operator may not ${a.join(' ')}`);

  // What `kubeadm init` leaves in the cluster (v1beta4, as kubeadm v1.35 writes it): the operator must bring it in line
  // once the upgrade ends, under the chart's RBAC, or a later `kubeadm upgrade`/`join` drops the gate.
  await kubectl(c, ['apply', '-f', '-'], stringify({
    apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kubeadm-config', namespace: 'kube-system' },
    data: { ClusterConfiguration: KUBEADM_CLUSTER_CONFIGURATION },
  }));
  // The upgrade of the quickstart, created paused with its commands: only the durations are shortened for a test.
  await writeFile(join(c.dir, `${UPGRADE}.yaml`), substitute(docBlock(QUICKSTART, DOC_TAG, `${UPGRADE}.yaml`), [
    ['soakDuration: 5m', 'soakDuration: 5s'], ['batchTimeout: 15m', 'batchTimeout: 5m'], ['interval: 15s', 'interval: 5s'],
  ]));
  const tApply = Date.now();
  await runDocBlock(c, 'apply.sh', c.dir, []);
  let seen: ApiServerUpgrade | undefined;
  const reviewed = await waitFor('preflight to pass while paused', 2 * 60_000, async () => {
    const u = await getUpgrade(c, UPGRADE);
    seen = u ?? seen;
    return u?.status?.conditions?.some((x) => x.type === 'PreflightPassed' && x.status === 'True') ? u : undefined;
  }, 1000).catch(async (err: Error) => {
    const logs = await Promise.all((await operatorPods(c)).map(async (p) => `--- ${p.metadata.name}\n${await kubectl(c, ['logs', '-n', NS, p.metadata.name, '--tail', '30']).catch((e: Error) => e.message)}`));
    throw new Error(`${err.message}; status: ${JSON.stringify(seen?.status)}\n${logs.join('\n')}`, { cause: err });
  });
  // What the quickstart tells the reader to check before letting it go, printed by its own commands.
  const shown = await runDocBlock(c, 'apply.sh', c.dir, [[`kubectl apply -f ${UPGRADE}.yaml\n`, '']]);
  assert.match(shown, /^PreflightPassed=True Passed: /m, shown);
  assert.match(shown, new RegExp(`^${OLD_VERSION.replace(/\./g, '\\.')} \\[`, 'm'), `the from-version and the plan: ${shown}`);
  assert.equal(reviewed.status?.plan?.batches?.length, 3, JSON.stringify(reviewed.status?.plan));
  // Paused, preflight ran (the flag proof's Jobs among it, which touch no server): no agent Job.
  assert.equal((await c.json<JobList>('/apis/batch/v1/namespaces/kube-system/jobs?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dapiserver-upgrade-operator%2Cupgrade.apiserver.dev%2Faction%21%3Dproveflags')).items.length, 0, 'paused: nothing touched');
  await runDocBlock(c, 'resume.sh', c.dir, []);

  // Mid-upgrade — once the first node runs the target — the leader Pod goes; another replica (the standby, or the Pod that replaces it) must finish.
  await waitFor('batch 1 upgraded', 10 * 60_000, async () => {
    const u = await getUpgrade(c, UPGRADE);
    if (u?.status?.phase === 'Paused' || u?.status?.phase === 'Failed') throw new Error(`upgrade ${u.status.phase}: ${JSON.stringify(u.status.pause)}`);
    return (u?.status?.batch?.current ?? 0) >= 2 ? true : undefined;
  }, 1000);
  const leader = (await leaderPod(c))!;
  const standby = pods.map((p) => p.metadata.name).find((n) => n !== leader)!;
  await kubectl(c, ['delete', 'pod', '-n', NS, leader, '--wait=false']);
  const tDelete = Date.now();
  const next = await waitFor('another replica to lead', 90_000, async () => {
    const l = await leaderPod(c);
    return l !== undefined && l !== leader ? l : undefined;
  }, 500);
  process.stderr.write(`[helm] leader ${leader} deleted; ${next} (${next === standby ? 'the standby' : 'the Pod that replaced the deleted one'}) leads after ${((Date.now() - tDelete) / 1000).toFixed(1)} s\n`);
  // Either candidate may take the released Lease: the standby at its next retry (2-4.4 s), or the Pod that replaced
  // the deleted one, which tries as soon as it starts (~1 s, the image running compiled JavaScript). Either carries
  // the upgrade on from its status; what must hold is below: Succeeded, one Job per key, no restart, no refusal.
  assert.ok((await operatorPods(c)).some((p) => p.metadata.name === next), `the new leader ${next} is one of the chart's Pods`);

  const final = await waitFor('Succeeded', 15 * 60_000, async () => {
    const u = await getUpgrade(c, UPGRADE);
    if (u?.status?.phase === 'Paused' || u?.status?.phase === 'Failed') throw new Error(`upgrade ${u.status.phase}: ${JSON.stringify(u.status.pause)}`);
    // Succeeded is written first, kubeadm-config brought in line by the next write (status.kubeadmConfig Pending in
    // between): a poll may fall between the two (it did at load 13).
    return u?.status?.phase === 'Succeeded' && u.status.kubeadmConfig?.result !== 'Pending' ? u : undefined;
  }, 1000) as ApiServerUpgrade;
  process.stderr.write(`[helm] Succeeded ${((Date.now() - tApply) / 1000).toFixed(0)} s after apply; calls ${JSON.stringify(final.status?.driverCalls?.map((x) => [x.action, x.server, x.result]))}\n`);

  const mirrors = (await c.json<{ items: { spec: { containers: { image: string }[] } }[] }>('/api/v1/namespaces/kube-system/pods?labelSelector=component%3Dkube-apiserver')).items;
  assert.equal(mirrors.length, 3);
  for (const m of mirrors) assert.match(m.spec.containers[0]!.image, new RegExp(`:${NEW_VERSION.replace(/\./g, '\\.')}$`));
  for (let i = 0; i < 3; i++) assert.equal((JSON.parse((await c.request(i, '/version')).body) as { gitVersion: string }).gitVersion, NEW_VERSION);

  // kubeadm kept consistent, by the operator Pod under the chart's RBAC and its admission policy on kubeadm-config: the
  // target version, the gate merged into the existing feature-gates, the driver's peer CA; every other key and the comment kept.
  const kc = final.status?.conditions?.find((x) => x.type === 'KubeadmConfigUpdated');
  assert.deepEqual([kc?.status, kc?.reason], ['True', 'KubeadmConfigUpdated'], JSON.stringify(final.status?.kubeadmConfig));
  const cm = await c.json<{ metadata: { resourceVersion: string }; data: { ClusterConfiguration: string } }>('/api/v1/namespaces/kube-system/configmaps/kubeadm-config');
  assert.equal(final.status?.kubeadmConfig?.resourceVersion, cm.metadata.resourceVersion, 'the status names the version the operator wrote');
  assert.ok(cm.data.ClusterConfiguration.startsWith('# kubeadm init\n'), cm.data.ClusterConfiguration);
  const cfg = parse(cm.data.ClusterConfiguration) as { kubernetesVersion: string; controlPlaneEndpoint: string; apiServer: { extraArgs: { name: string; value: string }[] } };
  assert.equal(cfg.kubernetesVersion, NEW_VERSION);
  assert.equal(cfg.controlPlaneEndpoint, KUBEADM_ENDPOINT);
  assert.deepEqual(cfg.apiServer.extraArgs, [
    { name: 'authorization-mode', value: 'Node,RBAC' },
    { name: 'feature-gates', value: `SomeOtherGate=false,${PROXY_GATE}=true` },
    { name: 'peer-ca-file', value: '/etc/kubernetes/pki/ca.crt' },
  ], cm.data.ClusterConfiguration);

  // The node agent's Jobs (the flag proof's, action proveflags, end Failed by design: docs/flag-proof.md).
  const jobs = (await c.json<JobList>('/apis/batch/v1/namespaces/kube-system/jobs?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dapiserver-upgrade-operator%2Cupgrade.apiserver.dev%2Faction%21%3Dproveflags')).items;
  const keys = jobs.map((j) => j.metadata.annotations?.['upgrade.apiserver.dev/idempotency-key'] ?? '');
  assert.equal(new Set(keys).size, keys.length, `one Job per key: ${keys.join(', ')}`);
  assert.equal(jobs.length, 6, `3 EnableProxy and 3 Upgrade Jobs (${OLD_VERSION} starts with the gate off): ${jobs.map((j) => j.metadata.name).join(', ')}`);
  for (const j of jobs) assert.deepEqual([j.status?.succeeded, j.status?.failed ?? 0], [1, 0], `${j.metadata.name} ran once and succeeded`);

  const podsAfter = await operatorPods(c);
  for (const p of podsAfter) assert.equal(p.status?.containerStatuses?.[0]?.restartCount, 0, `${p.metadata.name} never restarted`);
  assert.ok(podsAfter.some((p) => p.metadata.name === next), 'the replica that finished is still there');
  for (const pod of new Set([next, standby])) {
    const logs = await kubectl(c, ['logs', '-n', NS, pod, '--tail', '-1']);
    assert.doesNotMatch(logs, /forbidden|\b403\b/i, `no call of ${pod} was refused by the chart's RBAC`);
  }
});
