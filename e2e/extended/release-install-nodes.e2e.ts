// A release installed from a real registry, the path a platform team takes (issue 22). Long: a 3-node nodes-mode
// cluster, the release's builds and a static Pod upgrade.
// 1. The harness registry (Debian's docker-registry, plain HTTP; e2e/cluster/registry.ts) stands in for ghcr.io:
//    `npm run release`'s function runs into it (e2e/support/release.ts), so the chart it pushes names the image
//    ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:0.2.0, exactly as a real release's does.
// 2. A 3-node cluster of real kubelets and containerd whose nodes resolve ghcr.io and registry.k8s.io (and the
//    cluster's private mirror name) through hosts.toml mirrors to that registry: nothing imported with ctr, the
//    cluster's own images are pushed there too.
// 3. docs/quickstart.md's install block as written — `helm install oci://ghcr.io/…/apiserver-upgrade-operator` with
//    DEFAULT values — with only the registry's address (helm has no containerd mirrors), --plain-http and the one value
//    a cluster on a private mirror sets (policy.apiserverImages listing the repository its kube-apiservers run) put in: the operator Pods run the default image name, which the kubelets pulled from the registry (the
//    kubelet's `Pulled` Events say "Successfully pulled", not "already present"; each node's containerd holds the
//    pushed, gzip-compressed manifest's digest, not the OCI tar's an import would give; the registry's access log
//    has containerd's requests).
// 4. The quickstart's upgrade to v1.36.3 (static Pod driver; durations shortened), resumed: Succeeded, the agent
//    Jobs running the released image and the target kube-apiserver image pulled through the mirror.
// The krew install of the generated manifest: e2e/extended/release.e2e.ts.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { NodesCluster, MIRROR_REPOSITORY } from '../cluster/nodes/nodes-cluster.ts';
import { NEW_VERSION, waitFor } from '../cluster/index.ts';
import { listImages } from '../cluster/images.ts';
import { containerdPulls, startRegistry, type Registry } from '../cluster/registry.ts';
import { tool, runOk } from '../support/tools.ts';
import { docBlock, substitute } from '../support/doc-blocks.ts';
import { getUpgrade } from '../support/operator.ts';
import { PUBLISHED, RELEASE_VERSION, releaseToHarness } from '../support/release.ts';

const REPO = join(import.meta.dirname, '..', '..');
const QUICKSTART = join(REPO, 'docs', 'quickstart.md');
/** The quickstart's blocks are marked for e2e/helm-install.e2e.ts, which runs them on a checkout's chart; this file runs the install one on the release. */
const DOC_TAG = 'e2e/helm-install.e2e.ts';
const VERSION = RELEASE_VERSION;
const NS = 'apiserver-upgrade-operator';
const RELEASE = 'apiserver-upgrade-operator';
const UPGRADE = 'kubeadm-to-v1-36-3';

let registry: Registry | undefined;
let cluster: NodesCluster | undefined;
const work = mkdtempSync(join(tmpdir(), 'auo-release-install-e2e-'));
after(async () => {
  await cluster?.teardown();
  await registry?.stop();
  rmSync(work, { recursive: true, force: true });
});

interface Pod { metadata: { name: string }; spec: { nodeName?: string; containers: { image: string }[] }; status?: { containerStatuses?: { ready: boolean; image: string; imageID: string }[] } }
interface KubeEvent { reason?: string; message?: string; involvedObject?: { name?: string } }
interface JobList { items: { metadata: { name: string }; spec: { template: { spec: { containers: { image: string }[]; initContainers?: { image: string }[] } } }; status?: { succeeded?: number } }[] }

/** A block of the quickstart run with bash as a reader pastes it: kubectl and helm first on PATH, the cluster's kubeconfig. */
async function runDocBlock(c: NodesCluster, name: string, replacements: [string, string][], cwd: string): Promise<string> {
  const script = substitute(docBlock(QUICKSTART, DOC_TAG, name), replacements);
  const path = [...new Set([dirname(tool('kubectl')), dirname(tool('helm'))])].join(':');
  const out = await runOk('bash', ['-c', `set -euo pipefail\nexport PATH=${path}:"$PATH" KUBECONFIG=${c.kubeconfig}\n${script}`], { cwd, timeoutMs: 8 * 60_000 });
  process.stderr.write(`[release] ran the quickstart's ${name}:\n${out}`);
  return out;
}

test('release 0.2.0 into the harness registry, then the quickstart\'s helm install oci:// with default values on 3 real kubelets pulling through containerd mirrors, and its static Pod upgrade to Succeeded (long: a nodes cluster, the release\'s builds, an upgrade)', { timeout: 45 * 60_000 }, async () => {
  const t0 = Date.now();
  const secs = (): string => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
  registry = await startRegistry({ verbose: true });
  const out = join(work, 'release');

  // 1. The cluster, pulling through the registry. Its start pushes the harness's own build of the operator image
  // under the chart's default name, which is the release's name too: the release is pushed after it, so that name is
  // the release's manifest in the registry (checked below on the Pods).
  const c = await NodesCluster.start({ nodes: 3, registry: registry.address, verbose: true });
  cluster = c;
  const tCluster = secs();

  // 2. The release (what it publishes is checked by e2e/extended/release.e2e.ts).
  const r = await releaseToHarness(registry, out);
  const tRelease = secs();
  assert.equal(r.names.image, `${PUBLISHED}/apiserver-upgrade-operator:${VERSION}`);
  const kubectl = (args: string[]): Promise<string> => runOk(tool('kubectl'), ['--kubeconfig', c.kubeconfig, ...args]);
  // What kubeadm's mark-control-plane phase does: the label the chart's nodeSelector names, the taint it tolerates.
  for (const n of c.nodes) {
    await kubectl(['label', 'node', n.name, 'node-role.kubernetes.io/control-plane=']);
    await kubectl(['taint', 'node', n.name, 'node-role.kubernetes.io/control-plane:NoSchedule']);
  }

  // 3. The quickstart's install: the chart from the registry, default values but the repository the nodes' kube-apiservers
  // run (the cluster's mirror name), which preflight refuses unless policy.apiserverImages lists it.
  await runDocBlock(c, 'helm-install.sh', [
    ['oci://ghcr.io/', `oci://${registry.address}/ghcr.io/`],
    [` --version ${VERSION} `, ` --version ${VERSION} --plain-http `],
    ['--create-namespace\n', `--create-namespace --wait --timeout 6m --set-json 'policy.apiserverImages=[{"repository":"${MIRROR_REPOSITORY}/kube-apiserver"}]'\n`],
  ], work);
  const pods = await waitFor('2 ready operator Pods', 3 * 60_000, async () => {
    const ps = (await c.json<{ items: Pod[] }>(`/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(`app.kubernetes.io/name=${RELEASE}`)}`)).items
      .filter((p) => p.status?.containerStatuses?.every((s) => s.ready));
    return ps.length === 2 ? ps : undefined;
  }, 1000);
  const tInstall = secs();
  const events = (await c.json<{ items: KubeEvent[] }>(`/api/v1/namespaces/${NS}/events`)).items;
  for (const p of pods) {
    assert.equal(p.spec.containers[0]!.image, r.names.image, `${p.metadata.name} runs the chart's default image name`);
    assert.ok(p.status!.containerStatuses![0]!.imageID.endsWith(`@${r.image.digest}`), `${p.metadata.name}'s image is the pushed manifest (${p.status!.containerStatuses![0]!.imageID})`);
    const node = c.nodes.find((n) => n.name === p.spec.nodeName)!;
    const images = await listImages(c.containerdSocket(node.index));
    assert.equal(images.get(r.names.image), r.image.digest, `${node.name}'s containerd holds ${r.names.image} as pulled (an import of the OCI tar would show its uncompressed manifest)`);
    const pulled = events.filter((e) => e.involvedObject?.name === p.metadata.name && e.reason === 'Pulled').map((e) => e.message ?? '');
    assert.ok(pulled.some((m) => m.startsWith(`Successfully pulled image "${r.names.image}"`)), `the kubelet pulled ${p.metadata.name}'s image: ${JSON.stringify(pulled)}`);
  }

  // 4. The quickstart's upgrade, paused as written, the durations shortened for a test, then resumed by its block.
  const tApply = Date.now();
  writeFileSync(join(work, `${UPGRADE}.yaml`), substitute(docBlock(QUICKSTART, DOC_TAG, `${UPGRADE}.yaml`), [
    ['soakDuration: 5m', 'soakDuration: 5s'], ['batchTimeout: 15m', 'batchTimeout: 5m'], ['interval: 15s', 'interval: 5s'],
  ]));
  await runDocBlock(c, 'apply.sh', [], work);
  await waitFor('preflight to pass while paused', 3 * 60_000, async () => {
    const u = await getUpgrade(c, UPGRADE);
    return u?.status?.conditions?.some((x) => x.type === 'PreflightPassed' && x.status === 'True') ? true : undefined;
  }, 1000);
  await runDocBlock(c, 'resume.sh', [], work);
  const final = await waitFor('Succeeded', 20 * 60_000, async () => {
    const u = await getUpgrade(c, UPGRADE);
    if (u?.status?.phase === 'Paused' || u?.status?.phase === 'Failed') throw new Error(`upgrade ${u.status.phase}: ${JSON.stringify(u.status.pause)} ${JSON.stringify(u.status.driverCalls?.filter((x) => x.result === 'Failed'))}`);
    return u?.status?.phase === 'Succeeded' ? u : undefined;
  }, 2000);
  const tUpgrade = ((Date.now() - tApply) / 1000).toFixed(0);
  process.stderr.write(`[release] Succeeded ${tUpgrade} s after apply; calls ${JSON.stringify(final.status?.driverCalls?.map((x) => [x.action, x.server, x.result]))}\n`);
  const mirrors = (await c.json<{ items: Pod[] }>('/api/v1/namespaces/kube-system/pods?labelSelector=component%3Dkube-apiserver')).items;
  assert.equal(mirrors.length, 3);
  for (const m of mirrors) assert.equal(m.spec.containers[0]!.image, `${MIRROR_REPOSITORY}/kube-apiserver:${NEW_VERSION}`, `${m.metadata.name} runs the target from the cluster's mirror name`);
  // The node agent's Jobs (the flag proof's, action proveflags, are checked by e2e/flag-proof-upgrade.e2e.ts).
  const jobs = (await c.json<JobList>('/apis/batch/v1/namespaces/kube-system/jobs?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dapiserver-upgrade-operator%2Cupgrade.apiserver.dev%2Faction%21%3Dproveflags')).items;
  assert.equal(jobs.length, 6, `3 EnableProxy and 3 Upgrade Jobs: ${jobs.map((j) => j.metadata.name).join(', ')}`);
  for (const j of jobs) {
    assert.equal(j.status?.succeeded, 1, j.metadata.name);
    assert.equal(j.spec.template.spec.containers[0]!.image, r.names.image, `${j.metadata.name}'s agent runs the released image`);
  }

  // What the registry saw: containerd (the kubelets' CRI pulls) asking for each image by its upstream name.
  const pulls = containerdPulls(readFileSync(registry.logPath, 'utf8'));
  assert.ok(pulls.includes(`ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:${VERSION}`), 'containerd resolved the operator image at the registry');
  assert.ok(pulls.includes('registry.k8s.io/pause:3.10'), 'and the sandbox image');
  assert.ok(pulls.includes(`registry.auo.test/k8s/kube-apiserver:${NEW_VERSION}`), 'and the target kube-apiserver image the agent Jobs pulled');
  const byTag = pulls.filter((p) => !/:sha256:/.test(p));
  process.stderr.write(`[release] pulls seen by the registry: ${byTag.length} by tag (${[...new Set(byTag)].join(', ')})\n`);
  process.stderr.write(`[release] timings: released ${tRelease}, cluster ready ${tCluster}, installed ${tInstall}, Succeeded ${tUpgrade} s after apply, all ${secs()}\n`);
});
