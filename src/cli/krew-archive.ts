// Builds the plugin's krew release archive, and fills its sha256 (and version) into the krew manifest:
//   node src/cli/krew-archive.ts [--out DIR] [--manifest krew/apiserver-upgrade.yaml] [--offline]
// The archive, kubectl-apiserver_upgrade-v<version>.tar.gz, holds one folder, kubectl-apiserver_upgrade/:
// package.json, package-lock.json, src/ (the TypeScript the launcher runs) and node_modules/ with the runtime
// dependencies only (`npm ci --omit=dev`), so no Node: krew users need Node >= 22.19 on PATH (or AUO_NODE).
// It is reproducible: the same tree and lock give the same bytes (sorted entries, fixed times and owners).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseDocument } from 'yaml';

export const ARCHIVE_DIR = 'kubectl-apiserver_upgrade';

export function archiveName(version: string): string {
  return `kubectl-apiserver_upgrade-v${version}.tar.gz`;
}

/** Builds the archive into `outDir` (the version package.json's, or a release's, written into the archive's package.json); returns its path and sha256. */
export function buildArchive(root: string, outDir: string, o: { offline?: boolean; version?: string } = {}): { path: string; sha256: string; version: string } {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  if (o.version !== undefined) pkg.version = o.version;
  const stage = mkdtempSync(join(tmpdir(), 'auo-krew-'));
  try {
    const dir = join(stage, ARCHIVE_DIR);
    mkdirSync(dir);
    for (const f of ['package.json', 'package-lock.json', '.npmrc']) if (existsSync(join(root, f))) cpSync(join(root, f), join(dir, f));
    if (o.version !== undefined) writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ ...JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as object, version: o.version }, null, 2)}\n`);
    cpSync(join(root, 'src'), join(dir, 'src'), { recursive: true });
    mkdirSync(join(dir, 'docs'));
    cpSync(join(root, 'docs', 'plugin.md'), join(dir, 'docs', 'plugin.md'));
    execFileSync('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error', o.offline ? '--offline' : '--prefer-offline'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
    // npm leaves a lock of what it installed, and links its packages' executables into .bin folders: the
    // archive needs neither, and krew cannot unpack a symbolic link.
    rmSync(join(dir, 'node_modules', '.package-lock.json'), { force: true });
    for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
      if (e.isSymbolicLink()) rmSync(join(e.parentPath, e.name));
    }
    mkdirSync(outDir, { recursive: true });
    const tar = join(resolve(outDir), archiveName(pkg.version).replace(/\.gz$/, ''));
    rmSync(tar, { force: true });
    rmSync(`${tar}.gz`, { force: true });
    execFileSync('tar', ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '--mode=u+rw,go-w', '-C', stage, '-cf', tar, ARCHIVE_DIR]);
    execFileSync('gzip', ['-n', '-9', tar]);
    const path = `${tar}.gz`;
    return { path, sha256: createHash('sha256').update(readFileSync(path)).digest('hex'), version: pkg.version };
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

/** The manifest with every platform's sha256 (and the version in spec.version and the URIs) set; comments kept. */
export function fillManifest(text: string, version: string, sha256: string): string {
  const doc = parseDocument(text);
  const old = String(doc.getIn(['spec', 'version']));
  doc.setIn(['spec', 'version'], `v${version}`);
  const platforms = doc.getIn(['spec', 'platforms']) as { items: unknown[] } | undefined;
  for (let i = 0; i < (platforms?.items.length ?? 0); i++) {
    doc.setIn(['spec', 'platforms', i, 'sha256'], sha256);
    const uri = String(doc.getIn(['spec', 'platforms', i, 'uri']));
    doc.setIn(['spec', 'platforms', i, 'uri'], uri.split(old).join(`v${version}`));
  }
  return doc.toString({ lineWidth: 0 });
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: 'dist' }, manifest: { type: 'string' }, offline: { type: 'boolean', default: false } } });
  const root = join(import.meta.dirname, '..', '..');
  const a = buildArchive(root, values.out, { offline: values.offline });
  process.stdout.write(`${a.path}\nsha256 ${a.sha256}\n`);
  if (values.manifest) {
    writeFileSync(values.manifest, fillManifest(readFileSync(values.manifest, 'utf8'), a.version, a.sha256));
    process.stdout.write(`${values.manifest}: version v${a.version}, sha256 ${a.sha256}\n`);
  }
}
