import type { KubeConfig, V1EndpointSliceList, V1LeaseList, V1PodList } from '@kubernetes/client-node';
import type { Logger } from '../runtime/logger.ts';
import type { Observation, ObservedPeer, ObservedAnalysis } from '../plan/observation.ts';
import { DirectClient } from './direct-client.ts';
import { buildInventory, addressesToProbe, type Inventory, type IdentityLeaseLike, type EndpointAddresses, type ProbeResult, IDENTITY_LABEL, IDENTITY_LABEL_VALUE, HOSTNAME_LABEL, PEER_ADDRESS_ANNOTATION } from './inventory.ts';
import { mapLimitSettled } from './map-limit.ts';
import { SIGNAL_FAMILIES, windowDeltas, type WindowDeltas } from './signals.ts';
import type { ParsedMetrics } from './prom-text.ts';
import { resourceSet, convergence, storageVersionHashes, resourceKinds, mergeHashes, legacyDiscoveryPaths, type ServerDiscovery } from './discovery.ts';
import { summarizeAnalysis } from './analysis-summary.ts';
import { rollbackSafety, type ServerStorageHashes } from '../plan/rollback-safety.ts';
import { cachedCertificateDnsNames, hintsFromCertificates, hintsFromMirrorPods } from './hostname-hints.ts';
import type { PrometheusSettings } from './prometheus-source.ts';

/** GET of a list through the balancer, with the caller's retries; injected so observation shares the operator's client. */
export type ListFn = <T>(path: string) => Promise<T>;

export interface AnalysisSettings {
  intervalMs: number;
  proxyErrorRatio: number;
  errorRatio: number;
  latencyP99Seconds: number;
  /** Versions whose servers form the "new" and "old" cohorts; known once preflight recorded them. */
  fromVersion?: string;
  targetVersion?: string;
  /** spec.analysis.prometheus when spec.analysis.source is Prometheus: the checks come from the `analysisSource`. */
  prometheus?: PrometheusSettings;
}

/**
 * Computes the analysis somewhere other than from this observer's /metrics scrapes (e.g.
 * `PrometheusAnalysis.source`). Gets the up peers (named, addressed, versioned) to name its subjects.
 */
export type AnalysisSource = (up: ObservedPeer[], settings: AnalysisSettings, now: number) => Promise<ObservedAnalysis | undefined>;

export interface FleetObserverOptions {
  /** Used for checks whose settings carry `prometheus`; the others scrape each server directly. */
  analysisSource?: AnalysisSource;
}

interface Scrape {
  at: number;
  metrics: ParsedMetrics;
}

const CONCURRENCY = 4;

/**
 * The imperative shell of observation: fetches leases, EndpointSlices, each server's /version, /readyz,
 * /metrics and discovery, and hands the pure functions of this folder what they need. It keeps the
 * previous scrape per server (signals are deltas between scrapes) and each version's storage hashes
 * (the old servers' hashes must be remembered: once they are replaced they cannot be fetched).
 */
export class FleetObserver {
  private readonly list: ListFn;
  private readonly direct: DirectClient;
  private readonly log: Logger;
  private inventory: Inventory | undefined;
  private readonly scrapes = new Map<string, Scrape>();
  private lastAnalysis: ObservedAnalysis | undefined;
  private lastAnalysisAt = 0;
  private readonly hashesByVersion = new Map<string, ServerStorageHashes>();
  private readonly certificateNames = cachedCertificateDnsNames();
  private readonly analysisSource: AnalysisSource | undefined;

  constructor(kc: KubeConfig, list: ListFn, log: Logger, direct?: DirectClient, options: FleetObserverOptions = {}) {
    this.list = list;
    this.log = log;
    this.direct = direct ?? DirectClient.fromKubeConfig(kc, { timeoutMs: 5000 });
    this.analysisSource = options.analysisSource;
  }

  close(): void {
    this.direct.close();
  }

  async leases(): Promise<IdentityLeaseLike[]> {
    const selector = encodeURIComponent(`${IDENTITY_LABEL}=${IDENTITY_LABEL_VALUE}`);
    const list = await this.list<V1LeaseList>(`/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?labelSelector=${selector}`);
    return list.items;
  }

  async endpoints(): Promise<EndpointAddresses[]> {
    const list = await this.list<V1EndpointSliceList>(`/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=${encodeURIComponent('kubernetes.io/service-name=kubernetes')}`);
    return list.items.map((s) => ({
      addresses: (s.endpoints ?? []).filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses),
      port: s.ports?.find((p) => p.name === 'https')?.port ?? s.ports?.[0]?.port ?? 6443,
    }));
  }

  /** Hostname -> address for leases without the peer-advertise annotation (gate off). */
  private async hostnameHints(leases: IdentityLeaseLike[], endpoints: EndpointAddresses[]): Promise<Map<string, string>> {
    const missing = leases.filter((l) => !l.metadata?.annotations?.[PEER_ADDRESS_ANNOTATION]).map((l) => l.metadata?.labels?.[HOSTNAME_LABEL] ?? '').filter(Boolean);
    if (missing.length === 0) return new Map();
    const pods = await this.list<V1PodList>(`/api/v1/namespaces/kube-system/pods?labelSelector=${encodeURIComponent('component=kube-apiserver')}`).catch(() => ({ items: [] }) as V1PodList);
    const hints = hintsFromMirrorPods(pods);
    const still = missing.filter((h) => !hints.has(h));
    if (still.length > 0) {
      const addrs = endpoints.flatMap((e) => e.addresses.map((a) => `${a}:${e.port}`));
      for (const [h, a] of await hintsFromCertificates(addrs, still, this.certificateNames)) hints.set(h, a);
    }
    return hints;
  }

  async observe(settings: AnalysisSettings, now = Date.now()): Promise<Observation> {
    const [leases, endpoints] = await Promise.all([this.leases(), this.endpoints()]);
    const hostnameAddresses = await this.hostnameHints(leases, endpoints);
    const addresses = addressesToProbe({ leases, endpoints, hostnameAddresses });
    // One /metrics scrape per server serves both the gate state and, when due, the analysis window.
    const probed = await mapLimitSettled(addresses, CONCURRENCY, (a) => this.direct.probeWithMetrics(a, SIGNAL_FAMILIES));
    const probes = new Map<string, ProbeResult>();
    const pages = new Map<string, ParsedMetrics>();
    addresses.forEach((a, i) => {
      const r = probed[i]!;
      probes.set(a, r.status === 'fulfilled' ? r.value.probe : { error: String(r.reason) });
      if (r.status === 'fulfilled' && r.value.metrics) pages.set(a, r.value.metrics);
    });
    this.inventory = buildInventory({ leases, endpoints, probes, hostnameAddresses, ...(this.inventory ? { previous: this.inventory } : {}), now });
    const peers: ObservedPeer[] = this.inventory.servers.filter((s) => s.identity !== '').map((s) => ({
      identity: s.identity,
      hostname: s.hostname,
      ...(s.address ? { address: s.address } : {}),
      ...(s.version ? { version: s.version } : {}),
      ready: s.ready === true,
      proxyGate: s.proxyGate,
      ...(s.holderIdentity ? { holderIdentity: s.holderIdentity } : {}),
      ...(s.lastRenew ? { lastRenew: s.lastRenew } : {}),
      stale: s.stale,
    }));
    const up = peers.filter((p) => p.ready && !p.stale && p.address && p.version);
    const [discovery, analysis, rollback] = await Promise.all([
      this.discovery(up),
      settings.prometheus && this.analysisSource ? this.analysisSource(up, settings, now) : Promise.resolve(this.analysis(up, pages, settings, now)),
      this.rollback(up, settings),
    ]);
    return { peers, ...(discovery ? { discovery } : {}), ...(analysis ? { analysis } : {}), ...(rollback ? { rollback } : {}) };
  }

  private async discovery(up: ObservedPeer[]): Promise<Observation['discovery']> {
    if (up.length === 0) return undefined;
    const servers: ServerDiscovery[] = await Promise.all(up.map(async (p) => {
      const get = async (peer: boolean): Promise<Set<string> | undefined> => {
        try {
          const [apis, api] = await Promise.all([this.direct.discovery(p.address!, { peer, core: false }), this.direct.discovery(p.address!, { peer, core: true })]);
          return resourceSet(apis, api);
        } catch (err) {
          this.log.debug('discovery fetch failed', { server: p.hostname, peer, error: String(err) });
          return undefined;
        }
      };
      const [own, peerAggregated] = await Promise.all([get(false), get(true)]);
      return { server: p.hostname, version: p.version!, own, peerAggregated };
    }));
    const c = convergence(servers);
    const message = c.converged
      ? `${servers.length} servers agree: every peer-aggregated view is the union of the servers' own`
      : c.problems.map((pr) => `${pr.server}: ${pr.kind}${pr.missing.length ? ` missing ${pr.missing.slice(0, 5).join(', ')}` : ''}${pr.extra.length ? ` extra ${pr.extra.slice(0, 5).join(', ')}` : ''}`).join('; ');
    return { converged: c.converged, message };
  }

  /** Computes signals once per interval, from deltas between this observation's pages and the last window's. */
  private analysis(up: ObservedPeer[], pages: ReadonlyMap<string, ParsedMetrics>, s: AnalysisSettings, now: number): ObservedAnalysis | undefined {
    if (this.lastAnalysis && now - this.lastAnalysisAt < s.intervalMs) return this.lastAnalysis;
    const windows = new Map<string, WindowDeltas>();
    const versionOf = new Map<string, string>();
    up.forEach((p) => {
      const page = pages.get(p.address!);
      if (!page) return;
      const prev = this.scrapes.get(p.hostname);
      this.scrapes.set(p.hostname, { at: now, metrics: page });
      if (!prev) return;
      windows.set(p.hostname, windowDeltas(prev.metrics, page));
      versionOf.set(p.hostname, p.version!);
    });
    if (windows.size === 0) return this.lastAnalysis;
    const analysis = summarizeAnalysis(windows, versionOf, { proxyErrorRatio: s.proxyErrorRatio, errorRatio: s.errorRatio, latencyP99Seconds: s.latencyP99Seconds }, now);
    this.lastAnalysis = analysis;
    this.lastAnalysisAt = now;
    if (analysis.verdict !== 'Healthy') this.log.info('analysis', { verdict: analysis.verdict, breaches: analysis.breaches });
    return analysis;
  }

  /** Fetches each version's storage hashes once (from one up server of that version) and compares old vs new. */
  private async rollback(up: ObservedPeer[], s: AnalysisSettings): Promise<Observation['rollback']> {
    for (const p of up) {
      if (this.hashesByVersion.has(p.version!)) continue;
      try {
        const own = await this.direct.discovery(p.address!, { peer: false, core: false });
        const core = await this.direct.discovery(p.address!, { peer: false, core: true });
        const paths = [...legacyDiscoveryPaths(core), ...legacyDiscoveryPaths(own)];
        const lists = await mapLimitSettled(paths, CONCURRENCY, (path) => this.direct.resourceList(p.address!, path));
        const ok = lists.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
        this.hashesByVersion.set(p.version!, { server: p.hostname, hashes: mergeHashes(ok.map(storageVersionHashes)), kinds: mergeHashes(ok.map(resourceKinds)) });
      } catch (err) {
        this.log.debug('storage hash fetch failed', { server: p.hostname, error: String(err) });
      }
    }
    if (!s.fromVersion || !s.targetVersion || s.fromVersion === s.targetVersion) return undefined;
    const oldH = this.hashesByVersion.get(s.fromVersion);
    const newH = this.hashesByVersion.get(s.targetVersion);
    if (!oldH || !newH) return undefined;
    const r = rollbackSafety([oldH], [newH]);
    return {
      safe: r.safe,
      blocking: r.blocking.map((b) => b.resource),
      message: r.safe ? r.reason : `${r.reason}${r.blocking.length ? `: ${r.blocking.map((b) => `${b.resource} (${b.reason})`).join('; ')}` : ''}`,
    };
  }
}

