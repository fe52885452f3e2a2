import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ARCHIVE_DIR, archiveName, fillManifest } from '../../src/cli/krew-archive.ts';

const root = join(import.meta.dirname, '..', '..');
const manifestPath = join(root, 'krew', 'apiserver-upgrade.yaml');

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: {
    version: string;
    homepage: string;
    shortDescription: string;
    description: string;
    caveats?: string;
    platforms: { selector: { matchExpressions?: { key: string; operator: string; values: string[] }[]; matchLabels?: Record<string, string> }; uri: string; sha256: string; files: { from: string; to: string }[]; bin: string }[];
  };
}

test('the krew manifest has what krew validates: names, version, platforms with uri, sha256, files and bin', () => {
  const m = parse(readFileSync(manifestPath, 'utf8')) as Manifest;
  assert.equal(m.apiVersion, 'krew.googlecontainertools.github.com/v1alpha2');
  assert.equal(m.kind, 'Plugin');
  // krew: the file is named after the plugin, and the plugin's name is the kubectl subcommand.
  assert.equal(`${m.metadata.name}.yaml`, 'apiserver-upgrade.yaml');
  assert.match(m.metadata.name, /^[a-z0-9][a-z0-9-]*$/);
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };
  assert.equal(m.spec.version, `v${pkg.version}`);
  assert.match(m.spec.homepage, /^https:\/\//);
  assert.ok(m.spec.shortDescription.length > 0 && m.spec.shortDescription.length <= 50, 'krew-index keeps short descriptions short');
  assert.match(m.spec.caveats ?? '', /Node >= 22\.19/);
  assert.ok(m.spec.platforms.length > 0);
  for (const p of m.spec.platforms) {
    assert.ok(p.selector.matchExpressions || p.selector.matchLabels, 'a selector');
    assert.match(p.uri, new RegExp(`^https://.*/${archiveName(pkg.version).replace(/\./g, '\\.')}$`));
    assert.match(p.sha256, /^[0-9a-f]{64}$/);
    assert.deepEqual(p.files, [{ from: `${ARCHIVE_DIR}/*`, to: '.' }]);
    // After the files step the install folder is the archive's folder: bin is the npm bin's path.
    assert.equal(p.bin, Object.values(pkg.bin)[0]);
    assert.ok(existsSync(join(root, p.bin)) && (statSync(join(root, p.bin)).mode & 0o111) !== 0, `${p.bin} is executable`);
  }
  const oses = m.spec.platforms.flatMap((p) => p.selector.matchExpressions?.find((e) => e.key === 'os')?.values ?? []);
  assert.deepEqual(oses.sort(), ['darwin', 'linux'], 'a POSIX shell launcher: no Windows');
});

test('fillManifest sets every platform\'s sha256 and the version (spec and uri), keeping the comments', () => {
  const text = readFileSync(manifestPath, 'utf8');
  const sha = 'ab'.repeat(32);
  const filled = fillManifest(text, '0.2.0', sha);
  const m = parse(filled) as Manifest;
  assert.equal(m.spec.version, 'v0.2.0');
  for (const p of m.spec.platforms) {
    assert.equal(p.sha256, sha);
    assert.match(p.uri, /\/releases\/download\/v0\.2\.0\/kubectl-apiserver_upgrade-v0\.2\.0\.tar\.gz$/);
  }
  assert.ok(filled.startsWith('# The krew manifest'), 'the header comment stays');
});
