// Generated attacks on the chart's admission policy (templates/admission-policy.yaml): agent Jobs rendered by the
// static Pod driver's own agentJob() for random legitimate inputs, and random mutations of them (a field of the
// Job/Pod/Container API added at any depth, a key removed, a value changed, an element repeated, plus the known
// attacks: hooks, probes, security settings, other paths and environment). The oracle says which Jobs the policy
// must admit: exactly those that equal what agentJob() renders for the inputs the Job itself claims (node, key,
// action, versions, peer address, ready timeout, the images and paths the chart's policy lists), after the
// apiserver's defaulting. Shared by test/chart/admission-policy.test.ts (a CEL evaluator) and
// e2e/admission-policy.e2e.ts (a real kube-apiserver).
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { parse } from 'yaml';
import { resolveSpec, type ResolvedStaticPod } from '../../src/api/defaults.ts';
import { AGENT_READY_TIMEOUT_MIN_SECONDS, PROXY_GATE } from '../../src/api/constants.ts';
import type { DriverAction } from '../../src/api/types.generated.ts';
import type { DriverRequest } from '../../src/plan/actions.ts';
import { idempotencyKey } from '../../src/plan/keys.ts';
import { agentJob } from '../../src/drivers/static-pod.ts';
import { proofJob, type ProofJobInput } from '../../src/drivers/flag-proof-job.ts';
import { PROOF_SENTINEL } from '../../src/plan/flag-proof.ts';
import { API_FIELDS, typeAt } from './job-api-fields.ts';

/** A JSON value as the API carries it. */
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

/** What the chart's default values let the agent Job use (values.yaml `policy`), as the oracle reads them. */
export interface ChartAllows {
  agentImages: string[];
  apiserverRepositories: string[];
  manifestPaths: string[];
  backupDirPrefixes: string[];
  peerCAFiles: string[];
}

/** The chart's default policy lists, as the oracle reads them. */
export function chartAllows(docs: { kind?: string; metadata?: { name?: string }; data?: Record<string, string> }[], operatorImage: string): ChartAllows {
  const cm = docs.find((d) => d.kind === 'ConfigMap' && d.metadata?.name?.endsWith('-policy'));
  const policy = parse(cm!.data!['policy.yaml']!) as Record<string, { image?: string; repository?: string; path?: string; prefix?: string }[]>;
  return {
    agentImages: [...new Set([...(policy.agentImages ?? []).map((r) => r.image!).filter(Boolean), operatorImage])],
    apiserverRepositories: (policy.apiserverImages ?? []).map((r) => r.repository!).filter(Boolean),
    manifestPaths: (policy.manifestPaths ?? []).map((r) => r.path!).filter(Boolean),
    backupDirPrefixes: (policy.backupDirs ?? []).map((r) => r.prefix ?? r.path!),
    peerCAFiles: (policy.peerCAFiles ?? []).map((r) => r.path!).filter(Boolean),
  };
}

const ACTIONS: DriverAction[] = ['EnableProxy', 'Upgrade', 'Rollback', 'RevertProxy'];
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The inputs of one agentJob() call. */
export interface AgentInputs {
  spec: ResolvedStaticPod;
  request: DriverRequest;
  upgradeName: string;
  image: string;
}

const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,12}[a-z0-9])?$/);
const hostname = fc.oneof(
  { weight: 6, arbitrary: fc.array(label, { minLength: 1, maxLength: 3 }).map((p) => p.join('.')) },
  // Longer than the 200 characters of a host the idempotency key keeps.
  { weight: 1, arbitrary: fc.array(fc.stringMatching(/^[a-z0-9]{40,60}$/), { minLength: 4, maxLength: 5 }).map((p) => p.join('.').slice(0, 253).replace(/[.-]+$/, '')) },
);
const version = fc.tuple(fc.integer({ min: 1, max: 1 }), fc.integer({ min: 20, max: 40 }), fc.integer({ min: 0, max: 12 }), fc.constantFrom('', '-rc.1', '-alpha.0', '-beta.2'))
  .map(([a, b, c, pre]) => `v${a}.${b}.${c}${pre}`);
const emulated = fc.option(fc.tuple(fc.integer({ min: 0, max: 1200 }), fc.integer({ min: 0, max: 1200 })).map(([a, b]) => `${a}.${b}`), { nil: undefined });
const ipv4 = fc.tuple(fc.integer({ min: 1, max: 254 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 1, max: 254 })).map((o) => o.join('.'));
const ipv6 = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }).map((g) => g.map((x) => x.toString(16)).join(':'));
const address = fc.tuple(fc.oneof(ipv4, ipv6), fc.integer({ min: 1, max: 65535 })).map(([ip, port]) => (ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`));

/** Legitimate inputs within the chart's default policy. */
export function agentInputs(allows: ChartAllows): fc.Arbitrary<AgentInputs> {
  return fc.record({
    host: hostname,
    action: fc.constantFrom(...ACTIONS),
    upgradeName: fc.array(label, { minLength: 1, maxLength: 3 }).map((p) => p.join('.').slice(0, 63).replace(/[.-]+$/, '')).filter((n) => DNS_SUBDOMAIN.test(n)),
    version,
    emulated,
    gate: fc.option(fc.boolean(), { nil: undefined }),
    address,
    readySeconds: fc.integer({ min: 10, max: 3600 }),
    readyMsExtra: fc.constantFrom(0, 0, -400),
    backupSub: fc.option(fc.array(fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,8}$/).filter((s) => s !== '.' && s !== '..'), { minLength: 1, maxLength: 2 }), { nil: undefined }),
    agentImage: fc.constantFrom(...allows.agentImages),
    repo: fc.constantFrom(...allows.apiserverRepositories),
    uid: fc.uuid(),
    batch: fc.integer({ min: 1, max: 9 }),
  }).map((x) => {
    const resolved = resolveSpec({ targetVersion: x.version, driver: { staticPod: { agentImage: x.agentImage } } });
    if (resolved.driver.kind !== 'staticPod') throw new Error('unreachable');
    const backupDir = `${allows.backupDirPrefixes[0]!}${x.backupSub ? `/${x.backupSub.join('/')}` : ''}`;
    const spec: ResolvedStaticPod = {
      ...resolved.driver.staticPod, manifestPath: allows.manifestPaths[0]!, backupDir, peerCAFile: allows.peerCAFiles[0]!,
      readyTimeout: `${x.readySeconds}s`, readyTimeoutMs: x.readySeconds * 1000 + x.readyMsExtra,
    };
    const request: DriverRequest = {
      idempotencyKey: idempotencyKey(x.uid, x.batch, x.host, x.action, x.version), action: x.action, upgrade: x.upgradeName, batch: x.batch,
      server: { identity: `apiserver-${x.host}`, hostname: x.host, address: x.address }, targetVersion: x.version,
      ...(x.emulated === undefined ? {} : { emulatedVersion: x.emulated }),
      featureGates: x.gate === undefined ? {} : { [PROXY_GATE]: x.gate },
    };
    return { spec, request, upgradeName: x.upgradeName, image: `${x.repo}:${x.version}` };
  }).filter((i) => i.spec.readyTimeoutMs >= AGENT_READY_TIMEOUT_MIN_SECONDS * 1000);
}

/** The Job agentJob() renders, as JSON. */
export function render(i: AgentInputs): JsonObject {
  return agentJob(i.spec, i.request, i.upgradeName, i.image) as JsonObject;
}

/**
 * The Job as kube-apiserver hands it to admission: the defaults its types fill in and the fields it sets on create,
 * as observed on v1.35 and v1.36 (e2e/admission-policy.e2e.ts compares this with the server's own dry run).
 */
export function withServerDefaults(job: Json, uid = '00000000-0000-4000-8000-000000000000', namespace = 'kube-system'): Json {
  const j = structuredClone(job);
  if (!isObject(j)) return j;
  const meta = obj(j, 'metadata');
  if (meta) {
    // The request's namespace (the URL's) is written into an object that names none, before admission.
    if (meta.namespace === undefined || meta.namespace === '') meta.namespace = namespace;
    meta.uid ??= uid;
    meta.creationTimestamp ??= '2026-01-01T00:00:00Z';
    meta.generation ??= 1;
  }
  j.status ??= {};
  const spec = obj(j, 'spec');
  if (!spec) return j;
  spec.completions ??= 1;
  spec.parallelism ??= 1;
  spec.completionMode ??= 'NonIndexed';
  spec.suspend ??= false;
  spec.podReplacementPolicy ??= 'TerminatingOrFailed';
  spec.manualSelector ??= false;
  const id = isObject(meta) && typeof meta.uid === 'string' ? meta.uid : uid;
  if (spec.manualSelector !== true) spec.selector = { matchLabels: { 'batch.kubernetes.io/controller-uid': id } };
  const template = obj(spec, 'template');
  if (!template) return j;
  const tmeta = obj(template, 'metadata') ?? (template.metadata = {});
  if (isObject(tmeta)) {
    if (spec.manualSelector !== true) {
      const name = isObject(meta) && typeof meta.name === 'string' ? meta.name : '';
      tmeta.labels = { ...(isObject(tmeta.labels) ? tmeta.labels : {}), 'batch.kubernetes.io/controller-uid': id, 'batch.kubernetes.io/job-name': name, 'controller-uid': id, 'job-name': name };
    }
  }
  const pod = obj(template, 'spec');
  if (!pod) return j;
  pod.restartPolicy ??= 'Always';
  pod.terminationGracePeriodSeconds ??= 30;
  pod.dnsPolicy ??= 'ClusterFirst';
  pod.securityContext ??= {};
  pod.schedulerName ??= 'default-scheduler';
  if (Array.isArray(pod.volumes)) {
    for (const v of pod.volumes) {
      // SetDefaults_DownwardAPIVolumeSource (mode 0644) and SetDefaults_ObjectFieldSelector (apiVersion v1).
      const d = isObject(v) ? obj(v, 'downwardAPI') : undefined;
      if (!d) continue;
      d.defaultMode ??= 420;
      if (Array.isArray(d.items)) for (const item of d.items) if (isObject(item) && isObject(item.fieldRef)) item.fieldRef.apiVersion ??= 'v1';
    }
  }
  for (const list of ['containers', 'initContainers']) {
    const cs = pod[list];
    if (!Array.isArray(cs)) continue;
    for (const c of cs) {
      if (!isObject(c)) continue;
      // An empty value is no value (EnvVar.value is omitempty): the server stores {name} alone.
      if (Array.isArray(c.env)) for (const e of c.env) if (isObject(e) && e.value === '') delete e.value;
      c.resources ??= {};
      c.terminationMessagePath ??= '/dev/termination-log';
      c.terminationMessagePolicy ??= 'File';
      if (c.imagePullPolicy === undefined && typeof c.image === 'string') {
        // k8s.io/kubernetes pkg/apis/core/v1 SetDefaults_Container: Always when the tag is latest, or when the
        // reference has neither a tag nor a digest (parsers.ParseImageName then says latest).
        const [name = '', digest] = c.image.split('@');
        const tag = /:([^/:]+)$/.exec(name)?.[1];
        c.imagePullPolicy = tag === 'latest' || (tag === undefined && digest === undefined) ? 'Always' : 'IfNotPresent';
      }
    }
  }
  return j;
}

/** Whether `job` is `rendered` as the API server stores it, up to the fields the server sets per object. */
function storedAs(rendered: JsonObject, job: JsonObject, meta: JsonObject): boolean {
  const uid = typeof meta.uid === 'string' ? meta.uid : undefined;
  const expected = withServerDefaults(rendered, uid) as JsonObject;
  for (const k of ['uid', 'creationTimestamp', 'generation', 'managedFields'] as const) {
    if (meta[k] !== undefined) (expected.metadata as JsonObject)[k] = meta[k];
    else delete (expected.metadata as JsonObject)[k];
  }
  return isDeepStrictEqual(expected, job);
}

function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
function obj(parent: JsonObject, key: string): JsonObject | undefined {
  const v = parent[key];
  return isObject(v) ? v : undefined;
}

/** The Job's environment as a map, or undefined when it is not a list of {name, value} with distinct names. */
function envOf(c: Json): Map<string, string> | undefined {
  if (!isObject(c) || !Array.isArray(c.env)) return undefined;
  const m = new Map<string, string>();
  for (const e of c.env) {
    if (!isObject(e) || typeof e.name !== 'string' || m.has(e.name)) return undefined;
    if (e.value !== undefined && typeof e.value !== 'string') return undefined;
    m.set(e.name, e.value ?? '');
  }
  return m;
}

/** Whether a defaulted Job is one the policy must admit: what agentJob() renders for the inputs it claims. */
export function isRenderedAgentJob(job: Json, allows: ChartAllows): boolean {
  if (!isObject(job)) return false;
  // The other shape the policy admits: a flag proof Job, known by its action label.
  if (obj(obj(job, 'metadata') ?? {}, 'labels')?.['upgrade.apiserver.dev/action'] === 'proveflags') return isRenderedProofJob(job, allows);
  const meta = obj(job, 'metadata');
  const pod = obj(obj(obj(job, 'spec') ?? {}, 'template') ?? {}, 'spec');
  if (!meta || !pod || !Array.isArray(pod.containers) || !Array.isArray(pod.initContainers)) return false;
  const agent = pod.containers[0];
  const init = pod.initContainers[0];
  const env = envOf(agent ?? null);
  const labels = obj(meta, 'labels');
  if (!env || !labels || !isObject(agent) || !isObject(init)) return false;
  const action = ACTIONS.find((a) => a.toLowerCase() === labels['upgrade.apiserver.dev/action']);
  const upgradeName = labels['upgrade.apiserver.dev/upgrade'];
  const node = pod.nodeName;
  if (!action || typeof upgradeName !== 'string' || !DNS_SUBDOMAIN.test(upgradeName) || typeof node !== 'string' || node.length > 253 || !DNS_SUBDOMAIN.test(node)) return false;
  const ready = env.get('READY_TIMEOUT') ?? '';
  const port = env.get('PEER_PORT') ?? '';
  const ip = env.get('PEER_IP') ?? '';
  if (!/^[1-9][0-9]*$/.test(ready) || !/^[1-9][0-9]*$/.test(port)) return false;
  // The chart's policy lists: the images and node paths this Job may name.
  const image = env.get('IMAGE') ?? '';
  const target = env.get('VERSION') ?? '';
  const backupDir = env.get('BACKUP_DIR') ?? '';
  if (!allows.agentImages.includes(String(agent.image))) return false;
  if (!allows.apiserverRepositories.some((r) => image === `${r}:${target}`)) return false;
  if (!allows.manifestPaths.includes(env.get('MANIFEST') ?? '')) return false;
  if (!allows.backupDirPrefixes.some((p) => backupDir === p || backupDir.startsWith(`${p}/`))) return false;
  if (!allows.peerCAFiles.includes(env.get('PEER_CA') ?? '')) return false;
  const resolved = resolveSpec({ targetVersion: 'v1.0.0', driver: { staticPod: {} } });
  if (resolved.driver.kind !== 'staticPod') return false;
  const gate = env.get('GATE');
  const emulatedVersion = env.get('EMULATED_VERSION') ?? '';
  const inputs: AgentInputs = {
    spec: {
      ...resolved.driver.staticPod, agentImage: String(agent.image), manifestPath: env.get('MANIFEST') ?? '', backupDir, peerCAFile: env.get('PEER_CA') ?? '',
      namespace: String(meta.namespace), readyTimeout: `${ready}s`, readyTimeoutMs: Number(ready) * 1000,
    },
    request: {
      idempotencyKey: env.get('KEY') ?? '', action, upgrade: upgradeName, batch: 1,
      server: { identity: 'x', hostname: node, address: ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}` }, targetVersion: target,
      ...(emulatedVersion === '' ? {} : { emulatedVersion }),
      featureGates: gate === undefined || gate === '' ? {} : gate === 'true' ? { [PROXY_GATE]: true } : gate === 'false' ? { [PROXY_GATE]: false } : { invalid: true },
    },
    upgradeName, image,
  };
  if (gate !== undefined && !['', 'true', 'false'].includes(gate)) return false;
  let rendered: JsonObject;
  try {
    rendered = render(inputs);
  } catch {
    return false;
  }
  // The name's hash is of the idempotency key (sha256, which no admission policy can compute): any name of the shape.
  const name = meta.name;
  const shape = new RegExp(`^auo-${action.toLowerCase()}-([a-z0-9]([-a-z0-9]*[a-z0-9])?-)?[0-9a-f]{16}$`);
  if (typeof name !== 'string' || name.length > 63 || !shape.test(name)) return false;
  (rendered.metadata as JsonObject).name = name;
  return storedAs(rendered, job, meta);
}

// ---- the flag proof Job (src/drivers/flag-proof-job.ts) ----

const META_CHARS_PROOF = ['$(id)', '`id`', 'a;b', '--feature-gates=$(id)', '--', '-', '--help', '--version=true', '\n', ' --x=y', 'x'.repeat(300)];
const KEY_SHAPE = /^proveflags-[A-Za-z0-9._-]{0,200}-[0-9a-f]{16}$/;
const VERSION_SHAPE = /^v[0-9]+[.][0-9]+[.][0-9]+(-[0-9A-Za-z.-]+)?$/;
/** An entry that would take the next one as its value: a flag without `=`. */
const loneFlag = (e: string): boolean => e.startsWith('-') && !e.includes('=');

/** A flag proof's command line: kubeadm's flags, odd ones, strings of any kind; the sentinel last, never taken as a value. */
const proofArgs = fc.array(fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('--advertise-address=10.0.0.11', '--feature-gates=ServiceTrafficDistribution=true', '--enable-admission-plugins=NodeRestriction,JobValidation', '--service-account-signing-key-file=/var/run/auo-flag-proof/sa.key', '--etcd-servers=https://127.0.0.1:2379', '--max-requests-inflight=400', '--profiling', '-v=2', '--etcd-servers', 'value', '--') },
  { weight: 1, arbitrary: fc.constantFrom(...META_CHARS_PROOF) },
  { weight: 1, arbitrary: fc.string({ maxLength: 16 }) },
), { maxLength: 8 }).filter((a) => a.length === 0 || !loneFlag(a[a.length - 1]!)).map((a) => [...a, PROOF_SENTINEL]);

/** Legitimate inputs of proofJob() within the chart's default policy. */
export function proofInputs(allows: ChartAllows): fc.Arbitrary<{ namespace: string; input: ProofJobInput }> {
  return fc.record({
    host: hostname,
    upgradeName: fc.array(label, { minLength: 1, maxLength: 3 }).map((p) => p.join('.').slice(0, 63).replace(/[.-]+$/, '')).filter((n) => DNS_SUBDOMAIN.test(n)),
    version,
    repo: fc.constantFrom(...allows.apiserverRepositories),
    uid: fc.uuid(),
    args: proofArgs,
  }).map((x) => ({
    namespace: 'kube-system',
    input: { upgradeName: x.upgradeName, upgradeUid: x.uid, hostname: x.host, image: `${x.repo}:${x.version}`, targetVersion: x.version, args: x.args },
  }));
}

/** The Job proofJob() renders, as JSON. */
export function renderProof(p: { namespace: string; input: ProofJobInput }): JsonObject {
  return proofJob({ namespace: p.namespace }, p.input) as JsonObject;
}

/** Whether a defaulted Job is a flag proof Job the policy must admit: what proofJob() renders for the inputs it claims. */
export function isRenderedProofJob(job: JsonObject, allows: ChartAllows): boolean {
  const meta = obj(job, 'metadata');
  const pod = obj(obj(obj(job, 'spec') ?? {}, 'template') ?? {}, 'spec');
  const labels = meta ? obj(meta, 'labels') : undefined;
  const annotations = meta ? obj(meta, 'annotations') : undefined;
  if (!meta || !pod || !labels || !annotations || !Array.isArray(pod.containers)) return false;
  const c = pod.containers[0];
  if (!isObject(c) || !Array.isArray(c.command) || !c.command.every((e) => typeof e === 'string')) return false;
  const command = c.command as string[];
  const upgradeName = labels['upgrade.apiserver.dev/upgrade'];
  const node = pod.nodeName;
  const target = annotations['upgrade.apiserver.dev/target'];
  const key = annotations['upgrade.apiserver.dev/idempotency-key'];
  const image = c.image;
  if (typeof upgradeName !== 'string' || !DNS_SUBDOMAIN.test(upgradeName) || typeof node !== 'string' || node.length > 253 || !DNS_SUBDOMAIN.test(node)) return false;
  if (typeof target !== 'string' || !VERSION_SHAPE.test(target) || typeof image !== 'string' || !allows.apiserverRepositories.some((r) => image === `${r}:${target}`)) return false;
  if (typeof key !== 'string' || !KEY_SHAPE.test(key) || !key.startsWith(`proveflags-${node.slice(0, 200)}-`)) return false;
  if (command[0] !== 'kube-apiserver') return false;
  let rendered: JsonObject;
  try {
    rendered = renderProof({ namespace: String(meta.namespace), input: { upgradeName, upgradeUid: 'x', hostname: node, image, targetVersion: target, args: command.slice(1) } });
  } catch {
    return false;
  }
  // The name's and the key's hash are of the upgrade's uid and the flags (sha256, which no admission policy can compute): any of the shape.
  const name = meta.name;
  if (typeof name !== 'string' || name.length > 63 || !/^auo-proveflags-([a-z0-9]([-a-z0-9]*[a-z0-9])?-)?[0-9a-f]{16}$/.test(name)) return false;
  (rendered.metadata as JsonObject).name = name;
  ((rendered.metadata as JsonObject).annotations as JsonObject)['upgrade.apiserver.dev/idempotency-key'] = key;
  return storedAs(rendered, job, meta);
}

/** Known attacks on a flag proof Job, each a change to the rendered Job. */
export const KNOWN_PROOF_ATTACKS: { what: string; edit: (j: any) => void }[] = [ // eslint-disable-line @typescript-eslint/no-explicit-any -- hand-written edits of a JSON Job
  { what: 'no sentinel: a kube-apiserver that serves', edit: (j) => j.spec.template.spec.containers[0].command.pop() },
  { what: 'the sentinel overridden after it', edit: (j) => j.spec.template.spec.containers[0].command.push('--max-requests-inflight=400') },
  { what: 'a flag that takes the sentinel as its value', edit: (j) => j.spec.template.spec.containers[0].command.splice(-1, 0, '--etcd-servers') },
  { what: 'a shorthand flag that takes the sentinel', edit: (j) => j.spec.template.spec.containers[0].command.splice(-1, 0, '-v') },
  { what: 'args after the command', edit: (j) => (j.spec.template.spec.containers[0].args = ['--max-requests-inflight=400']) },
  { what: 'another binary', edit: (j) => (j.spec.template.spec.containers[0].command[0] = 'sh') },
  { what: 'a shell', edit: (j) => (j.spec.template.spec.containers[0].command = ['sh', '-c', 'cat /host/etc/kubernetes/pki/sa.key', PROOF_SENTINEL]) },
  { what: 'the node\'s pki mounted', edit: (j) => { j.spec.template.spec.volumes.push({ name: 'pki', hostPath: { path: '/etc/kubernetes/pki', type: 'Directory' } }); j.spec.template.spec.containers[0].volumeMounts.push({ name: 'pki', mountPath: '/etc/kubernetes/pki', readOnly: true }); } },
  { what: 'the key volume as a hostPath', edit: (j) => (j.spec.template.spec.volumes[0] = { name: 'proof-key', hostPath: { path: '/etc/kubernetes/pki' } }) },
  { what: 'the key volume from a Secret', edit: (j) => (j.spec.template.spec.volumes[0] = { name: 'proof-key', secret: { secretName: 'x' } }) },
  { what: 'the downward API exposes another field', edit: (j) => (j.spec.template.spec.volumes[0].downwardAPI.items.push({ path: 'x', fieldRef: { fieldPath: 'metadata.name' } })) },
  { what: 'another key in the annotation', edit: (j) => (j.spec.template.metadata.annotations['upgrade.apiserver.dev/proof-signing-key'] = '-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----\n') },
  { what: 'another template annotation', edit: (j) => (j.spec.template.metadata.annotations['container.apparmor.security.beta.kubernetes.io/kube-apiserver'] = 'unconfined') },
  { what: 'a writable mount', edit: (j) => (j.spec.template.spec.containers[0].volumeMounts[0].readOnly = false) },
  { what: 'hostNetwork', edit: (j) => (j.spec.template.spec.hostNetwork = true) },
  { what: 'hostPID', edit: (j) => (j.spec.template.spec.hostPID = true) },
  { what: 'as root', edit: (j) => (j.spec.template.spec.containers[0].securityContext.runAsUser = 0) },
  { what: 'privileged', edit: (j) => (j.spec.template.spec.containers[0].securityContext.privileged = true) },
  { what: 'a capability added', edit: (j) => (j.spec.template.spec.containers[0].securityContext.capabilities.add = ['NET_ADMIN']) },
  { what: 'a writable root', edit: (j) => (j.spec.template.spec.containers[0].securityContext.readOnlyRootFilesystem = false) },
  { what: 'no security context', edit: (j) => delete j.spec.template.spec.containers[0].securityContext },
  { what: 'env', edit: (j) => (j.spec.template.spec.containers[0].env = [{ name: 'GODEBUG', value: 'x' }]) },
  { what: 'an init container', edit: (j) => (j.spec.template.spec.initContainers = [{ name: 'x', image: j.spec.template.spec.containers[0].image, command: ['kube-apiserver', '--version'] }]) },
  { what: 'a second container', edit: (j) => j.spec.template.spec.containers.push({ ...j.spec.template.spec.containers[0], name: 'two' }) },
  { what: 'a ServiceAccount token', edit: (j) => (j.spec.template.spec.automountServiceAccountToken = true) },
  { what: 'a longer deadline', edit: (j) => (j.spec.activeDeadlineSeconds = 86400) },
  { what: 'no deadline', edit: (j) => delete j.spec.activeDeadlineSeconds },
  { what: 'an image of another repository', edit: (j) => {
    const image = `evil.example/x/kube-apiserver:${j.metadata.annotations['upgrade.apiserver.dev/target']}`;
    j.spec.template.spec.containers[0].image = image;
    j.metadata.annotations['upgrade.apiserver.dev/image'] = image;
  } },
  { what: 'the operator\'s image', edit: (j) => {
    j.spec.template.spec.containers[0].image = 'ghcr.io/x/apiserver-upgrade-operator:0.2.0';
    j.metadata.annotations['upgrade.apiserver.dev/image'] = 'ghcr.io/x/apiserver-upgrade-operator:0.2.0';
  } },
  { what: 'the image at another tag than the target', edit: (j) => {
    const image = j.spec.template.spec.containers[0].image.replace(/:[^:]+$/, ':v1.20.0');
    j.spec.template.spec.containers[0].image = image;
    j.metadata.annotations['upgrade.apiserver.dev/image'] = image;
  } },
  { what: 'a lifecycle hook', edit: (j) => (j.spec.template.spec.containers[0].lifecycle = { postStart: { exec: { command: ['kube-apiserver', '--version'] } } }) },
  { what: 'a probe', edit: (j) => (j.spec.template.spec.containers[0].startupProbe = { httpGet: { path: '/', port: 6443 } }) },
  { what: 'ports', edit: (j) => (j.spec.template.spec.containers[0].ports = [{ containerPort: 6443, hostPort: 6443 }]) },
  { what: 'the proof label on an agent\'s key', edit: (j) => (j.metadata.annotations['upgrade.apiserver.dev/idempotency-key'] = j.metadata.annotations['upgrade.apiserver.dev/idempotency-key'].replace(/^proveflags-/, 'upgrade-')) },
  { what: 'another server annotation', edit: (j) => (j.metadata.annotations['upgrade.apiserver.dev/server'] = 'cp-9') },
  { what: 'the agent\'s action label', edit: (j) => (j.metadata.labels['upgrade.apiserver.dev/action'] = 'upgrade') },
];

// ---- mutations ----

/** A path into a JSON value. */
type Path = (string | number)[];

function nodes(v: Json, path: Path = []): { path: Path; value: Json }[] {
  const here = [{ path, value: v }];
  if (Array.isArray(v)) return [...here, ...v.flatMap((x, i) => nodes(x, [...path, i]))];
  if (isObject(v)) return [...here, ...Object.entries(v).flatMap(([k, x]) => nodes(x, [...path, k]))];
  return here;
}

function at(root: Json, path: Path): Json {
  let v: Json = root;
  for (const p of path) v = (v as Record<string | number, Json>)[p] as Json;
  return v;
}

/** One mutation: what it did, and the Job after it. */
export interface Mutation { what: string; job: JsonObject }

const META_CHARS = ['$(id)', '`id`', 'a;b', 'a|b', '../../etc', '/etc/kubernetes/manifests/evil.yaml', ' ', '\n', '\u0000', '*', 'x'.repeat(300), '"\'', '${HOME}'];

/** A value of the API type at a field, small and mostly valid, so that API validation leaves the policy to answer. */
function valueFor(type: string | undefined, seed: number): Json {
  switch (type) {
    case 'string': return ['x', '/', 'true', 'node', 'Always', 'RuntimeDefault', 'Unconfined', META_CHARS[seed % META_CHARS.length]!][seed % 8]!;
    case 'integer': return [0, 1, 5, 65535, 999999][seed % 5]!;
    case 'number': return 1;
    case 'boolean': return seed % 2 === 0;
    case 'array': return seed % 2 === 0 ? [] : ['x'];
    case 'map': return { x: 'y' };
    default: return {};
  }
}

/** Known attacks, each a change to the rendered Job. */
export const KNOWN_ATTACKS: { what: string; edit: (j: any) => void }[] = [ // eslint-disable-line @typescript-eslint/no-explicit-any -- hand-written edits of a JSON Job
  { what: 'postStart exec', edit: (j) => (j.spec.template.spec.containers[0].lifecycle = { postStart: { exec: { command: ['node', '-e', 'require("fs").writeFileSync("/etc/kubernetes/manifests/x.yaml", "")'] } } }) },
  { what: 'preStop exec', edit: (j) => (j.spec.template.spec.containers[0].lifecycle = { preStop: { exec: { command: ['node', '-e', '1'] } } }) },
  { what: 'startupProbe exec', edit: (j) => (j.spec.template.spec.containers[0].startupProbe = { exec: { command: ['node', '-e', '1'] } }) },
  { what: 'livenessProbe exec', edit: (j) => (j.spec.template.spec.containers[0].livenessProbe = { exec: { command: ['node', '-e', '1'] } }) },
  { what: 'readinessProbe exec', edit: (j) => (j.spec.template.spec.containers[0].readinessProbe = { exec: { command: ['node', '-e', '1'] } }) },
  { what: 'init container postStart', edit: (j) => (j.spec.template.spec.initContainers[0].lifecycle = { postStart: { exec: { command: ['sh', '-c', 'id'] } } }) },
  { what: 'seccomp Unconfined', edit: (j) => (j.spec.template.spec.containers[0].securityContext = { runAsUser: 0, seccompProfile: { type: 'Unconfined' } }) },
  { what: 'pod seccomp Unconfined', edit: (j) => (j.spec.template.spec.securityContext = { seccompProfile: { type: 'Unconfined' } }) },
  { what: 'SELinux spc_t', edit: (j) => (j.spec.template.spec.containers[0].securityContext = { runAsUser: 0, seLinuxOptions: { type: 'spc_t' } }) },
  { what: 'pod SELinux', edit: (j) => (j.spec.template.spec.securityContext = { seLinuxOptions: { type: 'spc_t' } }) },
  { what: 'AppArmor unconfined', edit: (j) => (j.spec.template.spec.containers[0].securityContext = { runAsUser: 0, appArmorProfile: { type: 'Unconfined' } }) },
  { what: 'privileged', edit: (j) => (j.spec.template.spec.containers[0].securityContext = { runAsUser: 0, privileged: true }) },
  { what: 'allowPrivilegeEscalation', edit: (j) => (j.spec.template.spec.containers[0].securityContext = { runAsUser: 0, allowPrivilegeEscalation: true }) },
  { what: 'init capability', edit: (j) => (j.spec.template.spec.initContainers[0].securityContext = { capabilities: { add: ['SYS_ADMIN'] } }) },
  { what: 'hostPID', edit: (j) => (j.spec.template.spec.hostPID = true) },
  { what: 'hostIPC', edit: (j) => (j.spec.template.spec.hostIPC = true) },
  { what: 'shareProcessNamespace', edit: (j) => (j.spec.template.spec.shareProcessNamespace = true) },
  { what: 'serviceAccountName', edit: (j) => (j.spec.template.spec.serviceAccountName = 'default') },
  { what: 'nodeSelector', edit: (j) => (j.spec.template.spec.nodeSelector = { 'kubernetes.io/hostname': 'cp-9' }) },
  { what: 'nodeName alone', edit: (j) => (j.spec.template.spec.nodeName = 'worker-1') },
  { what: 'runtimeClassName', edit: (j) => (j.spec.template.spec.runtimeClassName = 'runc') },
  { what: 'hostAliases', edit: (j) => (j.spec.template.spec.hostAliases = [{ ip: '10.0.0.1', hostnames: ['registry.k8s.io'] }]) },
  { what: 'dnsConfig', edit: (j) => (j.spec.template.spec.dnsConfig = { nameservers: ['10.0.0.1'] }) },
  { what: 'imagePullSecrets', edit: (j) => (j.spec.template.spec.imagePullSecrets = [{ name: 'x' }]) },
  { what: 'ports', edit: (j) => (j.spec.template.spec.containers[0].ports = [{ containerPort: 22 }]) },
  { what: 'workingDir', edit: (j) => (j.spec.template.spec.containers[0].workingDir = '/etc/kubernetes/manifests') },
  { what: 'args', edit: (j) => (j.spec.template.spec.containers[0].args = ['-e', '1']) },
  { what: 'stdin', edit: (j) => (j.spec.template.spec.containers[0].stdin = true) },
  { what: 'envFrom', edit: (j) => (j.spec.template.spec.containers[0].envFrom = [{ configMapRef: { name: 'x' } }]) },
  { what: 'env valueFrom', edit: (j) => j.spec.template.spec.containers[0].env.push({ name: 'NODE_OPTIONS', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }) },
  { what: 'TERMINATION_LOG at the manifest', edit: (j) => j.spec.template.spec.containers[0].env.push({ name: 'TERMINATION_LOG', value: '/etc/kubernetes/manifests/kube-apiserver.yaml' }) },
  { what: 'POLL_INTERVAL', edit: (j) => j.spec.template.spec.containers[0].env.push({ name: 'POLL_INTERVAL', value: '999999' }) },
  { what: 'NODE_OPTIONS', edit: (j) => j.spec.template.spec.containers[0].env.push({ name: 'NODE_OPTIONS', value: '--require /etc/x.js' }) },
  { what: 'READY_TIMEOUT 999999', edit: (j) => { for (const e of j.spec.template.spec.containers[0].env) if (e.name === 'READY_TIMEOUT') e.value = '999999'; j.spec.activeDeadlineSeconds = 999999 + 300; } },
  { what: 'no deadline', edit: (j) => delete j.spec.activeDeadlineSeconds },
  { what: 'longer deadline', edit: (j) => (j.spec.activeDeadlineSeconds += 86400) },
  { what: 'TTL', edit: (j) => (j.spec.ttlSecondsAfterFinished = 0) },
  { what: 'backoffLimit', edit: (j) => (j.spec.backoffLimit = 6) },
  { what: 'parallelism', edit: (j) => (j.spec.parallelism = 5) },
  { what: 'podFailurePolicy', edit: (j) => (j.spec.podFailurePolicy = { rules: [{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget' }] }] }) },
  { what: 'terminationMessagePath', edit: (j) => (j.spec.template.spec.containers[0].terminationMessagePath = '/etc/kubernetes/manifests/kube-apiserver.yaml') },
  { what: 'mount subPath', edit: (j) => (j.spec.template.spec.containers[0].volumeMounts[0].subPath = 'x') },
  { what: 'mount propagation', edit: (j) => (j.spec.template.spec.containers[0].volumeMounts[0].mountPropagation = 'Bidirectional') },
  { what: 'init mounts manifests', edit: (j) => (j.spec.template.spec.initContainers[0].volumeMounts = [{ name: 'manifests', mountPath: '/m' }]) },
  { what: 'init env', edit: (j) => (j.spec.template.spec.initContainers[0].env = [{ name: 'X', value: 'y' }]) },
  { what: 'old kube-apiserver v1.20.0 with a huge timeout', edit: (j) => {
    for (const e of j.spec.template.spec.containers[0].env) {
      if (e.name === 'IMAGE') e.value = 'registry.k8s.io/kube-apiserver:v1.20.0';
      if (e.name === 'VERSION') e.value = 'v1.20.0';
      if (e.name === 'READY_TIMEOUT') e.value = '999999';
    }
    j.spec.template.spec.initContainers[0].image = 'registry.k8s.io/kube-apiserver:v1.20.0';
    j.metadata.annotations['upgrade.apiserver.dev/target'] = 'v1.20.0';
    j.metadata.annotations['upgrade.apiserver.dev/image'] = 'registry.k8s.io/kube-apiserver:v1.20.0';
    delete j.spec.activeDeadlineSeconds;
  } },
  { what: 'any kube-apiserver repository', edit: (j) => {
    const image = `evil.example/x/kube-apiserver:${j.metadata.annotations['upgrade.apiserver.dev/target']}`;
    for (const e of j.spec.template.spec.containers[0].env) if (e.name === 'IMAGE') e.value = image;
    j.spec.template.spec.initContainers[0].image = image;
    j.metadata.annotations['upgrade.apiserver.dev/image'] = image;
  } },
  { what: 'ownerReferences', edit: (j) => (j.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: 'x', uid: '00000000-0000-4000-8000-000000000001' }]) },
  { what: 'finalizers', edit: (j) => (j.metadata.finalizers = ['example.com/keep']) },
  { what: 'extra label', edit: (j) => (j.metadata.labels.extra = 'x') },
  { what: 'extra annotation', edit: (j) => (j.metadata.annotations['example.com/x'] = 'y') },
  { what: 'extra template label', edit: (j) => (j.spec.template.metadata.labels.extra = 'x') },
  { what: 'template annotation', edit: (j) => (j.spec.template.metadata.annotations = { 'container.apparmor.security.beta.kubernetes.io/agent': 'unconfined' }) },
  { what: 'hostPath /', edit: (j) => { j.spec.template.spec.volumes.push({ name: 'host', hostPath: { path: '/' } }); j.spec.template.spec.containers[0].volumeMounts.push({ name: 'host', mountPath: '/host' }); } },
  { what: 'hostPath type changed', edit: (j) => (j.spec.template.spec.volumes[0].hostPath.type = 'DirectoryOrCreate') },
  { what: 'priorityClassName', edit: (j) => (j.spec.template.spec.priorityClassName = 'system-cluster-critical') },
  { what: 'tolerations narrowed', edit: (j) => (j.spec.template.spec.tolerations = [{ key: 'x', operator: 'Exists' }]) },
  { what: 'hostUsers false', edit: (j) => (j.spec.template.spec.hostUsers = false) },
  { what: 'os', edit: (j) => (j.spec.template.spec.os = { name: 'linux' }) },
  { what: 'pod activeDeadlineSeconds', edit: (j) => (j.spec.template.spec.activeDeadlineSeconds = 99999) },
  { what: 'resources', edit: (j) => (j.spec.template.spec.containers[0].resources = { limits: { memory: '1Gi' } }) },
];

/** A random mutation of a rendered Job: generic (any field of the API at any depth, any key, any value) or a known attack. */
export function mutation(): fc.Arbitrary<(job: JsonObject) => Mutation> {
  const generic = fc.record({ kind: fc.constantFrom('add', 'add', 'add', 'remove', 'change', 'change', 'repeat'), pick: fc.nat(), key: fc.nat(), seed: fc.nat() });
  const known = fc.constantFrom(...KNOWN_ATTACKS);
  return fc.oneof(
    { weight: 3, arbitrary: generic.map((g) => (job: JsonObject): Mutation => genericMutation(job, g)) },
    { weight: 1, arbitrary: known.map((a) => (job: JsonObject): Mutation => {
      const j = structuredClone(job);
      a.edit(j);
      return { what: a.what, job: j };
    }) },
  );
}

function genericMutation(job: JsonObject, g: { kind: string; pick: number; key: number; seed: number }): Mutation {
  const j = structuredClone(job);
  const all = nodes(j);
  if (g.kind === 'add') {
    const objects = all.filter((n) => isObject(n.value));
    const target = objects[g.pick % objects.length]!;
    const o = target.value as JsonObject;
    const type = typeAt(target.path);
    const known = type ? Object.keys(API_FIELDS[type] ?? {}).filter((k) => !(k in o)) : [];
    const names = known.length > 0 ? known : ['x', 'extra', 'example.com/x', 'value', 'valueFrom', 'name'].filter((k) => !(k in o));
    const name = names[g.key % names.length]!;
    const fieldType = type ? API_FIELDS[type]?.[name] : undefined;
    o[name] = valueFor(fieldType, g.seed);
    return { what: `add ${[...target.path, name].join('.')} = ${JSON.stringify(o[name])}`, job: j };
  }
  if (g.kind === 'remove') {
    const removable = all.filter((n) => n.path.length > 0);
    const target = removable[g.pick % removable.length]!;
    const parent = at(j, target.path.slice(0, -1));
    const last = target.path[target.path.length - 1]!;
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete (parent as JsonObject)[last as string];
    return { what: `remove ${target.path.join('.')}`, job: j };
  }
  if (g.kind === 'repeat') {
    const lists = all.filter((n) => Array.isArray(n.value) && (n.value as Json[]).length > 0);
    const target = lists[g.pick % lists.length]!;
    const list = target.value as Json[];
    list.push(structuredClone(list[g.key % list.length]!));
    return { what: `repeat an element of ${target.path.join('.')}`, job: j };
  }
  const leaves = all.filter((n) => n.path.length > 0 && !isObject(n.value) && !Array.isArray(n.value));
  const target = leaves[g.pick % leaves.length]!;
  const parent = at(j, target.path.slice(0, -1)) as Record<string | number, Json>;
  const last = target.path[target.path.length - 1]!;
  const v = target.value;
  let next: Json;
  if (typeof v === 'string') next = [`${v}x`, '', v.toUpperCase() === v ? `${v}0` : v.toUpperCase(), META_CHARS[g.seed % META_CHARS.length]!, v.replace(/[0-9]/, (d) => String((Number(d) + 1) % 10))][g.key % 5]!;
  else if (typeof v === 'number') next = [v + 1, 0, -1, 999999, v * 2 + 1][g.key % 5]!;
  else if (typeof v === 'boolean') next = !v;
  else next = 'x';
  if (next === v) next = typeof v === 'string' ? `${v}-` : 'x';
  parent[last] = next;
  return { what: `change ${target.path.join('.')} ${JSON.stringify(v)} -> ${JSON.stringify(next)}`, job: j };
}
