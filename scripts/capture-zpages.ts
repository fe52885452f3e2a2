// Captures what real kube-apiservers answer at /flagz and /statusz, for the unit tests of their parsers
// (src/plan/zpages.ts) and docs/version-skew.md: v1.35.4 with its defaults and with ComponentFlagz and
// ComponentStatusz on (and the proxy gate), v1.36.3 with its defaults and emulating 1.35 with the proxy gate (with and
// without the z-pages' gates), and v1.37.2 if its binary is built.
//   sudo node scripts/capture-zpages.ts      (writes test/fixtures/zpages/..., prints every answer's status)
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { adminRequest, Cluster, OLD_VERSION, NEW_VERSION, PROXY_GATE, type ServerConfig } from '../e2e/cluster/index.ts';

const root = join(import.meta.dirname, '..', 'test', 'fixtures', 'zpages');
const V137 = 'v1.37.2';
const with137 = existsSync(join(process.env.AUO_BIN_CACHE ?? join(homedir(), '.cache', 'apiserver-upgrade-operator', 'bin'), `kube-apiserver-${V137}`));
const servers: { name: string; config: ServerConfig }[] = [
  { name: `${OLD_VERSION}-default`, config: { version: OLD_VERSION } },
  { name: `${OLD_VERSION}-gates`, config: { version: OLD_VERSION, featureGates: { [PROXY_GATE]: true, ComponentFlagz: true, ComponentStatusz: true } } },
  { name: `${NEW_VERSION}-default`, config: { version: NEW_VERSION } },
  { name: `${NEW_VERSION}-emulated`, config: { version: NEW_VERSION, featureGates: { [PROXY_GATE]: true }, extraFlags: ['--emulated-version=1.35'] } },
  { name: `${NEW_VERSION}-emulated-gates`, config: { version: NEW_VERSION, featureGates: { [PROXY_GATE]: true, ComponentFlagz: true, ComponentStatusz: true }, extraFlags: ['--emulated-version=1.35'] } },
  ...(with137 ? [{ name: `${V137}-default`, config: { version: V137 } }] : []),
];
const ACCEPTS: Record<string, string | undefined> = {
  none: undefined,
  text: 'text/plain',
  json: 'application/json',
  'json-v1beta1': 'application/json;as=Flagz;v=v1beta1;g=config.k8s.io',
  'json-v1alpha1': 'application/json;as=Flagz;v=v1alpha1;g=config.k8s.io',
  'json-either': 'application/json;as=Flagz;v=v1beta1;g=config.k8s.io, application/json;as=Flagz;v=v1alpha1;g=config.k8s.io',
};
const cluster = await Cluster.start({ servers: servers.length, perServer: servers.map((s) => s.config), ...(with137 ? { replaceVersions: [V137] } : {}), verbose: true });
try {
  await mkdir(root, { recursive: true });
  const summary: Record<string, Record<string, string>> = {};
  for (const [i, s] of servers.entries()) {
    const row: Record<string, string> = {};
    for (const page of ['flagz', 'statusz']) {
      for (const [k, accept] of Object.entries(ACCEPTS)) {
        const a = accept?.replaceAll('as=Flagz', page === 'statusz' ? 'as=Statusz' : 'as=Flagz');
        const r = await cluster.request(i, `/${page}`, a ? { headers: { Accept: a } } : {});
        row[`${page} ${k}`] = `${r.status} ${String(r.headers['content-type'] ?? '')}`;
        if (r.status === 200 || k === 'none' || k === 'json') await writeFile(join(root, `${s.name}.${page}.${k}.${r.status}.txt`), r.body);
      }
      const anon = await adminRequest(cluster.pki, `${cluster.server(i).url}/${page}`, { anonymous: true }).catch(() => undefined);
      if (anon) row[`${page} anonymous`] = String(anon.status);
    }
    summary[s.name] = row;
  }
  process.stderr.write(`${JSON.stringify(summary, null, 1)}\n`);
  await writeFile(join(root, 'summary.json'), `${JSON.stringify(summary, null, 1)}\n`);
} finally {
  await cluster.teardown();
}
