// Probe: how the operator's watch (src/runtime/watch.ts) reports each kind of failure against the real servers.
// Run: npx node e2e/runtime/watch-probe.ts   (prints one JSON line per observation)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { KubeAccess } from '../../src/runtime/kubeconfig.ts';
import { watch } from '../../src/runtime/watch.ts';
import { Cluster, sleep } from '../cluster/index.ts';
import { ManagedProcess } from '../cluster/process.ts';

interface Observed { label: string; events: string[]; done: Promise<string>; abort: () => void }

function describe(err: unknown): string {
  if (err === null || err === undefined) return 'null';
  const e = err as { name?: string; message?: string; code?: unknown; statusCode?: unknown; cause?: { code?: unknown; message?: string } };
  return JSON.stringify({ name: e.name, message: e.message, code: e.code, statusCode: e.statusCode, cause: e.cause ? { code: e.cause.code, message: e.cause.message } : undefined });
}

const t0 = Date.now();
const out = (o: Record<string, unknown>): void => { process.stdout.write(JSON.stringify({ t: ((Date.now() - t0) / 1000).toFixed(1), ...o }) + '\n'); };

/** `timeoutMs`: abort the watch after this long (the informer's watchdog does this for silence). */
function observe(kc: KubeAccess, label: string, path: string, query: Record<string, string | number | boolean>, timeoutMs?: number): Observed {
  const events: string[] = [];
  const ctl = new AbortController();
  const timer = timeoutMs !== undefined ? setTimeout(() => ctl.abort(), timeoutMs) : undefined;
  const started = Date.now();
  const settled = (err: unknown): string => {
    clearTimeout(timer);
    const d = `${describe(err)} after ${((Date.now() - started) / 1000).toFixed(1)}s`;
    out({ label, done: d, events: events.slice(-5), nEvents: events.length });
    return d;
  };
  const done = watch(kc, path, query, ({ type, object }) => {
    const obj = object as { code?: number; metadata?: { name?: string } };
    events.push(type === 'ERROR' ? `ERROR(${obj.code})` : `${type}:${obj.metadata?.name ?? ''}`);
  }, ctl.signal).then(() => settled(null), settled);
  return { label, events, done, abort: () => ctl.abort() };
}

async function createLease(cluster: Cluster, ns: string, name: string): Promise<void> {
  const r = await cluster.request('lb', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ metadata: { name } }) });
  if (r.status !== 201) out({ createFailed: r.status, body: r.body.slice(0, 200) });
}

const cluster = await Cluster.start({ servers: 3, verbose: true });
let myHaproxy: ManagedProcess | undefined;
try {
  const kc = KubeAccess.fromFile(cluster.kubeconfig);
  const path = '/apis/coordination.k8s.io/v1/namespaces/default/leases';
  for (let i = 0; i < 5; i++) await createLease(cluster, 'default', `w${i}`);
  const q = { allowWatchBookmarks: true, timeoutSeconds: 300 };

  // 410: resourceVersion 1 is far older than the watch cache window.
  const gone = observe(kc, 'rv=1', path, { ...q, resourceVersion: '1' });
  await Promise.race([gone.done, sleep(10_000)]);
  // timeoutSeconds: the server ends the watch cleanly.
  const short = observe(kc, 'timeoutSeconds=3', path, { allowWatchBookmarks: true, timeoutSeconds: 3 });
  // An idle watch: nothing arrives (bookmarks about once a minute); aborted after 35 s, as a watchdog would.
  const idle = observe(kc, 'idle, aborted at 35s', '/apis/coordination.k8s.io/v1/namespaces/kube-public/leases', q, 35_000);
  // 404 path.
  const nf = observe(kc, '404 path', '/apis/nope.example.com/v1/things', q);
  // connection refused
  const doc = parseYaml(readFileSync(cluster.kubeconfig, 'utf8')) as { clusters: { cluster: { server: string } }[] };
  for (const c of doc.clusters) c.cluster.server = 'https://127.0.0.1:59999';
  const kcBad = KubeAccess.fromObject(doc, dirname(cluster.kubeconfig));
  const refused = observe(kcBad, 'refused', path, q);
  await Promise.all([short.done, nf.done, refused.done]);

  // Graceful stop behind the balancer: 3 watches spread round-robin over the servers, plus one direct.
  const list = JSON.parse((await cluster.request('lb', path)).body) as { metadata: { resourceVersion: string } };
  const rv = list.metadata.resourceVersion;
  const lbWatches = [0, 1, 2, 3, 4, 5].map((i) => observe(kc, `graceful-lb-${i}`, path, { ...q, resourceVersion: rv }, 600_000));
  const kc0 = KubeAccess.fromFile(cluster.server(0).kubeconfig);
  const direct0 = observe(kc0, 'graceful-direct-cp1', path, { ...q, resourceVersion: rv }, 600_000);
  await sleep(1000);
  out({ step: 'stop 0' });
  await cluster.stop(0);
  out({ step: 'stopped 0' });
  await Promise.race([direct0.done, sleep(5000)]);
  await cluster.start(0);
  for (const w of lbWatches) w.abort();
  await sleep(500);

  // SIGKILL behind the balancer.
  const killWatches = [0, 1, 2, 3, 4, 5].map((i) => observe(kc, `kill-lb-${i}`, path, { ...q, resourceVersion: rv }, 600_000));
  const kc1 = KubeAccess.fromFile(cluster.server(1).kubeconfig);
  const direct1 = observe(kc1, 'kill-direct-cp2', path, { ...q, resourceVersion: rv }, 600_000);
  await sleep(1000);
  out({ step: 'kill 1' });
  await cluster.kill(1);
  await Promise.race([direct1.done, sleep(10_000)]);
  await sleep(5000);
  await createLease(cluster, 'default', 'after-kill');
  await sleep(2000);
  out({ step: 'watch during kill', label: 'lb during down' });
  const during = observe(kc, 'lb-while-one-down', path, { ...q, resourceVersion: rv }, 600_000);
  await sleep(1000);
  await cluster.start(1);
  for (const w of killWatches) w.abort();
  during.abort();
  await sleep(500);

  // Balancer restart.
  const cfg = join(cluster.dir, 'haproxy.cfg');
  const pids = execFileSync('pgrep', ['-f', cfg]).toString().trim().split('\n').map(Number);
  const lbw = [0, 1, 2].map((i) => observe(kc, `lb-restart-${i}`, path, { ...q, resourceVersion: rv }, 600_000));
  await sleep(1000);
  out({ step: 'kill haproxy', pids });
  for (const p of pids) process.kill(p, 'SIGKILL');
  await Promise.all(lbw.map((w) => Promise.race([w.done, sleep(5000)])));
  const noLb = observe(kc, 'lb-down', path, q);
  await noLb.done;
  myHaproxy = new ManagedProcess('haproxy', ['-db', '-f', cfg], join(cluster.dir, 'haproxy2.log'));
  await sleep(3000);
  const back = observe(kc, 'lb-back', path, { ...q, resourceVersion: rv }, 600_000);
  await sleep(2000);
  out({ label: 'lb-back', events: back.events.length });
  back.abort();
  await idle.done;
} finally {
  await myHaproxy?.kill();
  await cluster.teardown();
}
