// One version: the operator's is `version` in package.json, and every other place that names it agrees — the lock
// file, the chart (version, appVersion, the default agent image), the krew manifest, the e2e release, every page,
// the chart's README and the examples. A test fails naming each file and line that says another version.
// How a page names the operator's version (the forms below): the image's tag (`…/apiserver-upgrade-operator:X`),
// the chart's `--version X` on a line that installs, pulls or releases it, the release's files
// (`apiserver-upgrade-operator-X.tgz`, `kubectl-apiserver_upgrade-vX.tar.gz`, `dist/release-X`), the release's URLs
// (`…/releases/download/vX`, `…/blob/vX`, `refs/tags/vX`), `image.tag=X`, and prose: "release X", "version X",
// "operator X" (a Kubernetes version, v1.NN.N, is not the operator's). CHANGELOG.md is left out: it names every
// version by design.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import { RELEASE_VERSION } from '../../e2e/support/release.ts';
import { parseReleaseArgs } from '../../scripts/release.ts';

const root = join(import.meta.dirname, '..', '..');
const CHART = join('charts', 'apiserver-upgrade-operator');
const read = (f: string): string => readFileSync(join(root, f), 'utf8');
const VERSION = (JSON.parse(read('package.json')) as { version: string }).version;

const V = String.raw`(\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?)`;
/** Forms that name the operator's version wherever they stand. */
const FORMS: RegExp[] = [
  new RegExp(String.raw`apiserver-upgrade-operator:v?${V}`, 'g'),
  new RegExp(String.raw`apiserver-upgrade-operator-v?${V}\.(?:tgz|spdx)`, 'g'),
  new RegExp(String.raw`kubectl-apiserver_upgrade-v${V}`, 'g'),
  new RegExp(String.raw`\brelease-${V}`, 'g'),
  new RegExp(String.raw`(?:releases/download|/blob|refs/tags)/v${V}`, 'g'),
  new RegExp(String.raw`image\.tag=v?${V}`, 'g'),
  new RegExp(String.raw`(?<![\w-])(?:[Rr]elease|[Vv]ersion|[Oo]perator)[\s,:\`'"(]{1,4}v?${V}`, 'g'),
];
/** `--version X` counts on a logical line (continuations joined) that is about this chart or its release. */
const FLAG = new RegExp(String.raw`--version[ =]v?${V}`, 'g');
const ABOUT_US = /apiserver-upgrade-operator|npm run release/;
/** A Kubernetes release (1.NN.N), which prose names next to "version" all the time. */
const KUBERNETES = /^1\.\d{2,}\.\d+/;

export interface Mention { line: number; version: string; text: string }

/** Every mention of the operator's version in a text, by line. */
export function mentions(text: string): Mention[] {
  const out: Mention[] = [];
  const lines = text.split('\n');
  const push = (line: number, version: string): void => {
    if (!KUBERNETES.test(version) && !out.some((m) => m.line === line && m.version === version)) out.push({ line, version, text: lines[line - 1]!.trim() });
  };
  lines.forEach((l, i) => {
    for (const re of FORMS) for (const m of l.matchAll(re)) push(i + 1, m[1]!);
  });
  // Logical lines: a shell line ending in a backslash continues on the next.
  for (let i = 0; i < lines.length; i++) {
    let j = i;
    let logical = lines[i]!;
    while (/\\\s*$/.test(lines[j]!) && j + 1 < lines.length) logical = `${logical.replace(/\\\s*$/, ' ')}${lines[++j]}`;
    if (ABOUT_US.test(logical)) {
      for (let k = i; k <= j; k++) for (const m of lines[k]!.matchAll(FLAG)) push(k + 1, m[1]!);
    }
    i = j;
  }
  return out.sort((a, b) => a.line - b.line || a.version.localeCompare(b.version));
}

/** The lines of `file` that name a version other than `version`, as `file:line: says X, package.json says Y: text`. */
export function disagreements(file: string, text: string, version: string): string[] {
  return mentions(text).filter((m) => m.version !== version).map((m) => `${file}:${m.line}: says ${m.version}, package.json says ${version}: ${m.text}`);
}

/** The pages and files the scan reads: docs/, the README, CONTRIBUTING.md, SECURITY.md, the chart's README and the examples. */
function scanned(): string[] {
  const md = (dir: string): string[] => (readdirSync(join(root, dir), { recursive: true, withFileTypes: true }) as { isFile(): boolean; name: string; parentPath: string }[])
    .filter((e) => e.isFile() && e.name.endsWith('.md')).map((e) => relative(root, join(e.parentPath, e.name)));
  const examples = readdirSync(join(root, 'examples')).filter((f) => f.endsWith('.yaml')).map((f) => join('examples', f));
  return ['README.md', 'CONTRIBUTING.md', 'SECURITY.md', join(CHART, 'README.md'), ...md('docs'), ...examples].filter((f) => existsSync(join(root, f)));
}

test('mentions: the forms a page names the operator\'s version in, and not a Kubernetes version or another tool\'s', () => {
  const page = [
    'its first release, 0.2.0, is not published',                                              // 1
    'helm install x \\', '  oci://ghcr.io/o/charts/apiserver-upgrade-operator --version 0.1.0 \\', '  --namespace n', // 2-4
    'helm install kps prometheus-community/kube-prometheus-stack --version 0.9.1',               // 5: another chart
    '      # agentImage: registry.example.com/ops/apiserver-upgrade-operator:0.1.0',              // 6
    'kubectl krew install --manifest=apiserver-upgrade.yaml --archive=kubectl-apiserver_upgrade-v0.3.0.tar.gz', // 7
    'the target version v1.36.3, from version 1.35.4',                                           // 8: Kubernetes
    'etcd v3.6.16, krew v0.4.3, Alertmanager 0.25, `text/plain;version=0.0.4`',                 // 9: other tools
    'docker build -t registry.example.com/apiserver-upgrade-operator:0.1.0-rc.1 .',             // 10
    'https://github.com/o/r/blob/v0.1.0/docs/operations.md and dist/release-0.2.0/',              // 11
    'npm run release -- --version 0.4.0 --registry r/x',                                         // 12
    'This operator is itself alpha (API `v1alpha1`, version 0.1.0).',                            // 13
  ].join('\n');
  assert.deepEqual(mentions(page).map((m) => [m.line, m.version]), [
    [1, '0.2.0'], [3, '0.1.0'], [6, '0.1.0'], [7, '0.3.0'], [10, '0.1.0-rc.1'], [11, '0.1.0'], [11, '0.2.0'], [12, '0.4.0'], [13, '0.1.0'],
  ]);
  assert.equal(disagreements('p.md', page, '0.2.0').length, 7);
  assert.match(disagreements('p.md', page, '0.2.0')[0]!, /^p\.md:3: says 0\.1\.0, package\.json says 0\.2\.0: /);
});

test('package.json\'s version is a release version, and the lock file says the same', () => {
  assert.match(VERSION, /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?$/);
  const lock = JSON.parse(read('package-lock.json')) as { version: string; packages: Record<string, { version?: string }> };
  assert.deepEqual([lock.version, lock.packages['']?.version], [VERSION, VERSION], 'package-lock.json: run npm install after changing package.json\'s version');
});

test('the chart, its default agent image and the krew manifest are package.json\'s version', () => {
  const chart = parse(read(join(CHART, 'Chart.yaml'))) as { version: string; appVersion: string };
  assert.deepEqual([chart.version, chart.appVersion], [VERSION, VERSION], `${CHART}/Chart.yaml version and appVersion`);
  const values = parse(read(join(CHART, 'values.yaml'))) as { image: { tag: string }; policy: { agentImages: { image?: string }[] } };
  assert.equal(values.image.tag, '', 'values.yaml image.tag stays empty: the image is the chart\'s appVersion');
  const own = values.policy.agentImages.filter((a) => a.image?.startsWith('ghcr.io/apiserver-upgrade-operator/'));
  assert.ok(own.length > 0, 'values.yaml policy.agentImages lists the operator\'s own image');
  for (const a of own) assert.equal(a.image, `ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:${VERSION}`, 'values.yaml policy.agentImages');
  const krew = parse(read(join('krew', 'apiserver-upgrade.yaml'))) as { spec: { version: string; platforms: { uri: string }[] } };
  assert.equal(krew.spec.version, `v${VERSION}`, 'krew/apiserver-upgrade.yaml spec.version');
  for (const p of krew.spec.platforms) assert.ok(p.uri.endsWith(`/v${VERSION}/kubectl-apiserver_upgrade-v${VERSION}.tar.gz`), `krew/apiserver-upgrade.yaml uri ${p.uri}`);
});

test('the e2e release and `npm run release` take package.json\'s version', () => {
  assert.equal(RELEASE_VERSION, VERSION);
  assert.equal(parseReleaseArgs(['--registry', 'ghcr.io/x']).version, VERSION, 'no --version: package.json\'s');
  assert.throws(() => parseReleaseArgs(['--version', '99.0.0', '--registry', 'ghcr.io/x']), /--version 99\.0\.0 is not package\.json's/);
});

test('every page, the chart\'s README and the examples name package.json\'s version and no other', () => {
  const files = scanned();
  assert.ok(files.includes('README.md') && files.includes(join(CHART, 'README.md')) && files.length > 20, 'the scan found the pages');
  const found = files.flatMap((f) => mentions(read(f)).map((m) => ({ f, ...m })));
  assert.ok(found.length >= 10, `the scan finds the version where the pages name it (${found.length})`);
  assert.deepEqual(files.flatMap((f) => disagreements(f, read(f), VERSION)), []);
});
