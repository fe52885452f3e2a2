// The image library of the nodes mode (e2e/cluster/images.ts), without containerd: the OCI layout read back
// byte by byte, digests reproducible, the cache and its lock. Importing and running the images in a real
// containerd is e2e/images.e2e.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { buildImage, indexedManifest, isDynamicElf, readTar, readTarEntry, sanitiseName, tarHeader, goArch, type ImageSpec, type TarEntry } from '../../e2e/cluster/images.ts';

const sha = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

interface Descriptor { mediaType: string; digest: string; size: number; annotations?: Record<string, string>; platform?: { os: string; architecture: string } }

let dir: string;
let savedCache: string | undefined;
const useCache = (name: string): string => (process.env.AUO_IMAGE_CACHE = join(dir, name));

function entry(entries: TarEntry[], name: string): TarEntry {
  const e = entries.find((x) => x.name === name);
  assert.ok(e, `${name} in ${entries.map((x) => x.name).join(', ')}`);
  return e;
}

const LONG = `opt/${'a'.repeat(60)}/${'b'.repeat(60)}/file.txt`;

function spec(binaryPath: string, name = 'example.test/tiny:v1'): ImageSpec {
  return {
    name,
    entries: [
      { path: 'usr/local/bin/tool', type: 'file', mode: 0o755, source: binaryPath },
      { path: '/etc/passwd', type: 'file', data: 'root:x:0:0:root:/root:/bin/sh\n' },
      { path: 'bin/tool', type: 'symlink', target: '../usr/local/bin/tool' },
      { path: 'tmp', type: 'dir', mode: 0o1777 },
      { path: LONG, type: 'file', data: 'deep\n' },
    ],
    entrypoint: ['/usr/local/bin/tool'],
    cmd: ['--help'],
  };
}

describe('image library: OCI image-layout tars without a registry', () => {
  let bin: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'auo-images-test-'));
    savedCache = process.env.AUO_IMAGE_CACHE;
    bin = join(dir, 'tool');
    writeFileSync(bin, Buffer.concat([Buffer.from('#!/bin/sh\necho tool\n'), Buffer.alloc(5000, 7)]));
    chmodSync(bin, 0o755);
  });
  after(() => {
    if (savedCache === undefined) delete process.env.AUO_IMAGE_CACHE;
    else process.env.AUO_IMAGE_CACHE = savedCache;
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes a layout whose index, manifest, config and layer name each other by the sha256 of their bytes', async () => {
    useCache('a');
    const img = await buildImage(spec(bin));
    assert.equal(img.built, true);
    assert.equal(sanitiseName('example.test/tiny:v1'), 'example.test_tiny_v1');
    assert.match(basename(img.path), /^example\.test_tiny_v1-[0-9a-f]{64}\.tar$/);
    const outer = readTar(img.path);
    const blob = (digest: string): Buffer => readTarEntry(img.path, entry(outer, `blobs/sha256/${digest.slice('sha256:'.length)}`));

    assert.deepEqual(JSON.parse(readTarEntry(img.path, entry(outer, 'oci-layout')).toString()), { imageLayoutVersion: '1.0.0' });
    const index = JSON.parse(readTarEntry(img.path, entry(outer, 'index.json')).toString()) as { schemaVersion: number; manifests: Descriptor[] };
    assert.equal(index.schemaVersion, 2);
    assert.equal(index.manifests.length, 1);
    const m = index.manifests[0]!;
    assert.equal(m.digest, img.manifestDigest);
    assert.equal(m.mediaType, 'application/vnd.oci.image.manifest.v1+json');
    assert.deepEqual(m.annotations, { 'io.containerd.image.name': 'example.test/tiny:v1', 'org.opencontainers.image.ref.name': 'v1' });
    assert.deepEqual(m.platform, { os: 'linux', architecture: goArch() });

    const manifestBytes = blob(m.digest);
    assert.equal(sha(manifestBytes), m.digest);
    assert.equal(manifestBytes.length, m.size);
    const manifest = JSON.parse(manifestBytes.toString()) as { schemaVersion: number; config: Descriptor; layers: Descriptor[] };
    assert.equal(manifest.config.mediaType, 'application/vnd.oci.image.config.v1+json');
    assert.equal(manifest.layers.length, 1);
    assert.equal(manifest.layers[0]!.mediaType, 'application/vnd.oci.image.layer.v1.tar');

    const configBytes = blob(manifest.config.digest);
    assert.equal(sha(configBytes), manifest.config.digest);
    assert.equal(configBytes.length, manifest.config.size);
    const config = JSON.parse(configBytes.toString()) as { os: string; architecture: string; config: { Entrypoint: string[]; Cmd: string[]; Env: string[] }; rootfs: { type: string; diff_ids: string[] } };
    assert.equal(config.os, 'linux');
    assert.equal(config.architecture, goArch());
    assert.deepEqual(config.config.Entrypoint, ['/usr/local/bin/tool']);
    assert.deepEqual(config.config.Cmd, ['--help']);
    assert.ok(config.config.Env.some((e) => e.startsWith('PATH=') && e.includes('/usr/local/bin')));

    const layer = manifest.layers[0]!;
    const layerBytes = blob(layer.digest);
    assert.equal(sha(layerBytes), layer.digest);
    assert.equal(layerBytes.length, layer.size);
    assert.equal(img.bytes, layer.size);
    // Uncompressed, so the diff_id (digest of the uncompressed layer) is the layer's own digest.
    assert.deepEqual(config.rootfs, { type: 'layers', diff_ids: [layer.digest] });

    // The layer read back: sorted, parents first, owner 0:0, mtime 0, modes and contents as given.
    const layerPath = join(dir, 'layer.tar');
    writeFileSync(layerPath, layerBytes);
    const files = readTar(layerPath);
    assert.deepEqual(files.map((f) => f.name), ['bin/', 'bin/tool', 'etc/', 'etc/passwd', 'opt/', `opt/${'a'.repeat(60)}/`, `opt/${'a'.repeat(60)}/${'b'.repeat(60)}/`, LONG, 'tmp/', 'usr/', 'usr/local/', 'usr/local/bin/', 'usr/local/bin/tool']);
    assert.deepEqual(readTarEntry(layerPath, entry(files, 'usr/local/bin/tool')), readFileSync(bin));
    assert.equal(entry(files, 'usr/local/bin/tool').mode, 0o755);
    assert.equal(entry(files, 'etc/passwd').mode, 0o644);
    assert.equal(entry(files, 'tmp/').mode, 0o1777);
    assert.equal(entry(files, 'bin/tool').type, '2');
    assert.equal(entry(files, 'bin/tool').linkname, '../usr/local/bin/tool');
    assert.equal(readTarEntry(layerPath, entry(files, LONG)).toString(), 'deep\n');
    // A foreign reader agrees (GNU tar): owner, times and the long name split into the ustar prefix.
    const listing = execFileSync('tar', ['--numeric-owner', '--full-time', '-tvf', layerPath], { encoding: 'utf8', env: { ...process.env, TZ: 'UTC' } });
    assert.match(listing, new RegExp(`^-rw-r--r-- 0/0 +5 1970-01-01 00:00:00 ${LONG}$`, 'm'));
    assert.match(listing, /^lrwxrwxrwx 0\/0 +0 1970-01-01 00:00:00 bin\/tool -> \.\.\/usr\/local\/bin\/tool$/m);
    assert.match(listing, /^-rwxr-xr-x 0\/0 +5020 1970-01-01 00:00:00 usr\/local\/bin\/tool$/m);
  });

  it('gives the same bytes for the same inputs, in another cache and at another file time', async () => {
    useCache('a');
    const first = await buildImage(spec(bin));
    useCache('b');
    const copy = join(dir, 'tool-copy');
    writeFileSync(copy, readFileSync(bin));
    chmodSync(copy, 0o755);
    const second = await buildImage(spec(copy));
    assert.equal(second.built, true, 'a new cache: built again');
    assert.equal(second.manifestDigest, first.manifestDigest);
    assert.equal(basename(second.path), basename(first.path), 'the cache key is the content, not the path');
    assert.deepEqual(readFileSync(second.path), readFileSync(first.path));
  });

  it('returns a cached tar without rebuilding, and a new one when a file or the name changes', async () => {
    useCache('a');
    const first = await buildImage(spec(bin));
    const mtime = statSync(first.path).mtimeMs;
    const hit = await buildImage(spec(bin));
    assert.equal(hit.built, false);
    assert.equal(hit.path, first.path);
    assert.equal(hit.manifestDigest, first.manifestDigest, 'read back from the cached index.json');
    assert.equal(hit.bytes, first.bytes);
    assert.equal(statSync(first.path).mtimeMs, mtime, 'not rewritten');

    const renamed = await buildImage(spec(bin, 'example.test/tiny:v2'));
    assert.equal(renamed.built, true);
    assert.notEqual(renamed.path, first.path, 'the name is in the key: its own tar');
    assert.equal(renamed.manifestDigest, first.manifestDigest, 'the name is only in index.json: the manifest is the same');
    assert.equal(indexedManifest(renamed.path, 'example.test/tiny:v2'), first.manifestDigest);
    assert.throws(() => indexedManifest(renamed.path, 'example.test/tiny:v1'), /names no manifest for example\.test\/tiny:v1/);

    const changed = join(dir, 'tool-changed');
    writeFileSync(changed, Buffer.concat([readFileSync(bin), Buffer.from('x')]));
    const other = await buildImage(spec(changed));
    assert.equal(other.built, true);
    assert.notEqual(other.path, first.path);
    assert.notEqual(other.manifestDigest, first.manifestDigest);
    assert.deepEqual(readdirSync(process.env.AUO_IMAGE_CACHE!).filter((f) => f.includes('.tmp-')), [], 'no temporary file left');
  });

  it('builds once for concurrent callers in one process', async () => {
    useCache('c');
    const [a, b] = await Promise.all([buildImage(spec(bin)), buildImage(spec(bin))]);
    assert.equal(a, b, 'the same build');
    assert.equal(a.built, true);
  });

  it('waits for another process that holds the image\'s lock, then finds its work', async () => {
    useCache('a');
    const known = await buildImage(spec(bin));
    const cache = useCache('d');
    execFileSync('mkdir', ['-p', cache]);
    const lock = join(cache, `.lock-${basename(known.path, '.tar')}`);
    // Another builder: holds the lock, copies the finished tar in, then lets go.
    const holder = spawn('flock', ['-x', lock, 'sh', '-c', 'echo held; read _; cp "$0" "$1"', known.path, join(cache, basename(known.path))], { stdio: ['pipe', 'pipe', 'inherit'] });
    await new Promise<void>((r) => holder.stdout.once('data', () => r()));
    let done = false;
    const p = buildImage(spec(bin)).then((r) => ((done = true), r));
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(done, false, 'still waiting for the lock');
    holder.stdin.end('go\n');
    const r = await p;
    assert.equal(r.built, false, 'the other process built it');
    assert.equal(r.manifestDigest, known.manifestDigest);
  });

  it('refuses what a ustar header cannot hold, and duplicates', async () => {
    assert.throws(() => tarHeader('x'.repeat(101), { type: 'file', mode: 0o644, size: 0 }), /too long/);
    assert.throws(() => tarHeader(`${'p'.repeat(160)}/name`, { type: 'file', mode: 0o644, size: 0 }), /too long/);
    assert.equal(tarHeader(`${'p'.repeat(150)}/name`, { type: 'file', mode: 0o644, size: 0 }).subarray(345, 495).toString(), 'p'.repeat(150));
    useCache('e');
    await assert.rejects(buildImage({ name: 'example.test/dup:v1', entries: [{ path: 'a', type: 'file', data: '1' }, { path: '/a', type: 'file', data: '2' }] }), /a appears twice/);
    await assert.rejects(buildImage({ name: 'example.test/under:v1', entries: [{ path: 'a', type: 'file', data: '1' }, { path: 'a/b', type: 'file', data: '2' }] }), /a is a file/);
    await assert.rejects(buildImage({ name: 'example.test/escape:v1', entries: [{ path: '../etc/x', type: 'file', data: '1' }] }), /bad path/);
  });

  it('tells a static ELF from a dynamic one by its PT_INTERP header', () => {
    const elf = (types: number[]): string => {
      const b = Buffer.alloc(64 + types.length * 56);
      b.writeUInt32BE(0x7f454c46, 0);
      b[4] = 2; // 64-bit
      b[5] = 1; // little-endian
      b.writeBigUInt64LE(64n, 0x20);
      b.writeUInt16LE(56, 0x36);
      b.writeUInt16LE(types.length, 0x38);
      types.forEach((t, i) => b.writeUInt32LE(t, 64 + i * 56));
      const p = join(dir, `elf-${types.join('-')}`);
      writeFileSync(p, b);
      return p;
    };
    assert.equal(isDynamicElf(elf([6, 1, 1])), false, 'PT_PHDR and PT_LOAD only: static');
    assert.equal(isDynamicElf(elf([6, 3, 1])), true, 'PT_INTERP: dynamic');
    assert.equal(isDynamicElf(process.execPath), true, 'node itself is dynamically linked');
    const notElf = join(dir, 'script');
    writeFileSync(notElf, '#!/bin/sh\n'.padEnd(80, ' '));
    assert.throws(() => isDynamicElf(notElf), /not an ELF/);
  });
});
