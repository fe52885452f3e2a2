// The rest of the control plane's skew on real servers (docs/version-skew.md): a real kube-controller-manager runs
// against the harness cluster for cp-1, and each component's mirror Pod is registered in kube-system as a kubelet
// reports a static Pod (labels, mirror annotation, node, image). First a kube-controller-manager on cp-2 newer than
// the target blocks preflight with nothing called; then cp-1's is upgraded to the target by hand while batch 1 soaks
// (the real v1.36.3 binary replaces the v1.35.4 one, its mirror Pod is replaced), and an abort pauses ComponentSkew
// naming it, with no Rollback call; brought back to v1.35.4, the held rollback runs by itself.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { binary, NEW_VERSION, OLD_VERSION, waitFor, type Cluster } from './cluster/index.ts';
import { ManagedProcess } from './cluster/process.ts';
import { createUpgrade, getUpgrade } from './support/operator.ts';
import { startRig, upgradeManifest, type Rig } from './support/rig.ts';
import { ABORT_ANNOTATION } from '../src/api/vocabulary.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';
const PODS = '/api/v1/namespaces/kube-system/pods';
const KCM_PORT = 18_257;
const NAME = 'skew';

let rig: Rig | undefined;
let kcm: ManagedProcess | undefined;
after(async () => {
  await kcm?.stop(10_000).catch(() => undefined);
  await rig?.teardown();
});

/** The mirror Pod a kubelet registers for a kubeadm static Pod of `component` on `node` at `version`. */
function mirrorPod(component: 'kube-controller-manager' | 'kube-scheduler', node: string, version: string): Record<string, unknown> {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name: `${component}-${node}`, namespace: 'kube-system', labels: { component, tier: 'control-plane' },
      annotations: { 'kubernetes.io/config.mirror': `hash-${component}-${version}`, 'kubernetes.io/config.source': 'file' },
    },
    spec: { nodeName: node, containers: [{ name: component, image: `registry.k8s.io/${component}:${version}`, command: [component] }] },
  };
}

async function call(c: Cluster, method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<string> {
  const r = await c.request('lb', path, { method, headers: { 'Content-Type': contentType }, newConnection: true, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  assert.ok(r.status >= 200 && r.status < 300, `${method} ${path}: HTTP ${r.status}: ${r.body.slice(0, 500)}`);
  return r.body;
}

/** A kubelet replaces a changed static Pod's mirror Pod: the old one is deleted, the new one created. */
async function setMirrorPod(c: Cluster, component: 'kube-controller-manager' | 'kube-scheduler', node: string, version: string): Promise<void> {
  const r = await c.request('lb', `${PODS}/${component}-${node}?gracePeriodSeconds=0`, { method: 'DELETE', newConnection: true });
  assert.ok(r.status === 200 || r.status === 404, `DELETE ${component}-${node}: HTTP ${r.status}`);
  await waitFor(`${component}-${node} gone`, 30_000, async () => ((await c.request('lb', `${PODS}/${component}-${node}`, { newConnection: true })).status === 404 ? true : undefined), 200);
  await call(c, 'POST', PODS, mirrorPod(component, node, version));
}

/** A real kube-controller-manager against the cluster, with kubeadm's delegated authentication and authorization. */
async function startKcm(c: Cluster, version: string): Promise<ManagedProcess> {
  const bin = await binary('kube-controller-manager', version);
  const dir = join(c.dir, `kcm-${version}`);
  mkdirSync(dir, { recursive: true });
  const p = new ManagedProcess(bin, [
    `--kubeconfig=${c.kubeconfig}`, `--authentication-kubeconfig=${c.kubeconfig}`, `--authorization-kubeconfig=${c.kubeconfig}`,
    '--bind-address=127.0.0.1', `--secure-port=${KCM_PORT}`, `--cert-dir=${dir}`,
    // One harmless controller: the measurement is of what it serves, not of what it controls.
    '--leader-elect=false', '--controllers=ttl', '--use-service-account-credentials=false',
  ], join(dir, 'kcm.log'));
  await waitFor(`kube-controller-manager ${version} serving`, 60_000, async () => {
    if (p.exited) throw new Error(`kube-controller-manager ${version} exited: ${readFileSync(join(dir, 'kcm.log'), 'utf8').slice(-2000)}`);
    return (await kcmGet('/healthz', c).catch(() => undefined))?.status === 200 ? true : undefined;
  }, 500);
  return p;
}

/** GET on the kube-controller-manager's secure port, anonymously or with the admin's client certificate. */
function kcmGet(path: string, c: Cluster, asAdmin = false): Promise<{ status: number; body: string }> {
  const cred = asAdmin ? { cert: readFileSync(c.pki.adminCert), key: readFileSync(c.pki.adminKey) } : {};
  return new Promise((resolve, reject) => {
    // Its serving certificate is self-signed (no --tls-cert-file, as kubeadm runs it): not verified.
    const req = request(`https://127.0.0.1:${KCM_PORT}${path}`, { rejectUnauthorized: false, timeout: 5000, agent: false, ...cred }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8').slice(0, 2000) }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** What the binary serves: recorded in the test's output for docs/version-skew.md. */
async function measure(c: Cluster, version: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const path of ['/version', '/healthz', '/statusz', '/metrics']) {
    out[`anonymous ${path}`] = (await kcmGet(path, c)).status;
    out[`admin ${path}`] = (await kcmGet(path, c, true)).status;
  }
  process.stderr.write(`[kube-controller-manager ${version}] ${JSON.stringify(out)}\n`);
  return out;
}

/**
 * What a kube-apiserver shows of coordinated leader election: its CoordinatedLeaderElection gate in /metrics
 * (kubernetes_feature_enabled: the stage and 0 or 1), and whether it serves LeaseCandidates (coordination.k8s.io/v1beta1).
 */
async function coordinatedLeaderElection(c: Cluster, i: number): Promise<{ gate: string; leaseCandidates: number }> {
  const m = await c.request(i, '/metrics', { timeoutMs: 10_000 });
  const line = m.body.split('\n').find((l) => l.startsWith('kubernetes_feature_enabled{') && l.includes('name="CoordinatedLeaderElection"')) ?? 'absent';
  const leaseCandidates = (await c.request(i, '/apis/coordination.k8s.io/v1beta1/leasecandidates')).status;
  const out = { gate: line, leaseCandidates };
  process.stderr.write(`[${c.servers[i]!.name} CoordinatedLeaderElection] ${JSON.stringify(out)}\n`);
  return out;
}

async function waitUpgrade(c: Cluster, what: string, ms: number, ok: (u: ApiServerUpgrade) => boolean): Promise<ApiServerUpgrade> {
  let last: ApiServerUpgrade | undefined;
  return waitFor(what, ms, async () => {
    last = (await getUpgrade(c, NAME)) ?? last;
    return last && ok(last) ? last : undefined;
  }, 500).catch((err: Error) => {
    throw new Error(`${err.message}; last seen: ${JSON.stringify({ phase: last?.status?.phase, pause: last?.status?.pause, conditions: last?.status?.conditions })}`, { cause: err });
  });
}

const calls = (r: Rig): string[] => [...r.hook.calls.values()].map((x) => `${x.action}:${x.hostname}`);

test('kube-controller-manager skew: newer than the target blocks preflight; upgraded to the target by hand mid-upgrade, an abort pauses ComponentSkew with no Rollback call, and the rollback runs once it is back', async () => {
  const t0 = Date.now();
  const at = (): string => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
  rig = await startRig({ gate: true, healthPort: 18141 });
  const r = rig;
  const c = r.cluster;
  kcm = await startKcm(c, OLD_VERSION);
  const served = await measure(c, OLD_VERSION);
  // kube-controller-manager registers no /version handler: authorized, the path is not found.
  assert.equal(served['admin /version'], 404);
  assert.equal(served['anonymous /healthz'], 200);
  // Coordinated leader election is off by default on v1.35: the gate reads 0, and LeaseCandidates are not served.
  const cleOld = await coordinatedLeaderElection(c, 0);
  assert.equal(cleOld.gate, 'kubernetes_feature_enabled{name="CoordinatedLeaderElection",stage="BETA"} 0');
  assert.equal(cleOld.leaseCandidates, 404);

  for (const node of ['cp-1', 'cp-2', 'cp-3']) {
    await call(c, 'POST', PODS, mirrorPod('kube-controller-manager', node, node === 'cp-2' ? 'v1.37.2' : OLD_VERSION));
    await call(c, 'POST', PODS, mirrorPod('kube-scheduler', node, OLD_VERSION));
  }
  process.stderr.write(`[${at()}] cluster, operator, kube-controller-manager ${OLD_VERSION} and 6 mirror Pods up\n`);

  // The soak outlasts everything done by hand in batch 1 (a kube-controller-manager restart on a loaded machine takes
  // minutes): batch 2 must not start before the abort lands.
  await createUpgrade(c, upgradeManifest(NAME, r.hook, { strategy: { soakDuration: '15m', batchTimeout: '3m' } }));
  const refused = await waitUpgrade(c, 'preflight refused', 60_000, (u) => u.status?.conditions?.some((x) => x.type === 'PreflightPassed' && x.reason === 'ComponentNewerThanTarget') === true);
  const pf = refused.status?.conditions?.find((x) => x.type === 'PreflightPassed');
  assert.match(pf?.message ?? '', /kube-controller-manager on node cp-2 \(Pod kube-system\/kube-controller-manager-cp-2\) runs v1\.37\.2, newer than v1\.36\.3/);
  assert.equal(refused.status?.phase, 'Preflight');
  assert.equal(refused.status?.components?.length, 6);
  assert.equal(refused.status?.components?.find((x) => x.node === 'cp-2' && x.component === 'kube-controller-manager')?.version, 'v1.37.2');
  assert.deepEqual(calls(r), [], 'nothing called while preflight refuses');
  process.stderr.write(`[${at()}] preflight refused: ${pf?.message}\n`);

  // cp-2's brought back to the from-version: preflight passes by itself, batch 1 (cp-1) lands and soaks.
  await setMirrorPod(c, 'kube-controller-manager', 'cp-2', OLD_VERSION);
  await waitUpgrade(c, 'batch 1 soaking', 3 * 60_000, (u) => u.status?.batch?.current === 1 && u.status.batch.soakUntil !== undefined);
  assert.deepEqual(calls(r), ['Upgrade:cp-1']);
  process.stderr.write(`[${at()}] batch 1 soaking\n`);
  // ... and on v1.36 (cp-1 runs it now).
  const cleNew = await coordinatedLeaderElection(c, 0);
  assert.equal(cleNew.gate, 'kubernetes_feature_enabled{name="CoordinatedLeaderElection",stage="BETA"} 0');
  assert.equal(cleNew.leaseCandidates, 404);

  // cp-1's kube-controller-manager upgraded to the target by hand.
  await kcm.stop(10_000);
  kcm = await startKcm(c, NEW_VERSION);
  const servedNew = await measure(c, NEW_VERSION);
  assert.equal(servedNew['admin /version'], 404);
  await setMirrorPod(c, 'kube-controller-manager', 'cp-1', NEW_VERSION);
  await call(c, 'PATCH', `${UPGRADES}/${NAME}`, { metadata: { annotations: { [ABORT_ANNOTATION]: 'a1' } } }, 'application/merge-patch+json');
  const paused = await waitUpgrade(c, 'the abort held by ComponentSkew', 60_000, (u) => u.status?.phase === 'Paused');
  assert.equal(paused.status?.pause?.reason, 'ComponentSkew', JSON.stringify(paused.status?.pause));
  assert.match(paused.status?.pause?.message ?? '', /a rollback to v1\.35\.4 would leave kube-controller-manager on node cp-1 \(Pod kube-system\/kube-controller-manager-cp-1\) runs v1\.36\.3, newer than v1\.35\.4/);
  assert.deepEqual(paused.status?.pause?.servers, ['kube-controller-manager/cp-1']);
  // Each kube-apiserver's CoordinatedLeaderElection gate is read from its /metrics into status: off (beta, default off) on
  // v1.35.4 (cp-2, cp-3) and v1.36.3 (cp-1), as the gauge above says.
  assert.deepEqual(paused.status?.peers?.map((p) => [p.hostname, p.coordinatedLeaderElection]), [['cp-1', 'Disabled'], ['cp-2', 'Disabled'], ['cp-3', 'Disabled']]);
  process.stderr.write(`[${at()}] paused: ${paused.status?.pause?.message}\n`);
  // It stays held while the component is newer: several reconciles later, still no Rollback call.
  await new Promise((res) => setTimeout(res, 8_000));
  assert.equal((await getUpgrade(c, NAME))?.status?.pause?.reason, 'ComponentSkew');
  assert.deepEqual(calls(r), ['Upgrade:cp-1'], 'no Rollback call while the component is newer');

  // Brought back to the from-version: the pause lifts by itself and the held rollback runs.
  await kcm.stop(10_000);
  kcm = await startKcm(c, OLD_VERSION);
  await setMirrorPod(c, 'kube-controller-manager', 'cp-1', OLD_VERSION);
  const end = await waitUpgrade(c, 'RolledBack', 3 * 60_000, (u) => u.status?.phase === 'RolledBack');
  assert.deepEqual(calls(r), ['Upgrade:cp-1', 'Rollback:cp-1']);
  const v = JSON.parse((await c.request(0, '/version')).body) as { gitVersion: string };
  assert.equal(v.gitVersion, OLD_VERSION);
  assert.deepEqual(r.op.exits, [], 'the operator never restarted');
  process.stderr.write(`[${at()}] ${end.status?.phase}\n`);
});
