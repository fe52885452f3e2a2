// The operator image's runtime from pinned packages (e2e/cluster/runtime-packages.ts) fails closed: a library no
// pinned package ships, a pinned package the image would not use, a file whose md5 is not its package's, a .deb
// whose sha256 is not the pin's. The real pinned packages are fetched once into the image cache (apt-get download);
// dockerfiles.test.ts checks what the image then holds.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockedNodeVersion } from '../../e2e/cluster/operator-image.ts';
import { aptDownloadArgs, debianArch, fetchDeb, fetchNodeBinary, readElf, readUnpacked, runtimeFiles, runtimePins, unpackDeb, type UnpackedDeb } from '../../e2e/cluster/runtime-packages.ts';

describe('the runtime from pinned packages fails closed', () => {
  const arch = debianArch();
  let node: string;
  let debs: UnpackedDeb[];
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'auo-runtime-'));
    node = await fetchNodeBinary(lockedNodeVersion());
    debs = [];
    for (const pin of runtimePins(arch)) debs.push(readUnpacked(pin, await unpackDeb(await fetchDeb(pin, arch))));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('the pinned packages give node everything it needs: the loader, libc, libstdc++, libgcc_s', () => {
    const r = runtimeFiles(node, debs, arch);
    const all = r.packages.flatMap((p) => p.files);
    for (const lib of ['libc.so.6', 'libm.so.6', 'libgcc_s.so.1', 'libstdc++.so.6.0.30', 'ld-linux-x86-64.so.2']) assert.ok(all.some((f) => f.endsWith(`/${lib}`)), lib);
    assert.ok(readElf(node).needed.includes('libstdc++.so.6'));
  });

  it('a library none of the pinned packages ships is an error naming it', () => {
    assert.throws(() => runtimeFiles(node, debs.filter((d) => d.pin.name !== 'libstdc++6'), arch), /needs libstdc\+\+\.so\.6, which none of the pinned packages/);
  });

  it('a pinned package the image would not use is an error naming it', () => {
    const fake = join(dir, 'fake');
    mkdirSync(join(fake, 'DEBIAN'), { recursive: true });
    mkdirSync(join(fake, 'usr', 'share', 'fake'), { recursive: true });
    writeFileSync(join(fake, 'DEBIAN', 'control'), 'Package: fake\nVersion: 1.0\nArchitecture: amd64\n');
    writeFileSync(join(fake, 'DEBIAN', 'md5sums'), '');
    writeFileSync(join(fake, 'usr', 'share', 'fake', 'x'), 'x');
    const extra = readUnpacked({ name: 'fake', version: '1.0', sha256: '0'.repeat(64) }, fake);
    assert.throws(() => runtimeFiles(node, [...debs, extra], arch), /pinned packages the image does not use: fake/);
  });

  it('a file whose md5 is not the one its package\'s md5sums gives is an error', () => {
    const gcc = debs.find((d) => d.pin.name === 'libgcc-s1')!;
    const copy = join(dir, 'libgcc-s1');
    cpSync(gcc.dir, copy, { recursive: true, verbatimSymlinks: true });
    const sums = join(copy, 'DEBIAN', 'md5sums');
    writeFileSync(sums, readFileSync(sums, 'utf8').replace(/^[0-9a-f]{32}(?= {2}lib\/)/m, 'f'.repeat(32)));
    const changed = debs.map((d) => (d === gcc ? readUnpacked(d.pin, copy) : d));
    assert.throws(() => runtimeFiles(node, changed, arch), /libgcc-s1: lib\/x86_64-linux-gnu\/libgcc_s\.so\.1 has md5 [0-9a-f]{32}; its md5sums says f{32}/);
  });

  it('a .deb whose sha256 is not the pin\'s is refused; a pin that is not a plain name and version reaches no command', async () => {
    const pin = runtimePins(arch).find((p) => p.name === 'libgcc-s1')!;
    await fetchDeb(pin, arch);
    await assert.rejects(fetchDeb({ ...pin, sha256: 'a'.repeat(64) }, arch), /has sha256 [0-9a-f]{64}, not the pinned a{64}/);
    assert.throws(() => aptDownloadArgs([{ ...pin, name: 'libc6 --allow-unauthenticated' }]), /bad package pin/);
    assert.throws(() => aptDownloadArgs([{ ...pin, version: '1;rm -rf /' }]), /bad package pin/);
    assert.throws(() => readElf(join(debs[0]!.dir, 'DEBIAN', 'control')), /not a 64-bit little-endian ELF/);
  });
});
