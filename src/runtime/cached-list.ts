/** What of an informer (src/runtime/informer.ts) a cached LIST reads. */
export interface ListCache {
  readonly hasSynced: boolean;
  list(): unknown[];
}

export type ListFn = <T>(path: string) => Promise<T>;

/**
 * A LIST function that answers the collections an informer watches from its cache once it synced — no request —
 * and every other path from the API. Keyed by the exact path (query included) the observers ask for, so a
 * different selector is never answered from a cache that holds another. Not synced yet: the API, as before.
 */
export function listThroughCaches(api: ListFn, caches: ReadonlyMap<string, ListCache>): ListFn {
  return async <T>(path: string): Promise<T> => {
    const cache = caches.get(path);
    if (cache?.hasSynced) return { items: cache.list() } as T;
    return api<T>(path);
  };
}
