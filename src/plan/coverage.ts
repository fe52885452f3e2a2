/**
 * The coverage report (docs/trust.md), pure: what the Mixed Version Proxy covers during this upgrade and what
 * it never touches, fixed at preflight in status.coverage.
 *
 * - Built-in group/version/resources that differ between the versions: the proxy routes these while versions
 *   are mixed. The from-version's set is the servers' own (`nopeer`) discovery, the built-in part of it; the
 *   target's is the catalog (src/plan/coverage-catalog.ts: discovery captured from a real server of that
 *   minor), because before the first replacement no server runs the target. A target minor the catalog lacks
 *   is reported Unknown, never as "no change".
 * - Aggregated APIs (an APIService with a service) and custom resources (CRD group/versions): never proxied;
 *   every server serves them itself.
 */
import type { CoverageEntry, CoverageReport, CoverageView } from '../api/types.generated.ts';
import type { CoverageKind } from '../api/vocabulary.ts';
import { BUILTIN_CATALOG } from './coverage-catalog.ts';
import { minorOf, sameRelease } from './version.ts';
import type { ObservedOwnDiscovery, ObservedStorage } from './observation.ts';
import type { PlanContext } from './context.ts';
import type { ObservedCoverage } from './observed-preflight.ts';

export type { ObservedAPIService, ObservedCoverage } from './observed-preflight.ts';

export const COVERAGE_ENTRIES_LIMIT = 50;

export interface CoverageInput {
  fromVersion: string;
  targetVersion: string;
  own: readonly ObservedOwnDiscovery[] | undefined;
  storage: readonly ObservedStorage[] | undefined;
  observed: ObservedCoverage | undefined;
  /** The proxy runs during the upgrade (the gate is on, or the operator turns it on first). */
  proxyOn: boolean;
}

const groupVersionOf = (key: string): string => key.slice(0, key.lastIndexOf('/'));

/** "1.36" of "v1.36.3"; the catalog entry of a version's minor. */
function catalogOf(version: string): { capturedFrom: string; resources: Readonly<Record<string, string>> } | undefined {
  const m = minorOf(version);
  return m === undefined ? undefined : BUILTIN_CATALOG[m];
}

/** One line per kind: what a client sees while versions are mixed. */
export function clientSees(kind: CoverageKind, from: string, target: string, proxyOn: boolean): string {
  switch (kind) {
    case 'BuiltInAdded':
      return proxyOn
        ? `404 from every server until the first runs ${target}; then served whichever server the balancer picks (an old server forwards to a new one through the proxy; a new server it cannot reach answers 503, not 404)`
        : `served only by servers already on ${target}: a client sent to an old server gets 404 until the last one is replaced (the proxy is off)`;
    case 'BuiltInRemoved':
      return proxyOn
        ? `a new server forwards it to an old one while any runs ${from} (503 if none can be reached); 404 everywhere once the last ${from} server is replaced: move its clients first`
        : `404 from every server already on ${target} (the proxy is off), served by the old ones until they are replaced: move its clients first`;
    case 'Aggregated':
      return 'never proxied: every server forwards it to the extension server itself, old and new alike; a client sees an error only from a server that cannot reach that service (the unavailableAPIServices signal watches it)';
    case 'CustomResource':
      return 'never proxied: every server serves it from etcd through the same CRD, old and new alike; nothing changes for its clients (a conversion webhook is called by whichever server they hit)';
  }
}

/** The coverage report of an upgrade from `fromVersion` to `targetVersion`. */
export function coverageReport(input: CoverageInput): CoverageReport {
  const { fromVersion, targetVersion } = input;
  const notes: string[] = [];
  const apiServices = input.observed && 'apiServices' in input.observed ? input.observed.apiServices : undefined;
  if (!input.observed) notes.push('APIServices not read: aggregated APIs and custom resources unknown');
  else if (!apiServices) notes.push(`APIServices not listed (${(input.observed as { error: string }).error}): aggregated APIs and custom resources unknown`);

  const fromCatalog = catalogOf(fromVersion);
  const targetCatalog = catalogOf(targetVersion);
  const own = [...(input.own ?? [])].filter((o) => sameRelease(o.version, fromVersion) && (o.emulation ?? minorOf(o.version)) === minorOf(fromVersion)).sort((a, b) => a.server.localeCompare(b.server))[0];
  const crdGroupVersions = new Set((apiServices ?? []).filter((s) => !s.service && s.automanaged === 'true').map((s) => (s.group === '' ? `/${s.version}` : `${s.group}/${s.version}`)));
  const aggregatedGroupVersions = new Set((apiServices ?? []).filter((s) => s.service).map((s) => (s.group === '' ? `/${s.version}` : `${s.group}/${s.version}`)));

  // The from-version's built-in set: observed, without CRD and aggregated group/versions; else the catalog.
  let fromBuiltIn: Set<string> | undefined;
  let fromSource: string;
  let customResources: string[] = [];
  if (own) {
    const known = new Set([...Object.keys(fromCatalog?.resources ?? {}), ...Object.keys(targetCatalog?.resources ?? {})]);
    const isBuiltIn = (k: string): boolean => {
      const gv = groupVersionOf(k);
      if (crdGroupVersions.has(gv) || aggregatedGroupVersions.has(gv)) return false;
      // Without the APIServices, only what a catalog knows counts as built-in.
      return apiServices !== undefined || known.has(k);
    };
    fromBuiltIn = new Set(own.resources.filter(isBuiltIn));
    customResources = own.resources.filter((k) => crdGroupVersions.has(groupVersionOf(k))).sort();
    fromSource = `Observed ${own.server}`;
  } else if (fromCatalog) {
    fromBuiltIn = new Set(Object.keys(fromCatalog.resources));
    fromSource = `Catalog ${fromCatalog.capturedFrom}`;
    notes.push(`no own discovery of a ${fromVersion} server read: the from-version's built-in set is the catalog's, custom resources unknown`);
  } else {
    fromSource = 'Unknown';
    notes.push(`no own discovery of a ${fromVersion} server read and no catalog of ${minorOf(fromVersion) ?? fromVersion}`);
  }
  const targetSource = targetCatalog ? `Catalog ${targetCatalog.capturedFrom}` : 'Unknown';
  if (!targetCatalog) notes.push(`the operator has no captured discovery of ${minorOf(targetVersion) ?? targetVersion}: the built-in changes are unknown until a server runs ${targetVersion}`);

  const kinds = new Map<string, string>();
  for (const s of input.storage ?? []) for (const [k, v] of Object.entries(s.kinds)) kinds.set(k, v);
  for (const c of [fromCatalog, targetCatalog]) for (const [k, v] of Object.entries(c?.resources ?? {})) if (v) kinds.set(k, v);
  const entry = (kind: CoverageKind, name: string, detail?: string): CoverageEntry => ({ kind, name, ...(kinds.get(name) ? { resourceKind: kinds.get(name)! } : {}), ...(detail ? { detail } : {}) });

  const diffKnown = fromBuiltIn !== undefined && targetCatalog !== undefined;
  const target = new Set(Object.keys(targetCatalog?.resources ?? {}));
  const added = diffKnown ? [...target].filter((k) => !fromBuiltIn!.has(k)).sort() : [];
  const removed = diffKnown ? [...fromBuiltIn!].filter((k) => !target.has(k)).sort() : [];
  const beyondDefault = removed.filter((k) => fromCatalog && !(k in fromCatalog.resources));
  if (beyondDefault.length > 0) notes.push(`${beyondDefault.length} built-in resource(s) the from-servers serve beyond their version's default set (--runtime-config?) are not in ${targetVersion}'s default set: ${beyondDefault.slice(0, 5).join(', ')}; keep the flag on the new servers if they should stay`);
  const aggregated = (apiServices ?? []).filter((s) => s.service).sort((a, b) => a.name.localeCompare(b.name));

  const all: CoverageEntry[] = [
    ...added.map((k) => entry('BuiltInAdded', k)),
    ...removed.map((k) => entry('BuiltInRemoved', k)),
    ...aggregated.map((s) => entry('Aggregated', s.name, s.service)),
    ...customResources.map((k) => entry('CustomResource', k)),
  ];
  const counts: Record<CoverageKind, number | undefined> = {
    BuiltInAdded: diffKnown ? added.length : undefined,
    BuiltInRemoved: diffKnown ? removed.length : undefined,
    Aggregated: apiServices ? aggregated.length : undefined,
    CustomResource: apiServices && own ? customResources.length : undefined,
  };
  const clientView: CoverageView[] = (Object.keys(counts) as CoverageKind[])
    .filter((k) => (counts[k] ?? 0) > 0)
    .map((k) => ({ kind: k, count: counts[k]!, sees: clientSees(k, fromVersion, targetVersion, input.proxyOn) }));
  const summary = diffKnown
    ? `${fromVersion} -> ${targetVersion}: ${added.length} built-in resource(s) added, ${removed.length} removed (the proxy ${input.proxyOn ? 'routes them' : 'is off: they answer 404 on the servers that lack them'} while versions are mixed)`
    : `${fromVersion} -> ${targetVersion}: built-in changes unknown`;
  const tail = apiServices ? `; ${aggregated.length} aggregated API(s) and ${customResources.length} custom resource(s), never proxied` : '';
  return {
    fromVersion,
    targetVersion,
    fromSource,
    targetSource,
    ...(counts.BuiltInAdded !== undefined ? { builtInAdded: counts.BuiltInAdded } : {}),
    ...(counts.BuiltInRemoved !== undefined ? { builtInRemoved: counts.BuiltInRemoved } : {}),
    ...(counts.Aggregated !== undefined ? { aggregated: counts.Aggregated } : {}),
    ...(counts.CustomResource !== undefined ? { customResources: counts.CustomResource } : {}),
    ...(all.length > COVERAGE_ENTRIES_LIMIT ? { truncated: true } : {}),
    entries: all.slice(0, COVERAGE_ENTRIES_LIMIT),
    clientView,
    message: [summary + tail, ...notes].join('; ').slice(0, 4096),
  };
}

/** The report fixed at preflight, from this observation (written to status.coverage next to status.plan). */
export function freezeCoverage(ctx: PlanContext, fromVersion: string, proxyOn: boolean): CoverageReport {
  return coverageReport({ fromVersion, targetVersion: ctx.spec.targetVersion, own: ctx.obs.discovery?.own, storage: ctx.obs.storage, observed: ctx.obs.coverage, proxyOn });
}
