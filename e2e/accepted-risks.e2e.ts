// Accepted risks on real servers (docs/operations.md "Gates, windows and accepted risks"): three v1.35.4 servers
// carrying kube-system/kubeadm-config, one of them emulating 1.34 with admissionregistration.k8s.io/v1beta1 on, so a
// client can list validatingadmissionpolicies v1beta1 (removed in 1.34, before the target v1.36): the kubeadm
// preflight finding DeprecatedAPIRemovedByTarget, which blocks.
// - without spec.acceptRisks preflight waits (KubeadmPreflightFailed, status.waiting) and nothing is called;
// - with acceptRisks: [DeprecatedAPIRemovedByTarget] preflight passes and the plan is frozen, the acceptance is in
//   status.acceptedRisks (the finding, its value, the generation) and a RiskAccepted Event (created paused: nothing
//   is called, as an admin reviews it first);
// - acceptRisks naming a hard rule is refused by the API server, naming it.
//   node_modules/.bin/node --test --test-reporter=spec e2e/accepted-risks.e2e.ts   (as root)
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, OLD_VERSION, PROXY_GATE, ReplaceWebhook, waitFor } from './cluster/index.ts';
import { createUpgrade, getUpgrade, installCrd, startOperator, type OperatorProcess } from './support/operator.ts';
import { upgradeManifest } from './support/rig.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

// Read by every kube-apiserver this process starts: a server emulating 1.34 still serves the APIs 1.34 removed.
process.env.KUBE_APISERVER_SERVE_REMOVED_APIS_FOR_ONE_RELEASE = 'true';

const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';
const VAP_V1BETA1 = '/apis/admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies';
/** healthPorts 18160-18169 belong to this file. */
const HEALTH_PORT = 18160;

let cluster: Cluster | undefined;
let hook: ReplaceWebhook | undefined;
let op: OperatorProcess | undefined;
after(async () => {
  await op?.stop().catch(() => undefined);
  await hook?.close().catch(() => undefined);
  await cluster?.teardown();
});

async function until(name: string, what: string, ms: number, ok: (u: ApiServerUpgrade) => boolean): Promise<ApiServerUpgrade> {
  let last: ApiServerUpgrade | undefined;
  return waitFor(what, ms, async () => {
    const u = await getUpgrade(cluster!, name);
    last = u;
    return u && ok(u) ? u : undefined;
  }, 500).catch((err: Error) => {
    throw new Error(`${err.message}; last seen: ${JSON.stringify({ phase: last?.status?.phase, waiting: last?.status?.waiting, conditions: last?.status?.conditions, kubeadm: last?.status?.kubeadmPreflight })}`, { cause: err });
  });
}

test('a deprecated API removed by the target blocks preflight; accepted by name it lets the upgrade pass preflight, recorded in status and an Event; a hard rule is refused by the API', async () => {
  cluster = await Cluster.start({
    servers: 3, version: OLD_VERSION, featureGates: { [PROXY_GATE]: true }, verbose: true,
    perServer: [{}, { extraFlags: ['--emulated-version=1.34', '--runtime-config=admissionregistration.k8s.io/v1beta1=true'] }],
  });
  const c = cluster;
  await installCrd(c);
  hook = await ReplaceWebhook.start(c);
  op = await startOperator(c, { healthPort: HEALTH_PORT });
  const post = async (path: string, body: unknown): Promise<void> => {
    const r = await c.request('lb', path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    assert.ok(r.status === 201, `POST ${path}: HTTP ${r.status}: ${r.body}`);
  };
  await post('/api/v1/namespaces/kube-system/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kubeadm-config', namespace: 'kube-system' }, data: { ClusterConfiguration: `apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: ${OLD_VERSION}\n` } });
  // A client of the removed API, on cp-2's own address (the gauge is per server).
  const r = await c.request(1, VAP_V1BETA1);
  assert.equal(r.status, 200, r.body);

  // Without acceptRisks: preflight waits, nothing is called.
  await createUpgrade(c, upgradeManifest('risk-not-accepted', hook));
  const blocked = await until('risk-not-accepted', 'preflight to block on the deprecated API', 120_000, (u) => u.status?.conditions?.some((x) => x.type === 'PreflightPassed' && x.reason === 'KubeadmPreflightFailed') === true
    && (u.status?.kubeadmPreflight?.findings ?? []).some((f) => f.reason === 'DeprecatedAPIRemovedByTarget'));
  const blockers = (blocked.status?.kubeadmPreflight?.findings ?? []).filter((f) => f.severity === 'Block').map((f) => f.reason);
  assert.deepEqual([...new Set(blockers)], ['DeprecatedAPIRemovedByTarget'], 'the only blocking finding');
  assert.equal(blocked.status?.waiting?.reason, 'KubeadmPreflightFailed');
  assert.equal(hook.calls.size, 0);
  const del = await c.request('lb', `${UPGRADES}/risk-not-accepted`, { method: 'DELETE' });
  assert.equal(del.status, 200, del.body);

  // A hard rule cannot be accepted: the API server refuses it, naming it.
  const hard = upgradeManifest('risk-hard', hook) as { spec: Record<string, unknown> };
  const refused = await c.request('lb', UPGRADES, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ...hard, spec: { ...hard.spec, acceptRisks: ['DeprecatedAPIRemovedByTarget', 'RollbackUnsafe'] } }) });
  assert.equal(refused.status, 422, refused.body);
  assert.match(refused.body, /RollbackUnsafe is a hard safety rule \(rollback safety\) and can never be accepted/);

  // Accepted by name: preflight passes, the acceptance is recorded.
  const m = upgradeManifest('risk-accepted', hook) as { spec: Record<string, unknown> };
  await createUpgrade(c, { ...m, spec: { ...m.spec, paused: true, acceptRisks: ['DeprecatedAPIRemovedByTarget'] } });
  const ok = await until('risk-accepted', 'preflight to pass with the risk accepted', 120_000, (u) => (u.status?.acceptedRisks ?? []).length > 0 && u.status?.phase === 'Paused');
  const pre = ok.status?.conditions?.find((x) => x.type === 'PreflightPassed');
  assert.equal(pre?.status, 'True');
  assert.match(pre?.message ?? '', /accepted risks: DeprecatedAPIRemovedByTarget/);
  const acc = ok.status!.acceptedRisks![0]!;
  assert.equal(acc.name, 'DeprecatedAPIRemovedByTarget');
  assert.equal(acc.object, 'admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies (requested on cp-2)');
  assert.match(acc.value ?? '', /^removed in 1\.34, at or before the target v1\.36/);
  assert.equal(acc.generation, 1);
  assert.ok((ok.status?.plan?.batches ?? []).length === 3, 'the plan is frozen');
  assert.equal(ok.status?.pause?.reason, 'PausedBySpec');
  const evs = JSON.parse((await c.request('lb', '/apis/events.k8s.io/v1/namespaces/default/events')).body) as { items: { reason: string; note: string; type: string; regarding: { name: string } }[] };
  const ev = evs.items.filter((e) => e.regarding.name === 'risk-accepted' && e.reason === 'RiskAccepted');
  assert.equal(ev.length, 1, JSON.stringify(evs.items.filter((e) => e.regarding.name === 'risk-accepted').map((e) => e.reason)));
  assert.equal(ev[0]!.type, 'Warning');
  assert.match(ev[0]!.note, /DeprecatedAPIRemovedByTarget accepted by spec\.acceptRisks \(generation 1\)/);
  assert.equal(hook.calls.size, 0, 'created paused: nothing called');
  process.stderr.write(`[accepted-risks] accepted ${acc.name} on ${acc.object}: ${acc.value}\n`);
});
