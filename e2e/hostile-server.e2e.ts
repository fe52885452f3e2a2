// Issue 21 on a real cluster: one extra "apiserver" joins the fleet the way kube-apiservers do (an identity Lease
// in kube-system that it keeps renewing, with its peer address; TLS from the cluster's CA), and answers /apis with
// 200 MiB of discovery, /metrics with a bomb and /api with a body that never ends. The operator, a process of its
// own with the chart's NODE_OPTIONS, inventories it with the real servers and is given an ApiServerUpgrade with
// failureLimit 1. It stays up (its peak RSS, VmHWM, is printed and must stay under the Pod's 384 Mi), names the
// server and the cap in status, and pauses before any driver call touches the hostile server.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Cluster, ReplaceWebhook, OLD_VERSION, NEW_VERSION, waitFor } from './cluster/index.ts';
import { createServingCert } from './cluster/pki.ts';
import { createUpgrade, getUpgrade, installCrd, startOperator } from './support/operator.ts';
import { upgradeManifest } from './support/rig.ts';
import { startHostileServer } from '../test/support/hostile-server.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

const HOSTNAME = 'hostile-1';
const LEASE = 'apiserver-hostile-1';
const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases';
// The chart's container settings (charts/apiserver-upgrade-operator values: NODE_OPTIONS) and its memory limit.
const CHART_NODE_OPTIONS = '--max-semi-space-size=4 --max-old-space-size=160';
const POD_LIMIT_MIB = 384;

const cleanups: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
});

/** kube-apiserver's renewTime is a MicroTime: six fractional digits. */
const microTime = (): string => new Date().toISOString().replace(/Z$/, '000Z');

function peakRssMiB(pid: number): number {
  const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  assert.ok(kb, `VmHWM of pid ${pid}`);
  return Math.round(Number(kb) / 1024);
}

test('a hostile apiserver in the fleet: the operator stays up within the heap, names it in status and pauses before touching it', async () => {
  const cluster = await Cluster.start({ servers: 3, version: OLD_VERSION, verbose: true, replaceVersions: [NEW_VERSION] });
  cleanups.push(() => cluster.teardown());
  await installCrd(cluster);
  const hook = await ReplaceWebhook.start(cluster);
  cleanups.push(() => hook.close());

  // The hostile server listens on the host end of the cluster's veth: the operator (a host process) reaches it
  // as it reaches the real servers, and its certificate is the cluster CA's, for that address.
  const host = cluster.netns.hostAddress;
  const tls = await createServingCert(cluster.pki, HOSTNAME, [host], [HOSTNAME]);
  const hostile = await startHostileServer({ cert: readFileSync(tls.cert), key: readFileSync(tls.key) }, { host, version: OLD_VERSION, slow: ['/api'] });
  cleanups.push(() => hostile.close());

  // Its identity Lease, as a kube-apiserver writes it (labels, peer address annotation), renewed every 5 s so it
  // never looks stale.
  const lease = {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: LEASE,
      namespace: 'kube-system',
      labels: { 'apiserver.kubernetes.io/identity': 'kube-apiserver', 'kubernetes.io/hostname': HOSTNAME },
      annotations: { 'kubernetes.io/peer-advertise-address': hostile.address },
    },
    spec: { holderIdentity: `${LEASE}_hostile`, leaseDurationSeconds: 3600, acquireTime: microTime(), renewTime: microTime() },
  };
  const created = await cluster.request('lb', LEASES, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(lease) });
  assert.equal(created.status, 201, created.body);
  const renew = setInterval(() => {
    void cluster.request('lb', `${LEASES}/${LEASE}`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify({ spec: { renewTime: microTime() } }) }).catch(() => undefined);
  }, 5_000);
  cleanups.push(() => clearInterval(renew));

  const op = await startOperator(cluster, { healthPort: 18091, env: { NODE_OPTIONS: CHART_NODE_OPTIONS } });
  cleanups.push(() => op.stop());
  const pid = op.child.pid!;

  await createUpgrade(cluster, upgradeManifest('hostile', hook, { proxy: { gate: 'Unmanaged' }, analysis: { failureLimit: 1, onBreach: 'Pause' } }));
  const phases: string[] = [];
  // Until it stops, or the operator exits (returned as `null` and asserted on below: waitFor retries on throws).
  const final = await waitFor('the upgrade to stop', 150_000, async (): Promise<ApiServerUpgrade | null | undefined> => {
    if (op.exits.length > 0) return null;
    const u = await getUpgrade(cluster, 'hostile');
    const phase = u?.status?.phase;
    if (phase && phases.at(-1) !== phase) {
      phases.push(phase);
      process.stderr.write(`[hostile] phase ${phase} ${u?.status?.pause?.reason ?? ''} ${u?.status?.pause?.message ?? ''}\n`);
    }
    return phase === 'Paused' || phase === 'Failed' || phase === 'Succeeded' ? u : undefined;
  }, 500);
  await hook.idle();
  // A paused upgrade is still observed: let one more round reach the hostile server (up to 20 s), so the peak
  // RSS covers repeated reads and the slow bodies' deadlines, not only the first observation.
  const rounds = hostile.requests.get('/version') ?? 0;
  await waitFor('another observation of the hostile server', 20_000, async () => ((hostile.requests.get('/version') ?? 0) > rounds ? true : undefined), 500).catch(() => undefined);

  const mib = peakRssMiB(pid);
  console.log(`hostile server e2e: peak RSS (VmHWM) of the operator process with NODE_OPTIONS="${CHART_NODE_OPTIONS}": ${mib} MiB; ` +
    `the hostile server wrote /apis ${Math.round((hostile.served.get('/apis') ?? 0) / 1024 / 1024)} MiB, /metrics ${Math.round((hostile.served.get('/metrics') ?? 0) / 1024 / 1024)} MiB; requests ${JSON.stringify(Object.fromEntries(hostile.requests))}`);

  // The operator stayed up: no exit, and it still answers.
  assert.deepEqual(op.exits, [], `the operator exited: ${readFileSync(op.logPath, 'utf8').slice(-3000)}`);
  assert.equal((await fetch(`http://127.0.0.1:${op.healthPort}/healthz`)).status, 200);
  assert.ok(mib < POD_LIMIT_MIB, `peak RSS ${mib} MiB under the Pod limit ${POD_LIMIT_MIB} Mi`);

  // It was asked for everything: the hostile server is in the fleet, not ignored.
  assert.ok((hostile.requests.get('/metrics') ?? 0) > 0, 'the operator scraped the hostile server');
  assert.ok((hostile.requests.get('/apis') ?? 0) > 0, 'the operator read the hostile server\'s discovery');
  assert.ok((hostile.requests.get('/api') ?? 0) > 0, 'the operator asked for the slow body');
  // Each read stopped soon after its cap: far less than the 200 MiB offered per request.
  assert.ok((hostile.served.get('/apis') ?? 0) < 64 * 1024 * 1024 * Math.max(1, hostile.requests.get('/apis') ?? 1), `served /apis ${hostile.served.get('/apis')}`);

  // Status names the server and the cap, and the upgrade paused on it.
  assert.ok(final, `the upgrade paused (phases ${phases.join(' -> ')})`);
  assert.equal(final.status?.phase, 'Paused', JSON.stringify(final.status?.pause));
  assert.equal(final.status?.pause?.reason, 'AnalysisBreach', JSON.stringify(final.status?.pause));
  assert.match(final.status?.pause?.message ?? '', new RegExp(`${HOSTNAME}.*over its cap|${HOSTNAME}: (discovery|metrics)`), final.status?.pause?.message);
  const breaches = final.status?.lastAnalysis?.breaches ?? [];
  const capBreach = breaches.find((b) => b.signal === 'bodyCap' && b.server === HOSTNAME);
  assert.ok(capBreach, `a bodyCap breach for ${HOSTNAME}: ${JSON.stringify(breaches)}`);
  assert.match(capBreach.observed ?? '', /^(metrics|discovery) over its cap$/);
  assert.match(capBreach.message ?? '', new RegExp(`^${HOSTNAME}: (metrics|discovery): `));
  // Both bombs were caught: the /metrics one and the 200 MiB discovery (the breach's first finding, then the rest).
  assert.match(capBreach.message ?? '', /metrics/);
  assert.match(capBreach.message ?? '', /discovery/);

  // No driver call touched the hostile server; the real servers kept running their version.
  const calls = [...hook.calls.values()];
  process.stderr.write(`[hostile] driver calls: ${JSON.stringify(calls.map((c) => `${c.action}:${c.hostname}`))}\n`);
  assert.deepEqual(calls.filter((c) => c.hostname === HOSTNAME), [], 'no driver call for the hostile server');
  assert.deepEqual(calls, [], 'no driver call at all: the breach came before the first batch');
  for (const s of cluster.servers) {
    const v = JSON.parse((await cluster.request(s.index, '/version')).body) as { gitVersion: string };
    assert.equal(v.gitVersion, OLD_VERSION, `${s.name} untouched`);
  }
});
