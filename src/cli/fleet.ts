// The clusters of a fleet list, read in parallel: at most FLEET_CONCURRENCY at a time, each within its own deadline.
// A cluster that fails (its context cannot be loaded, it cannot be reached, refuses, times out, serves no CRD) is a
// result that says why, never an exception, so every cluster asked is in the output.
import { mapLimitSettled } from '../observe/map-limit.ts';
import type { Connection, UpgradeApi } from './client.ts';
import { clusterError, type ClusterResult } from './fleet-view.ts';

/** How many clusters are read at once. */
export const FLEET_CONCURRENCY = 8;

export interface FleetQuery {
  kubeconfig: string | undefined;
  contexts: readonly string[];
  timeoutMs: number;
  connect(c: Connection): UpgradeApi;
  /** At most this many clusters in flight; FLEET_CONCURRENCY unless a test says otherwise. */
  concurrency?: number;
}

export async function queryFleet(q: FleetQuery): Promise<ClusterResult[]> {
  const settled = await mapLimitSettled(q.contexts, q.concurrency ?? FLEET_CONCURRENCY, (context) => queryCluster(q, context));
  // queryCluster never rejects; a rejection here would be a bug, still shown as that cluster's error.
  return settled.map((s, i) => (s.status === 'fulfilled' ? s.value : { cluster: q.contexts[i]!, error: clusterError(s.reason, false, q.timeoutMs) }));
}

/** One cluster's upgrades, or why not, within the deadline: once it passes, the request is cancelled and not awaited. */
async function queryCluster(q: FleetQuery, cluster: string): Promise<ClusterResult> {
  const deadline = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      deadline.abort();
      reject(new Error('deadline'));
    }, q.timeoutMs);
  });
  let api: UpgradeApi | undefined;
  try {
    api = q.connect({ kubeconfig: q.kubeconfig, context: cluster });
    const upgrades = await Promise.race([api.list(deadline.signal), expired]);
    return { cluster, upgrades };
  } catch (err) {
    return { cluster, error: clusterError(err, deadline.signal.aborted, q.timeoutMs) };
  } finally {
    clearTimeout(timer);
    // The request still running after the deadline ends on the aborted signal; its rejection has no one to tell.
    expired.catch(() => undefined);
    api?.close();
  }
}
