/**
 * The shell of the preflight checks for kubeadm clusters (docs/kubeadm-runbook.md): reads kube-system/kubeadm-config's
 * existence, the Nodes' kubelet versions and hostname labels, and for each server its /readyz/etcd, its serving
 * certificate (a TLS handshake), its apiserver_requested_deprecated_apis gauge and its kube-apiserver mirror Pod (its
 * node and the image it runs).
 * The decisions are src/plan/kubeadm-preflight.ts's. Read only while preflight runs. Never rejects: a failed
 * read is that fact's `error`, which the planner counts as blocking (fail closed).
 */
import type { V1Node, V1Pod, V1PodList } from '@kubernetes/client-node';
import type { ObservedPeer } from '../plan/observation.ts';
import type { ObservedDeprecatedApi, ObservedKubeadm, ObservedKubeadmServer, ObservedNode } from '../plan/kubeadm-preflight.ts';
import type { ObservedHandshake } from '../plan/trust.ts';
import { KUBEADM_CONFIG_NAME, KUBEADM_CONFIG_NAMESPACE } from '../plan/kubeadm-config.ts';
import type { ParsedMetrics } from './prom-text.ts';
import { KubeApiError } from '../runtime/kube.ts';
import { mirrorPodFor } from './trust-flags.ts';
import { APISERVER_PODS_PATH } from './trust.ts';
import { peerHandshake } from './trust-tls.ts';
import { mapLimitSettled } from './map-limit.ts';

export const KUBEADM_CONFIG_PATH = `/api/v1/namespaces/${KUBEADM_CONFIG_NAMESPACE}/configmaps/${KUBEADM_CONFIG_NAME}`;
export const DEPRECATED_APIS_FAMILY = 'apiserver_requested_deprecated_apis';
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';
export const NODES_PATH = '/api/v1/nodes';
/** A cluster of more Nodes is reported as not read (fail closed): the check is meant for control planes' clusters. */
const MAX_NODES = 20_000;

export interface KubeadmObserverDeps {
  /** GET through the balancer (the operator's client; a KubeApiError carries the status). */
  get: <T>(path: string) => Promise<T>;
  /** A collection's items: the kube-apiserver mirror Pods (an informer holds them) and every Node. */
  list: <T>(path: string) => Promise<T[]>;
  /** GET on one server directly: status and body. */
  serverGet: (address: string, path: string) => Promise<{ status: number; body: string }>;
  /** One server's /metrics, only the families asked for. */
  serverMetrics: (address: string, families: ReadonlySet<string>) => Promise<ParsedMetrics>;
  handshake?: (address: string) => Promise<ObservedHandshake>;
  /** Read the rest even when there is no kubeadm-config (the static Pod driver is kubeadm's layout). */
  always: boolean;
}

const text = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** The gauge's samples with value > 0 (one per group/version/resource/subresource requested since the server started). */
export function deprecatedApis(metrics: ParsedMetrics): ObservedDeprecatedApi[] {
  const family = metrics.get(DEPRECATED_APIS_FAMILY);
  return (family?.samples ?? []).filter((s) => s.value > 0).map((s) => ({
    group: s.labels.group ?? '',
    version: s.labels.version ?? '',
    resource: s.labels.resource ?? '',
    subresource: s.labels.subresource ?? '',
    removedRelease: s.labels.removed_release ?? '',
  }));
}

export async function observeKubeadm(peers: readonly ObservedPeer[], deps: KubeadmObserverDeps): Promise<ObservedKubeadm> {
  let configMap: ObservedKubeadm['configMap'];
  try {
    await deps.get(KUBEADM_CONFIG_PATH);
    configMap = 'present';
  } catch (err) {
    configMap = err instanceof KubeApiError && err.statusCode === 404 ? 'absent' : { error: `GET ${KUBEADM_CONFIG_PATH}: ${text(err)}` };
  }
  if (configMap === 'absent' && !deps.always) return { configMap };
  const [nodes, pods] = await Promise.all([listNodes(deps), deps.list<V1Pod>(APISERVER_PODS_PATH).then((items): V1PodList => ({ items }), () => undefined)]);
  const handshake = deps.handshake ?? ((a: string) => peerHandshake(a));
  const results = await mapLimitSettled([...peers], 4, async (p): Promise<ObservedKubeadmServer> => {
    const pod = pods ? mirrorPodFor(pods, p.hostname) : undefined;
    const image = pod ? apiserverImageOf(pod) : undefined;
    const mirrorPod = pod?.metadata?.name && pod.spec?.nodeName ? { name: pod.metadata.name, nodeName: pod.spec.nodeName, ...(image ? { image } : {}) } : undefined;
    if (!p.address) {
      const error = 'the server has no known address';
      return { hostname: p.hostname, etcd: { error }, deprecated: { error }, ...(mirrorPod ? { mirrorPod } : {}) };
    }
    const address = p.address;
    const [etcd, deprecated, certificate] = await Promise.all([
      deps.serverGet(address, '/readyz/etcd').catch((err: unknown) => ({ error: text(err) })),
      deps.serverMetrics(address, new Set([DEPRECATED_APIS_FAMILY])).then(deprecatedApis, (err: unknown) => ({ error: text(err) })),
      handshake(address),
    ]);
    return { hostname: p.hostname, etcd, deprecated, certificate, ...(mirrorPod ? { mirrorPod } : {}) };
  });
  const servers = results.map((r, i): ObservedKubeadmServer => (r.status === 'fulfilled' ? r.value : { hostname: peers[i]!.hostname, etcd: { error: text(r.reason) }, deprecated: { error: text(r.reason) } }));
  return { configMap, nodes, servers };
}

/**
 * The image of a mirror Pod's kube-apiserver container: the container of that name, or the only one — the one whose
 * repository the static Pod driver keeps (src/drivers/static-pod.ts reads it so at call time). Undefined: none.
 */
export function apiserverImageOf(pod: V1Pod): string | undefined {
  const containers = pod.spec?.containers ?? [];
  const c = containers.find((x) => x.name === 'kube-apiserver') ?? (containers.length === 1 ? containers[0] : undefined);
  const image = c?.image?.trim();
  return image ? image : undefined;
}

async function listNodes(deps: KubeadmObserverDeps): Promise<ObservedNode[] | { error: string }> {
  try {
    const items = await deps.list<V1Node>(NODES_PATH);
    if (items.length > MAX_NODES) return { error: `more than ${MAX_NODES} Nodes: not checked` };
    return items.map(node);
  } catch (err) {
    return { error: `reading ${NODES_PATH}: ${text(err)}` };
  }
}

/**
 * What the preflight reads of a Node, kept as the Node arrives (a reader's `transform`): a cluster's Nodes are
 * 10-20 KiB each and there may be thousands; their name, hostname label and kubelet version are a few dozen bytes.
 */
export function trimNode(n: V1Node): V1Node {
  const hostnameLabel = n.metadata?.labels?.[HOSTNAME_LABEL];
  const kubeletVersion = n.status?.nodeInfo?.kubeletVersion;
  return {
    metadata: { ...(n.metadata?.name !== undefined ? { name: n.metadata.name } : {}), ...(n.metadata?.resourceVersion !== undefined ? { resourceVersion: n.metadata.resourceVersion } : {}), ...(hostnameLabel !== undefined ? { labels: { [HOSTNAME_LABEL]: hostnameLabel } } : {}) },
    ...(kubeletVersion !== undefined ? { status: { nodeInfo: { kubeletVersion } as NonNullable<V1Node['status']>['nodeInfo'] } } : {}),
  };
}

function node(n: V1Node): ObservedNode {
  const hostnameLabel = n.metadata?.labels?.[HOSTNAME_LABEL];
  const kubeletVersion = n.status?.nodeInfo?.kubeletVersion;
  return { name: n.metadata?.name ?? '', ...(kubeletVersion ? { kubeletVersion } : {}), ...(hostnameLabel !== undefined ? { hostnameLabel } : {}) };
}
