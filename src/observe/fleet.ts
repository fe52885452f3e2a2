import type { V1EndpointSlice, V1EndpointSliceList, V1LeaseList, V1PodList } from '@kubernetes/client-node';
import type { KubeAccess } from '../runtime/kubeconfig.ts';
import type { Logger } from '../runtime/logger.ts';
import type { AnalysisSettings, Observation, ObservedPeer, ObservedAnalysis, ObservedStorage, ObservedOwnDiscovery, ObservedOrphans, ObservedBodyCap } from '../plan/observation.ts';
import { capExceeded } from '../runtime/body-limits.ts';
import { DirectClient } from './direct-client.ts';
import { buildInventory, addressesToProbe, type Inventory, type IdentityLeaseLike, type EndpointAddresses, type ProbeResult, IDENTITY_LABEL, IDENTITY_LABEL_VALUE, HOSTNAME_LABEL, PEER_ADDRESS_ANNOTATION } from './inventory.ts';
import { mapLimitSettled } from './map-limit.ts';
import { FAMILIES, SIGNAL_FAMILIES, type GateState, type WindowDeltas } from './signals.ts';
import { processIdentity } from '../plan/process-identity.ts';
import { leaseHolderSurvivesRestart } from '../plan/version-facts.ts';
import { probeDeadlineMs, PROBE_DEADLINE_MIN_MS } from '../plan/probe-deadline.ts';
import { compactScrape, compactWindowDeltas, SeriesPool, type CompactScrape } from './compact-scrape.ts';
import { resourceSet, unlistableResources, convergence, storageVersionHashes, resourceKinds, mergeHashes, legacyDiscoveryPaths, aggregatedDiscoveryPaths, type APIResourceList, type APIServiceListLike, type ServerDiscovery } from './discovery.ts';
import { summarizeAnalysis } from './analysis-summary.ts';
import { cachedCertificateDnsNames, hintsFromCertificateCache, hintsFromMirrorPods } from './hostname-hints.ts';
import { ORPHAN_NAMES_LIMIT, checkedList, listPath, minorOf, objectName, orphanCandidates, type ObjectListLike, type OrphansOf } from './orphans.ts';
import { sameRelease } from '../plan/version.ts';
import { APISERVER_PODS_PATH } from './trust.ts';
import { observeComponents } from './components.ts';

/** GET of a list through the balancer, with the caller's retries; injected so observation shares the operator's client. */
import type { ListFn } from '../runtime/cached-list.ts';

// What to read this time is the planner's to say (src/plan/reconcile.ts); the shape lives with the observation.
export type { AnalysisSettings } from '../plan/observation.ts';

/**
 * Computes the analysis somewhere other than from this observer's /metrics scrapes (e.g.
 * `PrometheusAnalysis.source`). Gets the up peers (named, addressed, versioned) to name its subjects.
 */
export type AnalysisSource = (up: ObservedPeer[], settings: AnalysisSettings, now: number) => Promise<ObservedAnalysis | undefined>;

export interface FleetObserverOptions {
  /** Used for checks whose settings carry `prometheus`; the others scrape each server directly. */
  analysisSource?: AnalysisSource;
  /**
   * The identity Leases as an informer holds them (src/runtime/informer.ts watching the same selector): read
   * from it once synced instead of a LIST per observation. Absent or not synced: listed.
   */
  leaseCache?: { readonly hasSynced: boolean; list(): IdentityLeaseLike[] };
  /** The `kubernetes` Service's EndpointSlices in `default` as an informer holds them; absent or not synced: listed. */
  endpointCache?: { readonly hasSynced: boolean; list(): V1EndpointSlice[] };
}

interface Scrape {
  at: number;
  /** Only the numbers the signals difference (compact-scrape.ts): a parsed page is ~1 MiB, this a few KiB. */
  metrics: CompactScrape;
}

/** A complete storage-hash read of one server, valid while that server runs the same binary and flags (same process: process-identity.ts). */
interface StorageRead {
  holderIdentity: string;
  storage: ObservedStorage;
}

const CONCURRENCY = 4;
/** Discovery documents asked per server and observation (own and peer-aggregated, `/apis` and `/api`), each kept for If-None-Match. */
const DISCOVERY_DOCS_PER_SERVER = 4;
/** The gate's gauge and the process start time: what a scrape made for the gate state alone keeps. */
const GATE_FAMILIES: ReadonlySet<string> = new Set([FAMILIES.featureEnabled, FAMILIES.processStart]);

/** One server's discovery as read: a side whose fetch failed is undefined, with its error. */
interface DiscoveryRead {
  own: Set<string> | undefined;
  peerAggregated: Set<string> | undefined;
  /** Resources its own discovery lists without the `list` verb. */
  unlistable: Set<string>;
  errors: { peer: boolean; error: unknown }[];
}

/** The gate state and process start of the last /metrics scrape of an address, and the lease holder and version serving there then. */
interface GateRead {
  holderIdentity: string;
  gate: GateState;
  /** The CoordinatedLeaderElection gate of the same page. */
  coordinatedLeaderElection: GateState;
  processStart?: number;
  version?: string;
  /** The last scrape failed: the gate is unknown until a scrape succeeds. */
  failed?: boolean;
}
/** Pages of 500 followed to count a list that gives no remainingItemCount; beyond them the count is a lower bound (logged). */
const COUNT_PAGES = 20;

/** A (version, emulation) pair's key: servers of one binary emulating different versions store differently. */
const cohortKey = (p: Pick<ObservedPeer, 'version' | 'emulation'>): string => `${p.version ?? ''} ${p.emulation ?? ''}`;

/** "1.35" -> [1, 35]; anything else sorts first. */
function emulationOrder(e: string | undefined): number[] {
  return (e ?? '').split('.').map((x) => (/^\d+$/.test(x) ? Number(x) : -1));
}

/** Storage entries by version, then emulated version (numerically: 1.9 before 1.10). */
function byVersionThenEmulation(a: Pick<ObservedPeer, 'version' | 'emulation'>, b: Pick<ObservedPeer, 'version' | 'emulation'>): number {
  const v = (a.version ?? '').localeCompare(b.version ?? '');
  if (v !== 0) return v;
  const [x, y] = [emulationOrder(a.emulation), emulationOrder(b.emulation)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? -1) !== (y[i] ?? -1)) return (x[i] ?? -1) - (y[i] ?? -1);
  return 0;
}

/** The `kubernetes` Service's EndpointSlices: the addresses the balancer sends to. */
export const ENDPOINTSLICES_PATH = '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices';
export const KUBERNETES_SERVICE_SELECTOR = 'kubernetes.io/service-name=kubernetes';

/** The APIServices, read through the balancer to tell aggregated group/versions from kube-apiserver's own. */
export const APISERVICES_PATH = '/apis/apiregistration.k8s.io/v1/apiservices';

/** The resources the target stores itself (its hashes read from a server of it emulating nothing older), if read. */
function targetStoredOf(storage: readonly ObservedStorage[], targetVersion: string): ReadonlySet<string> | undefined {
  const own = storage.find((s) => sameRelease(s.version, targetVersion) && (s.emulation === undefined || s.emulation === minorOf(targetVersion)));
  return own ? new Set(Object.keys(own.hashes)) : undefined;
}

/**
 * The imperative shell of observation: fetches leases, EndpointSlices, each server's /version, /readyz,
 * /metrics and discovery, and hands the pure functions of this folder what they need. It keeps the
 * previous scrape per server (signals are deltas between scrapes), and each server's complete storage-hash
 * read while it runs the same binary (dozens of requests; the hashes cannot change until it restarts).
 * Remembering the old version's hashes beyond its servers' lifetime is the planner's job (status), not ours.
 */
export class FleetObserver {
  private readonly list: ListFn;
  private readonly direct: DirectClient;
  private readonly log: Logger;
  private inventory: Inventory | undefined;
  private readonly scrapes = new Map<string, Scrape>();
  /** Label sets and bucket layouts shared by the servers' kept scrapes. */
  private readonly seriesPool = new SeriesPool();
  private lastAnalysis: ObservedAnalysis | undefined;
  private lastAnalysisAt = 0;
  private readonly storageReads = new Map<string, StorageRead>();
  private readonly storageAttempts = new Map<string, number>();
  private readonly certificateNames = cachedCertificateDnsNames();
  private readonly analysisSource: AnalysisSource | undefined;
  private readonly gates = new Map<string, GateRead>();
  private readonly leaseCache: FleetObserverOptions['leaseCache'];
  private readonly endpointCache: FleetObserverOptions['endpointCache'];

  /** `servers`: the client each server is asked through, or the kubeconfig whose credentials it uses (5 s deadline). */
  constructor(servers: DirectClient | KubeAccess, list: ListFn, log: Logger, options: FleetObserverOptions = {}) {
    this.list = list;
    this.log = log;
    this.direct = servers instanceof DirectClient ? servers : DirectClient.fromKubeConfig(servers, { timeoutMs: 5000 });
    this.analysisSource = options.analysisSource;
    this.leaseCache = options.leaseCache;
    this.endpointCache = options.endpointCache;
  }

  close(): void {
    this.direct.close();
  }

  /** The client that talks to each server directly (the kubeadm preflight facts use it: src/observe/kubeadm.ts). */
  get serverClient(): DirectClient {
    return this.direct;
  }

  /** The inventory the last observation built: every row with its address source and problems. */
  get lastInventory(): Inventory | undefined {
    return this.inventory;
  }

  async leases(): Promise<IdentityLeaseLike[]> {
    if (this.leaseCache?.hasSynced) return this.leaseCache.list();
    const selector = encodeURIComponent(`${IDENTITY_LABEL}=${IDENTITY_LABEL_VALUE}`);
    const list = await this.list<V1LeaseList>(`/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?labelSelector=${selector}`);
    return list.items;
  }

  async endpoints(): Promise<EndpointAddresses[]> {
    const items = this.endpointCache?.hasSynced
      ? this.endpointCache.list()
      : (await this.list<V1EndpointSliceList>(`${ENDPOINTSLICES_PATH}?labelSelector=${encodeURIComponent(KUBERNETES_SERVICE_SELECTOR)}`)).items;
    return items.map((s) => ({
      addresses: (s.endpoints ?? []).filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses),
      port: s.ports?.find((p) => p.name === 'https')?.port ?? s.ports?.[0]?.port ?? 6443,
    }));
  }

  /** Hostname -> address for leases without the peer-advertise annotation (gate off). */
  private async hostnameHints(leases: IdentityLeaseLike[], endpoints: EndpointAddresses[]): Promise<Map<string, string>> {
    const missing = leases.filter((l) => !l.metadata?.annotations?.[PEER_ADDRESS_ANNOTATION]).map((l) => l.metadata?.labels?.[HOSTNAME_LABEL] ?? '').filter(Boolean);
    if (missing.length === 0) return new Map();
    const pods = await this.list<V1PodList>(APISERVER_PODS_PATH).catch(() => ({ items: [] }) as V1PodList);
    const hints = hintsFromMirrorPods(pods);
    const still = missing.filter((h) => !hints.has(h));
    if (still.length > 0) {
      const addrs = endpoints.flatMap((e) => e.addresses.map((a) => `${a}:${e.port}`));
      for (const [h, a] of await hintsFromCertificateCache(addrs, still, this.certificateNames)) hints.set(h, a);
    }
    return hints;
  }

  async observe(settings: AnalysisSettings, now = Date.now()): Promise<Observation> {
    const [leases, endpoints] = await Promise.all([this.leases(), this.endpoints()]);
    const hostnameAddresses = await this.hostnameHints(leases, endpoints);
    const addresses = addressesToProbe({ leases, endpoints, hostnameAddresses });
    this.direct.fitEtagCache(addresses.length * DISCOVERY_DOCS_PER_SERVER * 2);
    // A /metrics page is ~1.4 MB: it is fetched only when this observation needs it. The analysis window needs
    // it when an analysis is due (the same test `analysis` makes); the gate state (kubernetes_feature_enabled)
    // only changes when a server restarts, which from 1.35 gives its identity Lease a new holder: between those,
    // the gate of the last scrape is kept. A server before 1.35 keeps its holder across restarts
    // (leaseHolderSurvivesRestart): its page is read on the looks the planner asks its start time for
    // (settings.startTimes, src/plan/start-time-reads.ts; absent: every look), the gate and the process start time
    // that tell its restarts apart. One scrape serves both. Between those, the last read's are kept, the start
    // time marked as kept.
    const served = leasesByAddress(leases, hostnameAddresses);
    const holders = new Map([...served].map(([a, l]) => [a, l.holder]));
    const hostnames = new Map([...served].filter(([, l]) => l.hostname !== '').map(([a, l]) => [a, l.hostname]));
    const startTimes = settings.startTimes;
    const readsStart = (a: string): boolean => {
      const hostname = hostnames.get(a);
      // A server not named by its Lease cannot be matched to the planner's list: read.
      return !startTimes || startTimes.all || hostname === undefined || startTimes.servers.includes(hostname);
    };
    const forAnalysis = !(settings.prometheus && this.analysisSource) && (!this.lastAnalysis || (settings.due ?? now - this.lastAnalysisAt >= settings.intervalMs));
    const wanted = (a: string): ReadonlySet<string> | undefined => {
      if (forAnalysis) return SIGNAL_FAMILIES;
      const kept = this.gates.get(a);
      return kept && !kept.failed && kept.holderIdentity === (holders.get(a) ?? '') && (!leaseHolderSurvivesRestart(kept.version) || !readsStart(a)) ? undefined : GATE_FAMILIES;
    };
    // Each page is reduced to its compact form as soon as it is parsed, so at most CONCURRENCY parsed pages
    // exist at once, not one per server.
    if (forAnalysis) this.seriesPool.rotate();
    const deadline = probeDeadlineMs(settings.intervalMs);
    const lookEnd = Date.now() + deadline;
    const discoveries = new Map<string, Promise<DiscoveryRead>>();
    const probed = await mapLimitSettled(addresses, CONCURRENCY, async (a) => {
      const r = await this.direct.probeWithMetrics(a, wanted(a), { timeoutMs: deadline });
      // A server that answers ready is asked for its discovery at once, while the other probes run: a look with
      // one held server then waits for it once, not for its probe and then everybody's discovery (nodes seed
      // 351 #1: looks of 4-8 s at a 3 s interval, a 4 x 3 s limit acted on 10.4 s late).
      if (r.probe.ready === true && r.probe.version) discoveries.set(a, this.readDiscovery(a, lookEnd));
      return { probe: r.probe, metrics: r.metrics && (forAnalysis ? compactScrape(r.metrics, this.seriesPool) : true), capped: r.capped };
    });
    // Answers over a cap, by address until the inventory names their servers.
    const cappedAt: { address: string; body: string; message: string }[] = [];
    addresses.forEach((a, i) => {
      const r = probed[i]!;
      if (r.status === 'fulfilled') for (const c of r.value.capped ?? []) cappedAt.push({ address: a, ...c });
    });
    const probes = new Map<string, ProbeResult>();
    const pages = new Map<string, CompactScrape>();
    for (const a of this.gates.keys()) if (!addresses.includes(a)) this.gates.delete(a);
    addresses.forEach((a, i) => {
      const r = probed[i]!;
      const probe: ProbeResult = r.status === 'fulfilled' ? r.value.probe : { error: String(r.reason) };
      if (r.status === 'fulfilled' && r.value.metrics) {
        if (typeof r.value.metrics === 'object') pages.set(a, r.value.metrics);
        this.gates.set(a, {
          holderIdentity: holders.get(a) ?? '',
          gate: probe.proxyGate ?? 'unknown',
          coordinatedLeaderElection: probe.coordinatedLeaderElection ?? 'unknown',
          ...(probe.processStart === undefined ? {} : { processStart: probe.processStart }),
          ...(probe.version === undefined ? {} : { version: probe.version }),
        });
      } else if (r.status === 'fulfilled' && wanted(a) === undefined) {
        const kept = this.gates.get(a)!;
        probe.proxyGate = kept.gate;
        probe.coordinatedLeaderElection = kept.coordinatedLeaderElection;
        if (kept.processStart !== undefined) Object.assign(probe, { processStart: kept.processStart, processStartKept: true });
      } else {
        // A failed scrape: the gate is unknown now and read again next time. The process start of the last page
        // stays while the holder does: a failed read is no restart.
        const kept = this.gates.get(a);
        if (kept && kept.holderIdentity === (holders.get(a) ?? '')) {
          this.gates.set(a, { ...kept, failed: true });
          if (kept.processStart !== undefined) Object.assign(probe, { processStart: kept.processStart, processStartKept: true });
        } else {
          this.gates.delete(a);
        }
      }
      probes.set(a, probe);
    });
    this.inventory = buildInventory({ leases, endpoints, probes, hostnameAddresses, ...(this.inventory ? { previous: this.inventory } : {}), now });
    const peers: ObservedPeer[] = this.inventory.servers.filter((s) => s.identity !== '').map((s) => ({
      identity: s.identity,
      hostname: s.hostname,
      ...(s.address ? { address: s.address } : {}),
      ...(s.version ? { version: s.version } : {}),
      ...(s.emulation ? { emulation: s.emulation } : {}),
      ready: s.ready === true,
      proxyGate: s.proxyGate,
      ...(s.holderIdentity ? { holderIdentity: s.holderIdentity } : {}),
      ...(s.address && probes.get(s.address)?.processStart !== undefined ? { processStart: probes.get(s.address)!.processStart! } : {}),
      ...(s.address && probes.get(s.address)?.processStartKept ? { processStartKept: true as const } : {}),
      ...(s.lastRenew ? { lastRenew: s.lastRenew } : {}),
      ...(s.address && probes.get(s.address)?.coordinatedLeaderElection !== undefined ? { coordinatedLeaderElection: probes.get(s.address)!.coordinatedLeaderElection! } : {}),
      stale: s.stale,
    }));
    const up = peers.filter((p) => p.ready && !p.stale && p.address && p.version);
    const stalePeers = peers.filter((p) => p.stale).length;
    const nameOf = new Map(this.inventory.servers.filter((s) => s.address).map((s) => [s.address!, s.hostname || s.address!]));
    const bodyCaps: ObservedBodyCap[] = cappedAt.map((c) => ({ server: nameOf.get(c.address) ?? c.address, body: c.body, message: c.message }));
    const discovered = this.discovery(up, bodyCaps, (p) => discoveries.get(p.address!) ?? this.readDiscovery(p.address!, lookEnd));
    const stored = this.storage(peers, up, bodyCaps);
    const [discovery, orphans, analysis, storage, components] = await Promise.all([
      discovered.then((d) => d?.discovery),
      settings.orphansOf
        ? Promise.all([discovered, stored]).then(([d, st]) => this.orphans(d?.discovery?.own ?? [], d?.unlistable ?? new Set(), settings.orphansOf!, targetStoredOf(st, settings.orphansOf!.targetVersion)))
        : Promise.resolve(undefined),
      settings.prometheus && this.analysisSource
        ? this.analysisSource(up, settings, now).then((a) => a && withStalePeers(a, stalePeers))
        : Promise.resolve(this.analysis(up, pages, settings, now, stalePeers)),
      stored,
      // The kube-controller-manager and kube-scheduler Pods (src/plan/component-skew.ts): at every look, from an informer once synced.
      observeComponents(this.list),
    ]);
    if (bodyCaps.length > 0) this.log.warn('answers over their caps: those servers breach until they answer within them', { bodyCaps });
    return { peers, ...(bodyCaps.length > 0 ? { bodyCaps } : {}), ...(discovery ? { discovery } : {}), ...(orphans ? { orphans } : {}), ...(analysis ? { analysis } : {}), storage, components };
  }

  /**
   * Convergence and each server's own set, plus the resources some server's own discovery lists without the
   * `list` verb (left out of the orphan lists).
   */
  private async discovery(up: ObservedPeer[], caps: ObservedBodyCap[], readOf: (p: ObservedPeer) => Promise<DiscoveryRead>): Promise<{ discovery: NonNullable<Observation['discovery']>; unlistable: ReadonlySet<string> } | undefined> {
    if (up.length === 0) return undefined;
    const unlistable = new Set<string>();
    const servers: ServerDiscovery[] = await Promise.all(up.map(async (p) => {
      const read = await readOf(p);
      for (const { peer, error } of read.errors) {
        noteCap(caps, p.hostname, 'discovery', error);
        this.log.debug('discovery fetch failed', { server: p.hostname, peer, error: String(error) });
      }
      for (const k of read.unlistable) unlistable.add(k);
      return { server: p.hostname, version: p.version!, ...(p.emulation ? { emulation: p.emulation } : {}), own: read.own, peerAggregated: read.peerAggregated };
    }));
    const c = convergence(servers);
    const message = c.converged
      ? `${servers.length} servers agree: every peer-aggregated view is the union of the servers' own`
      : c.problems.map((pr) => `${pr.server}: ${pr.kind}${pr.missing.length ? ` missing ${pr.missing.slice(0, 5).join(', ')}` : ''}${pr.extra.length ? ` extra ${pr.extra.slice(0, 5).join(', ')}` : ''}`).join('; ');
    // Each server's own set as read (a server whose own fetch failed is left out), in hostname order.
    const own: ObservedOwnDiscovery[] = servers
      .filter((s) => s.own !== undefined)
      .sort((a, b) => a.server.localeCompare(b.server))
      .map((s) => ({ server: s.server, version: s.version, ...(s.emulation ? { emulation: s.emulation } : {}), resources: [...s.own!].sort() }));
    return { discovery: { converged: c.converged, message, own }, unlistable };
  }

  /**
   * One server's own (`profile=nopeer`) and peer-aggregated discovery, each `/apis` with `/api`. Never rejects:
   * what failed is undefined, its error kept. Each request gets what is left of the look (`until`), at least
   * PROBE_DEADLINE_MIN_MS: a server slow to answer discovery is unconverged for this look, not a look twice as long.
   */
  private async readDiscovery(address: string, until: number): Promise<DiscoveryRead> {
    const deadline = { until, timeoutMs: PROBE_DEADLINE_MIN_MS };
    const unlistable = new Set<string>();
    const errors: DiscoveryRead['errors'] = [];
    const get = async (peer: boolean): Promise<Set<string> | undefined> => {
      try {
        const [apis, api] = await Promise.all([this.direct.discovery(address, { peer, core: false }, deadline), this.direct.discovery(address, { peer, core: true }, deadline)]);
        if (!peer) for (const k of unlistableResources(apis, api)) unlistable.add(k);
        return resourceSet(apis, api);
      } catch (error) {
        errors.push({ peer, error });
        return undefined;
      }
    };
    const [own, peerAggregated] = await Promise.all([get(false), get(true)]);
    return { own, peerAggregated, unlistable, errors };
  }

  /**
   * The objects of the resources only the target side serves (orphanCandidates), each listed through the
   * balancer with `?limit=20`: the names of the first page, the count from `remainingItemCount` (or, when the
   * list gives none, by following its `continue` pages). Undefined when a side is unknown (a debug line says
   * why) or when any list fails (an info line names it): a partial answer could hide the very objects asked for.
   */
  private async orphans(own: readonly ObservedOwnDiscovery[], unlistable: ReadonlySet<string>, of: OrphansOf, targetStored: ReadonlySet<string> | undefined): Promise<ObservedOrphans[] | undefined> {
    const c = orphanCandidates(own, of, targetStored);
    if (!c.known) {
      this.log.debug('orphaned objects not read', { fromVersion: of.fromVersion, targetVersion: of.targetVersion, reason: c.reason });
      return undefined;
    }
    const resources = c.resources.filter((r) => !unlistable.has(r));
    if (resources.length < c.resources.length) this.log.debug('orphaned objects: resources without the list verb left out (nothing stored)', { resources: c.resources.filter((r) => unlistable.has(r)) });
    const listed = await mapLimitSettled(resources, CONCURRENCY, (resource) => this.listOrphans(resource));
    const failed = resources.flatMap((resource, i) => {
      const r = listed[i]!;
      return r.status === 'rejected' ? [`${resource}: ${r.reason instanceof Error ? r.reason.message : String(r.reason)}`] : [];
    });
    if (failed.length > 0) {
      this.log.info('orphaned objects not reported: a list failed; read again at the next observation', { failed: failed.length, of: resources.length, first: failed[0] });
      return undefined;
    }
    return listed.map((r) => (r as PromiseFulfilledResult<ObservedOrphans>).value);
  }

  private async listOrphans(resource: string): Promise<ObservedOrphans> {
    const firstPath = listPath(resource, { limit: String(ORPHAN_NAMES_LIMIT) });
    const first = checkedList(firstPath, await this.list<ObjectListLike>(firstPath));
    const names = first.items!.map(objectName);
    let count = names.length;
    const remaining = first.metadata?.remainingItemCount;
    if (typeof remaining === 'number' && remaining >= 0) {
      count += remaining;
    } else {
      let cont = first.metadata?.continue;
      for (let page = 0; cont && page < COUNT_PAGES; page++) {
        const path = listPath(resource, { limit: '500', continue: cont });
        const next = checkedList(path, await this.list<ObjectListLike>(path));
        count += next.items!.length;
        cont = next.metadata?.continue;
      }
      if (cont) this.log.info('orphaned objects: count is a lower bound (too many pages to follow)', { resource, counted: count });
    }
    return { resource, count, names };
  }

  /** Computes signals once per interval, from deltas between this observation's pages and the last window's. */
  private analysis(up: ObservedPeer[], pages: ReadonlyMap<string, CompactScrape>, s: AnalysisSettings, now: number, stalePeers: number): ObservedAnalysis | undefined {
    const due = s.due ?? now - this.lastAnalysisAt >= s.intervalMs;
    if (this.lastAnalysis && !due) return this.lastAnalysis;
    const windows = new Map<string, WindowDeltas>();
    const versionOf = new Map<string, string>();
    up.forEach((p) => {
      const page = pages.get(p.address!);
      if (!page) return;
      const prev = this.scrapes.get(p.hostname);
      this.scrapes.set(p.hostname, { at: now, metrics: page });
      if (!prev) return;
      windows.set(p.hostname, compactWindowDeltas(prev.metrics, page));
      versionOf.set(p.hostname, p.version!);
    });
    if (windows.size === 0) return this.lastAnalysis;
    const analysis = summarizeAnalysis(windows, versionOf, {
      proxyErrorRatio: s.proxyErrorRatio, errorRatio: s.errorRatio, latencyP99Seconds: s.latencyP99Seconds,
      ...(s.unavailableAPIServices === undefined ? {} : { unavailableAPIServices: s.unavailableAPIServices }),
      ...(s.webhookErrorRatio === undefined ? {} : { webhookErrorRatio: s.webhookErrorRatio }),
      ...(s.webhookMinCalls === undefined ? {} : { webhookMinCalls: s.webhookMinCalls }),
    }, now, { stalePeers });
    this.lastAnalysis = analysis;
    this.lastAnalysisAt = now;
    if (analysis.verdict !== 'Healthy') this.log.info('analysis', { verdict: analysis.verdict, breaches: analysis.breaches });
    return analysis;
  }

  /**
   * The storage hashes of every (version, emulated version) pair among the up servers, each from one complete
   * read of one server: a v1.36.3 binary with --emulated-version=1.35 may store other versions than a plain
   * v1.36.3. A read is kept while its server runs the same binary and emulation (same version, emulation and
   * lease holder) and forgotten when it restarts or leaves. A pair without a kept read is read from one of its
   * up servers, a different one after each failure; a partial read is neither kept nor reported: the next
   * observation tries again.
   * Aggregated group/versions (an APIService with `spec.service`) are left out of a read: their extension
   * server stores them, not kube-apiserver. The APIServices are listed once per observation that reads; when
   * they cannot be listed, nothing is read (no entry for a version without a kept read) and a log line says why.
   */
  private async storage(peers: readonly ObservedPeer[], up: readonly ObservedPeer[], caps: ObservedBodyCap[]): Promise<ObservedStorage[]> {
    for (const [hostname, read] of this.storageReads) {
      const p = peers.find((x) => x.hostname === hostname);
      if (!p || cohortKey(p) !== cohortKey(read.storage) || (processIdentity(p) ?? '') !== read.holderIdentity) this.storageReads.delete(hostname);
    }
    const out: ObservedStorage[] = [];
    const pairs = [...new Map(up.map((p) => [cohortKey(p), p])).values()].sort(byVersionThenEmulation);
    const keys = pairs.map(cohortKey);
    let aggregated: Promise<ReadonlySet<string> | undefined> | undefined;
    for (const key of keys) {
      const cohort = up.filter((p) => cohortKey(p) === key).sort((a, b) => a.hostname.localeCompare(b.hostname));
      const kept = cohort.map((p) => this.storageReads.get(p.hostname)).find((r) => r !== undefined);
      if (kept) {
        out.push(kept.storage);
        continue;
      }
      aggregated ??= this.aggregatedPaths();
      const skip = await aggregated;
      // Not the server's fault: the next observation asks the same server again.
      if (!skip) continue;
      const attempt = this.storageAttempts.get(key) ?? 0;
      const p = cohort[attempt % cohort.length]!;
      const storage = await this.readStorage(p, skip, caps);
      if (storage) {
        this.storageReads.set(p.hostname, { holderIdentity: processIdentity(p) ?? '', storage });
        this.storageAttempts.delete(key);
        out.push(storage);
      } else {
        this.storageAttempts.set(key, attempt + 1);
      }
    }
    for (const key of this.storageAttempts.keys()) if (!keys.includes(key)) this.storageAttempts.delete(key);
    return out;
  }

  /** The legacy discovery paths of the aggregated group/versions; undefined (logged) when the APIServices cannot be listed. */
  private async aggregatedPaths(): Promise<ReadonlySet<string> | undefined> {
    try {
      return aggregatedDiscoveryPaths(await this.list<APIServiceListLike>(APISERVICES_PATH));
    } catch (err) {
      this.log.info('storage hashes not read: cannot list APIServices to leave aggregated APIs out (needs list apiservices.apiregistration.k8s.io); read again at the next observation', { path: APISERVICES_PATH, error: String(err) });
      return undefined;
    }
  }

  /**
   * Every legacy discovery document the server lists for itself except the aggregated ones (`skip`), or
   * undefined when any one of them failed.
   */
  private async readStorage(p: ObservedPeer, skip: ReadonlySet<string>, caps: ObservedBodyCap[]): Promise<ObservedStorage | undefined> {
    const address = p.address!;
    try {
      const [own, core] = await Promise.all([this.direct.discovery(address, { peer: false, core: false }), this.direct.discovery(address, { peer: false, core: true })]);
      const listed = [...legacyDiscoveryPaths(core), ...legacyDiscoveryPaths(own)];
      const paths = listed.filter((path) => !skip.has(path));
      if (paths.length === 0) throw new Error('discovery lists no group/version kube-apiserver serves itself');
      if (paths.length < listed.length) this.log.debug('storage hashes: aggregated APIs left out', { server: p.hostname, aggregated: listed.filter((path) => skip.has(path)) });
      const lists = await mapLimitSettled(paths, CONCURRENCY, async (path) => checkedResourceList(path, await this.direct.resourceList(address, path)));
      const failed = paths.flatMap((path, i) => {
        const r = lists[i]!;
        if (r.status === 'rejected') noteCap(caps, p.hostname, 'storage', r.reason);
        return r.status === 'rejected' ? [`${path}: ${r.reason instanceof Error ? r.reason.message : String(r.reason)}`] : [];
      });
      if (failed.length > 0) {
        this.log.info('storage hashes incomplete, not used; read again at the next observation', { server: p.hostname, version: p.version, emulation: p.emulation, failed: failed.length, of: paths.length, first: failed[0] });
        return undefined;
      }
      const docs = lists.map((r) => (r as PromiseFulfilledResult<APIResourceList>).value);
      return {
        version: p.version!,
        ...(p.emulation ? { emulation: p.emulation } : {}),
        server: p.hostname,
        hashes: Object.fromEntries(mergeHashes(docs.map(storageVersionHashes))),
        kinds: Object.fromEntries(mergeHashes(docs.map(resourceKinds))),
      };
    } catch (err) {
      noteCap(caps, p.hostname, 'storage', err);
      this.log.info('storage hash fetch failed; read again at the next observation', { server: p.hostname, version: p.version, error: String(err) });
      return undefined;
    }
  }
}

/**
 * The Lease served at each address, its server's hostname ('' when it has no label) and holder identity: by its
 * peer-advertise annotation, else by its hostname's hint (a server whose gate is off advertises no address).
 * Addresses no lease claims have none.
 */
function leasesByAddress(leases: readonly IdentityLeaseLike[], hostnameAddresses: ReadonlyMap<string, string>): Map<string, { hostname: string; holder: string }> {
  const out = new Map<string, { hostname: string; holder: string }>();
  for (const l of leases) {
    const hostname = l.metadata?.labels?.[HOSTNAME_LABEL] ?? '';
    const address = l.metadata?.annotations?.[PEER_ADDRESS_ANNOTATION] ?? hostnameAddresses.get(hostname);
    if (address) out.set(address, { hostname, holder: l.spec?.holderIdentity ?? '' });
  }
  return out;
}

/** A legacy discovery document is the one asked for: an APIResourceList of that group/version. */
function checkedResourceList(path: string, doc: APIResourceList): APIResourceList {
  const expected = path.startsWith('/api/') ? path.slice('/api/'.length) : path.slice('/apis/'.length);
  if (doc?.kind !== 'APIResourceList' || doc.groupVersion !== expected) {
    throw new Error(`expected APIResourceList ${expected}, got ${String(doc?.kind)} ${String(doc?.groupVersion)}`);
  }
  return doc;
}

/** The Prometheus source's analysis with the observer's count of stale identity Leases. */
function withStalePeers(a: ObservedAnalysis, stalePeers: number): ObservedAnalysis {
  return { ...a, signals: { ...a.signals, stalePeers } };
}

/** Records an error that is a cap exceeded in this observation's `bodyCaps`. */
function noteCap(caps: ObservedBodyCap[], server: string, body: string, err: unknown): void {
  const c = capExceeded(err);
  if (c) caps.push({ server, body, message: c.message });
}
