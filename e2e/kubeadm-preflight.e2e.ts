// The kubeadm preflight findings (src/plan/kubeadm-preflight.ts, docs/kubeadm-runbook.md) on a cluster built to
// trigger each of them, on real servers: three v1.35.4 servers carrying kube-system/kubeadm-config, where
//   cp-1's serving certificate expires in 3 days (blocks), and a client listed componentstatuses (deprecated, no
//        removal planned) and storage.k8s.io/v1beta1 volumeattributesclasses (removed in 1.37, after the target);
//   cp-2's serving certificate expires in 20 days (warns), and it runs --emulated-version=1.34 with
//        admissionregistration.k8s.io/v1beta1 on and KUBE_APISERVER_SERVE_REMOVED_APIS_FOR_ONE_RELEASE, so a
//        client could still list validatingadmissionpolicies v1beta1 (removed in 1.34, before the target v1.36);
//   cp-3 reaches etcd through a TCP relay in the cluster's network namespace, killed mid-test: its /readyz/etcd fails;
//   a Node whose kubelet is newer than the target, and one that never reported a version.
//   kube-apiserver mirror Pods as kubeadm's kubelets register them (with kubeadm's advertise-address annotation),
//   except that cp-1 has none, cp-2's (kube-apiserver-cp-2) says spec.nodeName node-b, and cp-3's Node carries
//   another kubernetes.io/hostname label.
// Through the webhook driver: the blocking findings fail preflight and nothing is called (the node name checks
// are the static Pod driver's). Then the static Pod driver, created paused (preflight runs, nothing is touched):
// the same findings and the node names.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { Cluster, NEW_VERSION, OLD_VERSION, PROXY_GATE, ReplaceWebhook, waitFor } from './cluster/index.ts';
import { createUpgrade, installCrd, startOperator, type OperatorProcess } from './support/operator.ts';
import { upgradeManifest } from './support/rig.ts';
import type { ApiServerUpgrade, KubeadmFinding } from '../src/api/types.generated.ts';

// Read by every kube-apiserver this process starts: a server emulating 1.34 still serves the APIs 1.34 removed.
process.env.KUBE_APISERVER_SERVE_REMOVED_APIS_FOR_ONE_RELEASE = 'true';

const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';
const RELAY_PORT = 23790;
const VAP_V1BETA1 = '/apis/admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies';
const VAC_V1BETA1 = '/apis/storage.k8s.io/v1beta1/volumeattributesclasses';
// A TCP relay to etcd, run inside the cluster's network namespace (where etcd listens on 127.0.0.1:2379).
const RELAY = `const net = require('node:net');
net.createServer((c) => {
  const u = net.connect(2379, '127.0.0.1');
  c.pipe(u); u.pipe(c);
  const end = () => { c.destroy(); u.destroy(); };
  c.on('error', end); u.on('error', end); c.on('close', end); u.on('close', end);
}).listen(${RELAY_PORT}, '127.0.0.1', () => process.stdout.write('listening\\n'));`;

let cluster: Cluster | undefined;
let hook: ReplaceWebhook | undefined;
let op: OperatorProcess | undefined;
let relay: ChildProcess | undefined;
after(async () => {
  relay?.kill('SIGKILL');
  await op?.stop().catch(() => undefined);
  await hook?.close().catch(() => undefined);
  await cluster?.teardown();
});

function nodeInfo(kubeletVersion: string): Record<string, string> {
  return { kubeletVersion, kubeProxyVersion: '', machineID: 'm', systemUUID: 's', bootID: 'b', kernelVersion: '6.1.0', osImage: 'Debian', containerRuntimeVersion: 'containerd://2.0.0', operatingSystem: 'linux', architecture: 'amd64' };
}

/** What kubeadm's kubelet registers for a control-plane kube-apiserver static Pod (only mirror Pods count). */
function mirrorPod(hostname: string, nodeName: string, address: string): Record<string, unknown> {
  const annotations = { 'kubernetes.io/config.mirror': `hash-${hostname}`, 'kubernetes.io/config.source': 'file', 'kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint': `${address}:6443` };
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name: `kube-apiserver-${hostname}`, namespace: 'kube-system', labels: { component: 'kube-apiserver', tier: 'control-plane' }, annotations },
    spec: { nodeName, containers: [{ name: 'kube-apiserver', image: `registry.k8s.io/kube-apiserver:${OLD_VERSION}`, command: ['kube-apiserver', '--secure-port=6443'] }] },
  };
}

const row = (u: ApiServerUpgrade | undefined, reason: string, object?: string): KubeadmFinding | undefined =>
  u?.status?.kubeadmPreflight?.findings?.find((f) => f.reason === reason && (object === undefined || f.object === object));
const summary = (u: ApiServerUpgrade | undefined): string => JSON.stringify({ phase: u?.status?.phase, kubeadmPreflight: u?.status?.kubeadmPreflight, conditions: u?.status?.conditions });

/** What the operator went through, for a timeout's message: its exits, and its last warnings and errors. */
function operatorTail(): string {
  if (!op) return 'no operator';
  const loud = op.logLines().filter((l) => l.level === 'warn' || l.level === 'error').slice(-15);
  const last = op.logLines().slice(-5);
  return `operator exits ${JSON.stringify(op.exits)}; its last warnings: ${loud.map((l) => JSON.stringify(l)).join('\n')}\nits last lines: ${last.map((l) => JSON.stringify(l)).join('\n')}`;
}

/** The upgrade once `ok` holds; on timeout the error carries the last status seen. */
async function waitUpgrade(c: Cluster, name: string, what: string, timeoutMs: number, ok: (u: ApiServerUpgrade) => boolean): Promise<ApiServerUpgrade> {
  let last: ApiServerUpgrade | undefined;
  let lastFailedRead = 'none';
  return waitFor(what, timeoutMs, async () => {
    // A new connection each time: once etcd is cut from cp-3, a kept-alive connection the balancer sent there stays
    // there (TCP balancing), and reads on it hang.
    const r = await c.request('lb', `${UPGRADES}/${name}`, { timeoutMs: 5000, newConnection: true }).catch((err: Error) => err);
    if (r instanceof Error || r.status !== 200) {
      lastFailedRead = r instanceof Error ? r.message : `HTTP ${r.status}: ${r.body.slice(0, 200)}`;
      return undefined;
    }
    const u = JSON.parse(r.body) as ApiServerUpgrade;
    last = u;
    return ok(u) ? u : undefined;
  }, 500).catch((err: Error) => {
    throw new Error(`${err.message}; last failed read: ${lastFailedRead}; last seen: ${summary(last)}; ${operatorTail()}`, { cause: err });
  });
}

test('each kubeadm preflight finding on real servers: certificates close to expiry, deprecated APIs requested, kubelet skew, etcd unreachable from one server, node names that are not the hostname', async () => {
  const t0 = Date.now();
  const at = (): string => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
  cluster = await Cluster.start({
    servers: 3, version: OLD_VERSION, featureGates: { [PROXY_GATE]: false }, verbose: true,
    servingCertDays: [3, 20],
    perServer: [
      { extraFlags: ['--runtime-config=storage.k8s.io/v1beta1=true'] },
      { extraFlags: ['--emulated-version=1.34', '--runtime-config=admissionregistration.k8s.io/v1beta1=true'] },
    ],
  });
  const c = cluster;
  const req = async (target: number | 'lb', method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<string> => {
    // A new connection per request, as in waitUpgrade: after the cut, none may be held on cp-3 by the balancer.
    const r = await c.request(target, path, { method, headers: { 'Content-Type': contentType }, newConnection: true, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    assert.ok(r.status >= 200 && r.status < 300, `${method} ${path} on ${target}: HTTP ${r.status}: ${r.body}`);
    return r.body;
  };

  // cp-3 moved onto the relay (same hostname, address and version): etcd can then be cut off from it alone.
  relay = spawn('ip', ['netns', 'exec', c.netns.name, process.execPath, '-e', RELAY], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    relay!.once('exit', (code) => reject(new Error(`the etcd relay exited (${code})`)));
    relay!.stdout!.once('data', () => resolve());
  });
  await c.replace(2, { extraFlags: [`--etcd-servers=http://127.0.0.1:${RELAY_PORT}`] });
  process.stderr.write(`[${at()}] cluster up, cp-3 on the etcd relay\n`);

  await installCrd(c);
  hook = await ReplaceWebhook.start(c);
  op = await startOperator(c, { healthPort: 18126 });

  // A kubeadm cluster; two Nodes whose kubelets block a v1.36 target.
  await req('lb', 'POST', '/api/v1/namespaces/kube-system/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kubeadm-config', namespace: 'kube-system' }, data: { ClusterConfiguration: `apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: ${OLD_VERSION}\n` } });
  await req('lb', 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'worker-new', labels: { 'kubernetes.io/hostname': 'worker-new' } } });
  await req('lb', 'PATCH', '/api/v1/nodes/worker-new/status', { status: { nodeInfo: nodeInfo('v1.37.0') } }, 'application/merge-patch+json');
  await req('lb', 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'worker-bare', labels: { 'kubernetes.io/hostname': 'worker-bare' } } });
  // The mirror Pods. Their advertise-address annotation is also how the operator keeps knowing cp-3's address once
  // etcd is cut off from it (its entry in the kubernetes EndpointSlice then expires), as in a kubeadm cluster.
  await req('lb', 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'cp-3', labels: { 'kubernetes.io/hostname': 'cp-3.example.internal' } } });
  await req('lb', 'PATCH', '/api/v1/nodes/cp-3/status', { status: { nodeInfo: nodeInfo(OLD_VERSION) } }, 'application/merge-patch+json');
  await req('lb', 'POST', '/api/v1/namespaces/kube-system/pods', mirrorPod('cp-2', 'node-b', c.server(1).address));
  await req('lb', 'POST', '/api/v1/namespaces/kube-system/pods', mirrorPod('cp-3', 'cp-3', c.server(2).address));
  // Clients of deprecated APIs, each on one server's own address (the gauge is per server).
  await req(0, 'GET', '/api/v1/componentstatuses');
  await req(0, 'GET', VAC_V1BETA1);
  await req(1, 'GET', VAP_V1BETA1);

  const a = 'kubeadm-findings-webhook';
  await createUpgrade(c, upgradeManifest(a, hook));
  const blocked = await waitUpgrade(c, a, 'preflight to report the certificates, the deprecated APIs and the kubelets', 120_000, (u) => {
    const want = ['ServingCertificateExpiresSoon', 'ServingCertificateExpiring', 'DeprecatedAPIRemovedByTarget', 'KubeletNewerThanTarget', 'KubeletVersionUnknown'];
    const failed = u.status?.conditions?.find((x) => x.type === 'PreflightPassed')?.reason === 'KubeadmPreflightFailed';
    return failed && want.every((r) => row(u, r)) && row(u, 'DeprecatedAPIRequested', 'storage.k8s.io/v1beta1/volumeattributesclasses (requested on cp-1)') !== undefined;
  });
  process.stderr.write(`[${at()}] webhook upgrade blocked: ${JSON.stringify(blocked.status?.kubeadmPreflight)}\n`);
  const pick = (reason: string, object: string): KubeadmFinding => {
    const f = row(blocked, reason, object);
    assert.ok(f, `${reason} on ${object}: ${summary(blocked)}`);
    return f;
  };
  const expectRow = (reason: string, object: string, check: string, severity: string, message: RegExp): void => {
    const f = pick(reason, object);
    assert.deepEqual([f.check, f.severity], [check, severity], JSON.stringify(f));
    assert.match(f.message ?? '', message);
  };
  expectRow('ServingCertificateExpiresSoon', 'kube-apiserver cp-1 serving certificate', 'ServingCertificate', 'Block', /^expires on .+ \((2\.\d|3\.0) days\), under 7 days: renew it first/);
  expectRow('ServingCertificateExpiring', 'kube-apiserver cp-2 serving certificate', 'ServingCertificate', 'Warn', /^expires on .+ \((19\.\d|20\.0) days\), under 30 days: renew it first/);
  expectRow('DeprecatedAPIRemovedByTarget', 'admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies (requested on cp-2)', 'DeprecatedAPI', 'Block', /^removed in 1\.34, at or before the target v1\.36/);
  expectRow('DeprecatedAPIRequested', 'v1/componentstatuses (requested on cp-1)', 'DeprecatedAPI', 'Warn', /^deprecated, no removal planned$/);
  expectRow('DeprecatedAPIRequested', 'storage.k8s.io/v1beta1/volumeattributesclasses (requested on cp-1)', 'DeprecatedAPI', 'Warn', /^deprecated, removed in 1\.37 \(after the target\)$/);
  expectRow('KubeletNewerThanTarget', 'Node/worker-new', 'KubeletSkew', 'Block', /^kubelet v1\.37\.0 is newer than the target v1\.36/);
  expectRow('KubeletVersionUnknown', 'Node/worker-bare', 'KubeletSkew', 'Block', /is not a Kubernetes version/);
  // Each server's certificate and /metrics were read; no certificate of a year, no etcd finding yet.
  const rep = blocked.status!.kubeadmPreflight!;
  assert.equal(rep.servers, 3);
  assert.ok(!rep.findings!.some((f) => f.object === 'kube-apiserver cp-3 serving certificate' || f.check === 'EtcdHealth'), summary(blocked));
  assert.equal(rep.blocking, rep.findings!.filter((f) => f.severity === 'Block').length);
  assert.equal(blocked.status?.phase, 'Preflight');
  const pre = blocked.status?.conditions?.find((x) => x.type === 'PreflightPassed');
  assert.deepEqual([pre?.status, pre?.reason], ['False', 'KubeadmPreflightFailed'], summary(blocked));
  const kc = blocked.status?.conditions?.find((x) => x.type === 'KubeadmPreflightPassed');
  assert.equal(kc?.status, 'False');
  assert.ok(rep.findings!.some((f) => f.severity === 'Block' && f.reason === kc?.reason), `the condition names a blocking finding: ${kc?.reason}`);
  assert.match(kc?.message ?? '', new RegExp(`${rep.blocking} blocking, ${rep.warnings} warning\\(s\\) across 3 server\\(s\\) and 3 Node\\(s\\)`));
  assert.equal(hook.calls.size, 0, 'nothing was called while preflight is blocked');

  // etcd cut off from cp-3 alone (the relay killed: its connections reset, new ones refused).
  const cut = Date.now();
  relay.kill('SIGKILL');
  const etcd = await waitUpgrade(c, a, 'preflight to report cp-3\'s etcd', 60_000, (u) => u.status?.kubeadmPreflight?.findings?.some((f) => f.check === 'EtcdHealth') === true);
  process.stderr.write(`[${at()}] EtcdHealth reported ${((Date.now() - cut) / 1000).toFixed(1)} s after the relay was killed\n`);
  const etcdRows = etcd.status!.kubeadmPreflight!.findings!.filter((f) => f.check === 'EtcdHealth');
  assert.deepEqual(etcdRows.map((f) => [f.reason, f.severity, f.object]), [['EtcdUnhealthy', 'Block', 'kube-apiserver cp-3 /readyz/etcd']], summary(etcd));
  assert.match(etcdRows[0]!.message ?? '', /^HTTP 5\d\d: /);
  for (const i of [0, 1]) assert.equal((await c.request(i, '/readyz/etcd')).status, 200, `etcd still healthy from cp-${i + 1}`);
  assert.equal(etcd.status?.conditions?.find((x) => x.type === 'PreflightPassed')?.status, 'False');
  assert.equal(hook.calls.size, 0);
  const events = JSON.parse(await req('lb', 'GET', `/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=${encodeURIComponent(`regarding.name=${a}`)}`)) as { items: { reason: string; type: string }[] };
  assert.ok(events.items.some((e) => e.type === 'Warning' && e.reason === kc?.reason), events.items.map((e) => e.reason).join(', '));

  await req('lb', 'DELETE', `${UPGRADES}/${a}`);
  await waitFor(`${a} to be gone`, 30_000, async () => ((await c.request('lb', `${UPGRADES}/${a}`, { newConnection: true, timeoutMs: 5000 })).status === 404 ? true : undefined), 250);

  // The static Pod driver pins its agent to the node named as the server's hostname: cp-1 has no mirror Pod, cp-2's
  // was registered under another node name, cp-3's Node is labelled with another hostname.
  const b = 'kubeadm-findings-static-pod';
  await req('lb', 'POST', UPGRADES, {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name: b },
    spec: {
      targetVersion: NEW_VERSION, paused: true,
      strategy: { batchSize: 1, soakDuration: '5s', batchTimeout: '3m' },
      proxy: { allowAlphaGate: true },
      driver: { staticPod: { readyTimeout: '2m' } },
      analysis: { interval: '2s', failureLimit: 3 },
    },
  });
  const paused = await waitUpgrade(c, b, 'the paused upgrade\'s preflight to report the node names', 60_000, (u) => u.status?.kubeadmPreflight?.findings?.some((f) => f.check === 'NodeName') === true);
  process.stderr.write(`[${at()}] static Pod upgrade paused: ${JSON.stringify(paused.status?.kubeadmPreflight)}\n`);
  const nodeRows = paused.status!.kubeadmPreflight!.findings!.filter((f) => f.check === 'NodeName');
  assert.deepEqual(nodeRows.map((f) => [f.reason, f.severity, f.object]), [
    ['MirrorPodNotFound', 'Block', 'Pod kube-system/kube-apiserver-cp-1'],
    ['NodeNameNotHostname', 'Block', 'Pod kube-system/kube-apiserver-cp-2'],
    ['NodeNameNotHostname', 'Block', 'Node/cp-3'],
  ], summary(paused));
  assert.match(nodeRows[0]!.message ?? '', /^no kube-apiserver mirror Pod on a node named cp-1/);
  assert.match(nodeRows[1]!.message ?? '', /^spec\.nodeName is node-b, the server's hostname is cp-2: /);
  assert.match(nodeRows[2]!.message ?? '', /^label kubernetes\.io\/hostname is cp-3\.example\.internal, the server's hostname is cp-3$/);
  // The same checks as through the webhook, on the same servers: the paused preflight read them all.
  for (const r of ['ServingCertificateExpiresSoon', 'ServingCertificateExpiring', 'DeprecatedAPIRemovedByTarget', 'EtcdUnhealthy', 'KubeletNewerThanTarget']) assert.ok(row(paused, r), `${r}: ${summary(paused)}`);
  assert.equal(paused.status?.kubeadmPreflight?.nodes, 3);
  assert.equal(paused.status?.kubeadmPreflight?.servers, 3);
  assert.equal(paused.status?.phase, 'Paused');
  assert.equal(paused.status?.conditions?.find((x) => x.type === 'KubeadmPreflightPassed')?.status, 'False');
  assert.equal(paused.status?.conditions?.find((x) => x.type === 'PreflightPassed')?.status, 'False');
  // Nothing touched: no agent Job anywhere (the flag proof's Jobs, which touch no server, left out), no webhook call.
  const jobs = JSON.parse(await req('lb', 'GET', '/apis/batch/v1/jobs?labelSelector=upgrade.apiserver.dev%2Faction%21%3Dproveflags')) as { items: unknown[] };
  assert.equal(jobs.items.length, 0);
  assert.equal(hook.calls.size, 0);
  process.stderr.write(`[${at()}] done\n`);
});
