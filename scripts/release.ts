// A release, end to end, with no Docker engine:
//   npm run release -- --registry ghcr.io/apiserver-upgrade-operator [--version X.Y.Z] [--out DIR]
//        [--plain-http] [--mirror-of HOST/PATH] [--download-base https://.../releases/download] [--docs-base https://.../blob]
// The version is package.json's (--version, if given, must be the same: the workflow passes its tag's).
// 1. checks its inputs against strict patterns, and finds helm, skopeo and syft (helm and syft are built from the
//    Go module proxy into the binary cache when missing, as scripts/setup.ts builds the rest);
// 2. builds the operator image as an OCI tar (e2e/cluster/operator-image.ts: what the Dockerfile builds; the node
//    agent runs from it), named as the chart will name it;
// 3. writes its SBOM (syft, SPDX JSON, every file of the image with its sha256, each held by a package: the release
//    stops when one is not, scripts/release/sbom.ts), the krew archive and a krew manifest with the archive's real sha256 and
//    download URL (<download-base>/v<version>/<archive>), and the chart packaged with version and appVersion set
//    to the release's and its image defaults set to what this release publishes (checked on `helm template`
//    output: no default names an image the release did not produce), and the Argo CD files (argocd-cm entries of the
//    health check and actions; the operator's Application naming the pushed chart and version; the waves ApplicationSet);
// 4. only then pushes: the image with skopeo (gzip layers) as <registry>/apiserver-upgrade-operator:<version>,
//    the chart with `helm push` to oci://<registry>/charts;
// 5. prints what it published, with digests, and writes release.json and SHA256SUMS into the output folder.
// --mirror-of: the pushed registry stands in for another one (the harness registry for ghcr.io, through the nodes'
// containerd mirrors): the chart's defaults name that one. Credentials are skopeo's and helm's own (`skopeo login`,
// `helm registry login`). docs/release.md says how to release and verify.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { binary, HELM_VERSION, RELEASE_TOOLS } from '../e2e/cluster/binaries.ts';
import { IMAGE_OWN_FILES, operatorImageBuild } from '../e2e/cluster/operator-image.ts';
import { REPO_ROOT } from '../e2e/cluster/images.ts';
import { skopeoPush } from '../e2e/cluster/registry.ts';
import { requireCommands } from '../e2e/cluster/requirements.ts';
import { buildArchive } from '../src/cli/krew-archive.ts';
import { renderReadme, type Schema } from './chart-readme.ts';
import { imageFiles, sbomCoverage, type SpdxDocument } from './release/sbom.ts';
import { ARGOCD_ASSETS, CHART_NAME, checkDownloadBase, DEFAULT_DOCS_BASE, DEFAULT_DOWNLOAD_BASE, defaultImages, parseRegistry, releaseChartYaml, releaseArgocdApplication, releaseKrewManifest, releaseNames, releaseValues, releaseVersion, type ReleaseInput, type ReleaseNames } from './release/plan.ts';

export interface ReleaseOptions extends ReleaseInput {
  out: string;
  plainHttp: boolean;
  log?: (line: string) => void;
}

export interface ReleaseResult {
  names: ReleaseNames;
  image: { reference: string; digest: string; tar: string };
  chart: { reference: string; digest: string; file: string };
  /** Every file written into the output folder, with its sha256. */
  files: { name: string; sha256: string }[];
}

/** The Kubernetes version the chart is rendered for when checked (its kubeVersion wants >= 1.33; helm's default is 1.20). */
export const TEMPLATE_KUBE_VERSION = 'v1.35.0';

const sha256File = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

function exec(cmd: string, args: string[], o: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<{ stdout: string; stderr: string }> {
  return new Promise((res, rej) => {
    execFile(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: o.env ?? process.env, cwd: o.cwd }, (err, stdout, stderr) =>
      err ? rej(new Error(`${cmd} ${args.join(' ')} failed: ${(stderr || stdout).trim() || err.message}`)) : res({ stdout, stderr }));
  });
}

/** The chart, staged with the release's Chart.yaml, values.yaml and README values table, packaged into `out`. */
async function packageChart(helm: string, names: ReleaseNames, out: string): Promise<string> {
  const src = join(REPO_ROOT, 'charts', CHART_NAME);
  const stage = mkdtempSync(join(tmpdir(), 'auo-release-chart-'));
  try {
    const dir = join(stage, CHART_NAME);
    cpSync(src, dir, { recursive: true });
    writeFileSync(join(dir, 'Chart.yaml'), releaseChartYaml(readFileSync(join(dir, 'Chart.yaml'), 'utf8'), names.version));
    const values = releaseValues(readFileSync(join(dir, 'values.yaml'), 'utf8'), names);
    writeFileSync(join(dir, 'values.yaml'), values);
    const schema = JSON.parse(readFileSync(join(dir, 'values.schema.json'), 'utf8')) as Schema;
    writeFileSync(join(dir, 'README.md'), renderReadme(readFileSync(join(dir, 'README.md'), 'utf8'), values, schema));
    await exec(helm, ['package', dir, '--version', names.version, '--app-version', names.version, '--destination', out]);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  const file = join(out, names.chartFile);
  if (!existsSync(file)) throw new Error(`helm package wrote no ${names.chartFile} into ${out}`);
  // Fail closed: every image a default install runs, or lets the operator run, is the one this release publishes.
  const { stdout } = await exec(helm, ['template', 'release-check', file, '--namespace', 'apiserver-upgrade-operator', '--kube-version', TEMPLATE_KUBE_VERSION]);
  const images = defaultImages(stdout);
  if (images.length === 0 || images.some((i) => i !== names.image)) {
    throw new Error(`the packaged chart's defaults name ${images.join(', ') || 'no image'}; the release publishes only ${names.image}`);
  }
  return file;
}

/** `helm push` of the packaged chart; returns the pushed reference and digest from helm's report. */
async function pushChart(helm: string, file: string, names: ReleaseNames, plainHttp: boolean): Promise<{ reference: string; digest: string }> {
  const { stdout, stderr } = await exec(helm, ['push', file, names.chartPushTarget, ...(plainHttp ? ['--plain-http'] : [])]);
  const report = `${stdout}\n${stderr}`;
  const digest = /^Digest: (sha256:[0-9a-f]{64})$/m.exec(report)?.[1];
  const pushed = /^Pushed: (\S+)$/m.exec(report)?.[1];
  const want = `${names.chartInstallRef.slice('oci://'.length)}:${names.version}`;
  if (digest === undefined || pushed !== want) throw new Error(`helm push reported ${JSON.stringify(report.trim().slice(0, 400))}, not Pushed: ${want} with a digest`);
  return { reference: pushed, digest };
}

/**
 * The image's SBOM: syft, SPDX JSON, every file of the image listed with its sha256 (not only those a package
 * owns), named after the release. Fails closed (scripts/release/sbom.ts) when a regular file of the image is not in it
 * with its sha256 or no package in it holds the file (the builder's own /etc files excepted, listed all the same).
 */
async function sbom(syft: string, tar: string, file: string, names: ReleaseNames): Promise<void> {
  // No update check (no network but the registry's); the image as an OCI archive.
  await exec(syft, ['scan', `oci-archive:${tar}`, '-o', `spdx-json=${file}`, '-q', '--source-name', names.imageRepository, '--source-version', names.version], {
    env: { ...process.env, SYFT_CHECK_FOR_APP_UPDATE: 'false', SYFT_FILE_METADATA_SELECTION: 'all', SYFT_FILE_METADATA_DIGESTS: 'sha256' },
  });
  const doc = JSON.parse(readFileSync(file, 'utf8')) as SpdxDocument;
  if (typeof doc.spdxVersion !== 'string' || !Array.isArray(doc.packages) || doc.packages.length === 0) throw new Error(`syft wrote no SPDX document with packages into ${file}`);
  const problems = sbomCoverage(await imageFiles(tar), doc, IMAGE_OWN_FILES);
  if (problems.length > 0) throw new Error(`the SBOM ${file} does not cover ${problems.length} file(s) of the image:\n${problems.slice(0, 50).join('\n')}`);
}

export async function release(o: ReleaseOptions): Promise<ReleaseResult> {
  const log = o.log ?? ((l: string) => void process.stderr.write(`[release] ${l}\n`));
  const names = releaseNames(o);
  requireCommands(['skopeo'], 'the release');
  const out = resolve(o.out);
  mkdirSync(out, { recursive: true });
  const t0 = Date.now();
  const step = (s: string): void => log(`${((Date.now() - t0) / 1000).toFixed(1)}s ${s}`);
  const [helm, syft] = await Promise.all([binary('helm', HELM_VERSION), binary('syft', RELEASE_TOOLS.syft.version)]);

  step(`building the operator image ${names.image}`);
  const image = await operatorImageBuild(names.image);
  step(`image built (${(image.bytes / 1e6).toFixed(0)} MB uncompressed${image.built ? '' : ', from the image cache'}); SBOM with syft`);
  await sbom(syft, image.path, join(out, names.sbomFile), names);
  step('krew archive');
  const archive = buildArchive(REPO_ROOT, out, { version: names.version });
  if (!archive.path.endsWith(`/${names.archiveFile}`)) throw new Error(`the krew archive is ${archive.path}, not ${names.archiveFile}`);
  writeFileSync(join(out, names.krewManifestFile), releaseKrewManifest(readFileSync(join(REPO_ROOT, 'krew', 'apiserver-upgrade.yaml'), 'utf8'), { version: names.version, url: names.archiveUrl, sha256: archive.sha256 }));
  step('Argo CD customizations and manifests');
  for (const a of ARGOCD_ASSETS) {
    const text = readFileSync(join(REPO_ROOT, a.source), 'utf8');
    writeFileSync(join(out, a.name), a.source === 'argocd/operator-application.yaml' ? releaseArgocdApplication(text, names) : text);
  }
  step('chart');
  const chartFile = await packageChart(helm, names, out);

  step(`pushing ${names.pushImage}`);
  const pushed = await skopeoPush(image.path, names.pushImage, { plainHttp: o.plainHttp, compress: true });
  step(`pushing the chart to ${names.chartPushTarget}`);
  const chart = await pushChart(helm, chartFile, names, o.plainHttp);

  const files = [names.chartFile, names.archiveFile, names.krewManifestFile, names.sbomFile, ...ARGOCD_ASSETS.map((a) => a.name)].map((name) => ({ name, sha256: sha256File(join(out, name)) }));
  const result: ReleaseResult = { names, image: { ...pushed, tar: image.path }, chart: { ...chart, file: chartFile }, files };
  writeFileSync(join(out, 'SHA256SUMS'), files.map((f) => `${f.sha256}  ${f.name}\n`).join(''));
  writeFileSync(join(out, 'release.json'), `${JSON.stringify({ version: names.version, image: { reference: pushed.reference, digest: pushed.digest, defaultName: names.image }, chart: { reference: chart.reference, digest: chart.digest, install: names.chartInstallRef }, krew: { archiveUrl: names.archiveUrl }, files }, null, 2)}\n`);
  step('done');
  return result;
}

export function parseReleaseArgs(argv: string[]): ReleaseOptions {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      version: { type: 'string' },
      registry: { type: 'string' },
      'mirror-of': { type: 'string' },
      'plain-http': { type: 'boolean', default: false },
      out: { type: 'string' },
      'download-base': { type: 'string', default: DEFAULT_DOWNLOAD_BASE },
      'docs-base': { type: 'string', default: DEFAULT_DOCS_BASE },
    },
  });
  if (values.registry === undefined) throw new Error('--registry is required');
  const version = releaseVersion(values.version, (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version);
  return {
    version,
    registry: parseRegistry(values.registry),
    ...(values['mirror-of'] !== undefined ? { mirrorOf: parseRegistry(values['mirror-of'], '--mirror-of') } : {}),
    downloadBase: checkDownloadBase(values['download-base']),
    docsBase: checkDownloadBase(values['docs-base'], '--docs-base'),
    plainHttp: values['plain-http'],
    out: values.out ?? join(REPO_ROOT, 'dist', `release-${version}`),
  };
}

if (import.meta.main) {
  let opts: ReleaseOptions;
  try {
    opts = parseReleaseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\nusage: npm run release -- --registry HOST[:PORT]/PATH [--version X.Y.Z, package.json's] [--out DIR] [--plain-http] [--mirror-of HOST/PATH] [--download-base URL] [--docs-base URL]\n`);
    process.exit(2);
  }
  try {
    const r = await release(opts);
    const lines = [
      `image  ${r.image.reference}@${r.image.digest}`,
      `chart  oci://${r.chart.reference}@${r.chart.digest}`,
      `       helm install apiserver-upgrade-operator ${r.names.chartInstallRef} --version ${r.names.version} --namespace apiserver-upgrade-operator --create-namespace`,
      ...r.files.map((f) => `file   ${join(opts.out, f.name)}  sha256:${f.sha256}`),
      `krew   ${r.names.archiveUrl}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } catch (err) {
    process.stderr.write(`[release] failed: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
