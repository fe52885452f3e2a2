/**
 * May the fleet go back from the new version to the old one? The proxy routes requests; it never
 * converts stored objects. storageVersionHash (legacy discovery) fingerprints the version a server
 * writes to etcd for a group/resource. Where the new servers write a different storage version
 * than the old servers, objects written during the upgrade may be unreadable by the old binary:
 * rolling back is refused and each such resource is named.
 *
 * Resources only the new servers serve are a warning (`orphaned`), not a block: after a rollback
 * the old servers simply do not serve them, and their objects stay in etcd untouched.
 */

import { storageVersionHash } from './keys.ts';

/** One server's `group/version/resource` -> storageVersionHash map (see discovery.storageVersionHashes). */
export interface ServerStorageHashes {
  server: string;
  hashes: ReadonlyMap<string, string>;
  /** `group/version/resource` -> kind; lets a changed hash be decoded into the version it stands for. */
  kinds?: ReadonlyMap<string, string>;
}

export interface BlockingResource {
  /** `group/resource`; the core group is empty: `/pods`. */
  resource: string;
  oldHash: string;
  newHash: string;
  oldVersions: string[];
  newVersions: string[];
  reason: string;
}

export type RollbackWarningKind = 'orphaned' | 'inconsistentOld' | 'inconsistentNew' | 'storageMoved';

export interface RollbackWarning {
  resource: string;
  kind: RollbackWarningKind;
  reason: string;
}

export interface RollbackSafety {
  /** `unknown` when there is nothing to compare (no old or no new servers' hashes). */
  verdict: 'safe' | 'unsafe' | 'unknown';
  safe: boolean;
  blocking: BlockingResource[];
  warnings: RollbackWarning[];
  reason: string;
}

interface GroupResourceView {
  hashes: Set<string>;
  versions: Set<string>;
  servers: Set<string>;
}

/** Collapses `group/version/resource` keys to `group/resource`, collecting hashes and served versions. */
function byGroupResource(servers: readonly ServerStorageHashes[]): Map<string, GroupResourceView> {
  const out = new Map<string, GroupResourceView>();
  for (const { server, hashes } of servers) {
    for (const [gvr, hash] of hashes) {
      const [group = '', version = '', resource = ''] = gvr.split('/');
      const gr = `${group}/${resource}`;
      let view = out.get(gr);
      if (!view) {
        view = { hashes: new Set(), versions: new Set(), servers: new Set() };
        out.set(gr, view);
      }
      view.hashes.add(hash);
      view.versions.add(version);
      view.servers.add(server);
    }
  }
  return out;
}

const list = (s: Set<string>) => [...s].sort();

/** The version whose storageVersionHash is `hash`, among the versions seen for `gr`, if any. */
function decodeStorageVersion(gr: string, hash: string, servers: readonly ServerStorageHashes[], versions: ReadonlySet<string>): string | undefined {
  const [group = '', resource = ''] = gr.split('/');
  let kind: string | undefined;
  for (const s of servers) {
    for (const v of versions) kind ??= s.kinds?.get(`${group}/${v}/${resource}`);
  }
  if (kind === undefined) return undefined;
  return [...versions].find((v) => storageVersionHash(group, v, kind) === hash);
}

function safeReason(warnings: readonly RollbackWarning[]): string {
  const moved = warnings.filter((w) => w.kind === 'storageMoved').map((w) => w.resource);
  return moved.length === 0
    ? 'every resource the new servers store is stored at the same version by the old servers'
    : `the old servers can read everything the new servers store; ${moved.join(', ')} moved to a storage version the old version serves`;
}

export function rollbackSafety(oldServers: readonly ServerStorageHashes[], newServers: readonly ServerStorageHashes[]): RollbackSafety {
  const oldView = byGroupResource(oldServers);
  const newView = byGroupResource(newServers);
  if (oldView.size === 0 || newView.size === 0) {
    const missing = oldView.size === 0 ? 'old' : 'new';
    return { verdict: 'unknown', safe: false, blocking: [], warnings: [], reason: `no storage version hashes from ${missing}-version servers to compare` };
  }

  const blocking: BlockingResource[] = [];
  const warnings: RollbackWarning[] = [];
  for (const [gr, view] of [...oldView].sort(([a], [b]) => a.localeCompare(b))) {
    if (view.hashes.size > 1) warnings.push({ resource: gr, kind: 'inconsistentOld', reason: `old-version servers disagree on the storage version of ${gr} (hashes ${list(view.hashes).join(', ')})` });
  }
  for (const [gr, view] of [...newView].sort(([a], [b]) => a.localeCompare(b))) {
    if (view.hashes.size > 1) warnings.push({ resource: gr, kind: 'inconsistentNew', reason: `new-version servers disagree on the storage version of ${gr} (hashes ${list(view.hashes).join(', ')})` });
    const old = oldView.get(gr);
    if (!old) {
      warnings.push({
        resource: gr,
        kind: 'orphaned',
        reason: `${gr} is served only by the new version (${list(view.versions).join(', ')}); after a rollback its stored objects stay in etcd but no server serves them`,
      });
      continue;
    }
    const changed = list(view.hashes).filter((h) => !old.hashes.has(h));
    if (changed.length === 0) continue;
    // A changed hash is not yet a problem: if it decodes to a version the old servers serve, they read
    // those objects (an apiserver decodes any version it serves from storage). Only an unknown or
    // unserved storage version blocks.
    const decoded = changed.map((h) => decodeStorageVersion(gr, h, [...oldServers, ...newServers], new Set([...old.versions, ...view.versions])));
    if (decoded.every((v) => v !== undefined && old.versions.has(v))) {
      warnings.push({
        resource: gr,
        kind: 'storageMoved',
        reason: `new-version servers store ${gr} as ${decoded.join(', ')}, which the old version serves and reads; objects written since stay readable after a rollback`,
      });
      continue;
    }
    const oldHash = list(old.hashes).join(',');
    const newHash = changed.join(',');
    blocking.push({
      resource: gr,
      oldHash,
      newHash,
      oldVersions: list(old.versions),
      newVersions: list(view.versions),
      reason:
        `new-version servers store ${gr} as a different version (storageVersionHash ${oldHash} -> ${newHash}); ` +
        `objects they wrote may not be readable by the old version (serves ${list(old.versions).join(', ')}) — ` +
        `migrate them back to the old storage version before rolling back`,
    });
  }
  const safe = blocking.length === 0;
  return {
    verdict: safe ? 'safe' : 'unsafe',
    safe,
    blocking,
    warnings,
    reason: safe ? safeReason(warnings) : `rollback blocked by ${blocking.map((b) => b.resource).join(', ')}`,
  };
}
