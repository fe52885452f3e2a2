// The kube-apiserver identity Leases of a cluster, as the operator lists them (label apiserver.kubernetes.io/identity).
import assert from 'node:assert/strict';
import type { Cluster } from '../cluster/index.ts';

export const IDENTITY_LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?labelSelector=apiserver.kubernetes.io%2Fidentity%3Dkube-apiserver';

export interface IdentityLease {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { holderIdentity?: string };
}

/** Lists them through the balancer (or one server), asserting the answer is 200. */
export async function identityLeases(cluster: Pick<Cluster, 'request'>, server: number | 'lb' = 'lb'): Promise<IdentityLease[]> {
  const r = await cluster.request(server, IDENTITY_LEASES);
  assert.equal(r.status, 200, r.body);
  return (JSON.parse(r.body) as { items: IdentityLease[] }).items;
}
