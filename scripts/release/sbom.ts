// The release's SBOM covers every file of the image: sbomCoverage (pure) holds each regular file of the image's
// layers against the SPDX document syft wrote, and imageFiles reads those files, with their sha256, from the image's
// OCI tar. scripts/release.ts refuses to push an image whose SBOM misses a file; e2e/extended/release.e2e.ts checks
// the published SBOM the same way; test/release/sbom.test.ts tests sbomCoverage.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { posix } from 'node:path';
import { readTar, readTarEntry } from '../../e2e/cluster/images.ts';

/** The parts of an SPDX 2.x JSON document the check reads. */
export interface SpdxDocument {
  spdxVersion?: unknown;
  packages?: { SPDXID?: unknown; name?: unknown; versionInfo?: unknown }[];
  files?: { SPDXID?: unknown; fileName?: unknown; checksums?: { algorithm?: unknown; checksumValue?: unknown }[] }[];
  relationships?: { spdxElementId?: unknown; relationshipType?: unknown; relatedSpdxElement?: unknown; comment?: unknown }[];
}

export interface ImageFile {
  /** Its path in the image, without a leading slash. */
  path: string;
  sha256: string;
}

const clean = (p: string): string => posix.normalize(p).replace(/^\/+/, '').replace(/^\.\//, '');

/**
 * Why each regular file of the image is not covered by the SBOM, one line per file (none: every file is). A file is
 * covered when the SBOM lists it (its fileName) with the file's sha256, and a package holds it: the package CONTAINS
 * it (dpkg's md5sums), its existence is evident by it (`OTHER` "evident-by": the node binary, an npm package's
 * package.json, a dpkg entry, a copyright), or it lies in the folder of an npm package whose package.json is such
 * evidence — the nearest such folder, and a file in a `node_modules/<package>/` folder only in that package's folder or
 * one below it, never an outer one. `own`: the files the image builder writes itself (/etc/passwd, …), which no package
 * ships: listed with their sha256, and no package needed.
 */
export function sbomCoverage(files: readonly ImageFile[], doc: SpdxDocument, own: readonly string[]): string[] {
  // The packages, less what the document DESCRIBES (syft's root: the image itself, which CONTAINS every file).
  const described = new Set((doc.relationships ?? []).filter((r) => r.relationshipType === 'DESCRIBES').map((r) => r.relatedSpdxElement));
  const packages = new Set((doc.packages ?? []).filter((p) => typeof p.SPDXID === 'string' && typeof p.name === 'string' && !described.has(p.SPDXID)).map((p) => p.SPDXID as string));
  const byId = new Map<string, string>();
  const listed = new Map<string, Set<string>>();
  for (const f of doc.files ?? []) {
    if (typeof f.SPDXID !== 'string' || typeof f.fileName !== 'string') continue;
    const path = clean(f.fileName);
    byId.set(f.SPDXID, path);
    const sums = listed.get(path) ?? new Set<string>();
    for (const c of f.checksums ?? []) if (c.algorithm === 'SHA256' && typeof c.checksumValue === 'string') sums.add(c.checksumValue.toLowerCase());
    listed.set(path, sums);
  }
  const held = new Set<string>();
  const npmFolders = new Set<string>();
  for (const r of doc.relationships ?? []) {
    if (typeof r.spdxElementId !== 'string' || !packages.has(r.spdxElementId) || typeof r.relatedSpdxElement !== 'string') continue;
    const path = byId.get(r.relatedSpdxElement);
    if (path === undefined) continue;
    const evident = r.relationshipType === 'OTHER' && typeof r.comment === 'string' && r.comment.startsWith('evident-by:');
    if (r.relationshipType !== 'CONTAINS' && !evident) continue;
    held.add(path);
    if (evident && posix.basename(path) === 'package.json') npmFolders.add(posix.dirname(path));
  }
  const ownSet = new Set(own.map(clean));
  const problems: string[] = [];
  for (const f of files) {
    const path = clean(f.path);
    const sums = listed.get(path);
    if (sums === undefined) {
      problems.push(`/${path}: not in the SBOM`);
      continue;
    }
    if (!sums.has(f.sha256)) {
      problems.push(`/${path}: the SBOM lists it with sha256 ${[...sums].join(', ') || '(none)'}, the image's is ${f.sha256}`);
      continue;
    }
    if (ownSet.has(path) || held.has(path) || inNpmPackage(path, npmFolders)) continue;
    problems.push(`/${path}: listed, but no package in the SBOM holds it`);
  }
  return problems;
}

/** Whether the nearest npm package folder above `path` is catalogued, and is not outside the node_modules/<package> folder holding it. */
function inNpmPackage(path: string, folders: ReadonlySet<string>): boolean {
  const parts = path.split('/');
  // The innermost node_modules/<name> (or node_modules/@scope/<name>) that holds the file, not the file itself.
  let innermost = 0;
  for (let i = 0; i < parts.length - 1; i++) {
    if (parts[i] !== 'node_modules') continue;
    const scoped = parts[i + 1]!.startsWith('@');
    const end = i + (scoped ? 3 : 2);
    if (end < parts.length) innermost = end;
  }
  for (let n = parts.length - 1; n >= 1; n--) {
    if (folders.has(parts.slice(0, n).join('/'))) return n >= innermost;
  }
  return false;
}

/**
 * Every regular file of an OCI image-layout tar's image (the one image its index.json names), with its sha256: the
 * layers in order (uncompressed tar layers only, as images.ts writes them), a later layer's file replacing an earlier
 * one's. Whiteouts are an error: the release's images have one layer.
 */
export async function imageFiles(tar: string): Promise<ImageFile[]> {
  const outer = readTar(tar);
  const blob = (digest: string): (typeof outer)[number] => {
    if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`${tar}: not a digest: ${JSON.stringify(digest)}`);
    const e = outer.find((x) => x.name === `blobs/sha256/${digest.slice(7)}`);
    if (e === undefined) throw new Error(`${tar} has no blob ${digest}`);
    return e;
  };
  const json = <T>(e: (typeof outer)[number]): T => JSON.parse(readTarEntry(tar, e).toString('utf8')) as T;
  const indexEntry = outer.find((x) => x.name === 'index.json');
  if (indexEntry === undefined) throw new Error(`${tar} has no index.json`);
  const index = json<{ manifests?: { digest: string }[] }>(indexEntry);
  if (index.manifests?.length !== 1) throw new Error(`${tar}: index.json names ${index.manifests?.length ?? 0} manifests, not 1`);
  const manifest = json<{ layers?: { digest: string; mediaType: string }[] }>(blob(index.manifests[0]!.digest));
  const files = new Map<string, { offset: number; size: number }>();
  for (const layer of manifest.layers ?? []) {
    if (layer.mediaType !== 'application/vnd.oci.image.layer.v1.tar') throw new Error(`${tar}: a ${layer.mediaType} layer; only uncompressed ones are read`);
    const b = blob(layer.digest);
    for (const e of readTar(tar, { offset: b.offset, size: b.size })) {
      const path = clean(e.name);
      if (posix.basename(path).startsWith('.wh.')) throw new Error(`${tar}: a whiteout, ${path}`);
      if (e.type === '0' || e.type === '\0') files.set(path, { offset: e.offset, size: e.size });
      else files.delete(path);
    }
  }
  const out: ImageFile[] = [];
  for (const [path, at] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const h = createHash('sha256');
    if (at.size > 0) for await (const chunk of createReadStream(tar, { start: at.offset, end: at.offset + at.size - 1 })) h.update(chunk as Buffer);
    out.push({ path, sha256: h.digest('hex') });
  }
  return out;
}
