// kubeadm clusters on real servers (docs/kubeadm-runbook.md): a cluster that carries kube-system/kubeadm-config is
// a kubeadm one whatever the driver, so preflight runs the kubeadm checks and the operator keeps kubeadm-config in
// line once the upgrade ends. Three v1.35.4 servers with the gate off, upgraded to v1.36.3 through the webhook
// driver; a Node object with a kubelet too old for the target blocks preflight until it is "upgraded". The operator
// runs with its kubeadm-config write on (--kubeadm-config-write=true, the chart's kubeadmConfig.write; off by
// default it only reports what to set, test/controller/kubeadm-config-sync.test.ts).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { NEW_VERSION, OLD_VERSION, waitFor } from './cluster/index.ts';
import { createUpgrade, getUpgrade } from './support/operator.ts';
import { startRig, upgradeManifest, type Rig } from './support/rig.ts';
import { kubeadmClusterConfiguration } from './support/kubeadm-config.ts';

let rig: Rig | undefined;
after(async () => {
  await rig?.teardown();
});

const CM_PATH = '/api/v1/namespaces/kube-system/configmaps/kubeadm-config';
const WRITE = '--kubeadm-config-write=true';
const CLUSTER_CONFIGURATION = kubeadmClusterConfiguration({ version: OLD_VERSION, endpoint: 'cp.example:6443', comment: 'written by kubeadm init; this comment must survive the operator\'s edit' });

function nodeInfo(kubeletVersion: string): Record<string, string> {
  return { kubeletVersion, kubeProxyVersion: '', machineID: 'm', systemUUID: 's', bootID: 'b', kernelVersion: '6.1.0', osImage: 'Debian', containerRuntimeVersion: 'containerd://2.0.0', operatingSystem: 'linux', architecture: 'amd64' };
}

test('kubeadm preflight blocks on a kubelet 4 minors behind the target, passes once it is upgraded; after Succeeded kubeadm-config says the target and carries the gate', async () => {
  rig = await startRig({ gate: false, healthPort: 18091, operatorArgs: [WRITE] });
  const { cluster, hook } = rig;
  const req = async (method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<string> => {
    const r = await cluster.request('lb', path, { method, headers: { 'Content-Type': contentType }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    assert.ok(r.status >= 200 && r.status < 300, `${method} ${path}: HTTP ${r.status}: ${r.body}`);
    return r.body;
  };
  await req('POST', '/api/v1/namespaces/kube-system/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kubeadm-config', namespace: 'kube-system' }, data: { ClusterConfiguration: CLUSTER_CONFIGURATION } });
  await req('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'worker-old', labels: { 'kubernetes.io/hostname': 'worker-old' } } });
  await req('PATCH', '/api/v1/nodes/worker-old/status', { status: { nodeInfo: nodeInfo('v1.32.9') } }, 'application/merge-patch+json');

  const name = 'kubeadm-to-v1-36';
  await createUpgrade(cluster, upgradeManifest(name, hook));
  const blocked = await waitFor('preflight to report the old kubelet', 3 * 60_000, async () => {
    const u = await getUpgrade(cluster, name);
    // The fleet's own health is judged in the same pass: servers that have just started can read as UnhealthyFleet
    // for a moment under load, which outranks the kubeadm finding in the condition; wait for the steady verdict.
    const reason = u?.status?.conditions?.find((c) => c.type === 'PreflightPassed')?.reason;
    return u?.status?.kubeadmPreflight?.findings?.some((f) => f.reason === 'KubeletTooOld') && reason === 'KubeadmPreflightFailed' ? u : undefined;
  }, 500);
  assert.equal(blocked.status?.phase, 'Preflight');
  const finding = blocked.status!.kubeadmPreflight!.findings!.find((f) => f.reason === 'KubeletTooOld')!;
  assert.deepEqual([finding.check, finding.severity, finding.object], ['KubeletSkew', 'Block', 'Node/worker-old']);
  assert.match(finding.message ?? '', /kubelet v1\.32\.9 is 4 minors older than the target v1\.36/);
  const pre = blocked.status?.conditions?.find((c) => c.type === 'PreflightPassed');
  assert.deepEqual([pre?.status, pre?.reason], ['False', 'KubeadmPreflightFailed']);
  assert.equal(blocked.status?.conditions?.find((c) => c.type === 'KubeadmPreflightPassed')?.reason, 'KubeletTooOld');
  // The other checks ran on the real servers and found nothing that blocks: etcd ready, certificates of a year.
  assert.deepEqual(blocked.status!.kubeadmPreflight!.findings!.filter((f) => f.severity === 'Block').map((f) => f.reason), ['KubeletTooOld'], JSON.stringify(blocked.status?.kubeadmPreflight));
  assert.equal(blocked.status?.kubeadmPreflight?.servers, 3);
  assert.equal(hook.calls.size, 0, 'nothing was called while preflight is blocked');

  // The kubelet upgraded (3 minors behind is within the policy): preflight passes by itself, the upgrade runs.
  await req('PATCH', '/api/v1/nodes/worker-old/status', { status: { nodeInfo: nodeInfo('v1.33.0') } }, 'application/merge-patch+json');
  const final = await waitFor(`${name} to finish`, 8 * 60_000, async () => {
    const u = await getUpgrade(cluster, name);
    const phase = u?.status?.phase;
    if (phase === 'Paused' || phase === 'Failed') return u;
    return phase === 'Succeeded' && u?.status?.kubeadmConfig?.result !== 'Pending' ? u : undefined;
  }, 1000);
  assert.equal(final.status?.phase, 'Succeeded', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.equal(final.status?.conditions?.find((c) => c.type === 'KubeadmPreflightPassed')?.status, 'True');

  const rec = final.status?.kubeadmConfig;
  assert.equal(rec?.result, 'Updated', JSON.stringify(rec));
  assert.equal(rec?.phase, 'Succeeded');
  assert.equal(rec?.kubernetesVersion, NEW_VERSION);
  const c = final.status?.conditions?.find((x) => x.type === 'KubeadmConfigUpdated');
  assert.deepEqual([c?.status, c?.reason], ['True', 'KubeadmConfigUpdated']);

  const cm = JSON.parse(await req('GET', CM_PATH)) as { metadata: { resourceVersion: string }; data: { ClusterConfiguration: string } };
  assert.equal(cm.metadata.resourceVersion, rec?.resourceVersion, 'the status names the version the operator wrote');
  const text = cm.data.ClusterConfiguration;
  assert.ok(text.startsWith('# written by kubeadm init; this comment must survive the operator\'s edit\n'), text);
  const cfg = parse(text) as { kubernetesVersion: string; controlPlaneEndpoint: string; certificatesDir: string; apiServer: { extraArgs: { name: string; value: string }[] } };
  assert.equal(cfg.kubernetesVersion, NEW_VERSION);
  assert.equal(cfg.controlPlaneEndpoint, 'cp.example:6443');
  assert.equal(cfg.certificatesDir, '/etc/kubernetes/pki');
  // The webhook driver: the version and the gate the operator asked for; no flag it does not know the hook set.
  assert.deepEqual(cfg.apiServer.extraArgs, [
    { name: 'authorization-mode', value: 'Node,RBAC' },
    { name: 'feature-gates', value: 'SomeOtherGate=false,UnknownVersionInteroperabilityProxy=true' },
  ]);
  const events = JSON.parse(await req('GET', `/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=${encodeURIComponent(`regarding.name=${name}`)}`)) as { items: { reason: string; note?: string }[] };
  const reasons = events.items.map((e) => e.reason);
  assert.ok(reasons.includes('KubeletTooOld'), reasons.join(', '));
  assert.equal(reasons.filter((r) => r === 'KubeadmConfigUpdated').length, 1, `edited once: ${reasons.join(', ')}`);

  // Done once: the operator restarted reads the record and edits nothing again.
  const before = cm.metadata.resourceVersion;
  await rig.op.stop();
  const { startOperator } = await import('./support/operator.ts');
  const op2 = await startOperator(cluster, { healthPort: 18094, extraArgs: [WRITE] });
  try {
    await waitFor('the restarted operator to lead', 60_000, async () => (op2.logLines().some((l) => String(l.message).startsWith('leading')) ? true : undefined), 500);
    await new Promise((r) => setTimeout(r, 5_000));
    const again = JSON.parse(await req('GET', CM_PATH)) as { metadata: { resourceVersion: string } };
    assert.equal(again.metadata.resourceVersion, before, 'kubeadm-config was not written again');
  } finally {
    await op2.stop();
  }
});
