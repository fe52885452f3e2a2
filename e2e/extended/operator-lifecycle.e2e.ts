// The operator's own lifecycle on a 3-node cluster of real kubelets and containerd, pulling through the harness
// registry (which stands in for ghcr.io, as in release-install-nodes.e2e.ts):
// 1. The previous release (e2e/support/previous-release.ts: a pinned commit released by its own `npm run release`)
//    installed with `helm install oci://`, kubeadm-config written by the operator (kubeadmConfig.write). The
//    quickstart's static Pod upgrade starts; while a call is in flight, docs/chart.md's upgrade block runs (the CRD
//    applied server-side, then `helm upgrade` to this checkout's release, a higher version): the Deployment rolls
//    onto the new image mid-batch and the upgrade goes on to Succeeded. Counted on the driver's side: one agent Job
//    per call key, each run once and succeeded, and one backup per call on each node.
// 2. `helm uninstall`: every listable object of the cluster (discovery, every namespace) before the install and after
//    the uninstall; the difference is exactly docs/chart.md's leftovers, kubeadm-config keeps the operator's edit and
//    each node its backups. Then the page's removal blocks run, and the cluster's objects are again those before the
//    install.
// AUO_RECORD_PREVIOUS_STATUS=<file>: writes the ApiServerUpgrade as the previous release's operator left it at the
// moment of the operator's upgrade (test/fixtures/previous-release/ holds one such recording).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { NodesCluster, MIRROR_REPOSITORY } from '../cluster/nodes/nodes-cluster.ts';
import { NEW_VERSION, OLD_VERSION, waitFor } from '../cluster/index.ts';
import { startRegistry, type Registry } from '../cluster/registry.ts';
import { binary, HELM_VERSION } from '../cluster/binaries.ts';
import { tool, runOk } from '../support/tools.ts';
import { docBlock, substitute } from '../support/doc-blocks.ts';
import { getUpgrade } from '../support/operator.ts';
import { PUBLISHED } from '../support/release.ts';
import { PREVIOUS_RELEASE, publishPreviousRelease } from '../support/previous-release.ts';
import { clusterObjects, objectDiff, type ObjectSummary } from '../support/cluster-objects.ts';
import { kubeadmClusterConfiguration } from '../support/kubeadm-config.ts';
import { release } from '../../scripts/release.ts';
import { DEFAULT_DOWNLOAD_BASE, parseRegistry } from '../../scripts/release/plan.ts';
import { IN_FLIGHT_RESULTS, type CallResult } from '../../src/api/vocabulary.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

const REPO = join(import.meta.dirname, '..', '..');
const CHART_PAGE = join(REPO, 'docs', 'chart.md');
const QUICKSTART = join(REPO, 'docs', 'quickstart.md');
const DOC_TAG = 'e2e/extended/operator-lifecycle.e2e.ts';
/**
 * This checkout released under a version above the previous release's, as its next release would be (package.json
 * keeps the version it was released as until a release changes it).
 */
const NEXT_VERSION = '0.3.0-rc.0';
const NS = 'apiserver-upgrade-operator';
const RELEASE = 'apiserver-upgrade-operator';
const UPGRADE = 'kubeadm-to-v1-36-3';
const AGENT_JOBS = 'app.kubernetes.io/managed-by=apiserver-upgrade-operator';

let registry: Registry | undefined;
let cluster: NodesCluster | undefined;
const work = mkdtempSync(join(tmpdir(), 'auo-lifecycle-e2e-'));
after(async () => {
  await cluster?.teardown();
  await registry?.stop();
  rmSync(work, { recursive: true, force: true });
});

interface Pod { metadata: { name: string }; spec: { containers: { image: string }[] }; status?: { containerStatuses?: { ready: boolean; imageID?: string }[] } }
interface JobList { items: { metadata: { name: string; creationTimestamp: string; annotations?: Record<string, string>; labels?: Record<string, string> }; spec: { template: { spec: { containers: { image: string }[] } } }; status?: { succeeded?: number; failed?: number } }[] }

/** Set by the first test for the second. */
let before: Map<string, ObjectSummary> | undefined;
let kubeadmBefore: string | undefined;

const kubectl = (c: NodesCluster, args: string[], input?: string): Promise<string> =>
  runOk(tool('kubectl'), ['--kubeconfig', c.kubeconfig, ...args], input === undefined ? {} : { input });

/** A block of docs/chart.md run with bash as a reader pastes it: kubectl and helm first on PATH, the cluster's kubeconfig. */
async function runChartBlock(c: NodesCluster, name: string, replacements: [string, string][]): Promise<string> {
  const script = substitute(docBlock(CHART_PAGE, DOC_TAG, name), replacements);
  const path = [...new Set([dirname(tool('kubectl')), dirname(tool('helm'))])].join(':');
  const out = await runOk('bash', ['-c', `set -euo pipefail\nexport PATH=${path}:"$PATH" KUBECONFIG=${c.kubeconfig}\n${script}`], { cwd: work, timeoutMs: 8 * 60_000 });
  process.stderr.write(`[lifecycle] ran docs/chart.md's ${name}:\n${out}`);
  return out;
}

async function operatorPods(c: NodesCluster): Promise<Pod[]> {
  return (await c.json<{ items: Pod[] }>(`/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(`app.kubernetes.io/name=${RELEASE}`)}`)).items;
}

async function agentJobs(c: NodesCluster): Promise<JobList['items']> {
  return (await c.json<JobList>(`/apis/batch/v1/namespaces/kube-system/jobs?labelSelector=${encodeURIComponent(AGENT_JOBS)}`)).items;
}

function failIfStuck(u: ApiServerUpgrade | undefined): void {
  if (u?.status?.phase === 'Paused' || u?.status?.phase === 'Failed') throw new Error(`upgrade ${u.status.phase}: ${JSON.stringify(u.status.pause)} ${JSON.stringify(u.status.conditions)}`);
}

test('the previous release\'s CRD fixture is its crds/ file at the pinned commit', () => {
  let text: string;
  try {
    text = execFileSync('git', ['show', `${PREVIOUS_RELEASE.commit}:crds/apiserverupgrades.upgrade.apiserver.dev.yaml`], { cwd: REPO, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    assert.fail(`the previous release's commit ${PREVIOUS_RELEASE.commit} is not in this clone (a shallow clone? git fetch --unshallow): ${(err as Error).message}`);
  }
  assert.equal(readFileSync(join(REPO, 'test', 'fixtures', 'previous-release', 'crd.yaml'), 'utf8'), text, 'test/fixtures/previous-release/crd.yaml: git show <commit>:crds/... > it, when the pinned commit moves');
});

test(`helm upgrade of the operator mid-batch: the previous release (${PREVIOUS_RELEASE.version}, ${PREVIOUS_RELEASE.commit.slice(0, 7)}) upgraded to this checkout's while a call is in flight; the upgrade goes on to Succeeded, each call once (long: a nodes cluster, two releases, an upgrade)`, { timeout: 40 * 60_000 }, async () => {
  const t0 = Date.now();
  const secs = (): string => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
  registry = await startRegistry({ verbose: true });
  // The cluster first: its start pushes this checkout's operator image under its default name, which is the
  // previous release's name too (package.json's version); the previous release is pushed after it, so that name
  // is the previous release's in the registry, and the Pods' image digest is checked against it below.
  const c = await NodesCluster.start({ nodes: 3, registry: registry.address, verbose: true });
  cluster = c;
  const previous = await publishPreviousRelease(registry);
  const previousDigest = (await runOk('skopeo', ['inspect', '--tls-verify=false', '--format', '{{.Digest}}', `docker://${registry.address}/${previous.image}`])).trim();
  const next = await release({
    version: NEXT_VERSION, registry: parseRegistry(`${registry.address}/${PUBLISHED}`), mirrorOf: parseRegistry(PUBLISHED),
    downloadBase: DEFAULT_DOWNLOAD_BASE, plainHttp: true, out: join(work, 'next'),
  });
  const tReleases = secs();
  for (const n of c.nodes) {
    await kubectl(c, ['label', 'node', n.name, 'node-role.kubernetes.io/control-plane=']);
    await kubectl(c, ['taint', 'node', n.name, 'node-role.kubernetes.io/control-plane:NoSchedule']);
  }
  // What `kubeadm init` leaves: the operator brings it in line once the upgrade ends (kubeadmConfig.write).
  await kubectl(c, ['apply', '-f', '-'], stringify({
    apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kubeadm-config', namespace: 'kube-system' },
    data: { ClusterConfiguration: kubeadmClusterConfiguration({ version: OLD_VERSION, endpoint: 'cp.auo.test:6443', comment: 'kubeadm init', imageRepository: 'registry.auo.test/k8s' }) },
  }));
  await waitFor('every kube-system Pod ready', 3 * 60_000, async () => {
    const ps = (await c.json<{ items: Pod[] }>('/api/v1/namespaces/kube-system/pods')).items;
    return ps.length >= 9 && ps.every((p) => p.status?.containerStatuses?.every((s) => s.ready)) ? true : undefined;
  }, 1000);
  // Each kubelet registers its CSINode a little after its Node: a snapshot taken before that would count them as the
  // install's.
  await waitFor('a CSINode for every node', 2 * 60_000, async () => {
    const names = (await c.json<{ items: { metadata: { name: string } }[] }>('/apis/storage.k8s.io/v1/csinodes')).items.map((x) => x.metadata.name);
    return c.nodes.every((n) => names.includes(n.name)) ? true : undefined;
  }, 1000);
  const tCluster = secs();
  before = await clusterObjects(tool('kubectl'), c.kubeconfig);
  kubeadmBefore = (await c.json<{ data: { ClusterConfiguration: string } }>('/api/v1/namespaces/kube-system/configmaps/kubeadm-config')).data.ClusterConfiguration;
  process.stderr.write(`[lifecycle] ${before.size} objects before the install\n`);

  // 1. The previous release, as the quickstart installs a release (its registry, and the cluster's mirror repository).
  const helm = await binary('helm', HELM_VERSION);
  await runOk(helm, ['--kubeconfig', c.kubeconfig, 'install', RELEASE, previous.chartRef, '--version', previous.version, '--plain-http',
    '--namespace', NS, '--create-namespace', '--wait', '--timeout', '6m',
    '--set-json', `policy.apiserverImages=[{"repository":"${MIRROR_REPOSITORY}/kube-apiserver"}]`, '--set', 'kubeadmConfig.write=true'], { timeoutMs: 8 * 60_000 });
  const oldPods = await waitFor('2 ready operator Pods', 3 * 60_000, async () => {
    const ps = (await operatorPods(c)).filter((p) => p.status?.containerStatuses?.every((s) => s.ready));
    return ps.length === 2 ? ps : undefined;
  }, 1000);
  for (const p of oldPods) assert.equal(p.spec.containers[0]!.image, previous.image, `${p.metadata.name} runs the previous release`);
  for (const p of oldPods) assert.ok(p.status?.containerStatuses?.[0]?.imageID?.endsWith(`@${previousDigest}`), `${p.metadata.name} runs the previous release's image ${previousDigest}, not ${p.status?.containerStatuses?.[0]?.imageID}`);
  const tInstall = secs();

  // Why the page says --reset-then-reuse-values: with --reuse-values helm renders the new chart with the old chart's
  // defaults, and the policy would allow only the old agent image while the operator runs the new one (a dry run).
  const agentImages = async (flag: string): Promise<{ agentImage: string; allowed: string[] }> => {
    const out = await runOk(helm, ['--kubeconfig', c.kubeconfig, 'upgrade', RELEASE, next.names.chartInstallRef, '--version', NEXT_VERSION, '--plain-http', '-n', NS, flag, '--dry-run', '-o', 'json']);
    const docs = parseAllDocuments((JSON.parse(out) as { manifest: string }).manifest).map((d) => d.toJS() as { kind?: string; data?: Record<string, string>; spec?: { template?: { spec?: { containers?: { args?: string[] }[] } } } } | null);
    const args = docs.find((d) => d?.kind === 'Deployment')?.spec?.template?.spec?.containers?.[0]?.args ?? [];
    const policy = docs.find((d) => d?.kind === 'ConfigMap' && d.data?.['policy.yaml'] !== undefined)?.data?.['policy.yaml'] ?? '';
    return { agentImage: args.find((a) => a.startsWith('--agent-image='))?.slice('--agent-image='.length) ?? '', allowed: ((parse(policy) as { agentImages?: { image?: string }[] }).agentImages ?? []).map((a) => a.image ?? '') };
  };
  assert.deepEqual(await agentImages('--reuse-values'), { agentImage: next.names.image, allowed: [previous.image] }, '--reuse-values: the old chart\'s policy, the new agent image');
  assert.deepEqual(await agentImages('--reset-then-reuse-values'), { agentImage: next.names.image, allowed: [next.names.image] }, '--reset-then-reuse-values: the new chart\'s policy allows its agent image');

  // The quickstart's upgrade, not paused, the durations shortened for a test.
  const manifest = join(work, `${UPGRADE}.yaml`);
  writeFileSync(manifest, substitute(docBlock(QUICKSTART, 'e2e/helm-install.e2e.ts', `${UPGRADE}.yaml`), [
    ['paused: true', 'paused: false'], ['soakDuration: 5m', 'soakDuration: 5s'], ['batchTimeout: 15m', 'batchTimeout: 5m'], ['interval: 15s', 'interval: 5s'],
  ]));
  await kubectl(c, ['apply', '-f', manifest]);
  const tApply = Date.now();
  // Mid-batch: an Upgrade call recorded and not landed.
  const mid = await waitFor('an Upgrade call in flight', 10 * 60_000, async () => {
    const u = await getUpgrade(c, UPGRADE);
    failIfStuck(u);
    return u?.status?.driverCalls?.some((x) => x.action === 'Upgrade' && IN_FLIGHT_RESULTS.has(x.result as CallResult)) ? u : undefined;
  }, 500);
  const inFlight = mid.status!.driverCalls!.filter((x) => IN_FLIGHT_RESULTS.has(x.result as CallResult));
  process.stderr.write(`[lifecycle] in flight ${((Date.now() - tApply) / 1000).toFixed(1)} s after apply: ${JSON.stringify(inFlight.map((x) => [x.action, x.server, x.result]))}; phase ${mid.status?.phase}, batch ${JSON.stringify(mid.status?.batch)}\n`);
  if (process.env.AUO_RECORD_PREVIOUS_STATUS) writeFileSync(process.env.AUO_RECORD_PREVIOUS_STATUS, `${JSON.stringify(mid, null, 2)}\n`);

  // 2. docs/chart.md's operator upgrade, as written but for the registry's address and the version.
  const tHelmUpgrade = Date.now();
  await runChartBlock(c, 'upgrade-operator.sh', [
    ['oci://ghcr.io/', `oci://${registry.address}/ghcr.io/`],
    ['VERSION=0.2.0', `VERSION=${NEXT_VERSION}`],
    [' --version "$VERSION"', ' --version "$VERSION" --plain-http'],
  ]);
  const newPods = await waitFor('2 ready operator Pods of the new release, none of the previous', 5 * 60_000, async () => {
    const ps = await operatorPods(c);
    const ready = ps.filter((p) => p.status?.containerStatuses?.every((s) => s.ready));
    return ps.length === 2 && ready.length === 2 && ready.every((p) => p.spec.containers[0]!.image === next.names.image) ? ready : undefined;
  }, 1000);
  process.stderr.write(`[lifecycle] operator rolled onto ${next.names.image} ${((Date.now() - tHelmUpgrade) / 1000).toFixed(1)} s after the helm upgrade began: ${newPods.map((p) => p.metadata.name).join(', ')}\n`);
  // The new chart's admission policy still allows the image of the operator it replaced (its lookup of the
  // Deployment): the old leader may create one more Job before its Pod stops.
  const vap = await kubectl(c, ['get', 'validatingadmissionpolicy', `${RELEASE}-agent-jobs`, '-o', 'json', '--show-managed-fields']);
  assert.ok(vap.includes(`\\"tag\\":\\"${previous.version}\\"`), `the policy allows the previous operator's image ${previous.image}`);
  // When helm wrote the new policy (its managedFields entry; whole seconds).
  const policyWritten = Math.max(...(JSON.parse(vap) as { metadata: { managedFields?: { manager?: string; time?: string }[] } }).metadata.managedFields!
    .filter((f) => f.manager === 'helm' && f.time !== undefined).map((f) => Date.parse(f.time!)));
  const during = await getUpgrade(c, UPGRADE);
  assert.notEqual(during?.status?.phase, 'Succeeded', 'the operator was upgraded before the upgrade it runs ended');

  const final = await waitFor('Succeeded', 20 * 60_000, async () => {
    const u = await getUpgrade(c, UPGRADE);
    failIfStuck(u);
    return u?.status?.phase === 'Succeeded' && u.status.kubeadmConfig?.result !== 'Pending' ? u : undefined;
  }, 1000);
  const tSucceeded = ((Date.now() - tApply) / 1000).toFixed(0);
  const calls = final.status?.driverCalls ?? [];
  process.stderr.write(`[lifecycle] Succeeded ${tSucceeded} s after apply; calls ${JSON.stringify(calls.map((x) => [x.action, x.server, x.result]))}\n`);
  for (const x of inFlight) {
    const landed = calls.filter((y) => y.key === x.key);
    assert.deepEqual(landed.map((y) => y.result), ['Done'], `the call in flight at the operator's upgrade (${x.action} ${x.server}) landed once, Done`);
  }
  assert.deepEqual(calls.map((x) => `${x.action} ${x.result}`).sort(), ['EnableProxy Done', 'EnableProxy Done', 'EnableProxy Done', 'Upgrade Done', 'Upgrade Done', 'Upgrade Done']);

  // The driver's side: one agent Job per call key, each run once and succeeded; one backup per call on each node.
  const jobs = (await agentJobs(c)).filter((j) => j.metadata.labels?.['upgrade.apiserver.dev/action'] !== 'proveflags');
  const keys = jobs.map((j) => j.metadata.annotations?.['upgrade.apiserver.dev/idempotency-key'] ?? '');
  assert.equal(new Set(keys).size, keys.length, `one Job per key: ${keys.join(', ')}`);
  assert.deepEqual(keys.sort(), calls.map((x) => x.key).sort(), 'a Job for every call, no other');
  for (const j of jobs) assert.deepEqual([j.status?.succeeded, j.status?.failed ?? 0], [1, 0], `${j.metadata.name} ran once and succeeded`);
  const images = jobs.map((j) => `${j.metadata.name}: ${j.spec.template.spec.containers[0]!.image}`);
  process.stderr.write(`[lifecycle] agent Jobs: ${images.join(', ')}\n`);
  // Created in a later second than helm wrote the new policy: admitted by the previous image's entry (timing decides
  // whether the old leader makes one, so this is reported, not asserted).
  const lateOld = jobs.filter((j) => j.spec.template.spec.containers[0]!.image === previous.image && Date.parse(j.metadata.creationTimestamp) > policyWritten);
  process.stderr.write(`[lifecycle] Jobs from the previous image created after helm wrote the new admission policy (${new Date(policyWritten).toISOString()}): ${lateOld.map((j) => `${j.metadata.name} at ${j.metadata.creationTimestamp}`).join(', ') || 'none this run'}\n`);
  for (const n of c.nodes) {
    const backups = (await c.backups(n.index)).sort();
    assert.deepEqual(backups.map((b) => b.replace(/-.*$/, '')), ['enableproxy', 'upgrade'], `${n.name}: one backup per call (${backups.join(', ')})`);
  }
  const mirrors = (await c.json<{ items: Pod[] }>('/api/v1/namespaces/kube-system/pods?labelSelector=component%3Dkube-apiserver')).items;
  for (const m of mirrors) assert.equal(m.spec.containers[0]!.image, `${MIRROR_REPOSITORY}/kube-apiserver:${NEW_VERSION}`);
  const history = JSON.parse(await runOk(helm, ['--kubeconfig', c.kubeconfig, 'history', RELEASE, '-n', NS, '-o', 'json'])) as { revision: number; chart: string; status: string }[];
  assert.deepEqual(history.map((h) => [h.revision, h.chart, h.status]), [[1, `apiserver-upgrade-operator-${previous.version}`, 'superseded'], [2, `apiserver-upgrade-operator-${NEXT_VERSION}`, 'deployed']]);
  process.stderr.write(`[lifecycle] timings: releases ${tReleases}, cluster ready ${tCluster}, previous installed ${tInstall}, Succeeded ${tSucceeded} s after apply, all ${secs()}\n`);
});

/**
 * Not compared: objects the cluster's own controllers make and remove all the time, whoever is installed, and those
 * the upgraded kube-apiservers add by themselves. Events
 * (both APIs) expire; Leases in kube-system and kube-node-lease are the controllers' elections, the kubelets'
 * heartbeats and the kube-apiservers' identities; Endpoints and EndpointSlices follow Services and Pods.
 */
function volatile(o: ObjectSummary): boolean {
  if (o.kind === 'Event') return true;
  if (o.kind === 'Lease' && (o.namespace === 'kube-system' || o.namespace === 'kube-node-lease')) return true;
  if (o.kind === 'Endpoints' || o.kind === 'EndpointSlice') return true;
  // What the upgrade itself brings, not the operator's install: the target kube-apiserver's own bootstrap roles
  // (v1.36 adds system:controller:device-taint-eviction-controller, for example).
  return (o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding' || o.kind === 'Role' || o.kind === 'RoleBinding') && o.labels['kubernetes.io/bootstrapping'] === 'rbac-defaults';
}

/** docs/chart.md's "What an uninstall leaves": each leftover object matches one line, and each line matches. */
const LEFTOVERS: { what: string; match: (o: ObjectSummary) => boolean }[] = [
  { what: 'the CRD', match: (o) => o.kind === 'CustomResourceDefinition' && o.name === 'apiserverupgrades.upgrade.apiserver.dev' },
  // The kube-apiserver's own registration of the CRD's group and version: it goes with the CRD.
  { what: 'the CRD\'s APIService', match: (o) => o.kind === 'APIService' && o.name === 'v1alpha1.upgrade.apiserver.dev' },
  { what: 'the ApiServerUpgrade objects', match: (o) => o.kind === 'ApiServerUpgrade' && o.name === UPGRADE },
  { what: 'the agent Jobs', match: (o) => o.kind === 'Job' && o.namespace === 'kube-system' && o.labels['app.kubernetes.io/managed-by'] === 'apiserver-upgrade-operator' },
  { what: 'the agent Jobs\' Pods', match: (o) => o.kind === 'Pod' && o.namespace === 'kube-system' && o.labels['batch.kubernetes.io/job-name'] !== undefined },
  { what: 'the namespace helm created', match: (o) => o.kind === 'Namespace' && o.name === NS },
  { what: 'what Kubernetes puts in every namespace', match: (o) => o.namespace === NS && ((o.kind === 'ServiceAccount' && o.name === 'default') || (o.kind === 'ConfigMap' && o.name === 'kube-root-ca.crt')) },
  { what: 'the leader election Lease', match: (o) => o.kind === 'Lease' && o.namespace === NS && o.name === RELEASE },
];

test('helm uninstall: the cluster\'s objects differ from those before the install by exactly docs/chart.md\'s leftovers; kubeadm-config keeps the edit, the nodes their backups; the page\'s removal blocks leave the objects as before the install', { timeout: 15 * 60_000 }, async () => {
  const c = cluster;
  assert.ok(c && before && kubeadmBefore !== undefined, 'the first test\'s cluster');
  const helm = await binary('helm', HELM_VERSION);
  const t0 = Date.now();
  await runOk(helm, ['--kubeconfig', c.kubeconfig, 'uninstall', RELEASE, '-n', NS, '--wait', '--timeout', '5m'], { timeoutMs: 6 * 60_000 });
  await waitFor('the operator\'s Pods and ReplicaSets gone', 3 * 60_000, async () => {
    const pods = (await c.json<{ items: unknown[] }>(`/api/v1/namespaces/${NS}/pods`)).items;
    const rs = (await c.json<{ items: unknown[] }>(`/apis/apps/v1/namespaces/${NS}/replicasets`)).items;
    return pods.length === 0 && rs.length === 0 ? true : undefined;
  }, 1000);
  process.stderr.write(`[lifecycle] uninstalled in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  const afterUninstall = await clusterObjects(tool('kubectl'), c.kubeconfig);
  const diff = objectDiff(before, afterUninstall, volatile);
  process.stderr.write(`[lifecycle] after the uninstall, added: ${diff.added.map((o) => o.key).join(', ')}\nremoved: ${diff.removed.map((o) => o.key).join(', ')}\n`);
  assert.deepEqual(diff.removed.map((o) => o.key), [], 'nothing of the cluster\'s own is gone');
  const unexplained = diff.added.filter((o) => !LEFTOVERS.some((l) => l.match(o)));
  assert.deepEqual(unexplained.map((o) => o.key), [], 'every leftover is one docs/chart.md lists');
  for (const l of LEFTOVERS) assert.ok(diff.added.some((o) => l.match(o)), `${l.what}: left, as docs/chart.md says`);

  // Not objects of their own: kubeadm-config keeps what the operator wrote, each node the backups of its calls.
  const kubeadmAfter = (await c.json<{ data: { ClusterConfiguration: string } }>('/api/v1/namespaces/kube-system/configmaps/kubeadm-config')).data.ClusterConfiguration;
  assert.notEqual(kubeadmAfter, kubeadmBefore);
  assert.equal((parse(kubeadmAfter) as { kubernetesVersion: string }).kubernetesVersion, NEW_VERSION, 'kubeadm-config keeps the version the operator wrote');
  for (const n of c.nodes) assert.equal((await c.backups(n.index)).length, 2, `${n.name} keeps its backups`);

  // The page's removal, run as written.
  await runChartBlock(c, 'remove-leftovers.sh', []);
  for (const n of c.nodes) {
    await runChartBlock(c, 'remove-backups.sh', [['/etc/kubernetes/apiserver-upgrade-backup', join(n.root, 'etc/kubernetes/apiserver-upgrade-backup')]]);
    assert.deepEqual(await c.backups(n.index), [], `${n.name}: no backup left`);
  }
  const cleaned = await waitFor('the removal to finish (the namespace, the Jobs\' Pods)', 3 * 60_000, async () => {
    const now = await clusterObjects(tool('kubectl'), c.kubeconfig);
    const d = objectDiff(before!, now, volatile);
    return d.added.length === 0 && d.removed.length === 0 ? true : undefined;
  }, 2000).catch(async (err: Error) => {
    const d = objectDiff(before!, await clusterObjects(tool('kubectl'), c.kubeconfig), volatile);
    throw new Error(`${err.message}: added ${d.added.map((o) => o.key).join(', ')}; removed ${d.removed.map((o) => o.key).join(', ')}`, { cause: err });
  });
  assert.equal(cleaned, true);
  process.stderr.write(`[lifecycle] after the removal blocks: the cluster's objects are those before the install; all ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
});
