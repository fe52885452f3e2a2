// The smoke tests read discovery and /metrics with the operator's own parsers (src/observe), so what they
// confirm on the real servers is also what the operator will see.
import type { Cluster } from '../cluster/index.ts';
import { DISCOVERY_ACCEPT, DISCOVERY_ACCEPT_NOPEER } from '../../src/observe/direct-client.ts';
import { resourceSet, type APIGroupDiscoveryList } from '../../src/observe/discovery.ts';
import { parsePromText } from '../../src/observe/prom-text.ts';

export const DISCOVERY_V2 = DISCOVERY_ACCEPT;

/** The "group/version/resource" strings a server's own discovery (profile=nopeer) lists for /apis. */
export async function ownResources(cluster: Cluster, server: number): Promise<Set<string>> {
  const r = await cluster.request(server, '/apis', { headers: { Accept: DISCOVERY_ACCEPT_NOPEER } });
  if (r.status !== 200) throw new Error(`discovery of server ${server}: HTTP ${r.status}: ${r.body.slice(0, 200)}`);
  return resourceSet(JSON.parse(r.body) as APIGroupDiscoveryList);
}

/** Sum of every sample of one counter family on a server's /metrics page. */
export async function counterSum(cluster: Cluster, server: number, family: string): Promise<number> {
  const r = await cluster.request(server, '/metrics');
  if (r.status !== 200) throw new Error(`/metrics of server ${server}: HTTP ${r.status}`);
  return (parsePromText(r.body, new Set([family])).get(family)?.samples ?? []).reduce((sum, s) => sum + s.value, 0);
}
