import type { ApiServerUpgrade } from '../api/types.generated.ts';

/** How the reconciler reads upgrades; KubeClient reads them from the API, `CachedUpgrades` from an informer. */
export interface UpgradeReads {
  getUpgrade(name: string): Promise<ApiServerUpgrade | undefined>;
  listUpgrades(): Promise<{ items: ApiServerUpgrade[] }>;
  /** The reconciler wrote `after` over `before` (same object): later reads must not go back to `before`. */
  written?(before: ApiServerUpgrade, after: ApiServerUpgrade): void;
}

/** What of an informer (src/runtime/informer.ts) is read: its cache, keyed by name (cluster-scoped). */
export interface UpgradeStore {
  readonly hasSynced: boolean;
  get(key: string): ApiServerUpgrade | undefined;
  list(): ApiServerUpgrade[];
}

interface Written {
  /** The resourceVersions our writes replaced: the cache showing one of them has not seen our last write yet. */
  superseded: Set<string>;
  latest: ApiServerUpgrade;
}

const rv = (u: ApiServerUpgrade): string => u.metadata?.resourceVersion ?? '';

/**
 * The upgrades from the informer's cache once it synced (before: from the API), so that a reconcile makes no
 * GET and no LIST. The cache lags the reconciler's own status writes by a watch event: a reconcile that reads
 * the object its previous one replaced would patch with a stale resourceVersion (a 409 and a backoff). So the
 * last object written is kept until the cache shows it or anything newer, and read instead of an older copy.
 * Versions are never compared for order (they are opaque): only "is it one our writes replaced".
 */
export class CachedUpgrades implements UpgradeReads {
  private readonly store: UpgradeStore;
  private readonly api: Pick<UpgradeReads, 'getUpgrade' | 'listUpgrades'>;
  private readonly writes = new Map<string, Written>();

  constructor(store: UpgradeStore, api: Pick<UpgradeReads, 'getUpgrade' | 'listUpgrades'>) {
    this.store = store;
    this.api = api;
  }

  getUpgrade(name: string): Promise<ApiServerUpgrade | undefined> {
    if (!this.store.hasSynced) return this.api.getUpgrade(name);
    return Promise.resolve(this.fresh(name, this.store.get(name)));
  }

  listUpgrades(): Promise<{ items: ApiServerUpgrade[] }> {
    if (!this.store.hasSynced) return this.api.listUpgrades();
    const items = this.store.list().map((u) => this.fresh(u.metadata?.name ?? '', u)!);
    for (const name of this.writes.keys()) if (this.store.get(name) === undefined) this.writes.delete(name);
    return Promise.resolve({ items });
  }

  written(before: ApiServerUpgrade, after: ApiServerUpgrade): void {
    const name = after.metadata?.name ?? '';
    const w = this.writes.get(name) ?? { superseded: new Set<string>(), latest: after };
    w.superseded.add(rv(before));
    w.latest = after;
    this.writes.set(name, w);
  }

  /** Kept writes the cache has not caught up with (for tests and debugging). */
  get pending(): number {
    return this.writes.size;
  }

  private fresh(name: string, cached: ApiServerUpgrade | undefined): ApiServerUpgrade | undefined {
    const w = this.writes.get(name);
    if (!w) return cached;
    if (cached !== undefined && w.superseded.has(rv(cached))) return w.latest;
    // The cache shows our last write, a newer change, or the object's deletion: it is the truth again.
    this.writes.delete(name);
    return cached;
  }
}
