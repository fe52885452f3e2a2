// The operator image's runtime, from pinned packages that an SBOM sees: Node is the binary of the `node-linux-<arch>`
// npm package (the tarball the `node` package's install script would fetch, here by `npm pack` and checked against
// the sha512 pinned below, so no install script runs), and what it needs from the system — the dynamic loader, glibc,
// libstdc++, libgcc_s — comes from Debian 12 (bookworm) packages, the distribution of the Dockerfile's base
// node:<version>-slim, each fetched with `apt-get download <name>=<version>` and checked against the sha256 pinned
// below. Of each package the image holds only what node needs (the ELF DT_NEEDED closure of the binary, the loader it
// asks for, /etc/os-release) and the package's copyright; a dpkg database in the distroless layout,
// /var/lib/dpkg/status.d/<package> (the package's control file) and <package>.md5sums (exactly the files the image
// holds), describes them, so syft (and any scanner reading dpkg databases) lists each package, its version and its files.
//
// Updating the pins: `node e2e/cluster/runtime-packages.ts pins` on a Debian 12 machine prints the entries for the
// versions its apt serves now (and the node tarball's integrity for package-lock.json's node), to paste below.
// `node e2e/cluster/runtime-packages.ts apt-args` prints the `apt-get download` arguments of the pins (the release
// workflow runs them in the Dockerfile's base image, a Debian 12, and hands the files over in $AUO_DEB_DIR).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, copyFileSync, createReadStream, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, readSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { imageCache, REPO_ROOT, type LayerEntry } from './images.ts';
import { requireCommands } from './requirements.ts';

/** The Debian release the runtime packages come from: the one of the Dockerfile's base image (node:<version>-slim). */
export const DEBIAN_RELEASE = { id: 'debian', versionId: '12', codename: 'bookworm' } as const;

export interface DebPin {
  name: string;
  version: string;
  /** sha256 of the .deb file. */
  sha256: string;
}

/**
 * The Debian packages of the image's runtime, per Debian architecture, each at an exact version and .deb sha256.
 * base-files: /etc/os-release (scanners read the distribution from it); gcc-12-base: the copyright that libgcc-s1's
 * and libstdc++6's documentation folders link to.
 */
export const RUNTIME_DEBS: Readonly<Record<string, readonly DebPin[]>> = {
  amd64: [
    { name: 'base-files', version: '12.4+deb12u15', sha256: '3eb1ea6d85488f488cc2a163b98ad640ef88cee4c79287cf14e361aaf6206f47' },
    { name: 'gcc-12-base', version: '12.2.0-14+deb12u1', sha256: '1896a2aacf4ad681ff5eacc24a5b0ca4d5d9c9b9c9e4b6de5197bc1e116ea619' },
    { name: 'libc6', version: '2.36-9+deb12u14', sha256: 'ba4f88f73dbc3ae9055f3c20f4523bfdbaf1ad13ff95e258924f77d20b4fbedf' },
    { name: 'libgcc-s1', version: '12.2.0-14+deb12u1', sha256: '3016e62cb4b7cd8038822870601f5ed131befe942774d0f745622cc77d8a88f7' },
    { name: 'libstdc++6', version: '12.2.0-14+deb12u1', sha256: '5cd3171216d4ab0fc911cfe9c35509bf2dd8f47761c43b7f6a4296701551a24d' },
  ],
};

/** Files the image takes from the packages besides node's libraries and the copyrights (paths in the image). */
export const RUNTIME_EXTRA_FILES = ['etc/os-release'] as const;

/** The node binary's npm package per Node architecture: `node-linux-<arch>@<version>`, its tarball's integrity. */
export const NODE_TARBALLS: Readonly<Record<string, { version: string; integrity: string }>> = {
  x64: { version: '24.21.0', integrity: 'sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==' },
};

/** Debian's name of this machine's architecture (the image is built for it). */
export function debianArch(arch: string = process.arch): string {
  const a = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[arch];
  if (a === undefined) throw new Error(`the operator image is built for amd64 or arm64, not ${arch}`);
  return a;
}

/** The GNU multiarch triplet of a Debian architecture: where its shared libraries live (lib/<triplet>). */
export function multiarchTriplet(debArch: string): string {
  const t = ({ amd64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' } as Record<string, string>)[debArch];
  if (t === undefined) throw new Error(`no multiarch triplet known for ${debArch}`);
  return t;
}

export function runtimePins(debArch: string): readonly DebPin[] {
  const pins = RUNTIME_DEBS[debArch];
  if (pins === undefined) throw new Error(`no Debian packages are pinned for ${debArch} (e2e/cluster/runtime-packages.ts RUNTIME_DEBS has ${Object.keys(RUNTIME_DEBS).join(', ')}): the operator image cannot be built for it`);
  return pins;
}

const PIN_NAME = /^[a-z0-9][a-z0-9+.-]+$/;
const PIN_VERSION = /^[0-9][A-Za-z0-9.+~:-]*$/;

/** The `apt-get download` arguments of the pins (each checked: no value reaches a command unchecked). */
export function aptDownloadArgs(pins: readonly DebPin[]): string[] {
  return pins.map((p) => {
    if (!PIN_NAME.test(p.name) || !PIN_VERSION.test(p.version) || !/^[0-9a-f]{64}$/.test(p.sha256)) throw new Error(`bad package pin ${JSON.stringify(p)}`);
    return `${p.name}=${p.version}`;
  });
}

// ---------------------------------------------------------------------------------------------------------
// Fetching

const sha256Hex = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

async function hashFile(path: string, algorithm: 'sha256' | 'sha512', encoding: 'hex' | 'base64'): Promise<string> {
  const h = createHash(algorithm);
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest(encoding);
}

function run(cmd: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd} ${args.join(' ')} failed: ${stderr.trim() || err.message}`)) : resolve(stdout));
  });
}

/** A file made once: `make` writes a temporary path beside it, renamed into place; another process's finished file wins. */
async function cachedFile(out: string, make: (tmp: string) => Promise<void>): Promise<string> {
  if (existsSync(out)) return out;
  mkdirSync(dirname(out), { recursive: true });
  const tmp = `${out}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  try {
    await make(tmp);
    if (existsSync(out)) rmSync(tmp, { recursive: true, force: true });
    else renameSync(tmp, out);
    return out;
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/**
 * The .deb of a pin in `<image cache>/debs/`, checked against its sha256: from there, else from the folder
 * $AUO_DEB_DIR (the release workflow fetches the pins there with Debian's apt), else with `apt-get download`.
 */
export async function fetchDeb(pin: DebPin, debArch: string): Promise<string> {
  const [arg] = aptDownloadArgs([pin]);
  const file = `${pin.name}_${pin.version.replace(/:/g, '%3a')}_${debArch}.deb`;
  const out = join(imageCache(), 'debs', file);
  const check = async (path: string, from: string): Promise<void> => {
    const got = await hashFile(path, 'sha256', 'hex');
    if (got !== pin.sha256) throw new Error(`${from}: ${file} has sha256 ${got}, not the pinned ${pin.sha256} (e2e/cluster/runtime-packages.ts)`);
  };
  if (existsSync(out)) {
    await check(out, out);
    return out;
  }
  return cachedFile(out, async (tmp) => {
    const dir = process.env.AUO_DEB_DIR;
    if (dir && existsSync(join(dir, file))) {
      copyFileSync(join(dir, file), tmp);
      await check(tmp, join(dir, file));
      return;
    }
    requireCommands(['apt-get'], `fetching the operator image's Debian package ${arg}`);
    mkdirSync(tmp);
    const download = (): Promise<string> => run('apt-get', ['download', `${pin.name}:${debArch}=${pin.version}`], tmp);
    try {
      try {
        await download();
      } catch (first) {
        // Package lists older than the pin: read them anew once (as root, as scripts/setup.ts installs), then again.
        if (process.getuid?.() !== 0) throw first;
        await run('apt-get', ['update', '-qq'], tmp);
        await download();
      }
    } catch (err) {
      throw new Error(`${(err as Error).message}\nThe operator image's runtime is Debian ${DEBIAN_RELEASE.versionId} (${DEBIAN_RELEASE.codename}) packages at pinned versions: this needs apt with Debian ${DEBIAN_RELEASE.versionId}'s sources (run \`apt-get update\` first), or the .deb files in $AUO_DEB_DIR. A version no longer served means the pins are due for an update: \`node e2e/cluster/runtime-packages.ts pins\`.`, { cause: err });
    }
    const got = readdirSync(tmp).filter((f) => f.endsWith('.deb'));
    if (got.length !== 1) throw new Error(`apt-get download ${arg} wrote ${got.join(', ') || 'nothing'}`);
    const deb = join(tmp, got[0]!);
    await check(deb, `apt-get download ${arg}`);
    renameSync(deb, `${tmp}.deb`);
    rmSync(tmp, { recursive: true, force: true });
    renameSync(`${tmp}.deb`, tmp);
  });
}

/** A .deb unpacked (`dpkg-deb -R`: its control files in DEBIAN/, its files beside them) into the image cache, once. */
export async function unpackDeb(deb: string): Promise<string> {
  const out = join(imageCache(), 'debs', 'unpacked', posix.basename(deb, '.deb'));
  return cachedFile(out, async (tmp) => {
    requireCommands(['dpkg-deb'], 'unpacking the operator image\'s Debian packages');
    await run('dpkg-deb', ['-R', deb, tmp], dirname(deb));
  });
}

/** The ELF node binary of `node-linux-<arch>@<version>` (npm pack, sha512 checked), extracted once into the image cache. */
export async function fetchNodeBinary(version: string, arch: string = process.arch): Promise<string> {
  const pin = NODE_TARBALLS[arch];
  if (pin === undefined) throw new Error(`no node tarball is pinned for ${arch} (e2e/cluster/runtime-packages.ts NODE_TARBALLS)`);
  if (pin.version !== version) throw new Error(`the pinned node tarball is ${pin.version}, and package-lock.json's node is ${version}: update NODE_TARBALLS (node e2e/cluster/runtime-packages.ts pins)`);
  const name = `node-linux-${arch}`;
  const out = join(imageCache(), 'node', `${name}-${version}-${sha256Hex(pin.integrity).slice(0, 16)}`, 'node');
  return cachedFile(out, async (tmp) => {
    mkdirSync(tmp);
    requireCommands(['npm', 'tar'], 'fetching the operator image\'s node');
    await run('npm', ['pack', `${name}@${version}`, '--pack-destination', tmp, '--prefer-offline', '--silent', '--ignore-scripts'], tmp);
    const tgz = join(tmp, `${name}-${version}.tgz`);
    if (!existsSync(tgz)) throw new Error(`npm pack ${name}@${version} wrote no ${posix.basename(tgz)}`);
    const integrity = `sha512-${await hashFile(tgz, 'sha512', 'base64')}`;
    if (integrity !== pin.integrity) throw new Error(`${name}@${version}: the tarball's integrity is ${integrity}, not the pinned ${pin.integrity}`);
    await run('tar', ['-xzf', tgz, '-C', tmp, 'package/bin/node'], tmp);
    const bin = join(tmp, 'package', 'bin', 'node');
    renameSync(bin, `${tmp}.bin`);
    rmSync(tmp, { recursive: true, force: true });
    renameSync(`${tmp}.bin`, tmp);
  });
}

// ---------------------------------------------------------------------------------------------------------
// ELF

interface ElfInfo {
  interpreter?: string;
  needed: string[];
}

/** PT_INTERP and DT_NEEDED of a 64-bit little-endian ELF file, read from its program headers and dynamic section. */
export function readElf(path: string): ElfInfo {
  const fd = openSync(path, 'r');
  try {
    const read = (pos: number, len: number): Buffer => {
      const b = Buffer.alloc(len);
      if (readSync(fd, b, 0, len, pos) !== len) throw new Error(`${path}: short read of its ELF headers`);
      return b;
    };
    const h = read(0, 64);
    if (h.readUInt32BE(0) !== 0x7f454c46 || h[4] !== 2 || h[5] !== 1) throw new Error(`${path} is not a 64-bit little-endian ELF file`);
    const phoff = Number(h.readBigUInt64LE(0x20));
    const phentsize = h.readUInt16LE(0x36);
    const phnum = h.readUInt16LE(0x38);
    if (phnum > 256 || phentsize < 56) throw new Error(`${path}: implausible ELF program headers`);
    const ph = read(phoff, phentsize * phnum);
    const segs = Array.from({ length: phnum }, (_, i) => ({
      type: ph.readUInt32LE(i * phentsize),
      offset: Number(ph.readBigUInt64LE(i * phentsize + 8)),
      vaddr: Number(ph.readBigUInt64LE(i * phentsize + 16)),
      filesz: Number(ph.readBigUInt64LE(i * phentsize + 32)),
    }));
    const out: ElfInfo = { needed: [] };
    const interp = segs.find((s) => s.type === 3);
    if (interp !== undefined) out.interpreter = read(interp.offset, interp.filesz).toString('utf8').replace(/\0+$/, '');
    const dyn = segs.find((s) => s.type === 2);
    if (dyn === undefined) return out;
    if (dyn.filesz > 1 << 20) throw new Error(`${path}: implausible dynamic section`);
    const d = read(dyn.offset, dyn.filesz);
    const needed: number[] = [];
    let strtab: number | undefined;
    for (let o = 0; o + 16 <= d.length; o += 16) {
      const tag = Number(d.readBigInt64LE(o));
      const val = Number(d.readBigUInt64LE(o + 8));
      if (tag === 0) break;
      if (tag === 1) needed.push(val);
      else if (tag === 5) strtab = val;
    }
    if (needed.length === 0) return out;
    if (strtab === undefined) throw new Error(`${path}: DT_NEEDED without DT_STRTAB`);
    // DT_STRTAB is an address: the file offset is that of the PT_LOAD segment holding it.
    const load = segs.find((s) => s.type === 1 && strtab! >= s.vaddr && strtab! < s.vaddr + s.filesz);
    if (load === undefined) throw new Error(`${path}: DT_STRTAB outside every loaded segment`);
    const base = load.offset + (strtab - load.vaddr);
    for (const n of needed) {
      const s = read(base + n, 256);
      const end = s.indexOf(0);
      if (end <= 0) throw new Error(`${path}: a DT_NEEDED name that is empty or over 255 bytes`);
      out.needed.push(s.subarray(0, end).toString('utf8'));
    }
    return out;
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------------------
// The runtime's files

/** One package, unpacked: its control fields, md5sums, and every path it ships (files and symlinks, relative). */
export interface UnpackedDeb {
  pin: DebPin;
  /** The folder `dpkg-deb -R` made. */
  dir: string;
  control: string;
  /** path (relative, no leading slash) -> md5, from DEBIAN/md5sums. */
  md5sums: Map<string, string>;
}

export function readUnpacked(pin: DebPin, dir: string): UnpackedDeb {
  const control = readFileSync(join(dir, 'DEBIAN', 'control'), 'utf8');
  const field = (k: string): string | undefined => new RegExp(`^${k}: (.+)$`, 'm').exec(control)?.[1]?.trim();
  if (field('Package') !== pin.name || field('Version') !== pin.version) throw new Error(`${dir}: its control file says ${field('Package')} ${field('Version')}, not ${pin.name} ${pin.version}`);
  const md5sums = new Map<string, string>();
  for (const line of readFileSync(join(dir, 'DEBIAN', 'md5sums'), 'utf8').split('\n').filter(Boolean)) {
    const m = /^([0-9a-f]{32}) {2}(.+)$/.exec(line);
    if (m === null) throw new Error(`${dir}/DEBIAN/md5sums: cannot read ${JSON.stringify(line)}`);
    md5sums.set(m[2]!, m[1]!);
  }
  return { pin, dir, control: control.endsWith('\n') ? control : `${control}\n`, md5sums };
}

type TreeNode = { owner: UnpackedDeb; type: 'file'; source: string; mode: number } | { owner: UnpackedDeb; type: 'symlink'; target: string };

/** Every file and symlink of the packages, by path; a path two packages ship is an error. */
function packageTree(debs: UnpackedDeb[]): Map<string, TreeNode> {
  const tree = new Map<string, TreeNode>();
  for (const deb of debs) {
    const walk = (rel: string): void => {
      for (const name of readdirSync(join(deb.dir, rel)).sort()) {
        if (rel === '' && name === 'DEBIAN') continue;
        const path = rel === '' ? name : `${rel}/${name}`;
        const st = lstatSync(join(deb.dir, path));
        let node: TreeNode | undefined;
        if (st.isSymbolicLink()) node = { owner: deb, type: 'symlink', target: readlinkSync(join(deb.dir, path)) };
        else if (st.isFile()) node = { owner: deb, type: 'file', source: join(deb.dir, path), mode: st.mode & 0o7777 };
        else if (st.isDirectory()) walk(path);
        else throw new Error(`${deb.pin.name}: ${path} is neither file, folder nor symlink`);
        if (node === undefined) continue;
        const had = tree.get(path);
        if (had !== undefined) throw new Error(`${path} is in both ${had.owner.pin.name} and ${deb.pin.name}`);
        tree.set(path, node);
      }
    };
    walk('');
  }
  return tree;
}

export interface RuntimeFiles {
  /** The layer entries: the packages' files the image holds, their symlinks, and the dpkg database. */
  entries: LayerEntry[];
  /** Per package, the regular files (image paths) that its status.d md5sums lists. */
  packages: { name: string; version: string; files: string[] }[];
}

/**
 * What node (the ELF at `nodeBinary`, placed at `nodePath` in the image) needs from the packages: the loader it
 * asks for, the DT_NEEDED closure of it and of each library (looked up in lib/<triplet>, usr/lib/<triplet>, lib,
 * usr/lib, as the loader searches without a cache), every symlink on the way, RUNTIME_EXTRA_FILES, and each used
 * package's /usr/share/doc/<package>/copyright (through its symlink, where the folder is one); with the
 * status.d entries. Fails closed: a library no package ships, a pinned package the image would not use, a file
 * whose md5 differs from its package's md5sums.
 */
export function runtimeFiles(nodeBinary: string, debs: UnpackedDeb[], debArch: string): RuntimeFiles {
  const tree = packageTree(debs);
  const triplet = multiarchTriplet(debArch);
  const searchDirs = [`lib/${triplet}`, `usr/lib/${triplet}`, 'lib', 'usr/lib'];
  const take = new Map<string, TreeNode>();
  /** Adds `path` and, for a symlink, what it points at (within the tree); returns the regular file reached. */
  const add = (path: string, why: string, depth = 0): string => {
    if (depth > 16) throw new Error(`${path}: too many symlinks (${why})`);
    // A folder on the way may itself be a symlink (usr/share/doc/libgcc-s1 -> gcc-12-base).
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const prefix = parts.slice(0, i).join('/');
      const n = tree.get(prefix);
      if (n?.type === 'symlink') {
        take.set(prefix, n);
        return add(posix.join(resolveLink(prefix, n.target), ...parts.slice(i)), why, depth + 1);
      }
    }
    const n = tree.get(path);
    if (n === undefined) throw new Error(`${path} (${why}) is in none of the pinned packages ${debs.map((d) => d.pin.name).join(', ')}`);
    take.set(path, n);
    return n.type === 'file' ? path : add(resolveLink(path, n.target), why, depth + 1);
  };
  const libraries = (elf: string, from: string): void => {
    for (const soname of readElf(elf).needed) {
      if (soname.includes('/')) throw new Error(`${from} needs ${soname}, a path: not looked up`);
      const dir = searchDirs.find((d) => tree.has(`${d}/${soname}`));
      if (dir === undefined) throw new Error(`${from} needs ${soname}, which none of the pinned packages ${debs.map((d) => d.pin.name).join(', ')} ships in ${searchDirs.join(', ')}`);
      const had = take.has(`${dir}/${soname}`);
      const real = add(`${dir}/${soname}`, `needed by ${from}`);
      if (!had) libraries((take.get(real) as { source: string }).source, real);
    }
  };
  const interp = readElf(nodeBinary).interpreter;
  if (interp !== undefined) add(interp.replace(/^\/+/, ''), 'node\'s program interpreter');
  libraries(nodeBinary, 'node');
  for (const f of RUNTIME_EXTRA_FILES) add(f, 'RUNTIME_EXTRA_FILES');
  const used = new Set([...take.values()].map((n) => n.owner.pin.name));
  for (const d of debs.filter((x) => used.has(x.pin.name))) add(`usr/share/doc/${d.pin.name}/copyright`, `${d.pin.name}'s copyright`);
  const unused = debs.filter((d) => ![...take.values()].some((n) => n.owner === d));
  if (unused.length > 0) throw new Error(`pinned packages the image does not use: ${unused.map((d) => d.pin.name).join(', ')} (remove them from RUNTIME_DEBS)`);

  const entries: LayerEntry[] = [];
  const packages: RuntimeFiles['packages'] = [];
  for (const deb of debs) {
    const files: string[] = [];
    const md5Lines: string[] = [];
    for (const [path, n] of [...take].filter(([, x]) => x.owner === deb).sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (n.type === 'symlink') {
        entries.push({ path, type: 'symlink', target: n.target });
        continue;
      }
      const md5 = deb.md5sums.get(path);
      const actual = createHash('md5').update(readFileSync(n.source)).digest('hex');
      if (md5 === undefined || md5 !== actual) throw new Error(`${deb.pin.name}: ${path} has md5 ${actual}; its md5sums says ${md5 ?? 'nothing'}`);
      entries.push({ path, type: 'file', mode: n.mode, source: n.source });
      files.push(path);
      md5Lines.push(`${md5}  ${path}\n`);
    }
    entries.push({ path: `var/lib/dpkg/status.d/${deb.pin.name}`, type: 'file', data: deb.control });
    entries.push({ path: `var/lib/dpkg/status.d/${deb.pin.name}.md5sums`, type: 'file', data: md5Lines.join('') });
    packages.push({ name: deb.pin.name, version: deb.pin.version, files });
  }
  return { entries, packages };
}

/** A symlink's target as a path from the root (relative targets from the link's folder). */
function resolveLink(link: string, target: string): string {
  const p = target.startsWith('/') ? posix.normalize(target).replace(/^\/+/, '') : posix.normalize(posix.join(posix.dirname(link), target));
  if (p.startsWith('../') || p === '..') throw new Error(`${link} -> ${target} leaves the root`);
  return p;
}

/** The runtime of this machine's architecture: the pinned packages fetched, checked and unpacked, and their files for node. */
export async function operatorRuntime(nodeBinary: string, arch: string = process.arch): Promise<RuntimeFiles & { debs: UnpackedDeb[] }> {
  const debArch = debianArch(arch);
  const pins = runtimePins(debArch);
  const debs: UnpackedDeb[] = [];
  for (const pin of pins) debs.push(readUnpacked(pin, await unpackDeb(await fetchDeb(pin, debArch))));
  return { ...runtimeFiles(nodeBinary, debs, debArch), debs };
}

// ---------------------------------------------------------------------------------------------------------
// Updating the pins

/** The pins for what this machine's apt serves now (Debian 12 only), and the node tarball's integrity for package-lock.json's node. */
async function currentPins(): Promise<string> {
  const osRelease = readFileSync('/etc/os-release', 'utf8');
  if (!new RegExp(`^VERSION_CODENAME=${DEBIAN_RELEASE.codename}$`, 'm').test(osRelease)) throw new Error(`pins are made on Debian ${DEBIAN_RELEASE.versionId} (${DEBIAN_RELEASE.codename}), the base image's release: this machine's /etc/os-release says otherwise`);
  const debArch = debianArch();
  const lines: string[] = [`  ${debArch}: [`];
  const work = join(imageCache(), 'debs', `pins-${process.pid}`);
  mkdirSync(work, { recursive: true });
  try {
    for (const pin of runtimePins(debArch)) {
      const policy = await run('apt-cache', ['policy', pin.name], work);
      const candidate = /Candidate: (\S+)/.exec(policy)?.[1];
      if (candidate === undefined || !PIN_VERSION.test(candidate)) throw new Error(`apt-cache policy ${pin.name}: no candidate`);
      await run('apt-get', ['download', `${pin.name}:${debArch}=${candidate}`], work);
      const deb = readdirSync(work).find((f) => f.startsWith(`${pin.name}_`) && f.endsWith('.deb'))!;
      const sha = await hashFile(join(work, deb), 'sha256', 'hex');
      rmSync(join(work, deb));
      lines.push(`    { name: '${pin.name}', version: '${candidate}', sha256: '${sha}' },`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  lines.push('  ],');
  const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  const version = lock.packages['node_modules/node']?.version;
  const view = JSON.parse(await run('npm', ['view', `node-linux-${process.arch}@${version}`, 'dist.integrity', '--json'], REPO_ROOT)) as string;
  lines.push(`NODE_TARBALLS ${process.arch}: { version: '${version}', integrity: '${view}' }`);
  return lines.join('\n');
}

if (import.meta.main) {
  const cmd = process.argv[2];
  if (cmd !== 'pins' && cmd !== 'apt-args') {
    process.stderr.write('usage: node e2e/cluster/runtime-packages.ts pins|apt-args\n  pins      the pins for what this Debian 12 machine\'s apt serves now\n  apt-args  the `apt-get download` arguments of this architecture\'s pins, one a line\n');
    process.exit(2);
  }
  try {
    const arch = debianArch();
    process.stdout.write(cmd === 'pins' ? `${await currentPins()}\n` : aptDownloadArgs(runtimePins(arch)).map((a) => `${a.replace('=', `:${arch}=`)}\n`).join(''));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  }
}
