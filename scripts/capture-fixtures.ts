// Captures unit-test fixtures from real servers: /metrics pages, aggregated discovery (own and
// peer-aggregated) and legacy discovery with storageVersionHash, of both versions, in a mixed cluster
// where the old server has proxied requests (some answered 503 after a new peer was killed).
//   sudo npm run fixtures      (writes test/fixtures/<version>/...)
// Another pair: AUO_OLD_VERSION=v1.36.3 AUO_NEW_VERSION=v1.37.2 sudo -E npm run fixtures. A version that already has
// fixtures is kept unless `-- --overwrite` is given (the unit tests are written against those captures); the
// resource asked through the old server is one the new minor adds (src/plan/coverage-catalog.ts), when it adds one.
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Cluster, OLD_VERSION, NEW_VERSION, PROXY_GATE, waitFor, sleep } from '../e2e/cluster/index.ts';
import { BUILTIN_CATALOG } from '../src/plan/coverage-catalog.ts';
import { minorOf } from '../src/plan/version.ts';

const DISCOVERY = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
/** "/apis/<group>/<version>/<resource>" (or "/api/v1/<resource>") of the first built-in resource the new minor adds. */
function newOnlyPath(): string | undefined {
  const before = BUILTIN_CATALOG[minorOf(OLD_VERSION) ?? '']?.resources ?? {};
  const key = Object.keys(BUILTIN_CATALOG[minorOf(NEW_VERSION) ?? '']?.resources ?? {}).find((k) => !(k in before));
  return key === undefined ? undefined : key.startsWith('/') ? `/api${key}` : `/apis/${key}`;
}
const NEW_ONLY = newOnlyPath();
const overwrite = process.argv.includes('--overwrite');
const LEGACY_GROUPS = ['v1', 'apps/v1', 'admissionregistration.k8s.io/v1', 'admissionregistration.k8s.io/v1beta1', 'coordination.k8s.io/v1', 'batch/v1', 'storage.k8s.io/v1', 'storage.k8s.io/v1beta1'];
const root = join(import.meta.dirname, '..', 'test', 'fixtures');

const cluster = await Cluster.start({
  servers: 3,
  perServer: [{ version: OLD_VERSION, featureGates: { [PROXY_GATE]: true } }, { version: NEW_VERSION }, { version: NEW_VERSION }],
  verbose: true,
});
try {
  if (NEW_ONLY) {
    await waitFor('cp-1 proxies a new-only resource', 60_000, async () => ((await cluster.request(0, NEW_ONLY)).status === 200 ? true : undefined));
    for (let i = 0; i < 20; i++) await cluster.request(0, NEW_ONLY);
    await cluster.kill(2);
    await sleep(500);
    let served503 = 0;
    for (let i = 0; i < 20; i++) if ((await cluster.request(0, NEW_ONLY)).status === 503) served503++;
    process.stderr.write(`after killing cp-3, ${served503}/20 proxied requests through cp-1 answered 503\n`);
  } else {
    process.stderr.write(`${NEW_VERSION} adds no built-in resource to ${OLD_VERSION} (or its minor is not in the catalog): nothing proxied\n`);
  }

  for (const [index, version] of [[0, OLD_VERSION], [1, NEW_VERSION]] as const) {
    const dir = join(root, version);
    if (existsSync(dir) && !overwrite) {
      process.stderr.write(`kept the fixtures of ${version} (${dir}); --overwrite replaces them\n`);
      continue;
    }
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
