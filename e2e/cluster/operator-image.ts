// The operator's image without Docker: what the repository's Dockerfile builds (a build stage compiles src/ to
// dist/ with the project's tsc; then node:<version>-slim, the app's package files, production dependencies and dist/
// in /app, uid 1000, `node dist/main.js --in-cluster`), written by
// images.ts's buildImage as an OCI tar into the image cache. Node is the binary of the `node-linux-<arch>` npm
// package at package-lock.json's node version, and what it needs from the system (the loader, glibc, libstdc++,
// libgcc_s) comes from pinned Debian 12 packages with a dpkg database describing them (runtime-packages.ts), so the
// image's SBOM lists every one of them. Nothing is taken from this machine's own system.
// The Dockerfile and operatorImageSpec agree: test/e2e-cluster/dockerfiles.test.ts parses one and compares it with
// the other.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { APP_VERSION, buildImage, imageCache, PATH_ENV, REPO_ROOT, strip, type ImageSpec, type ImageTar, type LayerEntry } from './images.ts';
import { fetchNodeBinary, operatorRuntime, type RuntimeFiles } from './runtime-packages.ts';

/** The repository the operator image is published to: the chart's image.repository. */
export const OPERATOR_REPOSITORY = 'ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator';
/** The operator image's name: the chart's default image (repository and appVersion). */
export const OPERATOR_IMAGE = `${OPERATOR_REPOSITORY}:${APP_VERSION}`;

/** The image config, as the Dockerfile says (USER, WORKDIR, ENV, EXPOSE, ENTRYPOINT, CMD). */
export const OPERATOR_CONFIG = {
  user: '1000:1000',
  workingDir: '/app',
  /** Besides PATH (the base image's). */
  env: ['NODE_ENV=production'],
  exposedPorts: ['8080/tcp', '8081/tcp'],
  entrypoint: ['node', 'dist/main.js'],
  cmd: ['--in-cluster'],
} as const;

/** What the Dockerfile's final stage COPYs from the repository into WORKDIR: sources relative to the repository, destination relative to WORKDIR. */
export const APP_COPIES = [
  { sources: ['package.json', 'package-lock.json'], dest: './' },
] as const;

/** What the build stage COPYs from the repository, in its order: the compiler's inputs. */
export const BUILD_COPIES = [
  { sources: ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'], dest: './' },
  { sources: ['src/'], dest: './src/' },
] as const;

/** The build stage's compile (`node <BUILD_ARGS>` in the folder holding BUILD_COPIES and the full node_modules). */
export const BUILD_ARGS = ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'] as const;
/** Where the compile writes (tsconfig.build.json's outDir) and where the final stage puts it, relative to WORKDIR. */
export const BUILD_OUTPUT = { from: 'dist/', dest: './dist/' } as const;

/** The production dependencies: `npm <NPM_CI_ARGS>` (the Dockerfile's RUN runs the same). */
export const NPM_CI_ARGS = ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'] as const;

/** The image's non-root user: uid and gid 1000, named node as in the node images. */
export const ETC_PASSWD = 'root:x:0:0:root:/root:/usr/sbin/nologin\nnode:x:1000:1000:node:/home/node:/usr/sbin/nologin\n';
export const ETC_GROUP = 'root:x:0:\nnode:x:1000:\n';
/** The files the image builder writes itself, which no package ships (the SBOM lists them with their sha256, no package holds them). */
export const IMAGE_OWN_FILES = ['etc/group', 'etc/nsswitch.conf', 'etc/passwd'] as const;
/** glibc's name service: files (its nss_files and nss_dns are built into libc.so.6 since 2.34), then DNS for hosts. */
const NSSWITCH = 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n';

/** Where node goes in the image: found on PATH by the entrypoint's bare `node`, as in the node images. */
export const NODE_PATH_IN_IMAGE = 'usr/local/bin/node';

export interface NodeRuntime {
  /** The ELF binary of the `node-linux-<arch>` npm package (fetchNodeBinary). */
  binary: string;
  /** Its version, without the v: package-lock.json's `node`. */
  version: string;
  /** What it needs from the system, from the pinned Debian packages, and the dpkg database describing them. */
  runtime: RuntimeFiles;
}

export interface OperatorImageInputs {
  /** The repository: package.json and package-lock.json are read from it. */
  root: string;
  node: NodeRuntime;
  /** A folder whose node_modules holds the production dependencies (prodNodeModules). */
  modules: string;
  /** The compiled app, the build stage's dist/ (compiledApp). */
  dist: string;
}

// ---------------------------------------------------------------------------------------------------------
// Node and its libraries

/**
 * `ldd`'s report, parsed: each library's path as resolved (`name => /path (0x…)`) and the loader (`/path (0x…)`); the
 * vDSO is left out. The image does not use it: its unit test compares the libraries runtime-packages.ts finds in the
 * packages with those this machine's loader resolves for the same binary.
 */
export function parseLdd(out: string): string[] {
  const paths: string[] = [];
  for (const line of out.split('\n').map((l) => l.trim()).filter(Boolean)) {
    if (/^linux-(vdso|gate)\.so/.test(line)) continue;
    if (/not found/.test(line)) throw new Error(`ldd: ${line}`);
    const m = /=>\s*(\/\S+)\s+\(0x[0-9a-f]+\)$/.exec(line) ?? /^(\/\S+)\s+\(0x[0-9a-f]+\)$/.exec(line);
    if (m === null) {
      if (/statically linked/.test(line)) continue;
      throw new Error(`ldd: cannot read the line ${JSON.stringify(line)}`);
    }
    paths.push(m[1]!);
  }
  return paths;
}

/** package-lock.json's version of the `node` package: the Node of the project, the Dockerfile and the image. */
export function lockedNodeVersion(root = REPO_ROOT): string {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages?: Record<string, { version?: unknown }> };
  const v = lock.packages?.['node_modules/node']?.version;
  if (typeof v !== 'string' || !/^\d+\.\d+\.\d+$/.test(v)) throw new Error(`package-lock.json in ${root} locks no node version`);
  return v;
}

/** The image's node (the pinned `node-linux-<arch>` tarball of package-lock.json's version) and its runtime from the pinned Debian packages. */
export async function nodeRuntime(root = REPO_ROOT): Promise<NodeRuntime> {
  const version = lockedNodeVersion(root);
  const binary = await fetchNodeBinary(version);
  return { binary, version, runtime: await operatorRuntime(binary) };
}

// ---------------------------------------------------------------------------------------------------------
// Production dependencies

const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

/**
 * The production node_modules: `npm ci --omit=dev --ignore-scripts …` (NPM_CI_ARGS) in a staging folder of the
 * image cache, `<image cache>/npm/prod-<hash of package.json, package-lock.json and the arguments>`, made once per
 * content of the two files (npm runs under the node of node_modules, the image's). Returns the folder, whose
 * node_modules is the image's /app/node_modules.
 */
export async function prodNodeModules(root = REPO_ROOT): Promise<string> {
  const files = ['package.json', 'package-lock.json'];
  const key = sha256(JSON.stringify([NPM_CI_ARGS, ...files.map((f) => [f, sha256(readFileSync(join(root, f)))])])).slice(0, 16);
  const out = join(imageCache(), 'npm', `prod-${key}`);
  return cachedFolder(out, (dir) => existsSync(join(dir, 'node_modules')), async (tmp) => {
    mkdirSync(tmp);
    for (const f of files) cpSync(join(root, f), join(tmp, f));
    const t0 = Date.now();
    process.stderr.write(`operator image: npm ${NPM_CI_ARGS.join(' ')} into ${out}\n`);
    await new Promise<void>((resolve, reject) => {
      execFile('npm', [...NPM_CI_ARGS], {
        cwd: tmp,
        encoding: 'utf8',
        maxBuffer: 16 * 1024 * 1024,
        // npm's `#!/usr/bin/env node` finds the node of node_modules first: the dependencies are installed by the image's node.
        env: { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`, NODE_ENV: 'production' },
      }, (err, _stdout, stderr) => (err ? reject(new Error(`npm ${NPM_CI_ARGS.join(' ')} failed in ${tmp}: ${stderr.trim() || err.message}`)) : resolve()));
    });
    if (!existsSync(join(tmp, 'node_modules'))) throw new Error(`npm ${NPM_CI_ARGS.join(' ')} made no node_modules in ${tmp}`);
    process.stderr.write(`operator image: production dependencies in ${((Date.now() - t0) / 1000).toFixed(1)}s\n`);
  });
}

/**
 * `out`, made once: `make` fills a temporary folder beside it, which is then renamed into place. `done` tells a
 * finished folder. A failed `make` leaves nothing behind.
 */
async function cachedFolder(out: string, done: (dir: string) => boolean, make: (tmp: string) => Promise<void>): Promise<string> {
  if (done(out)) return out;
  mkdirSync(dirname(out), { recursive: true });
  const tmp = `${out}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  try {
    await make(tmp);
    // Another process may have finished first: its folder is as good as ours.
    if (done(out)) rmSync(tmp, { recursive: true, force: true });
    else renameSync(tmp, out);
    return out;
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------------------
// The compiled app

/**
 * Compiles the repository's src/ as the build stage does (`node <BUILD_ARGS>`, with the repository's own
 * node_modules) into `outDir`. The compiler's errors fail it, with its output.
 */
export async function compileApp(root: string, outDir: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    execFile(process.execPath, [...BUILD_ARGS, '--outDir', outDir], { cwd: root, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      err ? reject(new Error(`node ${BUILD_ARGS.join(' ')} failed in ${root}: ${(stdout + stderr).trim() || err.message}`)) : resolve());
  });
  if (!existsSync(join(outDir, 'main.js'))) throw new Error(`node ${BUILD_ARGS.join(' ')} wrote no main.js into ${outDir}`);
}

/**
 * The build stage's dist/: `<image cache>/dist/<hash of the compiler's inputs and version>`, compiled once per
 * content of src/, the two tsconfigs and the TypeScript version. Returns the folder.
 */
export async function compiledApp(root = REPO_ROOT): Promise<string> {
  // The files the build stage copies in (a folder: every file under it), as the image's own walk lists them.
  const inputs = BUILD_COPIES.flatMap((c) => c.sources.flatMap((s) => (s.endsWith('/') ? treeEntries(join(root, s), s).filter((e) => e.type === 'file').map((e) => e.path) : [s])))
    .concat('node_modules/typescript/package.json');
  const key = sha256(JSON.stringify([BUILD_ARGS, ...inputs.map((f) => [f, sha256(readFileSync(join(root, f)))])])).slice(0, 16);
  const out = join(imageCache(), 'dist', key);
  return cachedFolder(out, (dir) => existsSync(join(dir, 'main.js')), async (tmp) => {
    const t0 = Date.now();
    process.stderr.write(`operator image: compiling src/ into ${out}\n`);
    await compileApp(root, tmp);
    process.stderr.write(`operator image: compiled in ${((Date.now() - t0) / 1000).toFixed(1)}s\n`);
  });
}

// ---------------------------------------------------------------------------------------------------------
// The image

/** Layer entries for everything under `dir`, at `into` (files 0644, or 0755 when executable by anyone; folders 0755; symlinks as they are). */
export function treeEntries(dir: string, into: string): LayerEntry[] {
  const out: LayerEntry[] = [{ path: into, type: 'dir', mode: 0o755 }];
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const full = join(d, name);
      const path = posix.join(into, relative(dir, full).split('/').join(posix.sep));
      const st = lstatSync(full);
      if (st.isSymbolicLink()) out.push({ path, type: 'symlink', target: readlinkSync(full) });
      else if (st.isDirectory()) {
        out.push({ path, type: 'dir', mode: 0o755 });
        walk(full);
      } else if (st.isFile()) out.push({ path, type: 'file', mode: st.mode & 0o111 ? 0o755 : 0o644, source: full });
      else throw new Error(`${full}: neither file, folder nor symlink, and cannot go into an image`);
    }
  };
  walk(dir);
  return out;
}

/**
 * The operator image's spec (no build): node at /usr/local/bin/node; its loader and libraries, /etc/os-release and
 * the packages' copyrights at their Debian paths, with /var/lib/dpkg/status.d describing them; /app with package.json, package-lock.json, the compiled dist/ and the production node_modules; /etc/passwd and
 * /etc/group with the user node (1000:1000), /etc/nsswitch.conf; /home/node and /tmp (the chart mounts an emptyDir
 * there: its root filesystem is read-only). Every file is owned by root: uid 1000 can write nowhere but /tmp.
 */
export function operatorImageSpec(inputs: OperatorImageInputs, name = OPERATOR_IMAGE): ImageSpec {
  const app = OPERATOR_CONFIG.workingDir.replace(/^\//, '');
  const entries: LayerEntry[] = [
    { path: NODE_PATH_IN_IMAGE, type: 'file', mode: 0o755, source: inputs.node.binary },
    ...inputs.node.runtime.entries,
    { path: 'etc/passwd', type: 'file', data: ETC_PASSWD },
    { path: 'etc/group', type: 'file', data: ETC_GROUP },
    { path: 'etc/nsswitch.conf', type: 'file', data: NSSWITCH },
    { path: 'home/node', type: 'dir', mode: 0o755 },
    { path: 'root', type: 'dir', mode: 0o700 },
    { path: 'tmp', type: 'dir', mode: 0o1777 },
  ];
  for (const copy of APP_COPIES) {
    for (const source of copy.sources) {
      const from = join(inputs.root, source);
      if (source.endsWith('/')) entries.push(...treeEntries(from, posix.join(app, copy.dest)));
      else entries.push({ path: posix.join(app, copy.dest, posix.basename(source)), type: 'file', mode: statSync(from).mode & 0o111 ? 0o755 : 0o644, source: from });
    }
  }
  entries.push(...treeEntries(inputs.dist, posix.join(app, BUILD_OUTPUT.dest)));
  entries.push(...treeEntries(join(inputs.modules, 'node_modules'), posix.join(app, 'node_modules')));
  // `app` itself is added as a parent folder (0755).
  return {
    name,
    entries,
    user: OPERATOR_CONFIG.user,
    workingDir: OPERATOR_CONFIG.workingDir,
    env: [PATH_ENV, ...OPERATOR_CONFIG.env],
    exposedPorts: [...OPERATOR_CONFIG.exposedPorts],
    entrypoint: [...OPERATOR_CONFIG.entrypoint],
    cmd: [...OPERATOR_CONFIG.cmd],
  };
}

export interface OperatorImageResult extends ImageTar {
  built: boolean;
  /** Uncompressed layer size, bytes. */
  bytes: number;
  seconds: number;
  nodeVersion: string;
}

/**
 * Builds the operator image (operatorImageSpec) into the image cache, or finds it there: the production
 * dependencies from their staging folder (npm ci once per lock file), node and its libraries from the pinned packages,
 * the app compiled from the repository (once per content of its sources). The tar is keyed by the content of every file.
 */
export async function operatorImageBuild(name = OPERATOR_IMAGE, root = REPO_ROOT): Promise<OperatorImageResult> {
  const t0 = Date.now();
  const [node, modules, dist] = await Promise.all([nodeRuntime(root), prodNodeModules(root), compiledApp(root)]);
  const r = await buildImage(operatorImageSpec({ root, node, modules, dist }, name));
  return { ...strip(r), built: r.built, bytes: r.bytes, seconds: (Date.now() - t0) / 1000, nodeVersion: node.version };
}

/** The operator image (`ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:<appVersion>`, or the name given). */
export async function operatorImage(name = OPERATOR_IMAGE): Promise<ImageTar> {
  return strip(await operatorImageBuild(name));
}
