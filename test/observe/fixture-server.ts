// Serves the pages captured from real kube-apiservers (test/fixtures/<version>/) over local HTTPS, as one
// server at 127.0.0.<n>: /version, /readyz, /metrics, aggregated discovery and legacy discovery. The
// aggregated documents are cut down to the group/versions whose legacy document was captured, so a server
// is complete exactly when every document it lists answers. `fail` makes chosen paths answer an error;
// `extra` adds group/versions (e.g. an aggregated API or a CRD) to `/apis` with their legacy documents;
// `override` answers chosen paths with a body of the test's (e.g. an emulating binary's `/version`).
//
// Certificates: test/observe/tls/cp-<n>.{crt,key}, self-signed (EC P-256, valid until 2126), with SANs
// IP:127.0.0.<n>, DNS:kubernetes, DNS:kubernetes.default.svc, DNS:localhost, DNS:cp-<n>. Made with
//   openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout cp-N.key -out cp-N.crt \
//     -days 36500 -subj /CN=kube-apiserver -addext "subjectAltName=IP:127.0.0.N,DNS:kubernetes,..." ...
import { createServer, type Server } from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { SecureContextOptions } from 'node:tls';
import { fixtureFiles, readFixture } from './fixtures.ts';
import { DirectClient } from '../../src/observe/direct-client.ts';
import type { APIGroupDiscoveryList, APIResourceList } from '../../src/observe/discovery.ts';

const TLS_DIR = join(import.meta.dirname, 'tls');

export function tlsMaterial(n: number): { cert: string; key: string } {
  return { cert: readFileSync(join(TLS_DIR, `cp-${n}.crt`), 'utf8'), key: readFileSync(join(TLS_DIR, `cp-${n}.key`), 'utf8') };
}

/** A DirectClient that trusts the fixture servers' certificates (and verifies them against 127.0.0.<n>). */
export function fixtureDirectClient(): DirectClient {
  const ca = Buffer.from([1, 2, 3].map((n) => tlsMaterial(n).cert).join(''));
  return new DirectClient(async () => ({ headers: {}, ca, rejectUnauthorized: true }), { timeoutMs: 5000 });
}

/** `/apis/storage.k8s.io/v1` -> `legacy-storage_k8s_io_v1.json`; `/api/v1` -> `legacy-v1.json`. */
function legacyFile(path: string): string | undefined {
  if (path.startsWith('/api/')) return `legacy-${path.slice('/api/'.length)}.json`;
  if (!path.startsWith('/apis/')) return undefined;
  const [group, version] = path.slice('/apis/'.length).split('/');
  return group && version ? `legacy-${group.replaceAll('.', '_')}_${version}.json` : undefined;
}

/** The aggregated document, keeping only the group/versions whose legacy document was captured. */
function cutDown(version: string, file: string, captured: ReadonlySet<string>, core: boolean): string {
  const doc = JSON.parse(readFixture(version, file)) as APIGroupDiscoveryList;
  doc.items = (doc.items ?? [])
    .map((g) => ({ ...g, versions: (g.versions ?? []).filter((v) => captured.has(legacyFile(core ? `/api/${v.version}` : `/apis/${g.metadata?.name ?? ''}/${v.version}`) ?? '')) }))
    .filter((g) => g.versions.length > 0);
  return JSON.stringify(doc);
}

/** The `/apis` document with the extra group/versions (`/apis/<group>/<version>` -> legacy document) added. */
function withExtra(apis: string, extra: ReadonlyMap<string, APIResourceList>): string {
  if (extra.size === 0) return apis;
  const doc = JSON.parse(apis) as APIGroupDiscoveryList;
  for (const [path, list] of extra) {
    const [group, version] = path.slice('/apis/'.length).split('/') as [string, string];
    const resources = (list.resources ?? []).filter((r) => !r.name.includes('/')).map((r) => ({ resource: r.name, responseKind: { group, version, kind: r.kind ?? '' }, scope: r.namespaced ? 'Namespaced' : 'Cluster', verbs: r.verbs ?? [] }));
    const entry = { version, resources, freshness: 'Current' };
    const g = doc.items?.find((x) => x.metadata?.name === group);
    if (g) g.versions = [...(g.versions ?? []), entry];
    else doc.items = [...(doc.items ?? []), { metadata: { name: group }, versions: [entry] }];
  }
  return JSON.stringify(doc);
}

export interface FixtureServer {
  /** `127.0.0.<n>:<port>` */
  address: string;
  hostname: string;
  /** Paths requested, in order. */
  requests: string[];
  /** A path -> HTTP status to answer instead of the fixture; change it at will between observations. */
  fail: Map<string, number>;
  /** `/apis/<group>/<version>` -> its legacy document: served, and listed in `/apis`; change it at will. */
  extra: Map<string, APIResourceList>;
  /** A path -> JSON body answered with 200 instead of the fixture (`/version`, a legacy document); change it at will. */
  override: Map<string, string>;
  /** Paths the server takes and never answers (a hung server, or one cut from etcd); change it at will. */
  hold: Set<string>;
  /** A path -> milliseconds the server waits before it answers (a loaded server); change it at will. */
  delay: Map<string, number>;
  close(): Promise<void>;
}

export async function startFixtureServer(version: string, n: number, extra: SecureContextOptions = {}): Promise<FixtureServer> {
  const captured = new Set(fixtureFiles(version, /^legacy-.*\.json$/));
  const apis = { peer: cutDown(version, 'discovery-apis-peer.json', captured, false), nopeer: cutDown(version, 'discovery-apis-nopeer.json', captured, false) };
  const api = cutDown(version, 'discovery-api-nopeer.json', captured, true);
  const metrics = readFixture(version, 'metrics.txt');
  const requests: string[] = [];
  const fail = new Map<string, number>();
  const extraLegacy = new Map<string, APIResourceList>();
  const override = new Map<string, string>();
  const hold = new Set<string>();
  const delay = new Map<string, number>();
  const server: Server = createServer({ ...tlsMaterial(n), ...extra }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    requests.push(path);
    const wait = delay.get(path) ?? 0;
    const send = (status: number, body: string, type = 'application/json') => {
      const answer = () => {
        if (res.destroyed) return;
        res.writeHead(status, { 'Content-Type': type });
        res.end(body);
      };
      if (wait > 0) setTimeout(answer, wait);
      else answer();
    };
    if (hold.has(path)) return;
    const failed = fail.get(path);
    if (failed !== undefined) return send(failed, JSON.stringify({ kind: 'Status', code: failed, message: 'injected failure' }));
    const overridden = override.get(path);
    if (overridden !== undefined) return send(200, overridden);
    const accept = req.headers.accept ?? '';
    if (path === '/version') return send(200, readFixture(version, 'version.json'));
    if (path === '/readyz') return send(200, 'ok', 'text/plain');
    if (path === '/metrics') return send(200, metrics, 'text/plain; version=0.0.4');
    if (path === '/apis') return send(200, withExtra(accept.includes('profile=nopeer') ? apis.nopeer : apis.peer, extraLegacy));
    if (path === '/api') return send(200, api);
    const added = extraLegacy.get(path);
    if (added) return send(200, JSON.stringify(added));
    const file = legacyFile(path);
    if (file && captured.has(file)) return send(200, readFixture(version, file));
    return send(404, JSON.stringify({ kind: 'Status', code: 404 }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, `127.0.0.${n}`, resolve);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    address: `127.0.0.${n}:${port}`,
    hostname: `cp-${n}`,
    requests,
    fail,
    extra: extraLegacy,
    override,
    hold,
    delay,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
