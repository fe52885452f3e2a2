// The image library of the nodes mode: container images without a registry. No registry is reachable from the
// test nodes and this machine has no Docker engine, so every image a node runs — the sandbox (pause), the test
// toolbox, kube-apiserver, kube-controller-manager, kube-scheduler (and the operator's, operator-image.ts) — is written here as an OCI image-layout tar
// (one uncompressed layer) from files on this machine, cached by content outside the repo, and imported into
// each node's containerd with `ctr images import`.
//
// The tars are written by this module (no GNU tar, no Docker): ustar headers with owner 0:0, mtime 0 and names
// sorted, so the same files give the same bytes and the same digests on every run and every machine.
import { spawn, execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, openSync, readSync, closeSync, type WriteStream } from 'node:fs';
import { homedir } from 'node:os';
import { parse as parseYaml } from 'yaml';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { binary, requireGo } from './binaries.ts';
import { aptCommand, onPath, requireCommands } from './requirements.ts';

export interface ImageTar {
  /** The full reference the image is imported as, e.g. registry.k8s.io/pause:3.10. */
  name: string;
  /** The OCI image-layout tar in the image cache. */
  path: string;
  /** sha256:… of the image manifest: what `ctr images ls` shows as the image's digest once imported. */
  manifestDigest: string;
}

export type ControlPlaneComponent = 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler';

export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10';

/** The repository's root (this file is e2e/cluster/images.ts). */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The chart's appVersion: the tag of the image this repository builds (the operator's, which also runs the node agent). */
export const APP_VERSION = ((): string => {
  const chart = parseYaml(readFileSync(join(REPO_ROOT, 'charts/apiserver-upgrade-operator/Chart.yaml'), 'utf8')) as { appVersion?: unknown };
  if (typeof chart.appVersion !== 'string' || chart.appVersion === '') throw new Error('charts/apiserver-upgrade-operator/Chart.yaml has no appVersion');
  return chart.appVersion;
})();
/** The harness's toolbox image (toolboxImage()): a shell and busybox's applets for test Pods, never published. */
export const TOOLBOX_IMAGE = 'registry.auo.test/toolbox:e2e';
export const DEFAULT_REPOSITORY = 'registry.k8s.io';

/** Bump when the layout written for the same inputs changes, so cached tars of the old layout are not reused. */
const FORMAT = 1;
export const PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const MEDIA = {
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layer: 'application/vnd.oci.image.layer.v1.tar',
} as const;

/** Where image tars live: $AUO_IMAGE_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/apiserver-upgrade-operator/images. */
export function imageCache(): string {
  return process.env.AUO_IMAGE_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'apiserver-upgrade-operator', 'images');
}

// ---------------------------------------------------------------------------------------------------------
// What goes into an image

/** One entry of the image's single layer. Paths are relative to the root, without a leading slash. */
export type LayerEntry =
  | { path: string; type: 'dir'; mode?: number }
  | { path: string; type: 'file'; mode?: number; source: string }
  | { path: string; type: 'file'; mode?: number; data: Buffer | string }
  | { path: string; type: 'symlink'; target: string };

export interface ImageSpec {
  name: string;
  entries: LayerEntry[];
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  workingDir?: string;
  /** The config's User (`uid:gid`); absent: root, as the config leaves it out. */
  user?: string;
  /** The config's ExposedPorts, e.g. `8080/tcp`. */
  exposedPorts?: string[];
}

/** The Go architecture name of this machine: the binaries in the images are built for it. */
export function goArch(): string {
  return process.arch === 'x64' ? 'amd64' : process.arch === 'ia32' ? '386' : process.arch;
}

interface NormEntry {
  path: string;
  type: 'dir' | 'file' | 'symlink';
  mode: number;
  /** file: where its bytes come from, and how many there are. */
  source?: string;
  data?: Buffer;
  size: number;
  target?: string;
}

function cleanPath(p: string): string {
  const n = posix.normalize(p).replace(/^\/+/, '').replace(/\/+$/, '');
  if (n === '' || n === '.' || n.startsWith('../') || n === '..') throw new Error(`bad path in an image layer: ${JSON.stringify(p)}`);
  return n;
}

/** Sorted entries with every missing parent folder added (0755); duplicates are an error. */
function normalise(entries: LayerEntry[]): NormEntry[] {
  const byPath = new Map<string, NormEntry>();
  for (const e of entries) {
    const path = cleanPath(e.path);
    if (byPath.has(path)) throw new Error(`${path} appears twice in an image layer`);
    if (e.type === 'dir') byPath.set(path, { path, type: 'dir', mode: e.mode ?? 0o755, size: 0 });
    else if (e.type === 'symlink') byPath.set(path, { path, type: 'symlink', mode: 0o777, size: 0, target: e.target });
    else if ('source' in e) byPath.set(path, { path, type: 'file', mode: e.mode ?? 0o644, source: e.source, size: statSync(e.source).size });
    else {
      const data = typeof e.data === 'string' ? Buffer.from(e.data) : e.data;
      byPath.set(path, { path, type: 'file', mode: e.mode ?? 0o644, data, size: data.length });
    }
  }
  for (const path of [...byPath.keys()]) {
    for (let d = posix.dirname(path); d !== '.'; d = posix.dirname(d)) {
      const have = byPath.get(d);
      if (have === undefined) byPath.set(d, { path: d, type: 'dir', mode: 0o755, size: 0 });
      else if (have.type !== 'dir') throw new Error(`${d} is a ${have.type} in an image layer, and ${path} is under it`);
    }
  }
  // A plain string sort puts every folder before what it holds (a prefix sorts first).
  return [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

// ---------------------------------------------------------------------------------------------------------
// ustar

const BLOCK = 512;
const ZERO_BLOCKS = Buffer.alloc(2 * BLOCK);

function octal(n: number, width: number): string {
  const s = n.toString(8);
  if (s.length > width - 1) throw new Error(`${n} does not fit a ${width}-byte tar field`);
  return s.padStart(width - 1, '0');
}

/** A ustar header: owner 0:0 with no names, mtime 0; names over 100 bytes split into prefix and name. */
export function tarHeader(name: string, h: { type: 'file' | 'dir' | 'symlink'; mode: number; size: number; linkname?: string }): Buffer {
  const b = Buffer.alloc(BLOCK);
  let full = h.type === 'dir' ? `${name}/` : name;
  let prefix = '';
  if (Buffer.byteLength(full) > 100) {
    // Split at the last '/' that leaves a prefix of at most 155 bytes and a name of at most 100 (not empty).
    let at = -1;
    for (let i = full.length - 2; i > 0; i--) {
      if (full[i] === '/' && Buffer.byteLength(full.slice(0, i)) <= 155 && Buffer.byteLength(full.slice(i + 1)) <= 100) {
        at = i;
        break;
      }
    }
    if (at < 0) throw new Error(`${name}: too long for a ustar header`);
    prefix = full.slice(0, at);
    full = full.slice(at + 1);
  }
  if (h.linkname !== undefined && Buffer.byteLength(h.linkname) > 100) throw new Error(`${name} -> ${h.linkname}: link target too long for a ustar header`);
  b.write(full, 0, 100, 'utf8');
  b.write(`${octal(h.mode & 0o7777, 8)}\0`, 100, 'ascii');
  b.write(`${octal(0, 8)}\0`, 108, 'ascii');
  b.write(`${octal(0, 8)}\0`, 116, 'ascii');
  b.write(`${octal(h.size, 12)}\0`, 124, 'ascii');
  b.write(`${octal(0, 12)}\0`, 136, 'ascii');
  b.write(' '.repeat(8), 148, 'ascii');
  b.write(h.type === 'file' ? '0' : h.type === 'symlink' ? '2' : '5', 156, 'ascii');
  if (h.linkname !== undefined) b.write(h.linkname, 157, 100, 'utf8');
  b.write('ustar\0', 257, 'ascii');
  b.write('00', 263, 'ascii');
  b.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(`${octal(sum, 7)}\0 `, 148, 'ascii');
  return b;
}

const padding = (size: number): Buffer => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);

/** The layer tar's bytes, in order; file contents are streamed from disk (a kube-apiserver is ~100 MB). */
async function* layerChunks(entries: NormEntry[]): AsyncGenerator<Buffer> {
  for (const e of entries) {
    yield tarHeader(e.path, { type: e.type, mode: e.mode, size: e.type === 'file' ? e.size : 0, ...(e.target !== undefined ? { linkname: e.target } : {}) });
    if (e.type !== 'file') continue;
    if (e.data !== undefined) yield e.data;
    else {
      let read = 0;
      for await (const chunk of createReadStream(e.source!)) {
        read += (chunk as Buffer).length;
        if (read > e.size) break;
        yield chunk as Buffer;
      }
      if (read !== e.size) throw new Error(`${e.source} changed while its image was written (${e.size} bytes expected, ${read} read)`);
    }
    yield padding(e.size);
  }
  yield ZERO_BLOCKS;
}

/** One entry of a tar read back: its name, type flag and where its bytes are in the file. */
export interface TarEntry {
  name: string;
  type: string;
  mode: number;
  size: number;
  linkname: string;
  offset: number;
}

function field(b: Buffer, start: number, len: number): string {
  const s = b.subarray(start, start + len);
  const nul = s.indexOf(0);
  return s.subarray(0, nul < 0 ? len : nul).toString('utf8');
}

/**
 * The entries of a tar file (ustar or GNU headers without extensions), read header by header; `within`: of the tar
 * held in those bytes of the file (an uncompressed layer inside an image tar), offsets still of the file.
 */
export function readTar(path: string, within?: { offset: number; size: number }): TarEntry[] {
  const fd = openSync(path, 'r');
  try {
    const out: TarEntry[] = [];
    const h = Buffer.alloc(BLOCK);
    const end = within === undefined ? Infinity : within.offset + within.size;
    for (let pos = within?.offset ?? 0; ; ) {
      if (pos + BLOCK > end || readSync(fd, h, 0, BLOCK, pos) < BLOCK || h.every((x) => x === 0)) return out;
      const prefix = field(h, 345, 155);
      const name = (prefix ? `${prefix}/` : '') + field(h, 0, 100);
      const size = parseInt(field(h, 124, 12).trim() || '0', 8);
      out.push({ name, type: String.fromCharCode(h[156] || 0x30), mode: parseInt(field(h, 100, 8).trim() || '0', 8), size, linkname: field(h, 157, 100), offset: pos + BLOCK });
      pos += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    }
  } finally {
    closeSync(fd);
  }
}

/** The bytes of one tar entry (small ones: index.json, manifests, configs). */
export function readTarEntry(path: string, entry: TarEntry): Buffer {
  const fd = openSync(path, 'r');
  try {
    const b = Buffer.alloc(entry.size);
    readSync(fd, b, 0, entry.size, entry.offset);
    return b;
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Building

const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

const fileHashes = new Map<string, string>();
/** sha256 of a file's bytes, remembered per path, size, mtime and inode for this process. */
async function hashFile(path: string): Promise<string> {
  const st = statSync(path);
  const key = `${path}\0${st.size}\0${st.mtimeMs}\0${st.ino}`;
  const have = fileHashes.get(key);
  if (have !== undefined) return have;
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  const hex = h.digest('hex');
  fileHashes.set(key, hex);
  return hex;
}

/** The name's characters a file name may hold, the rest as `_`: registry.k8s.io/pause:3.10 -> registry.k8s.io_pause_3.10. */
export function sanitiseName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}

function tagOf(name: string): string {
  const last = name.slice(name.lastIndexOf('/') + 1);
  return last.includes(':') ? last.slice(last.indexOf(':') + 1) : 'latest';
}

/** The sha256 over everything that decides the tar's bytes: the format, the name, the config, and each entry (files by content). */
async function inputsKey(spec: ImageSpec, entries: NormEntry[]): Promise<string> {
  const items = [];
  for (const e of entries) {
    const content = e.type !== 'file' ? undefined : e.data !== undefined ? sha256(e.data) : await hashFile(e.source!);
    items.push([e.path, e.type, e.mode, content ?? e.target ?? null]);
  }
  // user and exposedPorts only when set, so the keys (and the cached tars) of images without them stay as they were.
  return sha256(JSON.stringify({
    format: FORMAT, arch: goArch(), name: spec.name, entrypoint: spec.entrypoint ?? null, cmd: spec.cmd ?? null, env: spec.env ?? [PATH_ENV], workingDir: spec.workingDir ?? '/',
    ...(spec.user !== undefined ? { user: spec.user } : {}), ...(spec.exposedPorts !== undefined ? { exposedPorts: spec.exposedPorts } : {}), items,
  }));
}

/** The manifest digest an image tar's index.json names for this image. */
export function indexedManifest(tarPath: string, name: string): string {
  const index = readTar(tarPath).find((e) => e.name === 'index.json');
  if (index === undefined) throw new Error(`${tarPath} has no index.json`);
  const parsed = JSON.parse(readTarEntry(tarPath, index).toString('utf8')) as { manifests?: { digest: string; annotations?: Record<string, string> }[] };
  const m = parsed.manifests?.find((x) => x.annotations?.['io.containerd.image.name'] === name);
  if (m === undefined) throw new Error(`${tarPath}: index.json names no manifest for ${name}`);
  return m.digest;
}

/** Holds an exclusive flock on a file (through `flock`, as build-binaries.sh does) until release(); a dying process releases it. */
async function lockFile(path: string, onWait: () => void): Promise<{ release: () => void }> {
  requireCommands(['flock'], 'building container images');
  // flock holds the lock while `cat` runs; cat ends when its stdin closes: on release(), or when this process dies.
  const child = spawn('flock', ['-x', path, 'sh', '-c', 'echo locked; exec cat >/dev/null'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const waitTimer = setTimeout(onWait, 500);
  try {
    await new Promise<void>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code) => reject(new Error(`flock ${path} exited ${code} before taking the lock`)));
      child.stdout.once('data', () => resolve());
    });
  } finally {
    clearTimeout(waitTimer);
  }
  child.removeAllListeners('exit');
  child.on('error', () => undefined); // released or not, a late error of the holder changes nothing here
  return {
    release: () => {
      child.stdin.end();
    },
  };
}

/** Writes, waiting for 'drain' when the stream's buffer is full (a 100 MB layer is not held in memory). */
function writeAll(out: WriteStream, b: Buffer): Promise<void> {
  if (out.write(b)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (err?: Error): void => {
      out.off('drain', onDrain);
      out.off('error', onError);
      if (err) reject(err);
      else resolve();
    };
    const onDrain = (): void => done();
    const onError = (err: Error): void => done(err);
    out.on('drain', onDrain);
    out.on('error', onError);
  });
}

export interface BuildResult extends ImageTar {
  /** False when the tar came from the cache. */
  built: boolean;
  /** The layer's size in bytes (uncompressed, as imported). */
  bytes: number;
  seconds: number;
}

const inFlight = new Map<string, Promise<BuildResult>>();

/**
 * Builds an image from files into the image cache, or finds it there: the tar is named after the image and the
 * sha256 of its inputs (file contents, not paths or times), so a changed binary is a new tar and an unchanged
 * one is never rewritten. Concurrent builders of one image (in this process or another) wait for the first.
 */
export function buildImage(spec: ImageSpec): Promise<BuildResult> {
  const t0 = Date.now();
  return (async () => {
    const entries = normalise(spec.entries);
    const key = await inputsKey(spec, entries);
    const dir = imageCache();
    const out = join(dir, `${sanitiseName(spec.name)}-${key}.tar`);
    let p = inFlight.get(out);
    if (p === undefined) {
      p = buildInto(spec, entries, dir, out, t0);
      inFlight.set(out, p);
      p.then(() => inFlight.delete(out), () => inFlight.delete(out));
    }
    return p;
  })();
}

function cached(spec: ImageSpec, out: string, t0: number): BuildResult | undefined {
  if (!existsSync(out)) return undefined;
  const layer = readTar(out).filter((e) => e.name.startsWith('blobs/sha256/')).reduce((m, e) => Math.max(m, e.size), 0);
  return { name: spec.name, path: out, manifestDigest: indexedManifest(out, spec.name), built: false, bytes: layer, seconds: (Date.now() - t0) / 1000 };
}

async function buildInto(spec: ImageSpec, entries: NormEntry[], dir: string, out: string, t0: number): Promise<BuildResult> {
  const hit = cached(spec, out, t0);
  if (hit) return hit;
  mkdirSync(dir, { recursive: true });
  const lock = await lockFile(join(dir, `.lock-${posix.basename(out, '.tar')}`), () => process.stderr.write(`image ${spec.name}: waiting for another process that is building it\n`));
  try {
    const other = cached(spec, out, t0);
    if (other) return other;
    // Pass one: the layer's digest, which the config, the manifest and index.json (written first) all name.
    const lh = createHash('sha256');
    let layerSize = 0;
    for await (const c of layerChunks(entries)) {
      lh.update(c);
      layerSize += c.length;
    }
    const layerDigest = `sha256:${lh.digest('hex')}`;
    const config = Buffer.from(JSON.stringify({
      architecture: goArch(),
      os: 'linux',
      created: '1970-01-01T00:00:00Z',
      config: {
        ...(spec.entrypoint ? { Entrypoint: spec.entrypoint } : {}),
        ...(spec.cmd ? { Cmd: spec.cmd } : {}),
        Env: spec.env ?? [PATH_ENV],
        WorkingDir: spec.workingDir ?? '/',
        ...(spec.user !== undefined ? { User: spec.user } : {}),
        ...(spec.exposedPorts !== undefined ? { ExposedPorts: Object.fromEntries(spec.exposedPorts.map((p) => [p, {}])) } : {}),
      },
      rootfs: { type: 'layers', diff_ids: [layerDigest] },
      history: [{ created: '1970-01-01T00:00:00Z', created_by: 'e2e/cluster/images.ts' }],
    }));
    const configDigest = `sha256:${sha256(config)}`;
    const manifest = Buffer.from(JSON.stringify({
      schemaVersion: 2,
      mediaType: MEDIA.manifest,
      config: { mediaType: MEDIA.config, digest: configDigest, size: config.length },
      layers: [{ mediaType: MEDIA.layer, digest: layerDigest, size: layerSize }],
    }));
    const manifestDigest = `sha256:${sha256(manifest)}`;
    const index = Buffer.from(JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [{
        mediaType: MEDIA.manifest, digest: manifestDigest, size: manifest.length,
        platform: { architecture: goArch(), os: 'linux' },
        // containerd names the image after io.containerd.image.name; ref.name carries the tag (as `docker save` writes it).
        annotations: { 'io.containerd.image.name': spec.name, 'org.opencontainers.image.ref.name': tagOf(spec.name) },
      }],
    }));
    const tmp = `${out}.tmp-${process.pid}`;
    const ws = createWriteStream(tmp);
    const closed = new Promise<void>((resolve, reject) => {
      ws.on('close', resolve);
      ws.on('error', reject);
    });
    closed.catch(() => undefined); // awaited below; on an earlier failure the catch removes the file instead
    try {
      const small = (name: string, data: Buffer): Buffer => Buffer.concat([tarHeader(name, { type: 'file', mode: 0o644, size: data.length }), data, padding(data.length)]);
      await writeAll(ws, small('oci-layout', Buffer.from('{"imageLayoutVersion":"1.0.0"}')));
      await writeAll(ws, small('index.json', index));
      await writeAll(ws, tarHeader('blobs', { type: 'dir', mode: 0o755, size: 0 }));
      await writeAll(ws, tarHeader('blobs/sha256', { type: 'dir', mode: 0o755, size: 0 }));
      await writeAll(ws, small(`blobs/sha256/${manifestDigest.slice(7)}`, manifest));
      await writeAll(ws, small(`blobs/sha256/${configDigest.slice(7)}`, config));
      // Pass two: the layer again, into the tar, checked against pass one (a file rewritten in between is an error).
      await writeAll(ws, tarHeader(`blobs/sha256/${layerDigest.slice(7)}`, { type: 'file', mode: 0o644, size: layerSize }));
      const again = createHash('sha256');
      for await (const c of layerChunks(entries)) {
        again.update(c);
        await writeAll(ws, c);
      }
      if (`sha256:${again.digest('hex')}` !== layerDigest) throw new Error(`the files of ${spec.name} changed while its image was written`);
      await writeAll(ws, padding(layerSize));
      await writeAll(ws, ZERO_BLOCKS);
      ws.end();
      await closed;
      renameSync(tmp, out);
    } catch (err) {
      ws.destroy();
      rmSync(tmp, { force: true });
      throw err;
    }
    return { name: spec.name, path: out, manifestDigest, built: true, bytes: layerSize, seconds: (Date.now() - t0) / 1000 };
  } finally {
    lock.release();
  }
}

// ---------------------------------------------------------------------------------------------------------
// The images

/** How our static Go programs are built: `CGO_ENABLED=0 go <GO_BUILD_ARGS> -o <out> .`. */
export const GO_BUILD_ARGS = ['build', '-trimpath', '-ldflags', '-s -w'] as const;

/**
 * Builds one of our small Go programs (`dir` relative to the repository: its own go.mod, no dependencies) static
 * (CGO_ENABLED=0, -trimpath) into `<image cache>/bin/<name>-<hash of its sources>`, once per content of its
 * sources; concurrent builders (in any process) wait for the first.
 */
async function staticGoProgram(name: string, dir: string, why: string): Promise<string> {
  const src = join(REPO_ROOT, dir);
  const sources = readdirSync(src).filter((f) => f.endsWith('.go') || f === 'go.mod').sort();
  const key = sha256(JSON.stringify(sources.map((f) => [f, sha256(readFileSync(join(src, f)))]))).slice(0, 16);
  const bin = join(imageCache(), 'bin');
  const out = join(bin, `${name}-${key}`);
  if (existsSync(out)) return out;
  mkdirSync(bin, { recursive: true });
  const lock = await lockFile(join(bin, `.lock-${name}-${key}`), () => process.stderr.write(`${name}: waiting for another process that is building it\n`));
  try {
    if (existsSync(out)) return out;
    const go = requireGo(`${why} (${dir})`);
    const t0 = Date.now();
    process.stderr.write(`building ${name} (${dir}) with ${go.version} into ${bin}\n`);
    const tmp = `${out}.tmp-${process.pid}`;
    await new Promise<void>((resolve, reject) => {
      execFile(go.path, [...GO_BUILD_ARGS, '-o', tmp, '.'], {
        cwd: src,
        env: { ...process.env, PATH: go.envPath, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '', GOOS: 'linux', GOARCH: goArch() },
      }, (err, _stdout, stderr) => (err ? reject(new Error(`go build of ${dir} failed: ${stderr.trim() || err.message}`)) : resolve()));
    });
    renameSync(tmp, out);
    process.stderr.write(`built ${name} in ${((Date.now() - t0) / 1000).toFixed(1)}s\n`);
    return out;
  } finally {
    lock.release();
  }
}

/** Builds the pause program into the image cache, once per content of its sources. */
export function pauseBinary(): Promise<string> {
  return staticGoProgram('pause', 'e2e/cluster/images/pause', 'the pause program of the nodes mode');
}

/** registry.k8s.io/pause:3.10 (or the name given): /pause, a static Go program that blocks until SIGTERM and reaps children. */
export async function pauseImage(name = PAUSE_IMAGE): Promise<ImageTar> {
  return strip(await buildImage({ name, entries: [{ path: 'pause', type: 'file', mode: 0o755, source: await pauseBinary() }], entrypoint: ['/pause'] }));
}

/** Whether an ELF file asks for a program interpreter (is dynamically linked): a PT_INTERP program header. */
export function isDynamicElf(path: string): boolean {
  const b = readFileSync(path);
  if (b.length < 64 || b.readUInt32BE(0) !== 0x7f454c46) throw new Error(`${path} is not an ELF file`);
  if (b[4] !== 2 || b[5] !== 1) throw new Error(`${path}: only 64-bit little-endian ELF is read`);
  const phoff = Number(b.readBigUInt64LE(0x20));
  const phentsize = b.readUInt16LE(0x36);
  const phnum = b.readUInt16LE(0x38);
  for (let i = 0; i < phnum; i++) if (b.readUInt32LE(phoff + i * phentsize) === 3) return true;
  return false;
}

/** The static busybox of Debian's busybox-static, or an error naming the apt command. */
export function staticBusybox(): string {
  const install = aptCommand(['busybox-static']);
  const path = ['/bin/busybox', '/usr/bin/busybox'].find((p) => existsSync(p)) ?? onPath('busybox');
  if (path === undefined) throw new Error(`the harness's toolbox and test images are made from a static busybox, and this machine has none: run \`${install}\` as root`);
  if (isDynamicElf(path)) throw new Error(`the harness's toolbox and test images need a static busybox, and ${path} is dynamically linked (Debian's busybox package): run \`${install}\` as root (it replaces it)`);
  return path;
}

/** Its applets, from `busybox --list`. */
function busyboxApplets(path: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    execFile(path, ['--list'], { encoding: 'utf8' }, (err, stdout) => (err ? reject(new Error(`${path} --list failed: ${err.message}`)) : resolve(stdout.split('\n').map((s) => s.trim()).filter((s) => /^[A-Za-z0-9_.[\]-]+$/.test(s) && s !== 'busybox'))));
  });
}

/**
 * The toolbox image's spec: /bin/busybox with every applet (sh, httpd, sleep, …) a symlink to it in /bin, /etc/passwd
 * and /etc/group with root, /root, /tmp. Root, no entrypoint, `Cmd ["/bin/sh"]`. For the harness's test Pods
 * (e2e/pod-network.e2e.ts); the node agent runs from the operator's image.
 */
export function toolboxImageSpec(busybox: string, applets: string[], name = TOOLBOX_IMAGE): ImageSpec {
  if (!applets.includes('sh')) throw new Error(`${busybox} has no sh applet`);
  const entries: LayerEntry[] = [
    { path: 'bin/busybox', type: 'file', mode: 0o755, source: busybox },
    ...applets.map((a): LayerEntry => ({ path: `bin/${a}`, type: 'symlink', target: 'busybox' })),
    { path: 'etc/passwd', type: 'file', data: 'root:x:0:0:root:/root:/bin/sh\n' },
    { path: 'etc/group', type: 'file', data: 'root:x:0:\n' },
    { path: 'root', type: 'dir', mode: 0o700 },
    { path: 'tmp', type: 'dir', mode: 0o1777 },
  ];
  return { name, entries, cmd: ['/bin/sh'] };
}

/** The toolbox image (toolboxImageSpec) from Debian's busybox-static on this machine, built into the image cache. */
export async function toolboxImage(name = TOOLBOX_IMAGE): Promise<ImageTar> {
  const bb = staticBusybox();
  return strip(await buildImage(toolboxImageSpec(bb, await busyboxApplets(bb), name)));
}

/**
 * A control-plane component image, `${repository}/${component}:${version}`, holding the Go-built binary at
 * /usr/local/bin/<component> (kubeadm's manifests run it by name, found on PATH). No entrypoint, as upstream's.
 * The binary comes from binaries.ts: from the cache, or built there with its progress line.
 */
export async function componentImage(component: ControlPlaneComponent, version: string, repository = DEFAULT_REPOSITORY): Promise<ImageTar> {
  const path = await binary(component, version);
  const entries: LayerEntry[] = [
    { path: `usr/local/bin/${component}`, type: 'file', mode: 0o755, source: path },
    { path: 'etc/passwd', type: 'file', data: 'root:x:0:0:root:/root:/sbin/nologin\n' },
    { path: 'etc/group', type: 'file', data: 'root:x:0:\n' },
    { path: 'tmp', type: 'dir', mode: 0o1777 },
  ];
  return strip(await buildImage({ name: `${repository.replace(/\/+$/, '')}/${component}:${version}`, entries }));
}

export const strip = (r: BuildResult): ImageTar => ({ name: r.name, path: r.path, manifestDigest: r.manifestDigest });

// ---------------------------------------------------------------------------------------------------------
// Import

function ctr(socket: string, args: string[], timeoutMs = 300_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('ctr', ['-a', socket, '-n', 'k8s.io', ...args], { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`ctr -a ${socket} -n k8s.io ${args.join(' ')} failed: ${stderr.trim() || err.message}`));
      else resolve(stdout);
    });
  });
}

/** The images of a containerd's k8s.io namespace: name -> target digest (`ctr images ls`). */
export async function listImages(socket: string): Promise<Map<string, string>> {
  const out = await ctr(socket, ['images', 'ls']);
  const m = new Map<string, string>();
  for (const l of out.split('\n').slice(1)) {
    const [ref, , digest] = l.trim().split(/\s+/);
    if (ref && digest?.startsWith('sha256:')) m.set(ref, digest);
  }
  return m;
}

/**
 * Imports image tars into one containerd (its socket; the kubelet's namespace k8s.io) and unpacks them for its
 * default snapshotter. Idempotent: an image already there with the same manifest is not imported again. Checks
 * afterwards that each is listed with its manifest digest.
 */
export async function importImages(socket: string, images: ImageTar[]): Promise<void> {
  requireCommands(['ctr'], 'importing images into a node\'s containerd');
  if (!existsSync(socket)) throw new Error(`no containerd socket at ${socket}`);
  const before = await listImages(socket);
  for (const img of images) {
    if (before.get(img.name) === img.manifestDigest) continue;
    await ctr(socket, ['images', 'import', img.path]);
  }
  const after = await listImages(socket);
  const wrong = images.filter((i) => after.get(i.name) !== i.manifestDigest);
  if (wrong.length > 0) {
    throw new Error(`after importing into ${socket}: ${wrong.map((i) => `${i.name} is ${after.has(i.name) ? `${after.get(i.name)}, not ${i.manifestDigest}` : 'not listed'}`).join('; ')} (listed: ${[...after.keys()].join(', ') || 'nothing'})`);
  }
}
