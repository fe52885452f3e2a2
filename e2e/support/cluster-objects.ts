// Every object a cluster holds, by kind and name: each resource type discovery lists with the `list` verb
// (`kubectl api-resources --verbs=list`), cluster-scoped and in every namespace, read with one `kubectl get -A`.
// Two such snapshots, before an install and after an uninstall, differ by what the install left behind.
import { runOk } from './tools.ts';

/** `<group or core>/<Kind> <namespace>/<name>` (a cluster-scoped object: an empty namespace). */
export type ObjectKey = string;

export interface ObjectSummary {
  key: ObjectKey;
  group: string;
  kind: string;
  namespace: string;
  name: string;
  labels: Record<string, string>;
}

interface Listed { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string; labels?: Record<string, string> } }

/** Every listable object of the cluster, by key. */
export async function clusterObjects(kubectl: string, kubeconfig: string): Promise<Map<ObjectKey, ObjectSummary>> {
  const types = (await runOk(kubectl, ['--kubeconfig', kubeconfig, 'api-resources', '--verbs=list', '-o', 'name'])).split('\n').map((l) => l.trim()).filter(Boolean);
  if (types.length < 20) throw new Error(`discovery listed only ${types.length} resource types: ${types.join(', ')}`);
  const list = JSON.parse(await runOk(kubectl, ['--kubeconfig', kubeconfig, 'get', types.join(','), '--all-namespaces', '-o', 'json'], { timeoutMs: 120_000 })) as { items: Listed[] };
  const out = new Map<ObjectKey, ObjectSummary>();
  for (const o of list.items) {
    const apiVersion = o.apiVersion ?? '';
    const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : 'core';
    const kind = o.kind ?? '?';
    const namespace = o.metadata?.namespace ?? '';
    const name = o.metadata?.name ?? '?';
    const key = `${group}/${kind} ${namespace}/${name}`;
    out.set(key, { key, group, kind, namespace, name, labels: o.metadata?.labels ?? {} });
  }
  return out;
}

/** What `after` has that `before` had not, and what `before` had that `after` has not, each sorted by key. */
export function objectDiff(before: Map<ObjectKey, ObjectSummary>, after: Map<ObjectKey, ObjectSummary>, ignore: (o: ObjectSummary) => boolean): { added: ObjectSummary[]; removed: ObjectSummary[] } {
  const sorted = (xs: ObjectSummary[]): ObjectSummary[] => xs.sort((a, b) => a.key.localeCompare(b.key));
  return {
    added: sorted([...after.values()].filter((o) => !before.has(o.key) && !ignore(o))),
    removed: sorted([...before.values()].filter((o) => !after.has(o.key) && !ignore(o))),
  };
}
