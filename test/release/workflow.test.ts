// The release workflow (.github/workflows/release.yml) checked by actionlint (built from the Go module proxy by
// scripts/setup.ts test; it runs shellcheck on every `run:` step), and held to what the release needs: the same
// command as by hand, OIDC for keyless signing, signatures of both pushed artifacts by digest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { builtBinary, RELEASE_TOOLS } from '../../e2e/cluster/binaries.ts';
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
  assert.match(runs, /gh release create[\s\S]*apiserver-upgrade\.yaml SHA256SUMS/);
  // No expression is pasted into a shell: every ${{ }} reaches a run: step through env.
  for (const s of job.steps) assert.ok(!/\$\{\{/.test(s.run ?? ''), `${s.name ?? s.uses}: an expression inside run:`);
  for (const s of job.steps.filter((x) => x.uses !== undefined)) assert.match(s.uses!, /^[a-z-]+\/[a-z-]+@v\d+$/, 'actions pinned to a major version');
});
