/** The fields of any Kubernetes object the runtime reads. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; uid?: string };
}

/** client-go's MetaNamespaceKeyFunc: "namespace/name", or "name" for cluster-scoped objects. */
export function objectKey(o: KubeObject): string {
  const ns = o.metadata?.namespace;
  const name = o.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

export interface CacheDiff<T> {
  added: T[];
  updated: { old: T; cur: T }[];
  deleted: T[];
}

/**
 * What changed between the cache and a fresh list: after a 410 the watch's history is lost, so the
 * informer relists and replays the difference. Unchanged objects (same resourceVersion) are left out.
 */
export function diffList<T extends KubeObject>(cache: ReadonlyMap<string, T>, items: readonly T[]): CacheDiff<T> {
  const seen = new Set<string>();
  const d: CacheDiff<T> = { added: [], updated: [], deleted: [] };
  for (const cur of items) {
    const k = objectKey(cur);
    seen.add(k);
    const old = cache.get(k);
    if (!old) d.added.push(cur);
    else if (old.metadata?.resourceVersion !== cur.metadata?.resourceVersion) d.updated.push({ old, cur });
  }
  for (const [k, old] of cache) if (!seen.has(k)) d.deleted.push(old);
  return d;
}
