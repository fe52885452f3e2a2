// Captures unit-test fixtures from real servers: /metrics pages, aggregated discovery (own and
// peer-aggregated) and legacy discovery with storageVersionHash, of both versions, in a mixed cluster
// where the old server has proxied requests (some answered 503 after a new peer was killed).
//   sudo npm run fixtures      (writes test/fixtures/<version>/...)
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Cluster, OLD_VERSION, NEW_VERSION, PROXY_GATE, waitFor, sleep } from '../e2e/cluster/index.ts';

const DISCOVERY = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const NEW_ONLY = '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies';
const LEGACY_GROUPS = ['v1', 'apps/v1', 'admissionregistration.k8s.io/v1', 'admissionregistration.k8s.io/v1beta1', 'coordination.k8s.io/v1', 'batch/v1', 'storage.k8s.io/v1', 'storage.k8s.io/v1beta1'];
const root = join(import.meta.dirname, '..', 'test', 'fixtures');

const cluster = await Cluster.start({
  servers: 3,
  perServer: [{ version: OLD_VERSION, featureGates: { [PROXY_GATE]: true } }, { version: NEW_VERSION }, { version: NEW_VERSION }],
  verbose: true,
});
try {
  await waitFor('cp-1 proxies a new-only resource', 60_000, async () => ((await cluster.request(0, NEW_ONLY)).status === 200 ? true : undefined));
  for (let i = 0; i < 20; i++) await cluster.request(0, NEW_ONLY);
  await cluster.kill(2);
  await sleep(500);
  let served503 = 0;
  for (let i = 0; i < 20; i++) if ((await cluster.request(0, NEW_ONLY)).status === 503) served503++;
  process.stderr.write(`after killing cp-3, ${served503}/20 proxied requests through cp-1 answered 503\n`);

  for (const [index, version] of [[0, OLD_VERSION], [1, NEW_VERSION]] as const) {
    const dir = join(root, version);
    await mkdir(dir, { recursive: true });
    const get = async (path: string, accept?: string): Promise<string> => {
      const r = await cluster.request(index, path, accept ? { headers: { Accept: accept } } : {});
      if (r.status !== 200) throw new Error(`${path} on ${version}: HTTP ${r.status}`);
      return r.body;
    };
    const pretty = (s: string): string => JSON.stringify(JSON.parse(s), null, 1) + '\n';
    await writeFile(join(dir, 'metrics.txt'), await get('/metrics'));
    await writeFile(join(dir, 'discovery-apis-peer.json'), pretty(await get('/apis', DISCOVERY)));
    await writeFile(join(dir, 'discovery-apis-nopeer.json'), pretty(await get('/apis', `${DISCOVERY};profile=nopeer`)));
    await writeFile(join(dir, 'discovery-api-nopeer.json'), pretty(await get('/api', `${DISCOVERY};profile=nopeer`)));
    await writeFile(join(dir, 'version.json'), pretty(await get('/version')));
    for (const gv of LEGACY_GROUPS) {
      const r = await cluster.request(index, gv === 'v1' ? '/api/v1' : `/apis/${gv}`);
      if (r.status === 200) await writeFile(join(dir, `legacy-${gv.replace(/[/.]/g, '_')}.json`), pretty(r.body));
    }
    process.stderr.write(`wrote fixtures of ${version} into ${dir}\n`);
  }
} finally {
  await cluster.teardown();
}
