// The previous release of the operator, for the tests of upgrading the operator itself: this repository at a pinned
// commit, released by that commit's own `npm run release` into the harness registry (which stands in for ghcr.io, as
// in e2e/support/release.ts). The commit is read with `git archive` from this clone (CI's clone of main has the full
// history; a shallow clone fails here, saying so). Its node_modules are this checkout's when the two package-lock.json
// files are identical, else `npm ci` of its own.
// What it published is cached by commit outside the repository (<image cache>/previous-release/<commit>/: the chart
// as packaged, the image as the registry served it, release.json), so a rerun pushes those two again instead of
// building. Nothing is taken from the cache unless release.json names this commit's version.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { binary, HELM_VERSION } from '../cluster/binaries.ts';
import { imageCache, REPO_ROOT } from '../cluster/images.ts';
import { skopeoPush, type Registry } from '../cluster/registry.ts';
import { PUBLISHED } from './release.ts';

/**
 * The previous release: commit 749039b of this repository (main before the operator's own upgrade and uninstall were
 * tested), package.json's version 0.2.0. A later release moves this to the commit it was made from.
 */
export const PREVIOUS_RELEASE = { commit: '749039b9bf3d61828c229f1a42231478f30a1912', version: '0.2.0' } as const;

export interface PublishedRelease {
  version: string;
  /** `oci://<registry>/ghcr.io/apiserver-upgrade-operator/charts/apiserver-upgrade-operator` */
  chartRef: string;
  /** The packaged chart (its crds/ are what this version's CRD is). */
  chartFile: string;
  /** The image as the chart's defaults name it (ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:<version>). */
  image: string;
}

function exec(cmd: string, args: string[], o: { cwd?: string; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((res, rej) => {
    execFile(cmd, args, { cwd: o.cwd, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, timeout: o.timeoutMs ?? 20 * 60_000 }, (err, stdout, stderr) =>
      err ? rej(new Error(`${cmd} ${args.join(' ')} failed: ${(stderr || stdout).trim().slice(-4000) || err.message}`)) : res(stdout));
  });
}

async function requireCommit(): Promise<void> {
  try {
    await exec('git', ['-C', REPO_ROOT, 'cat-file', '-e', `${PREVIOUS_RELEASE.commit}^{commit}`]);
  } catch {
    throw new Error(`the previous release's commit ${PREVIOUS_RELEASE.commit} is not in the clone at ${REPO_ROOT}: it is main's history, which a shallow clone lacks (git fetch --unshallow, or clone without --depth)`);
  }
}

function cacheDir(): string {
  return join(imageCache(), 'previous-release', PREVIOUS_RELEASE.commit);
}

/** The previous release in `registry`: built by its own `npm run release` the first time, pushed from the cache after. */
export async function publishPreviousRelease(registry: Registry, log: (l: string) => void = (l) => void process.stderr.write(`[previous-release] ${l}\n`)): Promise<PublishedRelease> {
  const v = PREVIOUS_RELEASE.version;
  const dir = cacheDir();
  const chartFile = join(dir, `apiserver-upgrade-operator-${v}.tgz`);
  const imageTar = join(dir, 'image.tar');
  const image = `${PUBLISHED}/apiserver-upgrade-operator:${v}`;
  const chartRef = `oci://${registry.address}/${PUBLISHED}/charts/apiserver-upgrade-operator`;
  const cached = existsSync(join(dir, 'release.json')) && (JSON.parse(readFileSync(join(dir, 'release.json'), 'utf8')) as { version?: string }).version === v;
  const helm = await binary('helm', HELM_VERSION);
  if (cached) {
    log(`from the cache ${dir}: pushing ${image} and the chart`);
    await skopeoPush(imageTar, `${registry.address}/${image}`, { plainHttp: true, compress: true });
    await exec(helm, ['push', chartFile, `oci://${registry.address}/${PUBLISHED}/charts`, '--plain-http']);
    return { version: v, chartRef, chartFile, image };
  }
  await requireCommit();
  const work = mkdtempSync(join(tmpdir(), 'auo-previous-release-'));
  const src = join(work, 'src');
  const stage = `${dir}.partial-${process.pid}`;
  try {
    mkdirSync(src);
    const t0 = Date.now();
    await exec('bash', ['-c', 'set -o pipefail; git -C "$1" archive --format=tar "$2" | tar -x -C "$3"', 'archive', REPO_ROOT, PREVIOUS_RELEASE.commit, src]);
    if (readFileSync(join(src, 'package-lock.json'), 'utf8') === readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) {
      symlinkSync(join(REPO_ROOT, 'node_modules'), join(src, 'node_modules'));
      log(`${PREVIOUS_RELEASE.commit.slice(0, 12)}: the same package-lock.json, this checkout's node_modules`);
    } else {
      log(`${PREVIOUS_RELEASE.commit.slice(0, 12)}: another package-lock.json, npm ci`);
      await exec('npm', ['ci', '--no-audit', '--no-fund'], { cwd: src });
    }
    rmSync(stage, { recursive: true, force: true });
    mkdirSync(stage, { recursive: true });
    const out = join(work, 'out');
    // Its own release command, as its docs/release.md says to run it, into the harness registry.
    await exec(process.execPath, [join(src, 'scripts', 'release.ts'), '--registry', `${registry.address}/${PUBLISHED}`, '--mirror-of', PUBLISHED, '--plain-http', '--out', out], { cwd: src });
    const published = JSON.parse(readFileSync(join(out, 'release.json'), 'utf8')) as { version: string };
    if (published.version !== v) throw new Error(`the release of ${PREVIOUS_RELEASE.commit} published ${published.version}, not ${v}`);
    renameSync(join(out, `apiserver-upgrade-operator-${v}.tgz`), join(stage, `apiserver-upgrade-operator-${v}.tgz`));
    await exec('skopeo', ['copy', '--src-tls-verify=false', `docker://${registry.address}/${image}`, `oci-archive:${join(stage, 'image.tar')}`]);
    writeFileSync(join(stage, 'release.json'), readFileSync(join(out, 'release.json')));
    rmSync(dir, { recursive: true, force: true });
    renameSync(stage, dir);
    log(`released ${v} from ${PREVIOUS_RELEASE.commit.slice(0, 12)} in ${((Date.now() - t0) / 1000).toFixed(0)} s, cached in ${dir}`);
    return { version: v, chartRef, chartFile, image };
  } finally {
    rmSync(work, { recursive: true, force: true });
    rmSync(stage, { recursive: true, force: true });
  }
}
