// The flag proof in the operator's preflight on real kubelets (docs/flag-proof.md): a kubeadm-shaped control plane
// (nodes mode: containerd, kubelets, kube-apiserver v1.35.4 as static Pods), the operator as a host process, an
// ApiServerUpgrade to v1.36.3 with the static Pod driver. Three flags the target refuses, each added by hand to one
// node's manifest — a feature gate v1.36 removed (v1.35.4 keeps running with it), an unknown flag and an admission
// plugin Kubernetes removed (v1.35.4 refuses those too: their servers stay down) — and preflight blocks: status.flagProof
// and an Event per node name the node, the flag and the binary's own message, and no driver call is made. The same
// manifests without them: every node proven again, and the upgrade Succeeds.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { NodesCluster, MIRROR_REPOSITORY } from './cluster/nodes/nodes-cluster.ts';
import { NEW_VERSION, waitFor } from './cluster/index.ts';
import { staticPodUpgrade } from './support/static-pod-upgrade.ts';
import { OPERATOR_IMAGE } from './cluster/operator-image.ts';
import { installCrd, getUpgrade, createUpgrade, startOperator, type OperatorProcess } from './support/operator.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

let cluster: NodesCluster | undefined;
let operator: OperatorProcess | undefined;
after(async () => {
  await operator?.stop();
  await cluster?.teardown();
});

interface Job {
  metadata: { name: string; creationTimestamp: string; labels?: Record<string, string>; annotations?: Record<string, string> };
}
interface Pod {
  metadata: { labels?: Record<string, string> };
  status?: { containerStatuses?: { name: string; state?: { terminated?: { finishedAt?: string; exitCode?: number } } }[] };
}

const FAULTS = [
  { extra: '--feature-gates=ServiceTrafficDistribution=true', flag: '--feature-gates', item: 'ServiceTrafficDistribution', message: 'unrecognized feature gate: ServiceTrafficDistribution' },
  { extra: '--no-such-flag=1', flag: '--no-such-flag', item: undefined, message: 'unknown flag: --no-such-flag' },
  { extra: '--enable-admission-plugins=NodeRestriction,PodSecurityPolicy', flag: '--enable-admission-plugins', item: 'PodSecurityPolicy', message: 'enable-admission-plugins plugin "PodSecurityPolicy" is unknown' },
] as const;

/** Whether a proven command line carries the fault (the gate is merged with the proxy gate by the call's edit). */
function carries(command: readonly string[], f: (typeof FAULTS)[number]): boolean {
  return command.some((e) => e.startsWith(`${f.flag}=`) && e.includes(f.item ?? f.extra));
}

/** Node i's kube-apiserver manifest with `extra` added to its command, or taken out of it (as an admin edits it). */
async function editManifest(c: NodesCluster, i: number, extra: string, add: boolean): Promise<void> {
  const file = join(c.node(i).root, 'etc/kubernetes/manifests/kube-apiserver.yaml');
  const doc = parseDocument(await readFile(file, 'utf8'));
  const cmd = doc.getIn(['spec', 'containers', 0, 'command'], true) as { items: { value?: unknown }[]; add: (v: unknown) => void };
  if (add) cmd.add(extra);
  else cmd.items = cmd.items.filter((x) => x.value !== extra);
  await writeFile(file, doc.toString());
}

async function proofJobs(c: NodesCluster): Promise<Job[]> {
  return (await c.json<{ items: Job[] }>('/apis/batch/v1/namespaces/kube-system/jobs?labelSelector=upgrade.apiserver.dev%2Faction%3Dproveflags')).items;
}

async function agentJobs(c: NodesCluster): Promise<Job[]> {
  return (await c.json<{ items: Job[] }>('/apis/batch/v1/namespaces/kube-system/jobs?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dapiserver-upgrade-operator')).items.filter((j) => j.metadata.labels?.['upgrade.apiserver.dev/action'] !== 'proveflags');
}

/** Seconds from each proof Job's creation to its container's end (the server's own timestamps, to the second). */
async function proofSeconds(c: NodesCluster, jobs: readonly Job[]): Promise<number[]> {
  const pods = (await c.json<{ items: Pod[] }>('/api/v1/namespaces/kube-system/pods?labelSelector=upgrade.apiserver.dev%2Faction%3Dproveflags')).items;
  return jobs.flatMap((j) => {
    const end = pods.find((p) => p.metadata.labels?.['batch.kubernetes.io/job-name'] === j.metadata.name)?.status?.containerStatuses?.[0]?.state?.terminated?.finishedAt;
    return end === undefined ? [] : [(Date.parse(end) - Date.parse(j.metadata.creationTimestamp)) / 1000];
  });
}


test(`the operator's flag proof on real kubelets: a removed gate, an unknown flag and a removed admission plugin, one per node, block preflight naming the node, the flag and the binary's message, with no call; without them the upgrade to ${NEW_VERSION} Succeeds`, { timeout: 25 * 60_000 }, async () => {
  const t0 = Date.now();
  const c = await NodesCluster.start({ nodes: 3, verbose: true });
  cluster = c;
  await installCrd(c);
  process.stderr.write(`[flag-proof-upgrade] 3 nodes ready in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  for (const [i, f] of FAULTS.entries()) await editManifest(c, i, f.extra, true);
  // Each mirror Pod shows its edited manifest (the kubelet talks to the API through the balancer).
  await waitFor('the mirror Pods to show the edits', 3 * 60_000, async () => {
    for (const [i, f] of FAULTS.entries()) {
      const pod = await c.json<{ spec: { containers: { command?: string[] }[] } }>(`/api/v1/namespaces/kube-system/pods/kube-apiserver-${c.node(i).name}`).catch(() => undefined);
      if (!pod?.spec.containers[0]?.command?.includes(f.extra)) return undefined;
    }
    return true;
  }, 500);

  operator = await startOperator(c, { healthPort: 18490, extraArgs: ['--agent-image', OPERATOR_IMAGE] });
  const tApply = Date.now();
  await createUpgrade(c, staticPodUpgrade('proof'));
  const blocked = await waitFor('every node refused', 5 * 60_000, async () => {
    const u = await getUpgrade(c, 'proof');
    return (u?.status?.flagProof?.nodes ?? []).filter((r) => r.result === 'Refused').length === 3 ? u : undefined;
  }, 1000);
  const tBlocked = Date.now();
  const rows = blocked.status!.flagProof!.nodes!;
  process.stderr.write(`[flag-proof-upgrade] blocked ${((tBlocked - tApply) / 1000).toFixed(1)} s after apply: ${JSON.stringify(rows.map((r) => [r.hostname, r.result, r.flag, r.item, r.message, r.requestedAt, r.provenAt]))}\n`);
  assert.equal(blocked.status?.flagProof?.state, 'Blocked');
  assert.equal(blocked.status?.phase, 'Preflight');
  for (const [i, f] of FAULTS.entries()) {
    const r = rows.find((x) => x.hostname === c.node(i).name)!;
    assert.deepEqual([r.result, r.flag, r.item, r.message], ['Refused', f.flag, f.item, f.message], `${c.node(i).name}: ${JSON.stringify(r)}`);
    assert.ok(carries(r.command ?? [], f) && r.command?.at(-1) === '--max-requests-inflight=-1', `the command line proven is in status: ${JSON.stringify(r.command)}`);
  }
  const pre = blocked.status?.conditions?.find((x) => x.type === 'PreflightPassed');
  assert.equal(pre?.status, 'False');
  assert.match(pre?.message ?? '', /refuses/, JSON.stringify(pre));
  assert.equal(blocked.status?.conditions?.find((x) => x.type === 'FlagProofPassed')?.status, 'False');
  const events = await waitFor('an Event per refused node', 60_000, async () => {
    const evs = (await c.json<{ items: { reason: string; note: string; regarding: { name: string } }[] }>('/apis/events.k8s.io/v1/namespaces/default/events')).items.filter((e) => e.regarding.name === 'proof' && e.reason === 'FlagRefusedByTarget');
    return evs.length >= 3 ? evs : undefined;
  }, 1000);
  for (const [i, f] of FAULTS.entries()) {
    assert.ok(events.some((e) => e.note.startsWith(`${c.node(i).name}: kube-apiserver ${NEW_VERSION} refuses ${f.flag}`) && e.note.endsWith(f.message)), `${c.node(i).name}'s Event: ${JSON.stringify(events.map((e) => e.note))}`);
  }
  const refusedJobs = await proofJobs(c);
  const firstSeconds = await proofSeconds(c, refusedJobs);
  assert.equal(refusedJobs.length, 3, 'one proof Job per node');
  assert.deepEqual(blocked.status?.driverCalls ?? [], [], 'no driver call');
  assert.deepEqual(await agentJobs(c), [], 'no agent Job');

  // Fixed by hand: the same manifests without the three flags. Every node is proven again, and the upgrade runs. The
  // two nodes whose servers are down first, then cp-1 once they serve (all three restarting at once would leave no
  // server, and the operator's leader lease with it).
  for (const i of [1, 2]) await editManifest(c, i, FAULTS[i]!.extra, false);
  await waitFor('cp-2 and cp-3 to serve again', 5 * 60_000, async () => {
    for (const i of [1, 2]) {
      const r = await c.request(i, '/readyz', { timeoutMs: 3000 }).catch(() => undefined);
      if (r?.status !== 200) return undefined;
    }
    return true;
  }, 1000);
  await editManifest(c, 0, FAULTS[0].extra, false);
  const tFixed = Date.now();
  const final = await waitFor('Succeeded', 15 * 60_000, async () => {
    const u: ApiServerUpgrade | undefined = await getUpgrade(c, 'proof');
    if (u?.status?.phase === 'Paused' || u?.status?.phase === 'Failed') throw new Error(`upgrade ${u.status.phase}: ${JSON.stringify(u.status.pause ?? u.status.conditions)}`);
    return u?.status?.phase === 'Succeeded' ? u : undefined;
  }, 1000);
  const passedAt = final.status?.conditions?.find((x) => x.type === 'FlagProofPassed');
  assert.equal(passedAt?.status, 'True');
  assert.equal(final.status?.flagProof?.state, 'Passed');
  assert.deepEqual(final.status?.flagProof?.nodes?.map((r) => r.result), ['Accepted', 'Accepted', 'Accepted']);
  for (const r of final.status!.flagProof!.nodes!) for (const f of FAULTS) assert.ok(!carries(r.command ?? [], f), `${r.hostname}'s proven command line is the fixed one`);
  const allJobs = await proofJobs(c);
  const seconds = await proofSeconds(c, allJobs);
  process.stderr.write(`[flag-proof-upgrade] Succeeded ${((Date.now() - tFixed) / 1000).toFixed(0)} s after the fix; ${allJobs.length} proof Jobs; create to verdict s (server timestamps): refused ${firstSeconds.join(' ')}, all ${seconds.join(' ')}; rows ${JSON.stringify(final.status?.flagProof?.nodes?.map((r) => [r.hostname, r.requestedAt, r.provenAt]))}\n`);
  assert.ok(allJobs.length >= 6, 'the fixed command lines were proven again');
  for (const p of (await c.json<{ items: { spec: { containers: { image: string }[] } }[] }>('/api/v1/namespaces/kube-system/pods?labelSelector=component%3Dkube-apiserver')).items) {
    assert.equal(p.spec.containers[0]!.image, `${MIRROR_REPOSITORY}/kube-apiserver:${NEW_VERSION}`);
  }
  assert.equal(operator.exits.length, 0);
});
