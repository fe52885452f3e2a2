/**
 * Objects a rollback would orphan: those of resources the target version serves itself and the version
 * rolled back to does not. Pure functions; `FleetObserver` lists the resources through the balancer.
 *
 * Which servers speak for which side, from their own (`profile=nopeer`) discovery:
 *  - the target: up servers of the target binary that emulate the target's minor, or report no emulation;
 *  - the from-version: up servers of the from binary (emulating its own minor, or reporting none), or, when
 *    none is up, target servers emulating the from-version's minor (phase one of a two-phase upgrade: a
 *    v1.36.3 binary with --emulated-version=1.35 serves exactly what v1.35.4 serves, measured on the real
 *    binaries). The from binaries come first: they are what a rollback returns to.
 * When no server speaks for the from-version (phase two once every server lifted the emulation), the resources it
 * stored, recorded at preflight (`OrphansOf.fromStored`), do: then only the resources the target stores itself
 * (`targetStored`, from its storage hashes) count, since a resource neither side stores (componentstatuses) is in
 * no record and holds nothing to orphan. Without either record: nothing is reported rather than a guess.
 */
import type { ObservedOwnDiscovery, OrphansOf } from '../plan/observation.ts';
import { parseVersion, sameRelease } from '../plan/version.ts';

export type { OrphansOf } from '../plan/observation.ts';

/** Objects listed per orphaned resource. */
export const ORPHAN_NAMES_LIMIT = 20;

/** "v1.36.3" -> "1.36"; undefined when the string is not a Kubernetes version. */
export function minorOf(version: string): string | undefined {
  const v = parseVersion(version);
  return v ? `${v.major}.${v.minor}` : undefined;
}

export type OrphanCandidates =
  | { known: true; resources: string[]; targetServers: string[]; fromServers: string[]; fromRecorded?: true }
  | { known: false; reason: string };

/** The resources served by the target side's own discovery and not by the from side's (sorted), or why not known. */
export function orphanCandidates(own: readonly ObservedOwnDiscovery[], of: OrphansOf, targetStored?: ReadonlySet<string>): OrphanCandidates {
  const targetMinor = minorOf(of.targetVersion);
  const fromMinor = minorOf(of.fromVersion);
  if (!targetMinor || !fromMinor) return { known: false, reason: `not Kubernetes versions: from ${of.fromVersion}, target ${of.targetVersion}` };
  const target = own.filter((d) => sameRelease(d.version, of.targetVersion) && (d.emulation === undefined || d.emulation === targetMinor));
  const fromBinaries = own.filter((d) => sameRelease(d.version, of.fromVersion) && (d.emulation === undefined || d.emulation === fromMinor));
  const emulating = own.filter((d) => sameRelease(d.version, of.targetVersion) && d.emulation === fromMinor);
  const from = fromBinaries.length > 0 ? fromBinaries : emulating;
  if (target.length === 0) {
    return { known: false, reason: `no up server of ${of.targetVersion} emulating ${targetMinor} (or reporting no emulation) whose own discovery was read` };
  }
  if (from.length === 0 && of.fromStored?.length && targetStored?.size) {
    const recorded = new Set(of.fromStored);
    const resources = [...new Set(target.flatMap((d) => d.resources))].filter((r) => targetStored.has(r) && !recorded.has(r)).sort();
    return { known: true, resources, targetServers: target.map((d) => d.server).sort(), fromServers: [], fromRecorded: true };
  }
  if (from.length === 0) {
    return { known: false, reason: `no up server of ${of.fromVersion}, nor of ${of.targetVersion} with --emulated-version=${fromMinor}, whose own discovery was read: the from-version's resources are unknown` };
  }
  const served = new Set(from.flatMap((d) => d.resources));
  const resources = [...new Set(target.flatMap((d) => d.resources))].filter((r) => !served.has(r)).sort();
  return { known: true, resources, targetServers: target.map((d) => d.server).sort(), fromServers: from.map((d) => d.server).sort() };
}

/** `/v1/pods` -> `/api/v1/pods`, `apps/v1/deployments` -> `/apis/apps/v1/deployments`, with the query. */
export function listPath(resource: string, query: Record<string, string> = {}): string {
  const [group = '', version = '', name = ''] = resource.split('/');
  if (!version || !name) throw new Error(`not a group/version/resource: ${resource}`);
  const base = group === '' ? `/api/${version}/${name}` : `/apis/${group}/${version}/${name}`;
  const q = new URLSearchParams(query).toString();
  return q ? `${base}?${q}` : base;
}

/** The parts of a list response this reads. */
export interface ObjectListLike {
  kind?: string;
  metadata?: { continue?: string; remainingItemCount?: number };
  items?: { metadata?: { name?: string; namespace?: string } }[];
}

/** namespace/name for namespaced objects, name for cluster-scoped ones. */
export function objectName(item: { metadata?: { name?: string; namespace?: string } }): string {
  const m = item.metadata ?? {};
  return m.namespace ? `${m.namespace}/${m.name ?? ''}` : (m.name ?? '');
}

/** Checks a list answer's shape; throws on anything but an object with an `items` array. */
export function checkedList(path: string, list: ObjectListLike): ObjectListLike {
  if (typeof list !== 'object' || list === null || !Array.isArray(list.items)) throw new Error(`GET ${path}: expected a list with items, got ${JSON.stringify(list)?.slice(0, 200)}`);
  return list;
}
