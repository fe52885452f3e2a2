// `kubectl apiserver-upgrade list --all-contexts` on real servers: two clusters (one kube-apiserver and etcd each,
// the CRD installed, one ApiServerUpgrade each, one with a status set through the status subresource), a third
// without the CRD, a context with a token the server does not know (401), a user RBAC grants nothing (403), one whose address nothing listens on (a
// loopback port bound and closed) and one whose address accepts connections and never answers. The kubeconfig is two files in $KUBECONFIG, merged as kubectl merges them. The plugin runs through
// its launcher, as a user runs it: every cluster is in the output by its context name, the dead ones each as one row
// with its reason, within the cluster deadline, and the exit status is 1; with only the live ones it is 0.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { Cluster, NEW_VERSION, OLD_VERSION } from './cluster/index.ts';
import { createClientCert } from './cluster/pki.ts';
import { createUpgrade, installCrd } from './support/operator.ts';
import { closedPort } from './support/tcp-forward.ts';
import type { FleetView } from '../src/cli/fleet-view.ts';

const PLUGIN = join(import.meta.dirname, '..', 'src', 'cli', 'kubectl-apiserver_upgrade');
const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';
/** The deadline each cluster gets; the command's time is asserted against it. */
const CLUSTER_TIMEOUT_S = 4;

const clusters: Cluster[] = [];
let silent: Server;
const held: Socket[] = [];
let dir: string;
let env: NodeJS.ProcessEnv;

interface Kubeconfig {
  clusters: { name: string; cluster: Record<string, unknown> }[];
  users: { name: string; user: Record<string, unknown> }[];
  contexts: { name: string; context: { cluster: string; user: string } }[];
}

/** A cluster's admin kubeconfig as a context named `name` (the harness names every cluster's entries the same). */
function entries(c: Cluster, name: string, server?: string): Kubeconfig {
  const k = parse(readFileSync(c.kubeconfig, 'utf8')) as Kubeconfig;
  return {
    clusters: [{ name, cluster: { ...k.clusters[0]!.cluster, ...(server ? { server } : {}) } }],
    users: [{ name, user: k.users[0]!.user }],
    contexts: [{ name, context: { cluster: name, user: name } }],
  };
}

function file(path: string, ...parts: Kubeconfig[]): string {
  writeFileSync(path, stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': parts[0]!.contexts[0]!.name,
    clusters: parts.flatMap((p) => p.clusters), users: parts.flatMap((p) => p.users), contexts: parts.flatMap((p) => p.contexts),
  }));
  return path;
}

before(async () => {
  // One after the other: the machine is shared, and each start builds nothing (the binaries are cached).
  for (let i = 0; i < 3; i++) clusters.push(await Cluster.start({ servers: 1, version: OLD_VERSION, verbose: true }));
  const [east, west, bare] = clusters as [Cluster, Cluster, Cluster];
  // The third cluster does not have the CRD.
  for (const c of [east, west]) await installCrd(c);
  await createUpgrade(east, { apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name: 'east-to-v1-36' }, spec: { targetVersion: NEW_VERSION, driver: { webhook: { url: 'https://cpm.example.com/replace' } } } });
  await createUpgrade(west, { apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name: 'west-to-v1-36' }, spec: { targetVersion: NEW_VERSION, driver: { webhook: { url: 'https://cpm.example.com/replace' } } } });
  // The operator's status, written as it writes it (no operator runs here): west waits for its window.
  const r = await west.request(0, `${UPGRADES}/west-to-v1-36/status`, {
    method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' },
    body: JSON.stringify({ status: { phase: 'Pending', targetVersion: NEW_VERSION, waiting: { reason: 'OutsideWindow', since: new Date().toISOString(), until: '2030-01-01T01:00:00Z', message: 'the next window opens at 2030-01-01T01:00:00Z' } } }),
  });
  assert.equal(r.status, 200, `status patch: ${r.body.slice(0, 800)}`);

  // An address that accepts connections and never answers.
  silent = createServer((s) => void held.push(s));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const silentPort = (silent.address() as AddressInfo).port;

  dir = mkdtempSync(join(tmpdir(), 'asu-fleet-'));
  // Two files, as $KUBECONFIG lists them: kubectl (and the plugin) merge them.
  const a = file(join(dir, 'a.kubeconfig'), entries(east, 'east'), entries(east, 'gone', `https://127.0.0.1:${await closedPort()}`));
  // A token the server does not know: it answers 401.
  const stranger = entries(west, 'stranger');
  stranger.users[0]!.user = { token: 'not-a-token-of-this-cluster' };
  // A user the server knows (a client certificate of its CA) and RBAC grants nothing: it answers 403.
  const nobody = await createClientCert(west.pki, 'nobody', 'nobody');
  const denied = entries(west, 'denied');
  denied.users[0]!.user = { 'client-certificate': nobody.cert, 'client-key': nobody.key };
  const b = file(join(dir, 'b.kubeconfig'), entries(west, 'west'), entries(west, 'silent', `https://127.0.0.1:${silentPort}`), stranger, entries(bare, 'bare'), denied);
  env = { ...process.env, KUBECONFIG: [a, b].join(delimiter) };
});

after(async () => {
  for (const s of held) s.destroy();
  silent?.close();
  for (const c of clusters) await c.teardown().catch(() => undefined);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Out {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

async function plugin(...args: string[]): Promise<Out> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    execFile(PLUGIN, args, { env, timeout: 120_000, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(err);
      const out = { code: err ? Number(err.code) : 0, stdout, stderr, ms: Date.now() - started };
      process.stderr.write(`$ kubectl apiserver-upgrade ${args.join(' ')} -> ${out.code} in ${out.ms} ms\n${stdout}${stderr}`);
      resolve(out);
    });
  });
}

test('--all-contexts: both clusters\' upgrades by context name, one row each for no CRD, 401, 403, nothing listening and no answer, within the deadline, exit 1', async () => {
  // What the command costs without any cluster (Node's start and the modules, seconds on a loaded machine): a
  // refusal that loads everything and asks nobody.
  const base = await plugin('list', '--contexts', 'nobody');
  assert.equal(base.code, 1);
  const r = await plugin('list', '--all-contexts', '--cluster-timeout', `${CLUSTER_TIMEOUT_S}s`);
  assert.equal(r.code, 1, 'a cluster could not be read');
  process.stderr.write(`fleet list: ${r.ms} ms; without clusters: ${base.ms} ms; deadline ${CLUSTER_TIMEOUT_S} s\n`);
  assert.ok(r.ms < base.ms + (CLUSTER_TIMEOUT_S + 5) * 1000, `took ${r.ms} ms (${base.ms} ms without clusters); the deadline is ${CLUSTER_TIMEOUT_S}s`);
  assert.ok(r.ms >= CLUSTER_TIMEOUT_S * 1000, `took ${r.ms} ms: the silent context was waited on for its deadline`);
  const lines = r.stdout.trimEnd().split('\n');
  assert.match(lines[0]!, /^CLUSTER +NAME +PHASE +FROM +TO +DONE +BATCH +PAUSED +WAITING +AGE +ERROR$/);
  assert.match(lines[1]!, /^bare +- +(- +){8}CRDNotServed: the cluster does not serve apiserverupgrades\.upgrade\.apiserver\.dev \(is the CRD installed\?\)$/);
  assert.match(lines[2]!, /^denied +- +(- +){8}Forbidden: 403: apiserverupgrades\.upgrade\.apiserver\.dev is forbidden: User "nobody" cannot list resource "apiserverupgrades" in API group "upgrade\.apiserver\.dev" at the cluster scope$/);
  assert.match(lines[3]!, /^east +east-to-v1-36 +Pending +- +v1\.36\.3 +- +- +- +- +\d+[sm]\S* +-$/);
  assert.match(lines[4]!, /^gone +- +(- +){8}Unreachable: connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
  assert.match(lines[5]!, new RegExp(`^silent +- +(- +){8}Timeout: no answer within ${CLUSTER_TIMEOUT_S}s$`));
  assert.match(lines[6]!, /^stranger +- +(- +){8}Unauthorized: the server refused the credentials \(401\)$/);
  assert.match(lines[7]!, /^west +west-to-v1-36 +Pending +- +v1\.36\.3 +- +- +- +OutsideWindow until 2030-01-01T01:00:00Z +\d+[sm]\S* +-$/);
  assert.equal(lines.length, 8);
  assert.equal(r.stderr, 'error: 5 of 7 clusters could not be read: bare, denied, gone, silent, stranger\n');
});

test('--contexts of the live clusters: exit 0, no ERROR column; -o json names each cluster and carries an error as data', async () => {
  const r = await plugin('list', '--contexts', 'west,east');
  assert.deepEqual([r.code, r.stderr], [0, '']);
  const lines = r.stdout.trimEnd().split('\n');
  assert.match(lines[0]!, /^CLUSTER +NAME +PHASE +FROM +TO +DONE +BATCH +PAUSED +WAITING +AGE$/);
  assert.match(lines[1]!, /^west +west-to-v1-36 /);
  assert.match(lines[2]!, /^east +east-to-v1-36 /);

  const j = await plugin('list', '--contexts', 'east,gone', '-o', 'json');
  assert.equal(j.code, 1);
  const v = JSON.parse(j.stdout) as FleetView;
  assert.deepEqual(v.clusters.map((c) => c.cluster), ['east', 'gone']);
  assert.deepEqual((v.clusters[0] as { upgrades: { name: string }[] }).upgrades.map((u) => u.name), ['east-to-v1-36']);
  const gone = (v.clusters[1] as { error: { reason: string; message: string } }).error;
  assert.equal(gone.reason, 'Unreachable');
  assert.match(gone.message, /ECONNREFUSED/);
});

test('a context the kubeconfig does not define is refused by name before any cluster is asked', async () => {
  const r = await plugin('list', '--contexts', 'east,typo');
  assert.equal(r.code, 1);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^error: context "typo" is not defined in the kubeconfig \(contexts: east, gone, west, silent, stranger, bare, denied\)\n$/);
});
