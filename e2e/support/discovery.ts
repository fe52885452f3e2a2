import type { Cluster } from '../cluster/index.ts';

export const DISCOVERY_V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
export const DISCOVERY_V2_NOPEER = `${DISCOVERY_V2};profile=nopeer`;

interface GroupDiscovery {
  metadata: { name?: string };
  versions: { version: string; resources: { resource: string; scope?: string }[] }[];
}

/** The "group/version/resource" strings a server's own discovery (profile=nopeer) lists for /apis. */
export async function ownResources(cluster: Cluster, server: number): Promise<Set<string>> {
  const r = await cluster.request(server, '/apis', { headers: { Accept: DISCOVERY_V2_NOPEER } });
  if (r.status !== 200) throw new Error(`discovery of server ${server}: HTTP ${r.status}: ${r.body.slice(0, 200)}`);
  const doc = JSON.parse(r.body) as { items: GroupDiscovery[] };
  const out = new Set<string>();
  for (const g of doc.items) for (const v of g.versions) for (const res of v.resources) out.add(`${g.metadata.name}/${v.version}/${res.resource}`);
  return out;
}

/** Sum of every sample of one counter family on a server's /metrics page, optionally filtered by a label. */
export async function counterSum(cluster: Cluster, server: number, family: string, match?: (labels: string) => boolean): Promise<number> {
  const r = await cluster.request(server, '/metrics');
  if (r.status !== 200) throw new Error(`/metrics of server ${server}: HTTP ${r.status}`);
  let sum = 0;
  for (const line of r.body.split('\n')) {
    if (!line.startsWith(family)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== family) continue;
    if (match && !match(m[2] ?? '')) continue;
    sum += Number(m[3]);
  }
  return sum;
}
