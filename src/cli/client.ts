// The plugin's I/O: the user's kubeconfig (--kubeconfig, --context, $KUBECONFIG, as kubectl reads them),
// the ApiServerUpgrade API, its Events, a watch, and the fleet observed exactly as the operator observes it.
import type { V1Node } from '@kubernetes/client-node';
import { KubeAccess } from '../runtime/kubeconfig.ts';
import { proxyRefusal } from './proxy.ts';
import type { ApiServerUpgrade, ApiServerUpgradeSpec } from '../api/types.generated.ts';
import { resolveSpec } from '../api/defaults.ts';
import { KubeApiError, KubeClient, MERGE_PATCH } from '../runtime/kube.ts';
import { Informer } from '../runtime/informer.ts';
import type { KubeObject } from '../runtime/object-cache.ts';
import { silentLogger } from '../runtime/logger.ts';
import { FleetObserver, type AnalysisSettings } from '../observe/fleet.ts';
import type { InventoryRow } from '../observe/inventory.ts';
import { observeTrust } from '../observe/trust.ts';
import { observeCoverage } from '../observe/coverage.ts';
import { observeGates } from '../observe/gates.ts';
import { httpQuery } from '../observe/prometheus-source.ts';
import type { Observation } from '../plan/index.ts';
import { EVENTS_PATH, eventsFieldSelector, type KubeEvent } from './events.ts';

/** An error the plugin reports in one line, exit status 1. */
export class CliError extends Error {
  override readonly name = 'CliError';
}

/** The cluster does not serve apiserverupgrades (the CRD is not installed): a 404 on the collection. */
export class CrdNotServedError extends CliError {}

export interface Connection {
  kubeconfig?: string | undefined;
  context?: string | undefined;
}

/** What the commands need from the cluster; tests replace it with a fake. */
export interface UpgradeApi {
  /** undefined when there is no such object. */
  get(name: string): Promise<ApiServerUpgrade | undefined>;
  /** `signal` gives up on the request (a deadline the caller keeps). */
  list(signal?: AbortSignal): Promise<ApiServerUpgrade[]>;
  /** A JSON merge patch of the object (not its status). */
  patch(name: string, patch: Record<string, unknown>): Promise<ApiServerUpgrade>;
  events(name: string): Promise<KubeEvent[]>;
  /** Calls `onChange` with the object on every change (undefined once deleted) until stopped; every upgrade without a name. */
  watch(name: string | undefined, onChange: (u: ApiServerUpgrade | undefined) => void): { stop(): Promise<void> };
  /** One observation of the fleet, as the operator makes it (read-only). */
  observe(spec: ApiServerUpgradeSpec): Promise<{ observation: Observation; inventory: InventoryRow[] | undefined }>;
  close(): void;
}

/**
 * kubectl's precedence: --kubeconfig, else $KUBECONFIG (a list, merged: for each name the first file that sets it
 * wins), else ~/.kube/config; then --context.
 */
export function loadConfig(c: Connection): KubeAccess {
  try {
    return c.kubeconfig ? KubeAccess.fromFile(c.kubeconfig, c.context) : KubeAccess.fromDefault(c.context);
  } catch (err) {
    // The loader's message names the file and the field.
    throw new CliError(`cannot load the kubeconfig: ${(err as Error).message}`);
  }
}

/** The context names of the kubeconfig `kubeconfig` or, without it, of the one kubectl reads by default. */
export function contextNames(kubeconfig: string | undefined): string[] {
  try {
    return KubeAccess.contextNames(kubeconfig);
  } catch (err) {
    throw new CliError(`cannot load the kubeconfig: ${(err as Error).message}`);
  }
}

const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';

/** A 404 on the collection means the CRD is not installed (the name-level 404 is "not found"). */
function explain(err: unknown): never {
  if (err instanceof KubeApiError && err.statusCode === 404) {
    throw new CrdNotServedError(`the cluster does not serve apiserverupgrades.upgrade.apiserver.dev: is the operator's CRD installed? (${err.message})`);
  }
  throw err;
}

export class KubeUpgradeApi implements UpgradeApi {
  private readonly kc: KubeAccess;
  private readonly kube: KubeClient;
  private readonly log = silentLogger();

  constructor(kc: KubeAccess) {
    this.kc = kc;
    // One command, no loop to stay awake for: each call waits the full 15 s from the first attempt (the operator's
    // short first deadline is for a reconcile that must not go blind on one server; KubeClientOptions.firstTimeoutMs).
    this.kube = new KubeClient(kc, { logger: this.log, retry: { attempts: 3 }, firstTimeoutMs: 15_000 });
  }

  static connect(c: Connection, env: Record<string, string | undefined> = process.env): KubeUpgradeApi {
    const kc = loadConfig(c);
    const refusal = proxyRefusal(kc.server, env);
    if (refusal) throw new CliError(refusal);
    return new KubeUpgradeApi(kc);
  }

  async get(name: string): Promise<ApiServerUpgrade | undefined> {
    try {
      return await this.kube.getUpgrade(name);
    } catch (err) {
      return explain(err);
    }
  }

  async list(signal?: AbortSignal): Promise<ApiServerUpgrade[]> {
    try {
      return (await this.kube.listUpgrades(signal)).items;
    } catch (err) {
      return explain(err);
    }
  }

  patch(name: string, patch: Record<string, unknown>): Promise<ApiServerUpgrade> {
    return this.kube.request<ApiServerUpgrade>('PATCH', `${UPGRADES}/${encodeURIComponent(name)}`, { body: patch, contentType: MERGE_PATCH });
  }

  async events(name: string): Promise<KubeEvent[]> {
    try {
      return (await this.kube.request<{ items?: KubeEvent[] }>('GET', EVENTS_PATH, { query: { fieldSelector: eventsFieldSelector(name) } })).items ?? [];
    } catch (err) {
      // A server that does not know the field selector: list them all and filter here.
      if (err instanceof KubeApiError && err.statusCode === 400) return (await this.kube.request<{ items?: KubeEvent[] }>('GET', EVENTS_PATH)).items ?? [];
      throw err;
    }
  }

  watch(name: string | undefined, onChange: (u: ApiServerUpgrade | undefined) => void): { stop(): Promise<void> } {
    // The operator's own informer: every way a watch can end leads to a re-watch or a relist.
    const informer = new Informer({ kubeConfig: this.kc, path: UPGRADES, ...(name === undefined ? {} : { fieldSelector: `metadata.name=${name}` }), name: 'apiserverupgrade', logger: this.log });
    // The informer holds the objects as the API sent them: ApiServerUpgrades, by the path.
    const changed = (o: KubeObject): void => onChange(o as unknown as ApiServerUpgrade);
    informer.addHandlers({ add: changed, update: (_o, u) => changed(u), delete: () => onChange(undefined) });
    informer.start();
    return { stop: () => informer.stop() };
  }

  async observe(spec: ApiServerUpgradeSpec): Promise<{ observation: Observation; inventory: InventoryRow[] | undefined }> {
    const s = resolveSpec(spec);
    // The reconciler's settings for this spec; the analysis does not matter before the first batch.
    const settings: AnalysisSettings = {
      intervalMs: s.analysis.intervalMs,
      due: true,
      proxyErrorRatio: s.analysis.thresholds.proxyErrorRatio,
      errorRatio: s.analysis.thresholds.errorRatio,
      latencyP99Seconds: s.analysis.thresholds.latencyP99Ms / 1000,
    };
    const observer = new FleetObserver(this.kc, (path) => this.kube.request('GET', path), this.log);
    try {
      const observation = await observer.observe(settings);
      // Preflight's trust and coverage facts as the operator reads them, except that the plugin calls no driver:
      // flags come from kubeadm's mirror Pods or are unknown (docs/trust.md).
      const list = <T>(path: string): Promise<T> => this.kube.request<T>('GET', path);
      const [trust, coverage] = await Promise.all([
        observeTrust(observation.peers, observer.lastInventory, { list, noDescribe: 'kubectl apiserver-upgrade plan calls no driver (the operator asks the webhook\'s Describe)' }),
        observeCoverage(list),
      ]);
      // spec.gates, evaluated once from here as the operator reads them (a Prometheus only the cluster reaches answers
      // nothing: the gate shows as not evaluated, as it would count for the operator).
      const g = s.gates;
      const gates = g.queries.length > 0 || g.controlPlaneNodesReady
        ? await observeGates({ ...(g.prometheus ? { prometheus: g.prometheus } : {}), queries: g.queries.map((q) => ({ name: q.name, query: q.query })), controlPlaneNodes: g.controlPlaneNodesReady }, {
          query: httpQuery(5_000),
          listNodes: async (path) => (await this.kube.request<{ items?: V1Node[] }>('GET', path)).items ?? [],
          now: () => Date.now(),
        })
        : undefined;
      return { observation: { ...observation, trust, coverage, ...(gates ? { gates } : {}) }, inventory: observer.lastInventory?.servers };
    } finally {
      observer.close();
    }
  }

  close(): void {
    /* nothing pooled beyond the process */
  }
}
