/**
 * The shell of the trust checks (docs/trust.md): reads, for each server, its effective flags, its serving
 * certificate as a peer's proxy sees it and whether its peer address answers. The decisions are
 * src/plan/trust.ts's. Read only while preflight runs.
 *
 * Flags, in order: (a) kubeadm's mirror Pod `kube-system/kube-apiserver-<node>` (its container's command);
 * (b) the driver's Describe (the webhook driver: docs/drivers.md); (c) unknown, with why.
 */
import type { V1PodList } from '@kubernetes/client-node';
import type { ObservedPeer } from '../plan/observation.ts';
import type { ObservedFlags, ObservedHandshake, ObservedServerTrust, ObservedTrust } from '../plan/trust.ts';
import type { DescribeOutcome } from '../drivers/driver.ts';
import type { Inventory } from './inventory.ts';
import { flagsFromPod, mirrorPodFor } from './trust-flags.ts';
import { peerHandshake } from './trust-tls.ts';
import { mapLimitSettled } from './map-limit.ts';

export const APISERVER_PODS_COLLECTION = '/api/v1/namespaces/kube-system/pods';
export const APISERVER_PODS_SELECTOR = 'component=kube-apiserver';
export const APISERVER_PODS_PATH = `${APISERVER_PODS_COLLECTION}?labelSelector=${encodeURIComponent(APISERVER_PODS_SELECTOR)}`;

export interface TrustObserverDeps {
  list: <T>(path: string) => Promise<T>;
  /**
   * The driver's Describe, when there is one the operator may call (the policy allows the spec's webhook URL
   * and token); absent: that source is skipped.
   */
  describe?: (server: { identity: string; hostname: string; address?: string }) => Promise<DescribeOutcome>;
  /** Why there is no Describe (for the unknown rows' message). */
  noDescribe?: string;
  handshake?: (address: string) => Promise<ObservedHandshake>;
}

/** Reads the trust facts of every server that has an identity. Never rejects: a failed read is that server's "unknown". */
export async function observeTrust(peers: readonly ObservedPeer[], inventory: Inventory | undefined, deps: TrustObserverDeps): Promise<ObservedTrust> {
  let pods: V1PodList | undefined;
  let podsError = '';
  try {
    pods = await deps.list<V1PodList>(APISERVER_PODS_PATH);
  } catch (err) {
    podsError = `kube-system Pods not listed (${err instanceof Error ? err.message : String(err)})`;
  }
  const handshake = deps.handshake ?? ((a: string) => peerHandshake(a));
  const results = await mapLimitSettled([...peers], 4, async (p): Promise<ObservedServerTrust> => {
    const row = inventory?.servers.find((s) => s.hostname === p.hostname);
    const [flags, hs] = await Promise.all([
      flagsOf(p, pods, podsError, deps),
      p.address ? handshake(p.address) : Promise.resolve(undefined),
    ]);
    return {
      hostname: p.hostname,
      flags,
      ...(p.address ? { peerAddress: p.address } : {}),
      ...(row?.addressSource ? { addressSource: row.addressSource } : {}),
      ...(hs ? { handshake: hs } : {}),
    };
  });
  return { servers: results.flatMap((r, i) => (r.status === 'fulfilled' ? [r.value] : [{ hostname: peers[i]!.hostname, flags: { source: 'Unknown', why: String(r.reason) } }])) };
}

async function flagsOf(p: ObservedPeer, pods: V1PodList | undefined, podsError: string, deps: TrustObserverDeps): Promise<ObservedFlags> {
  const why: string[] = [];
  if (pods) {
    const pod = mirrorPodFor(pods, p.hostname);
    const flags = pod ? flagsFromPod(pod) : undefined;
    if (flags) return { source: 'MirrorPod', values: flags };
    why.push(pod ? `mirror Pod ${pod.metadata?.name} has no kube-apiserver container` : `no mirror Pod of a kube-apiserver on node ${p.hostname}`);
  } else {
    why.push(podsError);
  }
  if (deps.describe) {
    const d = await deps.describe({ identity: p.identity, hostname: p.hostname, ...(p.address ? { address: p.address } : {}) });
    if (d.kind === 'flags') return { source: 'Webhook', values: d.flags };
    why.push(d.message);
  } else {
    why.push(deps.noDescribe ?? 'the driver has no Describe');
  }
  return { source: 'Unknown', why: why.join('; ') };
}
