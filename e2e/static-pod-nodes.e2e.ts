// The static Pod driver end to end on real kubelets (issue 9): a kubeadm-shaped control plane (nodes mode: containerd,
// kubelets registered with the cluster, kube-apiserver/controller-manager/scheduler as static Pods, images from a
// private mirror imported without a registry), the operator as a host process through haproxy, an ApiServerUpgrade
// applied with kubectl. What the kubelet does between a manifest rewrite and a ready server is real here.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { NodesCluster, MIRROR_REPOSITORY } from './cluster/nodes/nodes-cluster.ts';
import { NEW_VERSION, OLD_VERSION, waitFor, sleep } from './cluster/index.ts';
import { staticPodUpgrade } from './support/static-pod-upgrade.ts';
import { buildImage, importImages, staticBusybox } from './cluster/images.ts';
import { OPERATOR_IMAGE } from './cluster/operator-image.ts';
import { installCrd, getUpgrade, startOperator as startOperatorProcess, type OperatorProcess } from './support/operator.ts';
import { AGENT_COMMAND } from '../src/drivers/static-pod.ts';
import { NEW_ONLY } from './support/rig.ts';
import { tool, runOk } from './support/tools.ts';
import { sweepStale } from './cluster/cleanup.ts';
import { run } from './cluster/exec.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

const clusters: NodesCluster[] = [];
const operators: OperatorProcess[] = [];
/** Each test's cluster goes when the test ends: three live nodes-mode clusters exhaust inotify instances. */
async function cleanUp(): Promise<void> {
  await Promise.all(operators.splice(0).map((o) => o.stop()));
  await Promise.all(clusters.splice(0).map((c) => c.teardown()));
}
after(cleanUp);

interface PodList { items: { metadata: { name: string; uid: string }; spec: { containers: { image: string }[] }; status?: { containerStatuses?: { restartCount: number }[] } }[] }
interface JobList { items: { metadata: { name: string; annotations?: Record<string, string> }; spec: { template: { spec: { containers: { name: string; image: string; command: string[] }[] } } }; status?: { succeeded?: number; failed?: number; active?: number } }[] }

/** The operator as a host process, with its own image (imported into every node) as the node agent's, as the chart passes it. */
function startOperator(c: NodesCluster, opts: { healthPort: number }): Promise<OperatorProcess> {
  return startOperatorProcess(c, { ...opts, extraArgs: ['--agent-image', OPERATOR_IMAGE] });
}

async function startCluster(): Promise<NodesCluster> {
  const t0 = Date.now();
  const c = await NodesCluster.start({ nodes: 3, verbose: true });
  clusters.push(c);
  process.stderr.write(`[nodes] 3 nodes ready in ${((Date.now() - t0) / 1000).toFixed(1)} s ${JSON.stringify(c.timings)}\n`);
  await installCrd(c);
  return c;
}

/** kubectl apply, as a platform team does. */
async function kubectlApply(c: NodesCluster, obj: Record<string, unknown>): Promise<void> {
  const file = join(c.dir, `${(obj.metadata as { name: string }).name}.yaml`);
  await writeFile(file, stringify(obj));
  await runOk(tool('kubectl'), ['--kubeconfig', c.kubeconfig, 'apply', '-f', file]);
}


async function apiserverMirrors(c: NodesCluster): Promise<PodList['items']> {
  return (await c.json<PodList>('/api/v1/namespaces/kube-system/pods?labelSelector=component%3Dkube-apiserver')).items;
}

/** The node agent's Jobs (the flag proof's Jobs, labelled action proveflags, left out). */
async function agentJobs(c: NodesCluster): Promise<JobList['items']> {
  return (await c.json<JobList>('/apis/batch/v1/namespaces/kube-system/jobs?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dapiserver-upgrade-operator%2Cupgrade.apiserver.dev%2Faction%21%3Dproveflags')).items;
}

function phase(u: ApiServerUpgrade | undefined): string | undefined {
  return u?.status?.phase;
}

test('kubeadm on real kubelets: gate turned on node by node, every node upgraded by its static Pod, registry kept, backups, each Job once, no 404 for a v1.36-only resource after the first batch; the operator SIGKILLed while a Job runs creates none twice', { timeout: 20 * 60_000 }, async (t) => {
  t.after(cleanUp);
  const c = await startCluster();
  const before = await Promise.all([0, 1, 2].map((i) => c.manifest(i)));
  for (const m of before) assert.match(m, new RegExp(`image: ${MIRROR_REPOSITORY}/kube-apiserver:${OLD_VERSION}`));
  for (const m of before) assert.doesNotMatch(m, /UnknownVersionInteroperabilityProxy/, 'the proxy gate starts off (v1.35 default)');
  let op = await startOperator(c, { healthPort: 18480 });
  operators.push(op);
  const t0 = Date.now();
  // No image in the spec: the agent keeps each node's repository (the private mirror) and changes only the tag.
  await kubectlApply(c, staticPodUpgrade('kubeadm', {}));

  // SIGKILL the operator while the first Upgrade Job runs; a new one must find that Job by its key.
  const firstUpgradeJob = await waitFor('the first Upgrade Job', 8 * 60_000, async () => {
    // An operator that exited (one that cannot renew its leader Lease in time steps down and exits) makes no Job: say so now.
    if (op.exits.length > 0) throw new Error(`the operator exited before the first Upgrade Job: ${JSON.stringify(op.exits)}`);
    return (await agentJobs(c)).find((j) => j.metadata.name.startsWith('auo-upgrade-') && (j.status?.succeeded ?? 0) === 0);
  }, 250);
  op.child.kill('SIGKILL');
  await waitFor('the operator to die', 10_000, async () => (op.exits.length > 0 ? true : undefined));
  assert.deepEqual(op.exits, [{ code: null, signal: 'SIGKILL' }]);
  op = await startOperator(c, { healthPort: 18481 });
  operators.push(op);

  // From the first finished Upgrade batch on, a client through haproxy asking for a v1.36-only resource never sees 404.
  let probes = 0;
  const notFound: string[] = [];
  let done = false;
  const watcher = (async () => {
    await waitFor('the first Upgrade batch to finish', 10 * 60_000, async () => ((await getUpgrade(c, 'kubeadm'))?.status?.batch?.history?.length ?? 0) >= 1 ? true : undefined, 500);
    while (!done) {
      const r = await c.request('lb', NEW_ONLY, { timeoutMs: 5000, newConnection: true }).catch(() => undefined);
      if (r) {
        probes++;
        if (r.status === 404) notFound.push(new Date().toISOString());
      }
      await sleep(300);
    }
  })();
  const final = await waitFor('Succeeded', 15 * 60_000, async () => {
    const u = await getUpgrade(c, 'kubeadm');
    if (phase(u) === 'Paused' || phase(u) === 'Failed') throw new Error(`upgrade ${phase(u)}: ${JSON.stringify(u?.status?.conditions)}`);
    return phase(u) === 'Succeeded' ? u : undefined;
  }, 1000);
  done = true;
  await watcher;
  process.stderr.write(`[nodes] Succeeded ${((Date.now() - t0) / 1000).toFixed(0)} s after apply; ${probes} probes of ${NEW_ONLY} after batch 1, ${notFound.length} 404\n`);
  process.stderr.write(`[nodes] calls: ${JSON.stringify(final.status?.driverCalls?.map((x) => [x.action, x.server, x.result, x.time, x.completedAt]))}\n`);

  const mirrors = await apiserverMirrors(c);
  assert.equal(mirrors.length, 3);
  for (const p of mirrors) assert.equal(p.spec.containers[0]!.image, `${MIRROR_REPOSITORY}/kube-apiserver:${NEW_VERSION}`, `${p.metadata.name} runs the target from the cluster's own registry`);
  for (let i = 0; i < 3; i++) {
    const m = await c.manifest(i);
    assert.match(m, /--feature-gates=UnknownVersionInteroperabilityProxy=true/);
    assert.match(m, /--peer-ca-file=\/etc\/kubernetes\/pki\/ca\.crt/);
    assert.ok((await c.backups(i)).some((f) => f.endsWith('.yaml')), `node ${i + 1} has its manifest backup`);
    assert.deepEqual((await c.manifestFiles(i)).sort(), ['kube-apiserver.yaml', 'kube-controller-manager.yaml', 'kube-scheduler.yaml'], 'no temp file left in the manifests folder');
  }
  assert.equal(notFound.length, 0, `404 for ${NEW_ONLY} after the first batch converged at ${notFound.join(', ')}`);
  assert.ok(probes > 5, `the v1.36-only resource was probed (${probes})`);

  const jobs = await agentJobs(c);
  const byKey = new Map<string, number>();
  for (const j of jobs) byKey.set(j.metadata.annotations?.['upgrade.apiserver.dev/idempotency-key'] ?? '', (byKey.get(j.metadata.annotations?.['upgrade.apiserver.dev/idempotency-key'] ?? '') ?? 0) + 1);
  assert.equal(jobs.length, 6, `3 EnableProxy and 3 Upgrade Jobs: ${jobs.map((j) => j.metadata.name).join(', ')}`);
  const proofs = (await c.json<JobList>('/apis/batch/v1/namespaces/kube-system/jobs?labelSelector=upgrade.apiserver.dev%2Faction%3Dproveflags')).items;
  assert.deepEqual(proofs.map((j) => j.metadata.annotations?.['upgrade.apiserver.dev/server']).sort(), ['cp-1', 'cp-2', 'cp-3'], 'each node\'s command line proven once: the gate pass left it as the Upgrade call proves it');
  assert.deepEqual(final.status?.flagProof?.nodes?.map((r) => r.result), ['Accepted', 'Accepted', 'Accepted']);
  for (const [key, count] of byKey) assert.equal(count, 1, `one Job per key (${key})`);
  for (const j of jobs) assert.deepEqual([j.status?.succeeded, j.status?.failed ?? 0], [1, 0], `${j.metadata.name} ran once and succeeded`);
  for (const j of jobs) {
    const agent = j.spec.template.spec.containers[0]!;
    assert.deepEqual([agent.name, agent.image, agent.command], ['agent', OPERATOR_IMAGE, [...AGENT_COMMAND]], `${j.metadata.name} ran the Node agent from the operator's image`);
  }
  assert.ok(jobs.some((j) => j.metadata.name === firstUpgradeJob.metadata.name), 'the Job running at the SIGKILL is the one that finished its call');
  assert.equal(op.exits.length, 0, 'the restarted operator never restarted');
});

test('a target image that cannot be pulled blocks preflight (its flag proof cannot run) before any call; a new static Pod that never gets ready is reverted on its node', { timeout: 15 * 60_000 }, async (t) => {
  t.after(cleanUp);
  const c = await startCluster();
  const op = await startOperator(c, { healthPort: 18482 });
  operators.push(op);

  // 1. An image nobody serves: each node's flag proof Job cannot pull it, so preflight blocks and nothing is called.
  const manifestBefore = await c.manifest(0);
  const mirrorBefore = (await apiserverMirrors(c)).find((p) => p.metadata.name === 'kube-apiserver-cp-1')!;
  await kubectlApply(c, staticPodUpgrade('unpullable', { image: 'registry.auo.test/missing/kube-apiserver' }));
  const blocked = await waitFor('preflight blocked by the flag proof', 5 * 60_000, async () => {
    const u = await getUpgrade(c, 'unpullable');
    return u?.status?.flagProof?.state === 'Blocked' ? u : undefined;
  }, 1000);
  const notRun = blocked.status?.flagProof?.nodes?.find((r) => r.result === 'NotRun');
  const pre = blocked.status?.conditions?.find((x) => x.type === 'PreflightPassed');
  process.stderr.write(`[nodes] unpullable: ${pre?.reason}: ${pre?.message}\n`);
  assert.equal(phase(blocked), 'Preflight');
  assert.equal(pre?.reason, 'FlagProofNotRun');
  assert.ok(notRun, 'a node\'s proof could not run');
  assert.match(notRun.message ?? '', /ErrImagePull|ImagePullBackOff/);
  assert.match(notRun.message ?? '', /registry\.auo\.test\/missing\/kube-apiserver/);
  assert.deepEqual(blocked.status?.driverCalls ?? [], [], 'no call');
  assert.deepEqual(await agentJobs(c), [], 'no agent Job');
  assert.equal(await c.manifest(0), manifestBefore, 'cp-1\'s manifest was not touched');
  const mirrorAfter = (await apiserverMirrors(c)).find((p) => p.metadata.name === 'kube-apiserver-cp-1')!;
  assert.equal(mirrorAfter.metadata.uid, mirrorBefore.metadata.uid, 'cp-1\'s kube-apiserver static Pod was never replaced');
  await runOk(tool('kubectl'), ['--kubeconfig', c.kubeconfig, 'delete', 'apiserverupgrade', 'unpullable', '--wait']);

  // 2. An image that pulls (and answers --version) but whose server never gets ready: the agent restores the backup.
  // The gate pass comes first (the proxy gate is off on v1.35), and with spec.image set it already runs this image
  // (tagged as the running version), so the first call on the first node is the one reverted.
  // It answers the flag proof as kube-apiserver does (the sentinel's error alone: every flag accepted).
  const script = '#!/bin/sh\n[ "$1" = --version ] && { echo "Kubernetes v1.36.3"; exit 0; }\nfor a; do last="$a"; done\n[ "$last" = --max-requests-inflight=-1 ] && { echo \'E1206 10:00:00.000000       1 run.go:72] "command failed" err="--max-requests-inflight can not be negative value"\' >&2; exit 1; }\necho "this server never gets ready" >&2\nexec sleep 3600\n';
  const brokenImages = await Promise.all([OLD_VERSION, NEW_VERSION].map((v) => buildImage({
    name: `registry.auo.test/broken/kube-apiserver:${v}`,
    entries: [
      { path: 'bin/busybox', type: 'file', mode: 0o755, source: staticBusybox() },
      { path: 'bin/sh', type: 'symlink', target: 'busybox' },
      { path: 'bin/sleep', type: 'symlink', target: 'busybox' },
      { path: 'usr/local/bin/kube-apiserver', type: 'file', mode: 0o755, data: script },
    ],
    env: ['PATH=/usr/local/bin:/bin'],
  })));
  await Promise.all([0, 1, 2].map((i) => importImages(c.containerdSocket(i), brokenImages)));
  await kubectlApply(c, staticPodUpgrade('never-ready', { image: 'registry.auo.test/broken/kube-apiserver', readyTimeout: '30s' }));
  const reverted = await waitFor('a DriverFailed pause after the revert', 8 * 60_000, async () => {
    const u = await getUpgrade(c, 'never-ready');
    return phase(u) === 'Paused' ? u : undefined;
  }, 1000);
  const call = reverted.status?.driverCalls?.find((x) => x.result === 'Failed');
  process.stderr.write(`[nodes] never-ready: ${reverted.status?.pause?.reason}: ${call?.message}\n`);
  assert.equal(reverted.status?.pause?.reason, 'DriverFailed');
  assert.match(call?.message ?? '', /revert|restored/i);
  const host = call!.server;
  const i = c.nodes.findIndex((n) => n.hostname === host);
  const restored = await c.manifest(i);
  assert.match(restored, new RegExp(`image: ${MIRROR_REPOSITORY}/kube-apiserver:${OLD_VERSION}`), `${host}'s manifest is back on its backup`);
  await waitFor(`${host}'s apiserver ready again on the old version`, 3 * 60_000, async () => {
    const r = await c.request(i, '/version', { timeoutMs: 3000 }).catch(() => undefined);
    return r?.status === 200 && (JSON.parse(r.body) as { gitVersion: string }).gitVersion === OLD_VERSION ? true : undefined;
  }, 1000);
  assert.equal(op.exits.length, 0);
});

interface OwnedNode { dir: string; netns: string; socket: string }

/** A child process that owns a 1-node cluster, as `npm run e2e` or a developer's script would. */
async function startNodeOwner(): Promise<{ child: ReturnType<typeof spawn>; info: OwnedNode; containers: string[] }> {
  const script = `import { NodesCluster } from ${JSON.stringify(join(import.meta.dirname, 'cluster/nodes/nodes-cluster.ts'))};\nconst c = await NodesCluster.start({ nodes: 1 });\nprocess.stdout.write(JSON.stringify({ dir: c.dir, netns: c.nodes[0].netns, socket: c.containerdSocket(0) }) + '\\n');\nsetInterval(() => {}, 1000);\n`;
  const file = `/tmp/auo-nodes-owner-${process.pid}.ts`;
  await writeFile(file, script);
  const child = spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const info = await waitFor('the owner to start a node', 4 * 60_000, async () => (out.includes('\n') ? (JSON.parse(out.split('\n')[0]!) as OwnedNode) : undefined), 500);
  const containers = (await runOk('ctr', ['-a', info.socket, '-n', 'k8s.io', 'containers', 'ls', '-q'])).split('\n').filter(Boolean);
  return { child, info, containers };
}

/** Cgroup folders, under any controller, named after one of the given container ids. */
async function cgroupsOf(ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const found = await run('find', ['/sys/fs/cgroup', '-mindepth', '2', '-type', 'd', '(', ...ids.flatMap((id, i) => (i === 0 ? ['-name', id] : ['-o', '-name', id])), ')']).catch(() => '');
  return found.split('\n').filter(Boolean);
}

async function assertNodeGone(info: OwnedNode, containers: string[]): Promise<void> {
  const { existsSync } = await import('node:fs');
  assert.equal(existsSync(info.dir), false, 'the cluster folder is gone');
  assert.doesNotMatch(await run('ip', ['netns', 'list']), new RegExp(info.netns));
  const ps = await run('ps', ['-eo', 'args']);
  assert.doesNotMatch(ps, new RegExp(info.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), 'no process of the node is left');
  const runId = info.dir.split('/').pop()!;
  assert.doesNotMatch(await run('ip', ['link']), new RegExp(`auo${runId}[bv]`), 'no bridge or veth left');
  assert.equal((await readFile('/proc/self/mounts', 'utf8')).split('\n').filter((l) => l.includes(info.dir)).length, 0, 'no mount of the node on the host');
  assert.deepEqual(await cgroupsOf(containers), [], 'no cgroup of the node\'s containers is left');
}

test('teardown of the nodes mode leaves no process, mount, network namespace, cgroup or file behind: after Ctrl-C (SIGINT) of its owner', { timeout: 5 * 60_000 }, async () => {
  const { child, info, containers } = await startNodeOwner();
  assert.ok(containers.length >= 2, `the node ran containers (${containers.length}): the check below has something to find`);
  assert.ok((await cgroupsOf(containers)).length > 0, 'their cgroups exist while the node runs');
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGINT');
  assert.equal(await exited, 130, 'the owner tore down and exited as interrupted');
  await assertNodeGone(info, containers);
});

test('teardown of the nodes mode leaves nothing behind after its owner is SIGKILLed, once the next run sweeps', { timeout: 5 * 60_000 }, async () => {
  const { child, info, containers } = await startNodeOwner();
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  assert.ok((await run('ip', ['netns', 'list'])).includes(info.netns), 'SIGKILL gave the owner no chance to clean up');
  // The next run sweeps what a dead owner left (as NodesCluster.start and Cluster.start do first).
  assert.ok(sweepStale() >= 1, 'the dead owner\'s cluster was found and removed');
  await assertNodeGone(info, containers);
});

/** Kills node i's running kube-apiserver container (the kubelet restarts it, with its back-off). */
async function killApiserverContainer(c: NodesCluster, i: number): Promise<number> {
  const ctr = (args: string[]): Promise<string> => runOk('ctr', ['-a', c.containerdSocket(i), '-n', 'k8s.io', ...args]);
  const ids = (await ctr(['containers', 'ls', '-q', 'labels."io.kubernetes.container.name"==kube-apiserver'])).split('\n').filter(Boolean);
  let killed = 0;
  for (const id of ids) {
    if (await ctr(['tasks', 'kill', '-s', 'SIGKILL', id]).then(() => true, () => false)) killed++;
  }
  return killed;
}

test('onBreach Rollback on real kubelets: the second node\'s new apiserver crash-loops during its soak; both upgraded nodes go back to v1.35.4 through the agent, RolledBack', { timeout: 15 * 60_000 }, async (t) => {
  t.after(cleanUp);
  const c = await startCluster();
  const op = await startOperator(c, { healthPort: 18483 });
  operators.push(op);
  const spec = staticPodUpgrade('rollback', {}, { onBreach: 'Rollback' });
  (spec.spec as { strategy: Record<string, unknown> }).strategy = { batchSize: 1, soakDuration: '2m', batchTimeout: '5m' };
  await kubectlApply(c, spec);
  await waitFor('batch 2 soaking', 10 * 60_000, async () => {
    const u = await getUpgrade(c, 'rollback');
    if (phase(u) === 'Paused' || phase(u) === 'Failed') throw new Error(`upgrade ${phase(u)}: ${JSON.stringify(u?.status?.pause)}`);
    return u?.status?.batch?.current === 2 && u.status.batch.soakUntil ? true : undefined;
  }, 500);
  const soaking = (await getUpgrade(c, 'rollback'))?.status?.batch?.servers?.[0];
  const i = c.nodes.findIndex((n) => n.hostname === soaking);
  assert.ok(i >= 0);
  // The fault: node i's new apiserver is killed whenever it runs, until the operator starts rolling back.
  let kills = 0;
  await waitFor('RollingBack', 5 * 60_000, async () => {
    const p = phase(await getUpgrade(c, 'rollback'));
    if (p === 'RollingBack' || p === 'RolledBack') return true;
    kills += await killApiserverContainer(c, i).catch(() => 0);
    return undefined;
  }, 1000);
  const final = await waitFor('RolledBack', 8 * 60_000, async () => {
    const u = await getUpgrade(c, 'rollback');
    if (phase(u) === 'Paused' || phase(u) === 'Failed') throw new Error(`rollback ${phase(u)}: ${JSON.stringify(u?.status?.pause)}`);
    return phase(u) === 'RolledBack' ? u : undefined;
  }, 1000);
  const rollbacks = final.status?.driverCalls?.filter((x) => x.action === 'Rollback') ?? [];
  process.stderr.write(`[nodes] rollback: ${kills} kills; calls ${JSON.stringify(final.status?.driverCalls?.map((x) => [x.action, x.server, x.result, x.time, x.completedAt]))}\n`);
  assert.ok(kills >= 1, 'the fault was injected');
  assert.equal(rollbacks.length, 2, 'both upgraded nodes were rolled back');
  for (const r of rollbacks) assert.equal(r.result, 'Done');
  for (const p of await apiserverMirrors(c)) assert.equal(p.spec.containers[0]!.image, `${MIRROR_REPOSITORY}/kube-apiserver:${OLD_VERSION}`, `${p.metadata.name} is back on the old version, from the cluster's own registry`);
  for (let n = 0; n < 3; n++) {
    const r = await c.request(n, '/version', { timeoutMs: 3000 });
    assert.equal((JSON.parse(r.body) as { gitVersion: string }).gitVersion, OLD_VERSION);
  }
  assert.equal(op.exits.length, 0);
});
