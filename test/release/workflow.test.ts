// The release workflow (.github/workflows/release.yml) checked by actionlint (built from the Go module proxy by
// scripts/setup.ts test; it runs shellcheck on every `run:` step), and held to what the release needs: the same
// command as by hand, OIDC for keyless signing, signatures of both pushed artifacts by digest; and pinned: actions by
// commit, Go and Node by exact version, no install script next to the job's tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { builtBinary, GO_VERSION, RELEASE_TOOLS } from '../../e2e/cluster/binaries.ts';
import { requireCommands } from '../../e2e/cluster/requirements.ts';

const root = join(import.meta.dirname, '..', '..');
const workflow = join(root, '.github', 'workflows', 'release.yml');

function actionlint(): string {
  const v = RELEASE_TOOLS.actionlint.version;
  const bin = builtBinary('actionlint', v);
  if (bin === undefined) throw new Error(`actionlint ${v} is not built: run \`node scripts/setup.ts test\` (or \`bash e2e/cluster/build-binaries.sh actionlint ${v}\`)`);
  requireCommands(['shellcheck'], 'actionlint\'s check of the workflow\'s shell steps');
  return bin;
}

function lint(file: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    // -shellcheck names the binary, so a missing one cannot silently skip the shell checks.
    execFile(actionlint(), ['-no-color', '-shellcheck', 'shellcheck', file], { encoding: 'utf8', cwd: root }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, out: stdout + stderr }));
  });
}

test('actionlint (with shellcheck) finds nothing in the release workflow', async () => {
  const r = await lint(workflow);
  assert.equal(r.code, 0, r.out);
});

test('actionlint fails on a broken copy: the check can fail', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'auo-actionlint-'));
  try {
    const broken = readFileSync(workflow, 'utf8')
      .replace('--version "$VERSION"', '--version $VERSION $(steps.names.outputs.version)')
      .replace('${{ steps.names.outputs.registry }}', '${{ steps.nope.outputs.registry }}');
    const file = join(dir, '.github', 'workflows', 'release.yml');
    mkdirSync(join(dir, '.github', 'workflows'), { recursive: true });
    writeFileSync(file, broken);
    const r = await lint(file);
    assert.notEqual(r.code, 0);
    assert.match(r.out, /steps\.nope/, 'an undefined step is found');
    assert.match(r.out, /shellcheck reported issue/, 'shellcheck ran on the run: steps');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

interface Step { name?: string; uses?: string; run?: string; env?: Record<string, string>; with?: Record<string, unknown> }

test('the workflow: tags v*, the release command with --version and --registry, OIDC, both artifacts signed by digest, files attached', () => {
  const w = parse(readFileSync(workflow, 'utf8')) as { on: { push: { tags: string[] } }; jobs: Record<string, { permissions: Record<string, string>; steps: Step[] }> };
  assert.deepEqual(w.on.push.tags, ['v*']);
  const job = w.jobs.release!;
  assert.equal(job.permissions['id-token'], 'write', 'keyless signing needs the OIDC token');
  assert.equal(job.permissions.packages, 'write');
  const runs = job.steps.map((s) => s.run ?? '').join('\n');
  assert.match(runs, /npm run release --\s+--version "\$VERSION"\s+--registry "\$REGISTRY"/);
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  assert.equal(pkg.scripts.release, 'node scripts/release.ts');
  assert.match(runs, /cosign sign --yes "\$image"/);
  assert.match(runs, /cosign sign --yes "\$chart"/);
  assert.match(runs, /cosign attest --yes --type spdxjson/);
  assert.match(runs, /gh release create[\s\S]*apiserver-upgrade\.yaml \.\/argocd-\*\.yaml SHA256SUMS/, 'the Argo CD files (ARGOCD_ASSETS: argocd-*.yaml) are attached');
  // No expression is pasted into a shell: every ${{ }} reaches a run: step through env.
  for (const s of job.steps) assert.ok(!/\$\{\{/.test(s.run ?? ''), `${s.name ?? s.uses}: an expression inside run:`);
});

/**
 * Every `uses:` of a workflow's text that is not pinned: `owner/repo[/path]@<40 hex commit> # vX.Y.Z` (the release
 * tag that commit is, as a comment), one per line. A tag or branch moves; a commit does not.
 */
function unpinnedUses(text: string): string[] {
  return text.split('\n').filter((l) => /^\s*(?:-\s+)?uses:/.test(l)).filter((l) => !/^\s*(?:-\s+)?uses: [A-Za-z0-9_.-]+\/[A-Za-z0-9_./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$/.test(l)).map((l) => l.trim());
}

test('every action is pinned by its full commit SHA, its release tag in a comment; a tag or a short SHA is refused', () => {
  const text = readFileSync(workflow, 'utf8');
  const w = parse(text) as { jobs: Record<string, { steps: Step[] }> };
  const uses = Object.values(w.jobs).flatMap((j) => j.steps.filter((s) => s.uses !== undefined).map((s) => s.uses!));
  assert.ok(uses.length >= 4, uses.join(', '));
  assert.deepEqual(unpinnedUses(text), []);
  // The YAML's values are the pinned lines' (no `uses:` hidden from the line check, e.g. in flow style).
  assert.equal(text.split('\n').filter((l) => /^\s*(?:-\s+)?uses:/.test(l)).length, uses.length);
  for (const u of uses) assert.match(u, /@[0-9a-f]{40}$/, u);
  // (can fail) a moving tag, a short SHA, a SHA without its tag are each named.
  for (const bad of ['actions/checkout@v4', 'actions/checkout@11d5960', 'actions/checkout@11d5960a326750d5838078e36cf38b85af677262']) {
    assert.deepEqual(unpinnedUses(text.replace(/actions\/checkout@[0-9a-f]{40} # v[\d.]+/, bad)), [`- uses: ${bad}`], bad);
  }
});

test('Go and Node are exact versions, the project\'s own: setup-go\'s is GO_VERSION, setup-node\'s package-lock.json\'s node', () => {
  const w = parse(readFileSync(workflow, 'utf8')) as { jobs: Record<string, { steps: Step[] }> };
  const steps = w.jobs.release!.steps;
  const go = steps.find((s) => s.uses?.startsWith('actions/setup-go@'));
  assert.equal(go?.with?.['go-version'], GO_VERSION);
  assert.match(GO_VERSION, /^\d+\.\d+\.\d+$/);
  const node = steps.find((s) => s.uses?.startsWith('actions/setup-node@'));
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  assert.equal(node?.with?.['node-version'], lock.packages['node_modules/node']?.version);
  assert.equal(node?.with?.cache, undefined, 'no cache restored into the job that signs');
});

test('no install script runs next to the job\'s tokens: checkout keeps no credentials, every npm ci has --ignore-scripts, the image\'s Debian packages come from the Dockerfile\'s base by digest', () => {
  const w = parse(readFileSync(workflow, 'utf8')) as { jobs: Record<string, { steps: Step[] }> };
  const steps = w.jobs.release!.steps;
  const checkout = steps.find((s) => s.uses?.startsWith('actions/checkout@'));
  assert.equal(checkout?.with?.['persist-credentials'], false);
  const runs = steps.map((s) => s.run ?? '');
  const ci = runs.flatMap((r) => r.match(/npm (?:ci|install|i)\b[^\n]*/g) ?? []);
  assert.ok(ci.length >= 1);
  for (const c of ci) assert.match(c, /--ignore-scripts/, c);
  assert.ok(!runs.some((r) => /npm rebuild|npm run (?!release)/.test(r)), 'no script of a package runs');
  // The .deb files are handed to the release through AUO_DEB_DIR, from a container of the Dockerfile's base.
  const debs = steps.find((s) => /docker run/.test(s.run ?? ''));
  assert.ok(debs, 'a step downloads the Debian packages');
  assert.match(debs.run!, /sed -n .*FROM .*@sha256:.* AS build.* Dockerfile/);
  assert.match(debs.run!, /node e2e\/cluster\/runtime-packages\.ts apt-args/);
  const release = steps.find((s) => /npm run release/.test(s.run ?? ''));
  assert.equal(release?.env?.AUO_DEB_DIR, debs.env?.DEBS);
  const from = /^FROM (node:\S+@sha256:[0-9a-f]{64}) AS build$/m.exec(readFileSync(join(root, 'Dockerfile'), 'utf8'));
  assert.ok(from, 'the Dockerfile\'s build stage names its base by digest');
});
