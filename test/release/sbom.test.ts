// sbomCoverage: every regular file of the release image is in its SBOM with its sha256 and held by a package
// (scripts/release/sbom.ts). The documents here have the shape syft's SPDX JSON has (a root that DESCRIBES the image
// and CONTAINS every file, packages that CONTAIN their dpkg files or are evident by a file); imageFiles reads a real tar.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildImage } from '../../e2e/cluster/images.ts';
import { imageFiles, sbomCoverage, type ImageFile, type SpdxDocument } from '../../scripts/release/sbom.ts';

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const file = (path: string): ImageFile => ({ path, sha256: sha(path) });

/** A document like syft's: the root image, then packages holding files by CONTAINS or evident-by. */
function doc(listed: string[], held: { pkg: string; contains?: string[]; evidentBy?: string[] }[], digests: Record<string, string> = {}): SpdxDocument {
  const id = (p: string): string => `SPDXRef-File-${p.replace(/[^A-Za-z0-9.-]/g, '-')}`;
  const root = 'SPDXRef-DocumentRoot-Image-x';
  return {
    spdxVersion: 'SPDX-2.3',
    packages: [{ SPDXID: root, name: 'x.tar' }, ...held.map((h) => ({ SPDXID: `SPDXRef-Package-${h.pkg}`, name: h.pkg, versionInfo: '1' }))],
    files: listed.map((p) => ({ SPDXID: id(p), fileName: p, checksums: [{ algorithm: 'SHA256', checksumValue: digests[p] ?? sha(p.replace(/^\//, '')) }] })),
    relationships: [
      { spdxElementId: 'SPDXRef-DOCUMENT', relationshipType: 'DESCRIBES', relatedSpdxElement: root },
      ...listed.map((p) => ({ spdxElementId: root, relationshipType: 'CONTAINS', relatedSpdxElement: id(p) })),
      ...held.flatMap((h) => [
        ...(h.contains ?? []).map((p) => ({ spdxElementId: `SPDXRef-Package-${h.pkg}`, relationshipType: 'CONTAINS', relatedSpdxElement: id(p) })),
        ...(h.evidentBy ?? []).map((p) => ({ spdxElementId: `SPDXRef-Package-${h.pkg}`, relationshipType: 'OTHER', relatedSpdxElement: id(p), comment: 'evident-by: indicates the package\'s existence is evident by the given file' })),
      ]),
    ],
  };
}

const IMAGE = [
  'lib/x86_64-linux-gnu/libc.so.6', 'var/lib/dpkg/status.d/libc6', 'usr/local/bin/node', 'etc/passwd',
  'app/package.json', 'app/dist/main.js', 'app/node_modules/.package-lock.json',
  'app/node_modules/yaml/package.json', 'app/node_modules/yaml/dist/index.js',
  'app/node_modules/@colors/colors/package.json', 'app/node_modules/@colors/colors/lib/index.js',
  'app/node_modules/logform/package.json', 'app/node_modules/logform/node_modules/ms/package.json', 'app/node_modules/logform/node_modules/ms/index.js',
].map(file);
const HELD = [
  { pkg: 'libc6', contains: ['lib/x86_64-linux-gnu/libc.so.6'], evidentBy: ['var/lib/dpkg/status.d/libc6'] },
  { pkg: 'node', evidentBy: ['usr/local/bin/node'] },
  ...['app', 'app/node_modules/yaml', 'app/node_modules/@colors/colors', 'app/node_modules/logform', 'app/node_modules/logform/node_modules/ms'].map((d) => ({ pkg: d, evidentBy: [`${d}/package.json`] })),
];
const ALL = IMAGE.map((f) => f.path);

test('every file listed with its sha256 and held by a package (dpkg CONTAINS, evident-by, an npm package\'s folder), the builder\'s own files listed: covered', () => {
  assert.deepEqual(sbomCoverage(IMAGE, doc(ALL, HELD), ['etc/passwd']), []);
  // Leading slashes (syft writes either form) are the same path.
  assert.deepEqual(sbomCoverage(IMAGE, doc(ALL.map((p) => `/${p}`), HELD.map((h) => ({ ...h, contains: h.contains?.map((p) => `/${p}`), evidentBy: h.evidentBy.map((p) => `/${p}`) }))), ['/etc/passwd']), []);
});

test('a file the SBOM does not list, or lists with another sha256, is named', () => {
  assert.deepEqual(sbomCoverage(IMAGE, doc(ALL.filter((p) => p !== 'usr/local/bin/node'), HELD), ['etc/passwd']), ['/usr/local/bin/node: not in the SBOM']);
  const other = sha('another file');
  assert.deepEqual(sbomCoverage(IMAGE, doc(ALL, HELD, { 'lib/x86_64-linux-gnu/libc.so.6': other }), ['etc/passwd']), [`/lib/x86_64-linux-gnu/libc.so.6: the SBOM lists it with sha256 ${other}, the image's is ${sha('lib/x86_64-linux-gnu/libc.so.6')}`]);
});

test('a listed file no package holds is named: a library copied without its package (only the root image CONTAINS it), the builder\'s own files unless named', () => {
  const noDeb = HELD.filter((h) => h.pkg !== 'libc6');
  assert.deepEqual(sbomCoverage(IMAGE, doc(ALL, noDeb), ['etc/passwd']), [
    '/lib/x86_64-linux-gnu/libc.so.6: listed, but no package in the SBOM holds it',
    '/var/lib/dpkg/status.d/libc6: listed, but no package in the SBOM holds it',
  ]);
  assert.deepEqual(sbomCoverage(IMAGE, doc(ALL, HELD), []), ['/etc/passwd: listed, but no package in the SBOM holds it']);
});

test('a file in node_modules/<package>/ is held only by that package (or one below it): not by the app around it', () => {
  const noMs = HELD.filter((h) => h.pkg !== 'app/node_modules/logform/node_modules/ms');
  assert.deepEqual(sbomCoverage(IMAGE, doc(ALL, noMs), ['etc/passwd']), [
    '/app/node_modules/logform/node_modules/ms/package.json: listed, but no package in the SBOM holds it',
    '/app/node_modules/logform/node_modules/ms/index.js: listed, but no package in the SBOM holds it',
  ]);
  const noScoped = HELD.filter((h) => h.pkg !== 'app/node_modules/@colors/colors');
  assert.deepEqual(sbomCoverage(IMAGE, doc(ALL, noScoped), ['etc/passwd']), [
    '/app/node_modules/@colors/colors/package.json: listed, but no package in the SBOM holds it',
    '/app/node_modules/@colors/colors/lib/index.js: listed, but no package in the SBOM holds it',
  ]);
  // Without the app's own package.json as evidence, dist/ and node_modules/.package-lock.json belong to nothing.
  const noApp = HELD.filter((h) => h.pkg !== 'app');
  assert.deepEqual(sbomCoverage(IMAGE, doc(ALL, noApp), ['etc/passwd']), [
    '/app/package.json: listed, but no package in the SBOM holds it',
    '/app/dist/main.js: listed, but no package in the SBOM holds it',
    '/app/node_modules/.package-lock.json: listed, but no package in the SBOM holds it',
  ]);
});

test('imageFiles: the regular files of an image tar written by images.ts, with their sha256 (folders and symlinks left out)', async () => {
  const cache = mkdtempSync(join(tmpdir(), 'auo-sbom-'));
  const was = process.env.AUO_IMAGE_CACHE;
  process.env.AUO_IMAGE_CACHE = cache;
  try {
    const img = await buildImage({ name: 'registry.test/files:1', entries: [
      { path: 'usr/bin/a', type: 'file', mode: 0o755, data: 'a\n' },
      { path: 'usr/bin/b', type: 'symlink', target: 'a' },
      { path: 'etc/empty', type: 'file', data: '' },
      { path: 'tmp', type: 'dir', mode: 0o1777 },
    ] });
    assert.deepEqual(await imageFiles(img.path), [{ path: 'etc/empty', sha256: sha('') }, { path: 'usr/bin/a', sha256: sha('a\n') }]);
  } finally {
    if (was === undefined) delete process.env.AUO_IMAGE_CACHE;
    else process.env.AUO_IMAGE_CACHE = was;
    rmSync(cache, { recursive: true, force: true });
  }
});
