/** What of an informer (src/runtime/informer.ts) a cached LIST reads. */
export interface ListCache {
  readonly hasSynced: boolean;
  list(): unknown[];
}

export type ListFn = <T>(path: string) => Promise<T>;

/** A collection held by an informer, with the list type the API would answer for it (readers check `kind`). */
export interface CachedCollection {
  cache: ListCache;
  apiVersion: string;
  kind: string;
}

/**
 * A LIST function that answers the collections an informer watches from its cache once it synced — no request —
 * and every other path from the API. Keyed by the exact path (query included) the observers ask for, so a
 * different selector is never answered from a cache that holds another. Not synced yet: the API, as before.
 */
export function listThroughCaches(api: ListFn, caches: ReadonlyMap<string, CachedCollection>): ListFn {
  return async <T>(path: string): Promise<T> => {
    const c = caches.get(path);
    if (c?.cache.hasSynced) return { apiVersion: c.apiVersion, kind: c.kind, metadata: {}, items: c.cache.list() } as T;
    return api<T>(path);
  };
}
