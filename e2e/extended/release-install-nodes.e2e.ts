// A release installed from a real registry, the path a platform team takes (issue 22). Long: a 3-node nodes-mode
// cluster plus the release's builds.
// 1. The harness registry (Debian's docker-registry, plain HTTP; e2e/cluster/registry.ts) stands in for ghcr.io:
//    `npm run release`'s function runs into it (e2e/support/release.ts), so the chart it pushes names the image
//    ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:0.2.0, exactly as a real release's does.
// 2. A 3-node cluster of real kubelets and containerd whose nodes resolve ghcr.io and registry.k8s.io through
//    hosts.toml mirrors to that registry (nothing imported with ctr: the cluster's own images are pushed there too).
// 3. `helm install oci://<registry>/…/apiserver-upgrade-operator --version 0.2.0` with DEFAULT values: the operator
//    Pods run the default image name, which each node's containerd pulled from the registry (its digest is the
//    pushed, gzip-compressed manifest's, not the OCI tar's an import would give; the registry's access log has
//    containerd's requests for it).
// 4. `krew install --manifest=<generated> --archive=<archive>` (krew built from the Go module proxy) installs the
//    plugin, and `kubectl apiserver-upgrade get` runs against the cluster.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { NodesCluster } from '../cluster/nodes/nodes-cluster.ts';
import { waitFor } from '../cluster/index.ts';
import { binary, HELM_VERSION, RELEASE_TOOLS } from '../cluster/binaries.ts';
import { listImages } from '../cluster/images.ts';
import { containerdPulls, startRegistry, type Registry } from '../cluster/registry.ts';
import { tool, run, runOk } from '../support/tools.ts';
import { docBlock } from '../support/doc-blocks.ts';
import { PUBLISHED, RELEASE_VERSION, releaseToHarness } from '../support/release.ts';

const REPO = join(import.meta.dirname, '..', '..');
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

test('release 0.2.0 into the harness registry, then helm install oci:// with default values on 3 real kubelets pulling through containerd mirrors, and krew install of the generated manifest running `get` (long: a nodes cluster and the release\'s builds)', { timeout: 45 * 60_000 }, async () => {
  const t0 = Date.now();
  const secs = (): string => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
  registry = await startRegistry({ verbose: true });
  const out = join(work, 'release');

  // 1. The release (what it publishes is checked by e2e/extended/release.e2e.ts).
  const r = await releaseToHarness(registry, out);
  const tRelease = secs();
  assert.equal(r.names.image, `${PUBLISHED}/apiserver-upgrade-operator:${VERSION}`);

  // 2. The cluster, pulling through the registry.
  const c = await NodesCluster.start({ nodes: 3, registry: registry.address, verbose: true });
  cluster = c;
  const tCluster = secs();
  const kubectl = (args: string[], input?: string): Promise<string> => runOk(tool('kubectl'), ['--kubeconfig', c.kubeconfig, ...args], input === undefined ? {} : { input });
  for (const n of c.nodes) {
    await kubectl(['label', 'node', n.name, 'node-role.kubernetes.io/control-plane=']);
    await kubectl(['taint', 'node', n.name, 'node-role.kubernetes.io/control-plane:NoSchedule']);
  }

  // 3. helm install from the registry, default values.
  const helm = await binary('helm', HELM_VERSION);
  await runOk(helm, ['install', RELEASE, r.names.chartInstallRef, '--version', VERSION, '--plain-http', '--kubeconfig', c.kubeconfig,
    '--namespace', NS, '--create-namespace', '--wait', '--timeout', '6m'], { timeoutMs: 7 * 60_000 });
  const pods = await waitFor('2 ready operator Pods', 3 * 60_000, async () => {
    const ps = (await c.json<{ items: Pod[] }>(`/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(`app.kubernetes.io/name=${RELEASE}`)}`)).items
      .filter((p) => p.status?.containerStatuses?.every((s) => s.ready));
    return ps.length === 2 ? ps : undefined;
  }, 1000);
  const tInstall = secs();
  for (const p of pods) {
    assert.equal(p.spec.containers[0]!.image, r.names.image, `${p.metadata.name} runs the chart's default image name`);
    assert.ok(p.status!.containerStatuses![0]!.imageID.endsWith(`@${r.image.digest}`), `${p.metadata.name}'s image is the pushed manifest (${p.status!.containerStatuses![0]!.imageID})`);
    const node = c.nodes.find((n) => n.name === p.spec.nodeName)!;
    const images = await listImages(c.containerdSocket(node.index));
    assert.equal(images.get(r.names.image), r.image.digest, `${node.name}'s containerd holds ${r.names.image} as pulled (an import of the OCI tar would show its uncompressed manifest)`);
  }
  const pulls = containerdPulls(readFileSync(registry.logPath, 'utf8'));
  assert.ok(pulls.includes(`ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:${VERSION}`), 'containerd resolved the operator image at the registry');
  assert.ok(pulls.includes('registry.k8s.io/pause:3.10'), 'and the sandbox image');
  assert.ok(pulls.some((p) => p.startsWith('registry.auo.test/k8s/kube-apiserver:')), 'and the control plane\'s static Pod images');
  process.stderr.write(`[release] pulls seen by the registry: ${pulls.filter((p) => !p.includes('@') && !/:sha256:/.test(p)).length} by tag\n`);

  // 4. krew install of the generated manifest and archive; the plugin runs `get` against the cluster.
  const krew = await binary('krew', RELEASE_TOOLS.krew.version);
  const krewRoot = join(work, 'krew');
  const env = { KREW_ROOT: krewRoot, KREW_NO_UPGRADE_CHECK: '1' };
  const installed = await runOk('env', [...Object.entries(env).map(([k, v]) => `${k}=${v}`), krew, 'install', `--manifest=${join(out, r.names.krewManifestFile)}`, `--archive=${join(out, r.names.archiveFile)}`]);
  assert.match(installed, /Installed plugin: apiserver-upgrade/);
  const upgrade = parse(docBlock(join(REPO, 'docs', 'quickstart.md'), 'e2e/helm-install.e2e.ts', `${UPGRADE}.yaml`).text) as { metadata: { name: string }; spec: { paused: boolean; targetVersion: string } };
  assert.equal(upgrade.spec.paused, true, 'the quickstart\'s upgrade starts paused: nothing is touched');
  await kubectl(['apply', '-f', '-'], stringify(upgrade));
  // The archive has no Node: the plugin takes the one on PATH (the project's).
  const path = [join(krewRoot, 'bin'), dirname(process.execPath), dirname(tool('kubectl')), process.env.PATH ?? ''].join(delimiter);
  const got = await waitFor('`kubectl apiserver-upgrade get` through krew\'s plugin', 60_000, async () => {
    const g = await run('env', [`PATH=${path}`, `KUBECONFIG=${c.kubeconfig}`, 'kubectl', 'apiserver-upgrade', 'get', UPGRADE]);
    if (g.code !== 0) throw new Error(`exit ${g.code}: ${g.stderr}`);
    return g.stdout;
  }, 2000);
  assert.match(got, new RegExp(UPGRADE));
  assert.match(got, /v1\.36\.3/);
  process.stderr.write(`[release] kubectl apiserver-upgrade get (krew plugin):\n${got}\n`);
  process.stderr.write(`[release] timings: released ${tRelease}, cluster ready ${tCluster}, installed ${tInstall}, all ${secs()}\n`);
});
