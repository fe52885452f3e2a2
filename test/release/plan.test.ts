// The release's pure part (scripts/release/plan.ts): inputs validated before anything runs, the names it publishes,
// the chart and krew manifest edits, and the check that the chart's defaults name only the release's image.
// The release itself, against a real registry and cluster: e2e/extended/release.e2e.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { ARGOCD_ASSETS, checkDownloadBase, checkVersion, defaultImages, DEFAULT_DOCS_BASE, DEFAULT_DOWNLOAD_BASE, parseRegistry, releaseArgocdApplication, releaseChartYaml, releaseKrewManifest, releaseNames, releaseValues } from '../../scripts/release/plan.ts';
import { ARGOCD_CUSTOMIZATIONS, ARGOCD_MANIFESTS } from '../argocd/manifests.ts';
import { existsSync } from 'node:fs';
import { parseReleaseArgs } from '../../scripts/release.ts';

const root = join(import.meta.dirname, '..', '..');
const chartDir = join(root, 'charts', 'apiserver-upgrade-operator');
const sha = 'ab'.repeat(32);

test('versions: MAJOR.MINOR.PATCH[-PRERELEASE], nothing a tag, a file name or a shell could misread', () => {
  for (const ok of ['0.2.0', '1.0.0', '10.20.30', '1.0.0-rc.1', '0.2.0-alpha']) assert.equal(checkVersion(ok), ok);
  for (const bad of ['v0.2.0', '0.2', '0.2.0.1', '01.2.0', '0.2.0+build', '0.2.0-', '0.2.0-rc..1', '0.2.0 ', '0.2.0;rm -rf /', '0.2.0/../x', '', '0.2.0-$(id)', `0.2.0-${'a'.repeat(60)}`]) {
    assert.throws(() => checkVersion(bad), /--version must be/, bad);
  }
});

test('registries: HOST[:PORT]/PATH, lower case, a real port, an IPv4 with four octets', () => {
  assert.deepEqual(parseRegistry('ghcr.io/apiserver-upgrade-operator'), { host: 'ghcr.io', path: 'apiserver-upgrade-operator', text: 'ghcr.io/apiserver-upgrade-operator' });
  assert.equal(parseRegistry('10.77.3.1:5000/ghcr.io/apiserver-upgrade-operator').host, '10.77.3.1:5000');
  assert.equal(parseRegistry('localhost:5000/a/b_c').path, 'a/b_c');
  for (const bad of ['ghcr.io', 'ghcr.io/', '/x', 'GHCR.io/x', 'ghcr.io/X', 'ghcr.io:0/x', 'ghcr.io:65536/x', 'ghcr.io//x', 'ghcr.io/x/', 'ghcr.io/-x', '300.1.1.1:5000/x', '10.77.1/x', 'ghcr.io/x y', 'ghcr.io/x;id', 'https://ghcr.io/x', 'user@ghcr.io/x']) {
    assert.throws(() => parseRegistry(bad), /--registry must be HOST\[:PORT\]\/PATH/, bad);
  }
});

test('the download base: https, a host and a plain path; no query, credentials or other schemes', () => {
  assert.equal(checkDownloadBase(`${DEFAULT_DOWNLOAD_BASE}/`), DEFAULT_DOWNLOAD_BASE);
  for (const bad of ['http://github.com/x', 'https://u:p@github.com/x', 'https://github.com/x?y=1', 'https://github.com/x#y', 'file:///etc', 'https://github.com/x y', 'not a url']) {
    assert.throws(() => checkDownloadBase(bad), /--download-base/, bad);
  }
});

test('the names a release publishes: pushed where --registry says, named by the chart as --mirror-of says (or the same)', () => {
  const ghcr = releaseNames({ version: '0.2.0', registry: parseRegistry('ghcr.io/apiserver-upgrade-operator'), downloadBase: DEFAULT_DOWNLOAD_BASE });
  assert.equal(ghcr.pushImage, 'ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:0.2.0');
  assert.equal(ghcr.image, ghcr.pushImage);
  assert.equal(ghcr.imageRepository, 'ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator');
  assert.equal(ghcr.chartPushTarget, 'oci://ghcr.io/apiserver-upgrade-operator/charts');
  assert.equal(ghcr.chartInstallRef, 'oci://ghcr.io/apiserver-upgrade-operator/charts/apiserver-upgrade-operator');
  assert.equal(ghcr.chartFile, 'apiserver-upgrade-operator-0.2.0.tgz');
  assert.equal(ghcr.archiveUrl, 'https://github.com/apiserver-upgrade-operator/apiserver-upgrade-operator/releases/download/v0.2.0/kubectl-apiserver_upgrade-v0.2.0.tar.gz');
  // The alerts' runbook: docs/operations.md at the tag the release workflow runs on (it exists once the release does).
  assert.equal(ghcr.runbookUrl, 'https://github.com/apiserver-upgrade-operator/apiserver-upgrade-operator/blob/v0.2.0/docs/operations.md');
  assert.equal(releaseNames({ version: '0.2.0', registry: parseRegistry('ghcr.io/fork'), downloadBase: DEFAULT_DOWNLOAD_BASE, docsBase: 'https://github.com/fork/auo/blob' }).runbookUrl, 'https://github.com/fork/auo/blob/v0.2.0/docs/operations.md');
  const mirror = releaseNames({ version: '0.2.0', registry: parseRegistry('10.77.3.1:5000/ghcr.io/apiserver-upgrade-operator'), mirrorOf: parseRegistry('ghcr.io/apiserver-upgrade-operator'), downloadBase: DEFAULT_DOWNLOAD_BASE });
  assert.equal(mirror.pushImage, '10.77.3.1:5000/ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:0.2.0');
  assert.equal(mirror.image, 'ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:0.2.0');
  assert.equal(mirror.chartInstallRef, 'oci://10.77.3.1:5000/ghcr.io/apiserver-upgrade-operator/charts/apiserver-upgrade-operator');
  assert.throws(() => releaseNames({ version: 'v1', registry: parseRegistry('ghcr.io/x'), downloadBase: DEFAULT_DOWNLOAD_BASE }), /--version/);
});

test('the command line: strict, every value validated before anything runs', () => {
  const o = parseReleaseArgs(['--version', '0.2.0', '--registry', '10.77.3.1:5000/x', '--plain-http', '--out', '/tmp/r']);
  assert.equal(o.version, '0.2.0');
  assert.equal(o.plainHttp, true);
  assert.equal(o.registry.text, '10.77.3.1:5000/x');
  assert.equal(o.out, '/tmp/r');
  assert.equal(o.downloadBase, DEFAULT_DOWNLOAD_BASE);
  assert.equal(o.docsBase, DEFAULT_DOCS_BASE);
  assert.throws(() => parseReleaseArgs(['--version', '0.2.0', '--registry', 'ghcr.io/x', '--docs-base', 'http://example.com/blob']), /--docs-base must be an https URL/);
  assert.throws(() => parseReleaseArgs(['--version', '0.2.0']), /required/);
  assert.throws(() => parseReleaseArgs(['--version', '0.2.0', '--registry', 'ghcr.io/x', '--push-everything']), /Unknown option/);
  assert.throws(() => parseReleaseArgs(['--version', '0.2.0', '--registry', 'ghcr.io/x', 'extra']), /positional/);
  assert.throws(() => parseReleaseArgs(['--version', '0.2.0;id', '--registry', 'ghcr.io/x']), /--version must be/);
  assert.throws(() => parseReleaseArgs(['--version', '0.2.0', '--registry', 'ghcr.io/x', '--mirror-of', 'GHCR']), /--mirror-of must be/);
});

test('Chart.yaml: version and appVersion are the release\'s, the rest and its comments kept', () => {
  const text = readFileSync(join(chartDir, 'Chart.yaml'), 'utf8');
  const out = releaseChartYaml(text, '0.2.0');
  const c = parse(out) as Record<string, unknown>;
  const before = parse(text) as Record<string, unknown>;
  assert.equal(c.version, '0.2.0');
  assert.equal(c.appVersion, '0.2.0');
  assert.deepEqual({ ...c, version: before.version, appVersion: before.appVersion }, before);
  assert.throws(() => releaseChartYaml('name: other\nversion: 1.0.0\n', '0.2.0'), /not apiserver-upgrade-operator/);
});

test('values.yaml: image.repository and the project\'s agent images become the published image; other entries and comments stay', () => {
  const text = readFileSync(join(chartDir, 'values.yaml'), 'utf8');
  const names = { imageRepository: '10.77.3.1:5000/x/apiserver-upgrade-operator', image: '10.77.3.1:5000/x/apiserver-upgrade-operator:0.2.0', runbookUrl: `${DEFAULT_DOCS_BASE}/v0.2.0/docs/operations.md` };
  const out = releaseValues(text, names);
  const v = parse(out) as { image: { repository: string; tag: string }; policy: { agentImages: Record<string, string>[]; apiserverImages: unknown[] } };
  assert.equal(v.image.repository, names.imageRepository);
  assert.equal(v.image.tag, '');
  assert.equal((parse(text) as { prometheusRule: { runbookUrl: string } }).prometheusRule.runbookUrl, '', 'a chart from a checkout links to no runbook');
  assert.equal((parse(out) as { prometheusRule: { runbookUrl: string } }).prometheusRule.runbookUrl, names.runbookUrl, 'the released chart links to its tag\'s docs/operations.md');
  assert.deepEqual(v.policy.agentImages, [{ image: names.image }]);
  assert.deepEqual(v.policy.apiserverImages, (parse(text) as typeof v).policy.apiserverImages, 'the user\'s kube-apiserver repositories are not the release\'s to change');
  assert.ok(out.includes('# Defaults to the chart\'s appVersion.'), 'comments kept (the chart README is generated from them)');
  // An entry that is not the project's stays as it is; a repository rule of the project's becomes the exact image.
  const custom = stringify({ image: { repository: 'r', tag: '' }, prometheusRule: { runbookUrl: '' }, policy: { agentImages: [{ repository: 'example.com/mine' }, { repositoryPrefix: 'ghcr.io/apiserver-upgrade-operator/' }] } });
  assert.deepEqual((parse(releaseValues(custom, names)) as typeof v).policy.agentImages, [{ repository: 'example.com/mine' }, { image: names.image }]);
  assert.throws(() => releaseValues(stringify({ image: { repository: 'r', tag: '0.1.0' }, prometheusRule: { runbookUrl: '' }, policy: { agentImages: [] } }), names), /pins image.tag/);
});

test('defaultImages reads every container image, the --agent-image argument and the policy\'s agent images from helm template output', () => {
  const rendered = [
    stringify({ kind: 'Deployment', spec: { template: { spec: { initContainers: [{ image: 'a:1' }], containers: [{ image: 'b:2', args: ['--in-cluster', '--agent-image=e:5'] }] } } } }),
    stringify({ kind: 'ConfigMap', data: { 'policy.yaml': 'apiserverImages: [{"repository":"registry.k8s.io/kube-apiserver"}]\nagentImages: [{"image":"c:3"},{"repository":"d"}]\n' } }),
    stringify({ kind: 'Service', spec: { ports: [] } }),
  ].join('---\n');
  assert.deepEqual(defaultImages(rendered), ['a:1', 'b:2', 'c:3', 'e:5']);
});

test('the krew manifest: version, the real URL and sha256 on every platform; comments and the rest kept', () => {
  const text = readFileSync(join(root, 'krew', 'apiserver-upgrade.yaml'), 'utf8');
  const url = 'https://example.com/r/v0.2.0/kubectl-apiserver_upgrade-v0.2.0.tar.gz';
  const out = releaseKrewManifest(text, { version: '0.2.0', url, sha256: sha });
  const m = parse(out) as { spec: { version: string; platforms: { uri: string; sha256: string; bin: string; files: unknown[] }[] } };
  assert.equal(m.spec.version, 'v0.2.0');
  assert.ok(m.spec.platforms.length > 0);
  for (const p of m.spec.platforms) {
    assert.equal(p.uri, url);
    assert.equal(p.sha256, sha);
    assert.equal(p.bin, 'src/cli/kubectl-apiserver_upgrade');
  }
  assert.ok(out.startsWith('# '), 'the leading comment is kept');
  assert.throws(() => releaseKrewManifest(text, { version: '0.2.0', url, sha256: 'nothex' }), /not a sha256/);
  assert.throws(() => releaseKrewManifest('kind: Other\n', { version: '0.2.0', url, sha256: sha }), /not a krew Plugin/);
});

test('the Argo CD assets: the argocd-cm entries and every Argo CD manifest of argocd/, each under its own name', () => {
  assert.deepEqual(ARGOCD_ASSETS.map((a) => a.source).sort(), [...ARGOCD_CUSTOMIZATIONS, ...ARGOCD_MANIFESTS].sort());
  for (const a of ARGOCD_ASSETS) assert.ok(existsSync(join(root, a.source)), a.source);
  const names = ARGOCD_ASSETS.map((a) => a.name);
  assert.equal(new Set(names).size, names.length);
  for (const n of names) assert.match(n, /^argocd-[a-z.-]+\.yaml$/, 'the workflow uploads ./argocd-*.yaml');
});

test('the released operator Application names the pushed chart at the release\'s version; comments and values kept', () => {
  const text = readFileSync(join(root, 'argocd', 'operator-application.yaml'), 'utf8');
  const names = releaseNames({ version: '0.3.0-rc.1', registry: parseRegistry('registry.example.com/platform'), downloadBase: DEFAULT_DOWNLOAD_BASE });
  const out = releaseArgocdApplication(text, names);
  const app = parse(out) as { spec: { source: { repoURL: string; chart: string; targetRevision: string; helm: unknown } } };
  const before = parse(text) as typeof app;
  assert.deepEqual(app.spec.source, { ...before.spec.source, repoURL: 'registry.example.com/platform/charts', chart: 'apiserver-upgrade-operator', targetRevision: '0.3.0-rc.1' });
  assert.ok(out.startsWith('# '), 'the leading comment is kept');
  assert.match(out, /# Visible to kube-prometheus-stack/);
  assert.throws(() => releaseArgocdApplication('kind: ApplicationSet\n', names), /not an Argo CD Application with a Helm chart source/);
  assert.throws(() => releaseArgocdApplication(text, { ...names, version: 'v1' }), /--version must be/);
});
