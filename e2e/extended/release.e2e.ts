// `npm run release` to a real registry, in a few minutes: the harness registry (Debian's
// docker-registry, plain HTTP; e2e/cluster/registry.ts) stands in for ghcr.io (e2e/support/release.ts). Checks
// what a release publishes: the image and the OCI chart in the registry under the digests it printed, the chart's
// defaults (version, appVersion, the image it names: only the published one), the files and their SHA256SUMS, an
// SPDX SBOM listing the locked production dependencies, node and the pinned Debian packages, and every regular file of
// the image with its sha256 held by a package (again in syft's SBOM of the pushed image), and a krew manifest carrying the archive's real sha256 and
// download URL; `skopeo inspect` of the pushed image. Then `krew install --manifest=<generated> --archive=<generated>`
// (krew v0.4.3 from the binary cache) installs the plugin, which runs `kubectl apiserver-upgrade get` against a real
// kube-apiserver (process mode) serving the CRD of the pulled chart. The operator image is the only image: the
// static Pod driver's node agent runs from it. Installing all that on real kubelets through containerd mirrors:
// e2e/extended/release-install-nodes.e2e.ts.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { binary, HELM_VERSION, RELEASE_TOOLS } from '../cluster/binaries.ts';
import { Cluster } from '../cluster/index.ts';
import { startRegistry, type Registry } from '../cluster/registry.ts';
import { run, runOk, tool } from '../support/tools.ts';
import { docBlock } from '../support/doc-blocks.ts';
import { PUBLISHED, RELEASE_VERSION, releaseToHarness } from '../support/release.ts';
import type { ReleaseResult } from '../../scripts/release.ts';
import { ARGOCD_ASSETS, DEFAULT_DOWNLOAD_BASE } from '../../scripts/release/plan.ts';
import { TEMPLATE_KUBE_VERSION } from '../../scripts/release.ts';
import { imageFiles, sbomCoverage, type SpdxDocument } from '../../scripts/release/sbom.ts';
import { IMAGE_OWN_FILES } from '../cluster/operator-image.ts';
import { debianArch, runtimePins } from '../cluster/runtime-packages.ts';

const REPO = join(import.meta.dirname, '..', '..');
const VERSION = RELEASE_VERSION;
let registry: Registry | undefined;
let cluster: Cluster | undefined;
/** The first test's release, for the krew test. */
let released: ReleaseResult | undefined;
const work = mkdtempSync(join(tmpdir(), 'auo-release-e2e-'));
const out = join(work, 'release');
const pulled = join(work, 'pulled');
after(async () => {
  await cluster?.teardown();
  await registry?.stop();
  rmSync(work, { recursive: true, force: true });
});

const sha256 = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

test('npm run release into a registry: image and OCI chart under the printed digests, chart defaults naming only the published image, SBOM, krew manifest with the real sha256 and URL, SHA256SUMS', { timeout: 20 * 60_000 }, async () => {
  const t0 = Date.now();
  registry = await startRegistry({ verbose: true });
  const r = await releaseToHarness(registry, out);
  released = r;
  process.stderr.write(`[release] published in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${r.image.reference}@${r.image.digest}, oci://${r.chart.reference}@${r.chart.digest}\n`);
  const image = `${PUBLISHED}/apiserver-upgrade-operator:${VERSION}`;
  assert.equal(r.image.reference, `${registry.address}/${image}`);
  assert.equal(r.names.image, image);
  assert.equal(r.names.chartInstallRef, `oci://${registry.address}/${PUBLISHED}/charts/apiserver-upgrade-operator`);

  // The registry serves what the release printed, by tag.
  for (const [repo, digest] of [[`${PUBLISHED}/apiserver-upgrade-operator`, r.image.digest], [`${PUBLISHED}/charts/apiserver-upgrade-operator`, r.chart.digest]] as const) {
    const res = await fetch(`http://${registry.address}/v2/${repo}/manifests/${VERSION}`, { method: 'HEAD', headers: { Accept: 'application/vnd.oci.image.manifest.v1+json' } });
    assert.equal(res.status, 200, repo);
    assert.equal(res.headers.get('docker-content-digest'), digest, `${repo}:${VERSION} is the digest the release printed`);
  }
  const manifest = await (await fetch(`http://${registry.address}/v2/${PUBLISHED}/apiserver-upgrade-operator/manifests/${VERSION}`, { headers: { Accept: 'application/vnd.oci.image.manifest.v1+json' } })).json() as { layers: { mediaType: string }[] };
  assert.deepEqual(manifest.layers.map((l) => l.mediaType), ['application/vnd.oci.image.layer.v1.tar+gzip'], 'pushed with a compressed layer');
  // As a user's tools see it: skopeo inspect by tag.
  const inspected = JSON.parse(await runOk('skopeo', ['inspect', '--tls-verify=false', `docker://${r.image.reference}`])) as { Digest: string; Os: string; Architecture: string; Layers: string[] };
  assert.equal(inspected.Digest, r.image.digest, 'skopeo inspect: the digest the release printed');
  assert.deepEqual([inspected.Os, inspected.Architecture, inspected.Layers.length], ['linux', 'amd64', 1]);
  const config = JSON.parse(await runOk('skopeo', ['inspect', '--tls-verify=false', '--config', `docker://${r.image.reference}`])) as { config: { User?: string; Entrypoint?: string[]; Cmd?: string[] } };
  assert.equal(config.config.User, '1000:1000', 'the image runs as its non-root user by number (runAsNonRoot can verify it)');
  assert.match([...(config.config.Entrypoint ?? []), ...(config.config.Cmd ?? [])].join(' '), /dist\/main\.js/, 'it starts the compiled operator');

  // The chart as a user pulls it: version, appVersion, and the defaults name the published image only.
  const helm = await binary('helm', HELM_VERSION);
  mkdirSync(pulled, { recursive: true });
  await runOk(helm, ['pull', r.names.chartInstallRef, '--version', VERSION, '--plain-http', '--destination', pulled]);
  assert.equal(sha256(join(pulled, r.names.chartFile)), sha256(join(out, r.names.chartFile)), 'the registry serves the packaged chart, byte for byte');
  const chart = parse(await runOk(helm, ['show', 'chart', join(pulled, r.names.chartFile)])) as { version: string; appVersion: string };
  assert.equal(chart.version, VERSION);
  assert.equal(chart.appVersion, VERSION);
  const rendered = await runOk(helm, ['template', 'x', join(pulled, r.names.chartFile), '--namespace', 'apiserver-upgrade-operator', '--kube-version', TEMPLATE_KUBE_VERSION]);
  const images = new Set<string>();
  for (const d of parseAllDocuments(rendered)) {
    const o = d.toJS() as { kind?: string; spec?: { template?: { spec?: { containers?: { image: string }[] } } }; data?: Record<string, string> } | null;
    for (const c of o?.spec?.template?.spec?.containers ?? []) images.add(c.image);
    if (o?.kind === 'ConfigMap' && o.data?.['policy.yaml']) for (const a of (parse(o.data['policy.yaml']) as { agentImages: { image?: string }[] }).agentImages) images.add(a.image ?? '(a rule without an exact image)');
  }
  assert.deepEqual([...images], [image], 'the operator Deployment and the policy\'s agent images: the published image, nothing else');

  // The files.
  const sums = readFileSync(join(out, 'SHA256SUMS'), 'utf8').trim().split('\n').map((l) => l.split(/\s+/));
  assert.deepEqual(sums.map(([, n]) => n).sort(), [r.names.archiveFile, r.names.chartFile, r.names.krewManifestFile, r.names.sbomFile, ...ARGOCD_ASSETS.map((a) => a.name)].sort());
  for (const [sum, name] of sums) assert.equal(sha256(join(out, name!)), sum, name);
  // The Argo CD files: the customizations and the waves ApplicationSet as committed; the operator Application names
  // the chart where this release pushed it, at its version.
  for (const a of ARGOCD_ASSETS) {
    const text = readFileSync(join(out, a.name), 'utf8');
    if (a.source !== 'argocd/operator-application.yaml') assert.equal(text, readFileSync(join(REPO, a.source), 'utf8'), a.name);
    else {
      const source = (parse(text) as { spec: { source: { repoURL: string; chart: string; targetRevision: string } } }).spec.source;
      assert.equal(`oci://${source.repoURL}/${source.chart}`, r.names.chartInstallRef);
      assert.equal(source.targetRevision, r.names.version);
    }
  }
  const sbom = JSON.parse(readFileSync(join(out, r.names.sbomFile), 'utf8')) as { spdxVersion: string; name?: string; packages: { name: string; versionInfo?: string; externalRefs?: { referenceLocator: string }[] }[] };
  assert.match(sbom.spdxVersion, /^SPDX-2\./);
  process.stderr.write(`[release] SBOM ${sbom.name ?? ''}: ${sbom.packages.length} packages\n`);
  // The image holds the production dependencies only (npm ci --omit=dev): each at its locked version, no dev tool.
  const lock = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
  for (const dep of Object.keys(pkg.dependencies)) {
    const want = lock.packages[`node_modules/${dep}`]!.version;
    assert.ok(sbom.packages.some((p) => p.name === dep && p.versionInfo === want), `the SBOM lists ${dep} ${want}`);
  }
  for (const dev of ['typescript', 'eslint', '@kubernetes/client-node', 'fast-check']) {
    assert.ok(pkg.devDependencies[dev] !== undefined && !sbom.packages.some((p) => p.name === dev), `no devDependency in the image: ${dev}`);
  }
  // Node and its runtime, as packages a scanner matches: node by its version string, each Debian package by the
  // pinned version with Debian 12 in its purl.
  const purls = (name: string): string[] => sbom.packages.filter((p) => p.name === name).flatMap((p) => (p.externalRefs ?? []).map((e) => e.referenceLocator));
  assert.ok(sbom.packages.some((p) => p.name === 'node' && p.versionInfo === lock.packages['node_modules/node']!.version), 'the SBOM lists node at package-lock.json\'s version');
  for (const pin of runtimePins(debianArch())) {
    assert.ok(sbom.packages.some((p) => p.name === pin.name && p.versionInfo === pin.version), `the SBOM lists ${pin.name} ${pin.version}`);
    assert.ok(purls(pin.name).some((u) => u.startsWith('pkg:deb/debian/') && u.includes('distro=debian-12')), `${pin.name}: a Debian 12 purl (${purls(pin.name).join(', ')})`);
  }
  // Every regular file of the image's layer is in the published SBOM with its sha256 and held by a package (the
  // builder's own /etc files: listed); and in the SBOM syft writes of the image as the registry serves it.
  const files = await imageFiles(r.image.tar);
  assert.ok(files.length > 100 && files.some((f) => f.path === 'lib/x86_64-linux-gnu/libc.so.6' || f.path.endsWith('/libc.so.6')), `${files.length} files`);
  const uncovered = sbomCoverage(files, sbom as SpdxDocument, IMAGE_OWN_FILES);
  assert.deepEqual(uncovered, [], `files of the image the published SBOM does not cover:\n${uncovered.join('\n')}`);
  const syft = await binary('syft', RELEASE_TOOLS.syft.version);
  const pushedRef = `${r.image.reference.slice(0, r.image.reference.lastIndexOf(':'))}@${r.image.digest}`;
  const fromRegistry = await run('env', ['SYFT_CHECK_FOR_APP_UPDATE=false', 'SYFT_REGISTRY_INSECURE_USE_HTTP=true', 'SYFT_FILE_METADATA_SELECTION=all', 'SYFT_FILE_METADATA_DIGESTS=sha256', syft, 'scan', `registry:${pushedRef}`, '-o', 'spdx-json', '-q'], { timeoutMs: 300_000 });
  assert.equal(fromRegistry.code, 0, fromRegistry.stderr);
  const again = sbomCoverage(files, JSON.parse(fromRegistry.stdout) as SpdxDocument, IMAGE_OWN_FILES);
  assert.deepEqual(again, [], `files of the pushed image syft's SBOM of it does not cover:\n${again.join('\n')}`);
  process.stderr.write(`[release] SBOM: all ${files.length} files of the image covered (${sbom.packages.length} packages)\n`);
  const krew = parse(readFileSync(join(out, r.names.krewManifestFile), 'utf8')) as { spec: { version: string; platforms: { uri: string; sha256: string }[] } };
  assert.equal(krew.spec.version, `v${VERSION}`);
  for (const p of krew.spec.platforms) {
    assert.equal(p.sha256, sha256(join(out, r.names.archiveFile)), 'the manifest carries the archive\'s real sha256');
    assert.equal(p.uri, `${DEFAULT_DOWNLOAD_BASE}/v${VERSION}/${r.names.archiveFile}`);
  }
  const archived = JSON.parse(await runOk('tar', ['-xzOf', join(out, r.names.archiveFile), 'kubectl-apiserver_upgrade/package.json'])) as { version: string };
  assert.equal(archived.version, VERSION, 'the plugin in the archive says the release\'s version');
});

test('krew install --manifest=<generated> --archive=<generated> installs a plugin that runs `kubectl apiserver-upgrade get` against a real kube-apiserver serving the released chart\'s CRD', { timeout: 10 * 60_000 }, async () => {
  const r = released;
  assert.ok(r, 'the release of the first test');
  const t0 = Date.now();
  cluster = await Cluster.start({ servers: 1, verbose: true });
  const c = cluster;
  const kubectl = tool('kubectl');
  // The CRD as the released chart in the registry carries it (helm installs crds/ before anything else).
  const chartDir = join(work, 'chart');
  await runOk(await binary('helm', HELM_VERSION), ['pull', r.names.chartInstallRef, '--version', VERSION, '--plain-http', '--untar', '--destination', chartDir]);
  const crdDir = join(chartDir, 'apiserver-upgrade-operator', 'crds');
  for (const f of readdirSync(crdDir)) await runOk(kubectl, ['--kubeconfig', c.kubeconfig, 'apply', '--server-side', '-f', join(crdDir, f)]);
  await runOk(kubectl, ['--kubeconfig', c.kubeconfig, 'wait', '--for=condition=Established', '--timeout=60s', 'crd/apiserverupgrades.upgrade.apiserver.dev']);
  // The quickstart's upgrade, as written: paused, so nothing acts on it.
  const name = 'kubeadm-to-v1-36-3';
  const upgrade = parse(docBlock(join(REPO, 'docs', 'quickstart.md'), 'e2e/helm-install.e2e.ts', `${name}.yaml`).text) as { metadata: { name: string }; spec: { paused: boolean; targetVersion: string } };
  assert.equal(upgrade.metadata.name, name);
  assert.equal(upgrade.spec.paused, true);
  await runOk(kubectl, ['--kubeconfig', c.kubeconfig, 'apply', '-f', '-'], { input: stringify(upgrade) });

  const krew = await binary('krew', RELEASE_TOOLS.krew.version);
  const krewRoot = join(work, 'krew');
  // KREW_NO_UPGRADE_CHECK: no index, no network; the generated manifest and archive are all krew reads.
  const k = await run('env', [`KREW_ROOT=${krewRoot}`, 'KREW_NO_UPGRADE_CHECK=1', krew, 'install', `--manifest=${join(out, r.names.krewManifestFile)}`, `--archive=${join(out, r.names.archiveFile)}`]);
  // krew reports on stderr.
  const installed = `${k.stdout}${k.stderr}`;
  process.stderr.write(`[release] krew install -> ${k.code}:\n${installed}\n`);
  assert.equal(k.code, 0);
  assert.match(installed, /Installed plugin: apiserver-upgrade/);
  const receipt = parse(readFileSync(join(krewRoot, 'receipts', 'apiserver-upgrade.yaml'), 'utf8')) as { spec: { version: string } };
  assert.equal(receipt.spec.version, `v${VERSION}`, 'krew recorded the released version');
  // The archive carries no Node: the plugin takes the one on PATH (the project's Node 24 here).
  const path = [join(krewRoot, 'bin'), dirname(process.execPath), dirname(kubectl), process.env.PATH ?? ''].join(delimiter);
  const got = await run('env', [`PATH=${path}`, `KUBECONFIG=${c.kubeconfig}`, 'kubectl', 'apiserver-upgrade', 'get', name]);
  assert.equal(got.code, 0, got.stderr);
  process.stderr.write(`[release] kubectl apiserver-upgrade get (the krew-installed plugin), ${((Date.now() - t0) / 1000).toFixed(1)} s into this test:\n${got.stdout}\n`);
  assert.match(got.stdout, new RegExp(name));
  assert.match(got.stdout, /v1\.36\.3/);
  const version = await runOk('env', [`PATH=${path}`, 'kubectl', 'apiserver-upgrade', 'version']);
  assert.match(version, new RegExp(`^kubectl-apiserver_upgrade v${VERSION.replace(/\./g, '\\.')} `), 'the installed plugin is the release\'s');
});
