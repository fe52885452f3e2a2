import { KubeAccess } from '../../src/runtime/kubeconfig.ts';
import type { Cluster } from '../cluster/index.ts';
import { waitFor } from '../cluster/index.ts';
import { createLogger, type Logger } from '../../src/runtime/logger.ts';

/** Runtime logs of e2e runs go to stderr at LOG_LEVEL (default warn), so restarts and their reasons show up. */
export function e2eLogger(): Logger {
  return createLogger(process.env.LOG_LEVEL ?? 'warn');
}

export function kubeConfigOf(cluster: Cluster): KubeAccess {
  return KubeAccess.fromFile(cluster.kubeconfig);
}

export const LEASES = '/apis/coordination.k8s.io/v1/namespaces/default/leases';

/** Creates a Lease through the balancer, retrying while servers come and go. */
export async function createLease(cluster: Cluster, name: string, labels: Record<string, string>): Promise<void> {
  await waitFor(`create lease ${name}`, 30_000, async () => {
    const r = await cluster.request('lb', LEASES, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ metadata: { name, labels } }), timeoutMs: 5000 });
    if (r.status === 201 || r.status === 409) return true;
    throw new Error(`${r.status} ${r.body.slice(0, 200)}`);
  });
}

export async function deleteLease(cluster: Cluster, name: string): Promise<void> {
  await waitFor(`delete lease ${name}`, 30_000, async () => {
    const r = await cluster.request('lb', `${LEASES}/${name}`, { method: 'DELETE', timeoutMs: 5000 });
    if (r.status === 200 || r.status === 404) return true;
    throw new Error(`${r.status} ${r.body.slice(0, 200)}`);
  });
}

export async function listLeaseNames(cluster: Cluster, selector: string): Promise<string[]> {
  return waitFor('list leases', 30_000, async () => {
    const r = await cluster.request('lb', `${LEASES}?labelSelector=${encodeURIComponent(selector)}`, { timeoutMs: 5000 });
    if (r.status !== 200) throw new Error(`${r.status}`);
    return (JSON.parse(r.body) as { items: { metadata: { name: string } }[] }).items.map((i) => i.metadata.name).sort();
  });
}
