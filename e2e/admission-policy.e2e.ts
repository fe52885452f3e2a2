// The chart's ValidatingAdmissionPolicy (templates/admission-policy.yaml, docs/security.md) on a real kube-apiserver:
// the chart is rendered with `helm template` and its ServiceAccount, RBAC and policy applied; then, as the operator's
// ServiceAccount (impersonated), the agent Job that the driver's agentJob() builds is ADMITTED, and hand-made Jobs —
// another image, `sh -c`, an extra hostPath, an extra container, privileged, extra environment, paths outside the
// policy — and a Pod are DENIED by the policy itself (403 naming it, with RBAC widened so that only the policy can
// be what says no); the one update it lets through is the driver's stop of its own Job (spec.suspend). Requests of
// other users are not the policy's business.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { Cluster, OLD_VERSION, NEW_VERSION, waitFor } from './cluster/index.ts';
import { tool, runOk } from './support/tools.ts';
import { resolveSpec } from '../src/api/defaults.ts';
import { agentJob } from '../src/drivers/static-pod.ts';
import { STOPPED_ANNOTATION } from '../src/drivers/job-report.ts';
import { idempotencyKey } from '../src/plan/keys.ts';
import type { DriverRequest } from '../src/plan/actions.ts';
import fc from 'fast-check';
import { agentInputs, chartAllows, isRenderedAgentJob, KNOWN_ATTACKS, KNOWN_PROOF_ATTACKS, mutation, proofInputs, render, renderProof, withServerDefaults, type ChartAllows, type Json, type JsonObject } from '../test/support/agent-job-attack.ts';
import { proofJob, PROOF_KEY_PATH } from '../src/drivers/flag-proof-job.ts';
import { proofCommand } from '../src/drivers/flag-proof-command.ts';
import { compilePolicy, type PolicyObject } from '../test/support/cel-policy.ts';

const CHART = `${import.meta.dirname}/../charts/apiserver-upgrade-operator`;
const RELEASE = 'apiserver-upgrade-operator';
const NS = 'upgrade-system';
const SA = `system:serviceaccount:${NS}:${RELEASE}`;
const POLICY = `${RELEASE}-agent-jobs`;
const JOBS = '/apis/batch/v1/namespaces/kube-system/jobs';

interface K8sObject { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; [k: string]: unknown }
type Job = { metadata: { name: string; annotations?: Record<string, string> }; spec: { template: { spec: PodSpec } } };
type Container = { name: string; image: string; command?: string[]; args?: string[]; env?: { name: string; value?: string }[]; securityContext?: Record<string, unknown>; volumeMounts?: { name: string; mountPath: string }[] };
type PodSpec = { containers: Container[]; initContainers: Container[]; volumes: { name: string; hostPath: { path: string; type?: string } }[]; [k: string]: unknown };

let cluster: Cluster;
let kubectl: string;
let rendered: K8sObject[];
let agentImage: string;
let allows: ChartAllows;
let evaluate: (job: Json) => boolean;

before(async () => {
  const helm = tool('helm');
  kubectl = tool('kubectl');
  cluster = await Cluster.start({ servers: 1, version: OLD_VERSION, verbose: true });
  rendered = parseAllDocuments(await runOk(helm, ['template', RELEASE, CHART, '--namespace', NS, '--kube-version', OLD_VERSION]))
    .map((d) => d.toJSON() as K8sObject | null).filter((o): o is K8sObject => o !== null);
  // The agent image the chart's default policy allows: an exact image, or a tag of an allowed repository.
  const cm = rendered.find((o) => o.kind === 'ConfigMap' && o.metadata.name === `${RELEASE}-policy`) as unknown as { data: Record<string, string> };
  const rule = (parse(cm.data['policy.yaml']!) as { agentImages: Record<string, string>[] }).agentImages[0]!;
  agentImage = rule.image ?? `${rule.repository ?? `${rule.repositoryPrefix!.replace(/\/+$/, '')}/agent`}:e2e`;
  const deployment = rendered.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { spec: { containers: { image: string }[] } } } };
  allows = chartAllows(rendered as never, deployment.spec.template.spec.containers[0]!.image);
  const policy = compilePolicy(rendered.find((o) => o.kind === 'ValidatingAdmissionPolicy') as unknown as PolicyObject);
  evaluate = (job) => policy({ operation: 'CREATE', username: SA, resource: { group: 'batch', resource: 'jobs' }, object: job }).allowed;
  await k(['create', 'namespace', NS]);
  const wanted = new Set(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
  await k(['apply', '-f', '-'], rendered.filter((o) => wanted.has(o.kind)).map((o) => stringify(o)).join('---\n'));
  // Widened on purpose: the operator's ServiceAccount may create Pods and Jobs here too, so that every "no" below
  // is the admission policy's, not RBAC's.
  await k(['create', 'role', 'e2e-widened', '-n', 'kube-system', '--verb=create', '--resource=pods,jobs.batch,cronjobs.batch,deployments.apps']);
  await k(['create', 'rolebinding', 'e2e-widened', '-n', 'kube-system', '--role=e2e-widened', `--serviceaccount=${NS}:${RELEASE}`]);
  // The ServiceAccount admission plugin wants a Pod's ServiceAccount to exist (no kube-controller-manager here makes it).
  await k(['create', 'serviceaccount', 'default', '-n', 'kube-system']);
  // The policy takes effect once the apiserver's informer has it: wait until a hand-made Job is denied by it.
  let last = '';
  await waitFor('the admission policy to be in force', 60_000, async () => {
    const r = await create(handMade('probe', (p) => (p.containers[0]!.image = 'evil.example.com/x:1')), true);
    last = `${r.status}: ${r.body.slice(0, 600)}`;
    return (r.status === 403 || r.status === 422) && r.body.includes('ValidatingAdmissionPolicy') ? true : undefined;
  }, 500).catch((err: Error) => { throw new Error(`${err.message}; last answer ${last}`); });
});
after(async () => {
  await cluster?.teardown();
});

function k(args: string[], input?: string): Promise<string> {
  return runOk(kubectl, ['--kubeconfig', cluster.kubeconfig, ...args], input === undefined ? {} : { input });
}

/** The Job the static Pod driver builds for one call, with the CRD's defaults and the chart's default agent image. */
function realJob(name = 'cp-1', image = `registry.k8s.io/kube-apiserver:${NEW_VERSION}`): Job {
  const spec = resolveSpec({ targetVersion: NEW_VERSION, driver: { staticPod: { agentImage } } });
  assert.equal(spec.driver.kind, 'staticPod');
  if (spec.driver.kind !== 'staticPod') throw new Error('unreachable');
  const request: DriverRequest = {
    idempotencyKey: idempotencyKey('uid', 1, name, 'Upgrade', NEW_VERSION), action: 'Upgrade', upgrade: 'vap', batch: 1,
    server: { identity: `apiserver-${name}`, hostname: name, address: '10.0.0.11:6443' }, targetVersion: NEW_VERSION, featureGates: { UnknownVersionInteroperabilityProxy: true },
  };
  return agentJob(spec.driver.staticPod, request, 'vap', image) as unknown as Job;
}

let seq = 0;
/** The real Job for a node of its own (so a name of its own), changed by `edit`. */
function handMade(_what: string, edit: (pod: PodSpec, job: Job) => void): Job {
  const job = structuredClone(realJob(`hand-made-${++seq}`));
  edit(job.spec.template.spec, job);
  return job;
}

/** A create as the operator's ServiceAccount (impersonated by the admin), optionally a server-side dry run. */
function create(obj: unknown, dryRun = false, path = JOBS, user = SA): Promise<{ status: number; body: string }> {
  return cluster.request(0, `${path}${dryRun ? '?dryRun=All' : ''}`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'Impersonate-User': user }, body: JSON.stringify(obj) });
}

function assertDenied(r: { status: number; body: string }, what: string, message?: RegExp): void {
  // 403 for the validations whose reason is Forbidden (not a Job at all, an update), 422 Invalid for a Job's shape.
  assert.ok(r.status === 403 || r.status === 422, `${what}: expected 403 or 422, got ${r.status}: ${r.body.slice(0, 600)}`);
  const msg = (JSON.parse(r.body) as { message?: string }).message ?? '';
  assert.match(msg, new RegExp(`ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}' denied request`), `${what}: denied by the policy, not RBAC: ${msg}`);
  if (message) assert.match(msg, message, what);
  process.stderr.write(`[denied] ${what}: ${msg.replace(/^.*denied request: /, '')}\n`);
}

test('the agent Job agentJob() builds is admitted (created for real, as the operator\'s ServiceAccount)', async () => {
  const job = realJob();
  const r = await create(job);
  assert.equal(r.status, 201, `the driver's own Job was refused: ${r.body.slice(0, 1500)}\n${stringify(job.spec.template.spec)}`);
  // A kube-apiserver from a repository policy.apiserverImages does not list — a node's own mirror, or a look-alike —
  // is denied with the chart's defaults (admissionPolicy.anyKubeApiserverRepository is an opt-in, off); the operator's
  // preflight refuses such a node before any Job (src/plan/kubeadm-preflight.ts ApiserverImage).
  for (const image of [`mirror.example.com/k8s/kube-apiserver:${NEW_VERSION}`, `registry.k8s.io.evil.example/kube-apiserver:${NEW_VERSION}`, `registry.k8s.io/kube-apiserver-evil:${NEW_VERSION}`]) {
    assertDenied(await create(realJob('cp-2', image), true), image, /policy\.apiserverImages/);
  }
});

/** A merge patch of a Job as the operator's ServiceAccount. */
function patchJob(name: string, body: unknown): Promise<{ status: number; body: string }> {
  return cluster.request(0, `${JOBS}/${name}`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json', 'Impersonate-User': SA }, body: JSON.stringify(body) });
}

test('the operator stops its own Job (spec.suspend, as the driver sends it) and changes nothing else of it', async () => {
  const job = realJob('cp-3');
  assert.equal((await create(job)).status, 201);
  const name = job.metadata.name;
  // Not stopped: no other change, an annotation alone included.
  assertDenied(await patchJob(name, { metadata: { annotations: { 'e2e/x': 'y' } } }), 'an annotation, not stopped', /changes a Job it created only to stop it/);
  // The driver's own stop (src/drivers/static-pod.ts stop): admitted.
  const stopped = await patchJob(name, { metadata: { annotations: { [STOPPED_ANNOTATION]: 'init container pull-kube-apiserver of Pod x is waiting: ErrImagePull' } }, spec: { suspend: true } });
  assert.equal(stopped.status, 200, stopped.body.slice(0, 800));
  assert.equal((JSON.parse(stopped.body) as { spec: { suspend?: boolean } }).spec.suspend, true);
  // A suspended Job that never started (no controller here) has a mutable node selector as far as the API's own
  // validation goes: only the policy keeps its Pod on its node.
  assertDenied(await patchJob(name, { spec: { template: { spec: { nodeSelector: { 'kubernetes.io/hostname': 'cp-9' } } } } }), 'a stopped Job moved to another node', /every other field as it was/);
  // Resumed, it would run: denied.
  assertDenied(await patchJob(name, { spec: { suspend: false } }), 'the resume', /changes a Job it created only to stop it/);
});

test('hand-made Jobs from the operator\'s ServiceAccount are denied by the policy, each saying why', async () => {
  const cases: [string, (p: PodSpec, j: Job) => void, RegExp][] = [
    ['another-agent-image', (p) => (p.containers[0]!.image = 'evil.example.com/root-shell:latest'), /the agent image evil\.example\.com\/root-shell:latest is neither the operator's own nor one the operator's policy allows/],
    ['sh-c', (p) => (p.containers[0]!.command = ['sh', '-c', 'cat /etc/kubernetes/pki/ca.key']), /runs command \[node, \/app\/dist\/agent\/main\.js\]/],
    ['args', (p) => (p.containers[0]!.args = ['--eval', 'process.exit(0)']), /with no args/],
    ['host-root', (p) => {
      p.volumes.push({ name: 'host', hostPath: { path: '/' } });
      p.containers[0]!.volumeMounts!.push({ name: 'host', mountPath: '/host' });
    }, /two volumes/],
    ['extra-container', (p) => p.containers.push({ name: 'sidecar', image: p.containers[0]!.image, command: ['node', '/app/dist/agent/main.js'] }), /exactly one container/],
    ['privileged', (p) => (p.containers[0]!.securityContext = { runAsUser: 0, privileged: true }), /no privilege, capability, seccomp or SELinux change/],
    ['cap-sys-admin', (p) => (p.initContainers[0]!.securityContext = { capabilities: { add: ['SYS_ADMIN'] } }), /the init container runs command \[kube-apiserver, --version\].*no security settings/],
    ['host-pid', (p) => (p.hostPID = true), /and nothing else \(no host PID/],
    ['ld-preload', (p) => p.containers[0]!.env!.push({ name: 'NODE_OPTIONS', value: '--require /host/evil.js' }), /the agent's environment holds exactly MANIFEST, .* each once, as literal values/],
    ['token', (p) => (p.automountServiceAccountToken = true), /automountServiceAccountToken false/],
    ['init-sh', (p) => (p.initContainers[0]!.command = ['sh', '-c', 'id']), /the init container runs command \[kube-apiserver, --version\]/],
    ['init-image', (p, j) => {
      p.initContainers[0]!.image = 'evil.example.com/not-an-apiserver:v1.36.3';
      for (const e of p.containers[0]!.env!) if (e.name === 'IMAGE') e.value = 'evil.example.com/not-an-apiserver:v1.36.3';
      j.metadata.annotations!['upgrade.apiserver.dev/image'] = 'evil.example.com/not-an-apiserver:v1.36.3';
    }, /the kube-apiserver image evil\.example\.com\/not-an-apiserver:v1\.36\.3 is not one/],
    ['image-env-differs', (p, j) => {
      for (const e of p.containers[0]!.env!) if (e.name === 'IMAGE') e.value = 'registry.k8s.io/kube-apiserver:v1.99.0';
      j.metadata.annotations!['upgrade.apiserver.dev/image'] = 'registry.k8s.io/kube-apiserver:v1.99.0';
    }, /VERSION a version tag and IMAGE's tag|the image the agent puts in the manifest/],
    ['etcd-manifest', (p) => { for (const e of p.containers[0]!.env!) if (e.name === 'MANIFEST') e.value = '/etc/kubernetes/manifests/etcd.yaml'; }, /the manifest \/etc\/kubernetes\/manifests\/etcd\.yaml is not one/],
    ['backup-in-etc', (p) => {
      for (const e of p.containers[0]!.env!) if (e.name === 'BACKUP_DIR') e.value = '/etc';
      p.volumes.find((v) => v.name === 'backup')!.hostPath.path = '/etc';
      p.containers[0]!.volumeMounts!.find((m) => m.name === 'backup')!.mountPath = '/etc';
    }, /the backup folder \/etc is not one/],
    ['peer-ca', (p) => { for (const e of p.containers[0]!.env!) if (e.name === 'PEER_CA') e.value = '/etc/kubernetes/pki/front-proxy-ca.crt'; }, /the peer CA file \/etc\/kubernetes\/pki\/front-proxy-ca\.crt is not one/],
    ['mount-elsewhere', (p) => (p.containers[0]!.volumeMounts!.find((m) => m.name === 'manifests')!.mountPath = '/tmp/m'), /each at its host path/],
  ];
  for (const [what, edit, message] of cases) assertDenied(await create(handMade(what, edit), true), what, message);
  const jobs = JSON.parse((await cluster.request(0, JOBS)).body) as { items: { metadata: { name: string } }[] };
  assert.deepEqual(jobs.items.map((j) => j.metadata.name).filter((n) => n.includes('-hand-made-')), [], 'none was stored');
});

test('a Pod, a CronJob or a Deployment from the operator\'s ServiceAccount is denied, even with RBAC that allows it', async () => {
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'agent-as-pod', namespace: 'kube-system' }, spec: realJob().spec.template.spec };
  assertDenied(await create(pod, true, '/api/v1/namespaces/kube-system/pods'), 'a Pod', /may create only agent Jobs: pods denied/);
  const cron = { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'agent-cron', namespace: 'kube-system' }, spec: { schedule: '* * * * *', jobTemplate: { spec: realJob().spec } } };
  assertDenied(await create(cron, true, '/apis/batch/v1/namespaces/kube-system/cronjobs'), 'a CronJob', /cronjobs denied/);
  const dep = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'agent-deploy', namespace: 'kube-system' }, spec: { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { ...realJob().spec.template.spec, restartPolicy: 'Always' } } } };
  assertDenied(await create(dep, true, '/apis/apps/v1/namespaces/kube-system/deployments'), 'a Deployment', /deployments denied/);
});

test('other users are not the policy\'s business: the admin creates a hand-made Job and a Pod', async () => {
  const job = handMade('admin', (p) => (p.containers[0]!.command = ['sh', '-c', 'true']));
  const r = await cluster.request(0, `${JOBS}?dryRun=All`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(job) });
  assert.equal(r.status, 201, r.body.slice(0, 600));
});

/** A server-side dry run of a create as the admin (not the policy's business): the Job as admission sees it, or the API's own refusal. */
async function asAdmitted(job: unknown): Promise<{ status: number; body: string }> {
  return cluster.request(0, `${JOBS}?dryRun=All`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(job) });
}

test('the apiserver defaults an agent Job as the unit tests\' model says (withServerDefaults)', async () => {
  for (const inputs of fc.sample(agentInputs(allows), { numRuns: 5, seed: 21 })) {
    const r = await asAdmitted(render(inputs));
    assert.equal(r.status, 201, r.body.slice(0, 600));
    const stored = JSON.parse(r.body) as JsonObject;
    delete (stored.metadata as JsonObject).managedFields;
    const model = withServerDefaults(render(inputs), (stored.metadata as JsonObject).uid as string) as JsonObject;
    (model.metadata as JsonObject).creationTimestamp = (stored.metadata as JsonObject).creationTimestamp!;
    assert.deepEqual(model, stored, 'the model of the apiserver\'s defaults');
  }
});

test('generated mutations of the agent Job on a real kube-apiserver: admitted exactly when agentJob() renders them', async () => {
  const N = Number(process.env.AUO_ADMISSION_MUTATIONS ?? 400);
  const cases = fc.sample(fc.tuple(agentInputs(allows), mutation()), { numRuns: N, seed: Number(process.env.AUO_ADMISSION_SEED ?? 20261206) });
  const counts = { deniedByPolicy: 0, refusedByApi: 0, admitted: 0, evaluatorAgrees: 0 };
  for (const [inputs, mutate] of cases) {
    const m = mutate(render(inputs));
    const admin = await asAdmitted(m.job);
    const sa = await create(m.job, true);
    if (admin.status !== 201) {
      // Not a Job anyone can create (the API's own validation): the operator cannot either.
      assert.notEqual(sa.status, 201, `${m.what}: refused to the admin (${admin.status}) but admitted for the operator`);
      counts.refusedByApi++;
      continue;
    }
    const seen = JSON.parse(admin.body) as Json;
    const legit = isRenderedAgentJob(seen, allows);
    if (legit) {
      assert.equal(sa.status, 201, `${m.what}: a Job agentJob() renders was denied: ${sa.body.slice(0, 600)}`);
      counts.admitted++;
    } else {
      assertDenied(sa, m.what);
      counts.deniedByPolicy++;
    }
    if (evaluate(seen) === (sa.status === 201)) counts.evaluatorAgrees++;
  }
  process.stderr.write(`[generated] ${N} mutations on ${OLD_VERSION}: ${counts.deniedByPolicy} denied by the policy, ${counts.refusedByApi} refused by the API's own validation, ${counts.admitted} admitted (each a Job agentJob() renders); the unit tests' CEL evaluator agreed on ${counts.evaluatorAgrees} of ${counts.deniedByPolicy + counts.admitted}\n`);
  assert.equal(counts.evaluatorAgrees, counts.deniedByPolicy + counts.admitted, 'the unit tests\' evaluator agrees with the server');
  assert.ok(counts.deniedByPolicy >= N / 2, 'most mutations reach the policy');
  assert.ok(counts.admitted > 0, 'some mutations leave a Job agentJob() renders (a value it may vary, a default spelled out), and those are admitted');
});

test('every known attack (hooks, probes, security settings, paths, environment, deadline, image) is denied on a real server', async () => {
  const base = render(fc.sample(agentInputs(allows), { numRuns: 1, seed: 9 })[0]!);
  let byPolicy = 0;
  for (const a of KNOWN_ATTACKS) {
    const job = structuredClone(base) as never;
    a.edit(job);
    const sa = await create(job, true);
    assert.notEqual(sa.status, 201, `${a.what}: admitted`);
    if (sa.body.includes('ValidatingAdmissionPolicy')) byPolicy++;
    else assert.equal((await asAdmitted(job)).status === 201, false, `${a.what}: denied, but not by the policy, though the API admits it: ${sa.body.slice(0, 400)}`);
  }
  process.stderr.write(`[known attacks] ${KNOWN_ATTACKS.length} denied, ${byPolicy} by the policy itself\n`);
});

/** The flag proof Job the static Pod driver builds for a node with kubeadm's command line, under an Upgrade's edit. */
function realProofJob(node = 'cp-1', image = `registry.k8s.io/kube-apiserver:${NEW_VERSION}`): Job {
  const built = proofCommand(['kube-apiserver', '--advertise-address=10.0.0.11', '--enable-admission-plugins=NodeRestriction', '--service-account-signing-key-file=/etc/kubernetes/pki/sa.key'],
    { gate: true, peerCA: '/etc/kubernetes/pki/ca.crt', peerIP: '10.0.0.11', peerPort: 6443, emulatedVersion: undefined }, { signingKeyPath: PROOF_KEY_PATH });
  if ('error' in built) throw new Error(built.error);
  return proofJob({ namespace: 'kube-system' }, { upgradeName: 'vap', upgradeUid: 'uid', hostname: node, image, targetVersion: NEW_VERSION, args: built.args }) as unknown as Job;
}

test('the flag proof Job proofJob() builds is admitted (created for real); other images are denied', async () => {
  const r = await create(realProofJob());
  assert.equal(r.status, 201, `the driver's own proof Job was refused: ${r.body.slice(0, 1500)}`);
  for (const image of [`mirror.example.com/k8s/kube-apiserver:${NEW_VERSION}`, `registry.k8s.io/kube-apiserver-evil:${NEW_VERSION}`]) {
    assertDenied(await create(realProofJob('cp-2', image), true), image, /the flag proof's kube-apiserver image .* is not one/);
  }
  const noSentinel = realProofJob('cp-3');
  noSentinel.spec.template.spec.containers[0]!.command!.pop();
  assertDenied(await create(noSentinel, true), 'a proof without its sentinel', /flags ending in --max-requests-inflight=-1/);
});

test('the apiserver defaults a flag proof Job as the unit tests\' model says (withServerDefaults)', async () => {
  for (const inputs of fc.sample(proofInputs(allows), { numRuns: 5, seed: 21 })) {
    const r = await asAdmitted(renderProof(inputs));
    assert.equal(r.status, 201, r.body.slice(0, 600));
    const stored = JSON.parse(r.body) as JsonObject;
    delete (stored.metadata as JsonObject).managedFields;
    const model = withServerDefaults(renderProof(inputs), (stored.metadata as JsonObject).uid as string) as JsonObject;
    (model.metadata as JsonObject).creationTimestamp = (stored.metadata as JsonObject).creationTimestamp!;
    assert.deepEqual(model, stored, 'the model of the apiserver\'s defaults');
  }
});

test('generated mutations of the flag proof Job on a real kube-apiserver: admitted exactly when proofJob() renders them', async () => {
  const N = Number(process.env.AUO_ADMISSION_MUTATIONS ?? 400);
  const cases = fc.sample(fc.tuple(proofInputs(allows), mutation()), { numRuns: N, seed: Number(process.env.AUO_ADMISSION_SEED ?? 20261206) });
  const counts = { deniedByPolicy: 0, refusedByApi: 0, admitted: 0, evaluatorAgrees: 0, notThisShape: 0 };
  for (const [inputs, mutate] of cases) {
    let m;
    try {
      m = mutate(renderProof(inputs));
    } catch {
      counts.notThisShape++; // a known attack on the agent Job's own fields
      continue;
    }
    const admin = await asAdmitted(m.job);
    const sa = await create(m.job, true);
    if (admin.status !== 201) {
      assert.notEqual(sa.status, 201, `${m.what}: refused to the admin (${admin.status}) but admitted for the operator`);
      counts.refusedByApi++;
      continue;
    }
    const seen = JSON.parse(admin.body) as Json;
    if (isRenderedAgentJob(seen, allows)) {
      assert.equal(sa.status, 201, `${m.what}: a Job proofJob() renders was denied: ${sa.body.slice(0, 600)}`);
      counts.admitted++;
    } else {
      assertDenied(sa, m.what);
      counts.deniedByPolicy++;
    }
    if (evaluate(seen) === (sa.status === 201)) counts.evaluatorAgrees++;
  }
  process.stderr.write(`[generated proof] ${N} mutations on ${OLD_VERSION}: ${counts.deniedByPolicy} denied by the policy, ${counts.refusedByApi} refused by the API's own validation, ${counts.admitted} admitted (each a Job proofJob() renders), ${counts.notThisShape} not of this shape; the CEL evaluator agreed on ${counts.evaluatorAgrees} of ${counts.deniedByPolicy + counts.admitted}\n`);
  assert.equal(counts.evaluatorAgrees, counts.deniedByPolicy + counts.admitted, 'the unit tests\' evaluator agrees with the server');
  assert.ok(counts.deniedByPolicy >= N / 3, 'most mutations reach the policy');
  assert.ok(counts.admitted > 0, 'some mutations leave a Job proofJob() renders, and those are admitted');
});

test('every known attack on the flag proof Job (no sentinel, a flag that swallows it, the node\'s pki, root, another image) is denied on a real server', async () => {
  const base = renderProof(fc.sample(proofInputs(allows), { numRuns: 1, seed: 9 })[0]!);
  let byPolicy = 0;
  for (const a of KNOWN_PROOF_ATTACKS) {
    const job = structuredClone(base) as never;
    a.edit(job);
    const sa = await create(job, true);
    assert.notEqual(sa.status, 201, `${a.what}: admitted`);
    if (sa.body.includes('ValidatingAdmissionPolicy')) byPolicy++;
    else assert.equal((await asAdmitted(job)).status === 201, false, `${a.what}: denied, but not by the policy, though the API admits it: ${sa.body.slice(0, 400)}`);
  }
  process.stderr.write(`[known proof attacks] ${KNOWN_PROOF_ATTACKS.length} denied, ${byPolicy} by the policy itself\n`);
});
