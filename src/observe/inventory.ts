/**
 * The apiserver inventory: a pure join of identity Leases, the `default/kubernetes` EndpointSlice
 * addresses and per-address probe results, remembering restarts from the previous inventory.
 *
 * How a server's address is found, in order (the first that applies wins):
 *  1. `leaseAnnotation` — the lease's `kubernetes.io/peer-advertise-address` (ip:port). Servers
 *     write it only when the peer flags are set, i.e. with the proxy gate on. Anything but an IP literal
 *     with an optional port 1-65535 is ignored (the row says so): the address reaches the static Pod
 *     driver's node agent, and whoever may write Leases is not trusted with more than an address.
 *  2. `hostnameHint` — an address the fetcher learnt by other means for the lease's hostname
 *     (DNS, static configuration, a driver's own records); passed in as `hostnameAddresses`.
 *  3. `endpointSlice` — the lease's hostname is itself an IP that the EndpointSlice lists, or,
 *     after the rules above, exactly one lease lacks an address and exactly one EndpointSlice
 *     address is unclaimed: they belong together (every serving apiserver is in the slice).
 *  4. `none` — ambiguous; the row says so in `problems` rather than guessing.
 * Endpoint addresses and lease annotations are matched by IP: the peer port may differ from the
 * serving port.
 *
 * Staleness is judged on the operator's own clock, as leader election does: the join remembers, per
 * lease, the last (holderIdentity, renewTime, resourceVersion) it saw and when (by `now`) that last
 * changed. A lease that has not changed for the staleness window is stale. `renewTime` is never compared
 * with `now`: it is the server's clock, and skew between the two made healthy servers look stale.
 */
import type { GateState } from './signals.ts';
import { parseIpPort } from '../api/ip-port.ts';
import { shownValue } from '../api/shown.ts';

export const IDENTITY_LABEL = 'apiserver.kubernetes.io/identity';
export const IDENTITY_LABEL_VALUE = 'kube-apiserver';
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';
export const PEER_ADDRESS_ANNOTATION = 'kubernetes.io/peer-advertise-address';

/** The fields of a coordination.k8s.io/v1 Lease this join reads; client-node's V1Lease fits. */
export interface IdentityLeaseLike {
  metadata?: { name?: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { holderIdentity?: string; renewTime?: Date | string; leaseDurationSeconds?: number };
}

/** Ready addresses of the `default/kubernetes` EndpointSlices, with the port named `https`. */
export interface EndpointAddresses {
  addresses: readonly string[];
  port: number;
}

/** What probing one address (ip:port) found. */
export interface ProbeResult {
  /** `/version` gitVersion. */
  version?: string;
  /**
   * The version the server emulates, "1.35": `/version` emulationMajor.emulationMinor (KEP-4330, 1.31+);
   * absent when /version has no such fields.
   */
  emulation?: string;
  /** `/readyz` answered 200. */
  ready?: boolean;
  /** From `kubernetes_feature_enabled` on `/metrics`. */
  proxyGate?: GateState;
  /** From `process_start_time_seconds` on `/metrics` (seconds since the epoch). */
  processStart?: number;
  /** `processStart` is an earlier look's, carried over: not read by this one. */
  processStartKept?: true;
  /** The CoordinatedLeaderElection gate, from `kubernetes_feature_enabled` on `/metrics`. */
  coordinatedLeaderElection?: GateState;
  /** Why the probe (or part of it) failed. */
  error?: string;
}

export type AddressSource = 'leaseAnnotation' | 'hostnameHint' | 'endpointSlice' | 'none';

export interface InventoryRow {
  /** Lease name (`apiserver-<hash>`); empty for an endpoint address no lease accounts for. */
  identity: string;
  hostname: string;
  /** ip:port, empty when unknown. */
  address: string;
  addressSource: AddressSource;
  version: string | undefined;
  /** The emulated version ("1.35") from the probe's /version; only present when the server reported one. */
  emulation?: string;
  ready: boolean | undefined;
  proxyGate: GateState;
  holderIdentity: string | undefined;
  /** Restarts seen by this operator (holderIdentity changes), not since the server was installed. */
  restarts: number;
  /** ISO timestamp of the lease's last renewal (the server's clock: shown, never compared with ours). */
  lastRenew: string | undefined;
  /** The lease has not changed for the staleness window, measured on the operator's clock. */
  stale: boolean;
  problems: string[];
}

/** What the join remembers of one identity Lease between observations, on the operator's clock. */
export interface LeaseSighting {
  /** holderIdentity, renewTime and resourceVersion as last seen. */
  fingerprint: string;
  /** `now` of the observation that first saw the lease in this form (its last change as far as we know). */
  changedAt: number;
}

export interface Inventory {
  servers: InventoryRow[];
  /** Fleet-level findings that belong to no single row. */
  problems: string[];
  /** Per lease name, for the next join's staleness judgement (pass this inventory as `previous`). */
  sightings: Record<string, LeaseSighting>;
}

export interface InventoryInput {
  leases: readonly IdentityLeaseLike[];
  endpoints: readonly EndpointAddresses[];
  /** Keyed by address (ip:port) as found by the join; see `addressesToProbe`. */
  probes: ReadonlyMap<string, ProbeResult>;
  hostnameAddresses?: ReadonlyMap<string, string>;
  /** The last inventory: restarts and lease sightings carry on from it. */
  previous?: Pick<Inventory, 'servers'> & Partial<Pick<Inventory, 'sightings'>>;
  /** The operator's clock, milliseconds since the epoch. */
  now: number;
  /** How often servers renew their identity lease (kube-apiserver: 10 s). */
  renewPeriodSeconds?: number;
  /** A lease seen unchanged for this many periods (on the operator's clock) is stale. */
  staleAfterPeriods?: number;
}

/** `10.0.0.1:6443` -> `10.0.0.1`; `[fd00::1]:6443` -> `fd00::1`; a bare IP stays as it is. */
export function hostOf(address: string): string {
  if (address.startsWith('[')) return address.slice(1, address.indexOf(']'));
  const colons = address.split(':').length - 1;
  return colons === 1 ? address.slice(0, address.indexOf(':')) : address;
}

export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

const IP_LIKE = /^(\d{1,3}\.){3}\d{1,3}$|^[0-9a-fA-F:]+:[0-9a-fA-F:]*$/;

function isIdentityLease(lease: IdentityLeaseLike): boolean {
  return lease.metadata?.labels?.[IDENTITY_LABEL] === IDENTITY_LABEL_VALUE;
}

interface Resolved {
  lease: IdentityLeaseLike;
  address: string;
  source: AddressSource;
  /** The lease's peer address annotation when it was not an IP[:port], and so ignored. */
  ignoredAnnotation?: string;
}


/** Resolves every identity lease's address by the rules in the file comment. */
export function resolveAddresses(
  leases: readonly IdentityLeaseLike[],
  endpoints: readonly EndpointAddresses[],
  hostnameAddresses: ReadonlyMap<string, string> = new Map(),
): { resolved: Resolved[]; unclaimed: string[] } {
  const endpointByHost = new Map<string, string>();
  for (const slice of endpoints) for (const ip of slice.addresses) endpointByHost.set(ip, joinHostPort(ip, slice.port));
  const claimed = new Set<string>();
  const claim = (address: string) => claimed.add(hostOf(address));

  const resolved: Resolved[] = leases.filter(isIdentityLease).map((lease): Resolved => {
    const annotated = lease.metadata?.annotations?.[PEER_ADDRESS_ANNOTATION];
    if (annotated && parseIpPort(annotated) !== undefined) return { lease, address: annotated, source: 'leaseAnnotation' };
    const ignored = annotated ? { ignoredAnnotation: annotated } : {};
    const hostname = lease.metadata?.labels?.[HOSTNAME_LABEL] ?? '';
    const hinted = hostnameAddresses.get(hostname);
    if (hinted) return { lease, address: hinted, source: 'hostnameHint', ...ignored };
    const byHostname = IP_LIKE.test(hostname) ? endpointByHost.get(hostname) : undefined;
    if (byHostname) return { lease, address: byHostname, source: 'endpointSlice', ...ignored };
    return { lease, address: '', source: 'none', ...ignored };
  });
  for (const r of resolved) if (r.address) claim(r.address);

  const unclaimedHosts = () => [...endpointByHost.keys()].filter((h) => !claimed.has(h));
  const without = resolved.filter((r) => r.source === 'none');
  const left = unclaimedHosts();
  const only = without[0];
  const lastHost = left[0];
  if (without.length === 1 && left.length === 1 && only && lastHost !== undefined) {
    only.address = endpointByHost.get(lastHost) ?? '';
    only.source = 'endpointSlice';
    claim(only.address);
  }
  return { resolved, unclaimed: unclaimedHosts().map((h) => endpointByHost.get(h) ?? h) };
}

/** The addresses a fetcher should probe before calling `buildInventory`: every resolved address and every endpoint. */
export function addressesToProbe(input: Pick<InventoryInput, 'leases' | 'endpoints' | 'hostnameAddresses'>): string[] {
  const { resolved, unclaimed } = resolveAddresses(input.leases, input.endpoints, input.hostnameAddresses);
  return [...new Set([...resolved.map((r) => r.address).filter((a) => a !== ''), ...unclaimed])].sort();
}

/** The parts of a lease that change on every renewal or restart. */
export function leaseFingerprint(lease: IdentityLeaseLike): string {
  const renew = lease.spec?.renewTime;
  return JSON.stringify([lease.spec?.holderIdentity ?? '', renew instanceof Date ? renew.toISOString() : (renew ?? ''), lease.metadata?.resourceVersion ?? '']);
}

/**
 * Carries one lease's sighting forward: a changed lease restarts its clock at `now`. A lease seen for the
 * first time starts its clock too, so it is not stale until it stays unchanged for the whole window; until
 * then only its server's probe (/readyz) says whether it is up.
 */
export function sightLease(previous: LeaseSighting | undefined, lease: IdentityLeaseLike, now: number): LeaseSighting {
  const fingerprint = leaseFingerprint(lease);
  return previous && previous.fingerprint === fingerprint ? previous : { fingerprint, changedAt: now };
}

function isoOf(time: Date | string | undefined): { iso: string | undefined; ms: number | undefined } {
  if (time === undefined) return { iso: undefined, ms: undefined };
  const ms = time instanceof Date ? time.getTime() : Date.parse(time);
  return Number.isNaN(ms) ? { iso: undefined, ms: undefined } : { iso: new Date(ms).toISOString(), ms };
}

export function buildInventory(input: InventoryInput): Inventory {
  const renewPeriodMs = (input.renewPeriodSeconds ?? 10) * 1000;
  const staleAfterMs = renewPeriodMs * (input.staleAfterPeriods ?? 3);
  const previousById = new Map((input.previous?.servers ?? []).filter((r) => r.identity).map((r) => [r.identity, r]));
  const previousSightings = input.previous?.sightings ?? {};
  const sightings: Record<string, LeaseSighting> = {};
  const endpointHosts = new Set(input.endpoints.flatMap((e) => e.addresses));
  const { resolved, unclaimed } = resolveAddresses(input.leases, input.endpoints, input.hostnameAddresses);

  const rows: InventoryRow[] = resolved.map(({ lease, address, source, ignoredAnnotation }) => {
    const identity = lease.metadata?.name ?? '';
    const hostname = lease.metadata?.labels?.[HOSTNAME_LABEL] ?? '';
    const holderIdentity = lease.spec?.holderIdentity;
    const renew = isoOf(lease.spec?.renewTime);
    const probe = address ? input.probes.get(address) : undefined;
    const problems: string[] = [];

    const previous = previousById.get(identity);
    const restarted = previous?.holderIdentity !== undefined && holderIdentity !== undefined && previous.holderIdentity !== holderIdentity;
    const restarts = (previous?.restarts ?? 0) + (restarted ? 1 : 0);

    const sighting = sightLease(Object.hasOwn(previousSightings, identity) ? previousSightings[identity] : undefined, lease, input.now);
    if (identity) sightings[identity] = sighting;
    const unchangedMs = input.now - sighting.changedAt;
    // A lease that was never renewed says nothing about its server: fail closed.
    const stale = renew.ms === undefined || unchangedMs > staleAfterMs;
    if (renew.ms === undefined) problems.push('identity lease has no renewTime');
    else if (stale) problems.push(`identity lease unchanged for ${Math.round(unchangedMs / 1000)}s by the operator's clock (renewTime ${renew.iso}): the server is gone or hung; peers routing to it get 503`);

    if (ignoredAnnotation !== undefined) problems.push(`the lease's ${PEER_ADDRESS_ANNOTATION} ${shownValue(ignoredAnnotation)} is not an IP address with an optional port 1-65535: ignored`);
    if (source === 'none') problems.push(`no address: the lease has no ${PEER_ADDRESS_ANNOTATION} annotation${ignoredAnnotation !== undefined ? ' that is an address' : ''} and the EndpointSlice fallback was ambiguous`);
    else if (!endpointHosts.has(hostOf(address))) problems.push(`address ${address} is not in the default/kubernetes EndpointSlice`);

    const proxyGate = probe?.proxyGate ?? 'unknown';
    if (proxyGate === 'on' && source !== 'leaseAnnotation') {
      problems.push(`proxy gate on but no ${PEER_ADDRESS_ANNOTATION}: --peer-ca-file/--peer-advertise-ip are not set, so peers cannot proxy to this server`);
    }
    if (address && !probe) problems.push(`no probe result for ${address}`);
    if (probe?.error) problems.push(`probe of ${address} failed: ${probe.error}`);
    if (probe?.ready === false) problems.push('not ready (/readyz)');

    return {
      identity,
      hostname,
      address,
      addressSource: source,
      version: probe?.version,
      ...(probe?.emulation ? { emulation: probe.emulation } : {}),
      ready: probe?.ready,
      proxyGate,
      holderIdentity,
      restarts,
      lastRenew: renew.iso,
      stale,
      problems,
    };
  });

  const addressless = resolved.filter((r) => r.source === 'none').map((r) => r.lease.metadata?.name ?? '');
  for (const address of unclaimed) {
    const probe = input.probes.get(address);
    const problems = [
      addressless.length > 0
        ? `endpoint ${address} matched no lease: it may belong to one of ${addressless.join(', ')} (leases without an address)`
        : `endpoint ${address} has no identity lease (APIServerIdentity off, lease deleted, or two servers share a hostname)`,
    ];
    if (probe?.error) problems.push(`probe of ${address} failed: ${probe.error}`);
    rows.push({
      identity: '',
      hostname: '',
      address,
      addressSource: 'endpointSlice',
      version: probe?.version,
      ...(probe?.emulation ? { emulation: probe.emulation } : {}),
      ready: probe?.ready,
      proxyGate: probe?.proxyGate ?? 'unknown',
      holderIdentity: undefined,
      restarts: 0,
      lastRenew: undefined,
      stale: false,
      problems,
    });
  }

  // Leases first by name, then the endpoints no lease accounts for, by address.
  const sortKey = (r: InventoryRow) => (r.identity ? `0${r.identity}` : `1${r.address}`);
  rows.sort((a, b) => (sortKey(a) < sortKey(b) ? -1 : sortKey(a) > sortKey(b) ? 1 : 0));
  return { servers: rows, problems: fleetProblems(rows, endpointHosts.size), sightings };
}

function fleetProblems(rows: readonly InventoryRow[], endpointCount: number): string[] {
  const problems: string[] = [];
  const byHost = new Map<string, string[]>();
  for (const r of rows) {
    if (!r.address || !r.identity) continue;
    const host = hostOf(r.address);
    byHost.set(host, [...(byHost.get(host) ?? []), r.identity]);
  }
  for (const [host, ids] of byHost) if (ids.length > 1) problems.push(`identity leases ${ids.join(', ')} all claim address ${host}`);
  const live = rows.filter((r) => r.identity && !r.stale).length;
  if (endpointCount > live) {
    problems.push(`${endpointCount} endpoint addresses but ${live} live identity leases: a server without a lease, or two servers with one hostname (their leases collide)`);
  }
  return problems;
}
