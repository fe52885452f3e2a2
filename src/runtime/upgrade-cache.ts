import type { ApiServerUpgrade } from '../api/types.generated.ts';

/** How the reconciler reads upgrades; KubeClient reads them from the API, `CachedUpgrades` from an informer. */
export interface UpgradeReads {
  getUpgrade(name: string): Promise<ApiServerUpgrade | undefined>;
  listUpgrades(): Promise<{ items: ApiServerUpgrade[] }>;
  /** The reconciler wrote `after` over `before` (same object): later reads must not go back to `before`. */
  written?(before: ApiServerUpgrade, after: ApiServerUpgrade): void;
  /** The API answered 404 for an upgrade these reads returned: the reads are behind the API. */
  gone?(name: string): void;
  /** A write guarded by what these reads returned got 409: the next read of `name` must not be the same copy. */
  conflicted?(name: string): void;
}

export interface CachedUpgradesOptions {
  /**
   * Called when the cache is known to be behind the API (main.ts resyncs the informer): an upgrade the API says is
   * gone, or our own status write not echoed by the watch within `echoDeadlineMs`.
   */
  onStale?(why: string): void;
  /** How long our write may go unseen by the watch before the cache counts as behind. Default 15 s. */
  echoDeadlineMs?: number;
  now?(): number;
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
  /** When `latest` was written (the operator's clock). */
  at: number;
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
  /** Upgrades whose last guarded write got 409: read from the API next. */
  private readonly conflicts = new Set<string>();
  private readonly opts: CachedUpgradesOptions;

  constructor(store: UpgradeStore, api: Pick<UpgradeReads, 'getUpgrade' | 'listUpgrades'>, opts: CachedUpgradesOptions = {}) {
    this.store = store;
    this.api = api;
    this.opts = opts;
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  getUpgrade(name: string): Promise<ApiServerUpgrade | undefined> {
    const conflict = this.conflicts.delete(name);
    if (!this.store.hasSynced) return this.api.getUpgrade(name);
    if (conflict) return this.afterConflict(name);
    return Promise.resolve(this.fresh(name, this.store.get(name)));
  }

  /**
   * A 409 says the copy read was not the API's, and the cache may not be about to change: a watch kept to a server cut
   * from etcd shows nothing new, while every write from its copy gets 409 (nodes seed 4214 #19: a resume during an
   * etcd cut held the status, and with it a breach's pause, for 15 s). So the API is read, and its copy is kept as our
   * own writes are — until the cache shows it or anything newer, and no longer than the echo deadline unnoticed.
   */
  private async afterConflict(name: string): Promise<ApiServerUpgrade | undefined> {
    const got = await this.api.getUpgrade(name);
    const cached = this.store.get(name);
    if (got === undefined) {
      this.gone(name);
      return undefined;
    }
    if (cached !== undefined && rv(cached) !== rv(got)) {
      const w = this.writes.get(name) ?? { superseded: new Set<string>(), latest: got, at: this.now() };
      w.superseded.add(rv(cached));
      w.latest = got;
      this.writes.set(name, w);
    }
    return this.fresh(name, cached) ?? got;
  }

  conflicted(name: string): void {
    this.conflicts.add(name);
  }

  listUpgrades(): Promise<{ items: ApiServerUpgrade[] }> {
    if (!this.store.hasSynced) return this.api.listUpgrades();
    const items = this.store.list().map((u) => this.fresh(u.metadata?.name ?? '', u)!);
    for (const name of this.writes.keys()) if (this.store.get(name) === undefined) this.writes.delete(name);
    return Promise.resolve({ items });
  }

  written(before: ApiServerUpgrade, after: ApiServerUpgrade): void {
    const name = after.metadata?.name ?? '';
    const w = this.writes.get(name) ?? { superseded: new Set<string>(), latest: after, at: this.now() };
    w.superseded.add(rv(before));
    w.latest = after;
    w.at = this.now();
    this.writes.set(name, w);
  }

  gone(name: string): void {
    if (this.store.hasSynced && this.store.get(name) !== undefined) this.opts.onStale?.(`the API says ${name} is gone; the cache still holds it`);
  }

  /** Kept writes the cache has not caught up with (for tests and debugging). */
  get pending(): number {
    return this.writes.size;
  }

  private fresh(name: string, cached: ApiServerUpgrade | undefined): ApiServerUpgrade | undefined {
    const w = this.writes.get(name);
    if (!w) return cached;
    if (cached !== undefined && w.superseded.has(rv(cached))) {
      const waitedMs = this.now() - w.at;
      if (waitedMs > (this.opts.echoDeadlineMs ?? 15_000)) {
        this.opts.onStale?.(`the watch has not shown our status write of ${name} (resourceVersion ${rv(w.latest)}) for ${Math.round(waitedMs / 1000)} s`);
      }
      return w.latest;
    }
    // The cache shows our last write, a newer change, or the object's deletion: it is the truth again.
    this.writes.delete(name);
    return cached;
  }
}
