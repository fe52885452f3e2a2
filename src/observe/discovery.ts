/**
 * Aggregated discovery (apidiscovery.k8s.io/v2) as sets of resources, and the convergence rule:
 * every server's peer-aggregated `/apis` equals the union of all servers' own (`profile=nopeer`)
 * sets, and servers of one version and emulated version agree on their own sets.
 *
 * Resource keys are `group/version/resource`. The core group is the empty string, so core
 * resources read `/v1/pods`: unambiguous (no API group is named ""), and splitting on `/` gives
 * the group back. Subresources are not part of the set — the proxy routes by group/version/resource.
 */

export interface APIResourceDiscovery {
  resource: string;
  responseKind?: { group?: string; version?: string; kind?: string };
  scope?: 'Cluster' | 'Namespaced' | string;
  singularResource?: string;
  verbs?: string[];
  shortNames?: string[];
  categories?: string[];
  subresources?: { subresource: string; responseKind?: { group?: string; version?: string; kind?: string }; verbs?: string[] }[];
}

export interface APIVersionDiscovery {
  version: string;
  resources?: APIResourceDiscovery[];
  /** `Stale` when an aggregated API's discovery could not be refreshed. */
  freshness?: 'Current' | 'Stale' | string;
}

export interface APIGroupDiscovery {
  metadata?: { name?: string };
  versions?: APIVersionDiscovery[];
}

/** The body of `/apis` or `/api` fetched with the v2 aggregated-discovery Accept header. */
export interface APIGroupDiscoveryList {
  kind?: string;
  apiVersion?: string;
  items?: APIGroupDiscovery[];
}

export type ResourceSet = ReadonlySet<string>;

export function resourceKey(group: string, version: string, resource: string): string {
  return `${group}/${version}/${resource}`;
}

/** The resource set of one or more documents (pass `/api` and `/apis` together for a whole server). */
export function resourceSet(...documents: readonly APIGroupDiscoveryList[]): Set<string> {
  const out = new Set<string>();
  for (const doc of documents) {
    for (const group of doc.items ?? []) {
      const groupName = group.metadata?.name ?? '';
      for (const version of group.versions ?? []) {
        for (const r of version.resources ?? []) out.add(resourceKey(groupName, version.version, r.resource));
      }
    }
  }
  return out;
}

/**
 * The resources of one or more documents whose verbs leave out `list` (create-only reviews such as
 * selfsubjectreviews): nothing of them is stored, so nothing of them can be orphaned, and listing them
 * answers 405. A resource without a verbs array counts as listable.
 */
export function unlistableResources(...documents: readonly APIGroupDiscoveryList[]): Set<string> {
  const out = new Set<string>();
  for (const doc of documents) {
    for (const group of doc.items ?? []) {
      for (const version of group.versions ?? []) {
        for (const r of version.resources ?? []) if (Array.isArray(r.verbs) && !r.verbs.includes('list')) out.add(resourceKey(group.metadata?.name ?? '', version.version, r.resource));
      }
    }
  }
  return out;
}

export interface SetDiff {
  /** In `after`, not in `before`; sorted. */
  added: string[];
  /** In `before`, not in `after`; sorted. */
  removed: string[];
}

export function diffSets(before: ResourceSet, after: ResourceSet): SetDiff {
  return { added: [...after].filter((k) => !before.has(k)).sort(), removed: [...before].filter((k) => !after.has(k)).sort() };
}

export function unionSets(sets: Iterable<ResourceSet>): Set<string> {
  const out = new Set<string>();
  for (const s of sets) for (const k of s) out.add(k);
  return out;
}

function equalSets(a: ResourceSet, b: ResourceSet): boolean {
  return a.size === b.size && [...a].every((k) => b.has(k));
}

export interface ServerDiscovery {
  server: string;
  version: string;
  /**
   * The emulated version ("1.35"), when the server reported one: a v1.36.3 binary with
   * --emulated-version=1.35 serves 1.35's resources, so it is compared with its like, not with plain v1.36.3.
   */
  emulation?: string;
  /** The server's own resources (`profile=nopeer`); undefined when the fetch failed. */
  own: ResourceSet | undefined;
  /** The peer-aggregated view; undefined when the fetch failed. A server without the proxy serves its own set here. */
  peerAggregated: ResourceSet | undefined;
}

export type ConvergenceProblemKind = 'unavailable' | 'peerAggregated' | 'versionDisagreement';

export interface ConvergenceProblem {
  server: string;
  kind: ConvergenceProblemKind;
  /** Expected but not served (sorted). */
  missing: string[];
  /** Served but not expected (sorted). */
  extra: string[];
}

export interface Convergence {
  converged: boolean;
  problems: ConvergenceProblem[];
}

/**
 * Checks the two convergence rules. For version agreement, the reference of a version (binary and
 * emulated version: servers of one binary emulating different versions serve different sets by design)
 * is the own set most of its servers have (ties: the one of the first server by name), so one odd server
 * is reported as odd rather than making all its peers look wrong.
 */
export function convergence(servers: readonly ServerDiscovery[]): Convergence {
  const sorted = [...servers].sort((a, b) => a.server.localeCompare(b.server));
  const problems: ConvergenceProblem[] = [];
  for (const s of sorted) {
    if (!s.own || !s.peerAggregated) problems.push({ server: s.server, kind: 'unavailable', missing: [], extra: [] });
  }
  // Without every server's own set the union is unknown: never call that converged.
  if (problems.length > 0 || sorted.length === 0) return { converged: false, problems };

  const union = unionSets(sorted.map((s) => s.own ?? new Set<string>()));
  for (const s of sorted) {
    const d = diffSets(union, s.peerAggregated ?? new Set());
    if (d.added.length > 0 || d.removed.length > 0) problems.push({ server: s.server, kind: 'peerAggregated', missing: d.removed, extra: d.added });
  }

  const byVersion = new Map<string, ServerDiscovery[]>();
  for (const s of sorted) {
    const key = `${s.version} ${s.emulation ?? ''}`;
    byVersion.set(key, [...(byVersion.get(key) ?? []), s]);
  }
  for (const cohort of byVersion.values()) {
    const reference = mostCommonSet(cohort.map((s) => s.own ?? new Set<string>()));
    for (const s of cohort) {
      const d = diffSets(reference, s.own ?? new Set());
      if (d.added.length > 0 || d.removed.length > 0) problems.push({ server: s.server, kind: 'versionDisagreement', missing: d.removed, extra: d.added });
    }
  }
  return { converged: problems.length === 0, problems };
}

function mostCommonSet(sets: readonly ResourceSet[]): ResourceSet {
  let best: ResourceSet = sets[0] ?? new Set();
  let bestCount = 0;
  for (const candidate of sets) {
    const count = sets.filter((s) => equalSets(s, candidate)).length;
    if (count > bestCount) {
      best = candidate;
      bestCount = count;
    }
  }
  return best;
}

/**
 * Remembers when convergence was lost and regained, to measure time-to-convergence. Plain data
 * advanced by `trackConvergence`; the caller supplies the time (milliseconds since the epoch).
 */
export interface ConvergenceTracker {
  converged: boolean | undefined;
  /** When the current state began (first observation, loss, or regain). */
  since: number | undefined;
  /** Set while not converged: when convergence was lost (or first seen missing). */
  lostAt: number | undefined;
  /** Duration of the last loss, once regained. */
  lastTimeToConvergeMs: number | undefined;
}

export const NEW_CONVERGENCE_TRACKER: ConvergenceTracker = { converged: undefined, since: undefined, lostAt: undefined, lastTimeToConvergeMs: undefined };

export function trackConvergence(state: ConvergenceTracker, converged: boolean, now: number): ConvergenceTracker {
  if (state.converged === converged) return state;
  if (!converged) return { ...state, converged, since: now, lostAt: now };
  const lastTimeToConvergeMs = state.lostAt !== undefined ? now - state.lostAt : state.lastTimeToConvergeMs;
  return { converged, since: now, lostAt: undefined, lastTimeToConvergeMs };
}

/** How long the fleet has been out of convergence at `now`; 0 when converged or never observed. */
export function unconvergedForMs(state: ConvergenceTracker, now: number): number {
  return state.converged === false && state.lostAt !== undefined ? now - state.lostAt : 0;
}

/** Legacy discovery `/apis/<group>/<version>` (or `/api/v1`): an APIResourceList. */
export interface APIResourceList {
  kind?: string;
  groupVersion?: string;
  resources?: { name: string; storageVersionHash?: string; kind?: string; verbs?: string[]; namespaced?: boolean }[];
}

/** "apps/v1" -> apps, v1; "v1" (the core group) -> "", v1. */
function splitGroupVersion(gv: string): { group: string; version: string } {
  const slash = gv.indexOf('/');
  return slash === -1 ? { group: '', version: gv } : { group: gv.slice(0, slash), version: gv.slice(slash + 1) };
}

/**
 * `group/version/resource` -> storageVersionHash of one legacy discovery document. The group and
 * version come from `groupVersion` (`v1` for the core group). Subresources and resources without
 * a hash (nothing stored, e.g. reviews) are left out.
 */
export function storageVersionHashes(list: APIResourceList): Map<string, string> {
  const { group, version } = splitGroupVersion(list.groupVersion ?? '');
  const out = new Map<string, string>();
  for (const r of list.resources ?? []) {
    if (r.name.includes('/') || !r.storageVersionHash) continue;
    out.set(resourceKey(group, version, r.name), r.storageVersionHash);
  }
  return out;
}

/** `group/version/resource` -> kind, from the same document: with it a storageVersionHash can be decoded. */
export function resourceKinds(list: APIResourceList): Map<string, string> {
  const { group, version } = splitGroupVersion(list.groupVersion ?? '');
  const out = new Map<string, string>();
  for (const r of list.resources ?? []) if (!r.name.includes('/') && r.kind) out.set(resourceKey(group, version, r.name), r.kind);
  return out;
}

// The hash of a group/version/kind is the planner's (it decodes hashes); observe/ reads it from there.
export { storageVersionHash } from '../plan/keys.ts';

/** Merges several groupVersions' hash maps of one server into one. */
export function mergeHashes(maps: Iterable<ReadonlyMap<string, string>>): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of maps) for (const [k, v] of m) out.set(k, v);
  return out;
}

/** The group/versions a v2 document lists, as legacy discovery paths to fetch hashes from. */
export function legacyDiscoveryPaths(doc: APIGroupDiscoveryList): string[] {
  const paths: string[] = [];
  for (const group of doc.items ?? []) {
    const name = group.metadata?.name ?? '';
    for (const v of group.versions ?? []) paths.push(name === '' ? `/api/${v.version}` : `/apis/${name}/${v.version}`);
  }
  return paths;
}

/** An APIService (apiregistration.k8s.io/v1), as far as the storage read needs it. */
export interface APIServiceLike {
  metadata?: { name?: string };
  spec?: { group?: string; version?: string; service?: unknown };
}

export interface APIServiceListLike {
  kind?: string;
  items?: APIServiceLike[];
}

/**
 * The legacy discovery paths of the group/versions kube-apiserver hands to an extension server: those of an
 * APIService whose `spec.service` is set. Their objects are stored by that server, not by kube-apiserver. A
 * local APIService (`spec.service` null or absent: kube-apiserver's built-in groups and CRDs) is not
 * aggregated. The v2 discovery document cannot tell them apart (k8s.io/apiserver's aggregated discovery
 * knows each group/version's source but does not serve it), hence the list. Throws on any other body.
 */
export function aggregatedDiscoveryPaths(list: APIServiceListLike): Set<string> {
  if (list?.kind !== 'APIServiceList' || !Array.isArray(list.items)) {
    throw new Error(`expected an APIServiceList, got ${String(list?.kind)}${Array.isArray(list?.items) ? '' : ' without items'}`);
  }
  const out = new Set<string>();
  for (const s of list.items) {
    const service = s?.spec?.service;
    if (service === undefined || service === null) continue;
    const group = s.spec?.group ?? '';
    const version = s.spec?.version;
    if (!version) throw new Error(`APIService ${String(s.metadata?.name)} has spec.service but no spec.version`);
    out.add(group === '' ? `/api/${version}` : `/apis/${group}/${version}`);
  }
  return out;
}
