// The operator's own trust limits (docs/policy.md) on the real cluster: the operator runs as its own process
// with --policy-file holding the policy the chart renders (its ConfigMap's policy.yaml, from `helm template`).
// A spec whose webhook URL, token Secret, agent image, apiserver image, node path or Prometheus address is outside
// the policy is refused (PreflightPassed=False NotAllowedByPolicy, naming the field and the list), and nothing is called: a trap
// hook that counts every request and every Authorization header receives none. As a control, the same spec
// allowed by a policy change does reach the trap, with the token — so the zeros mean something. A policy
// narrowed under a real rolling upgrade pauses it before its next call; restored, the upgrade finishes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { Cluster, ReplaceWebhook, OLD_VERSION, NEW_VERSION, PROXY_GATE, waitFor, sleep } from './cluster/index.ts';
import { createServingCert } from './cluster/pki.ts';
import { APP_VERSION } from './cluster/images.ts';
import { installCrd, createUpgrade, getUpgrade, startOperator, type OperatorProcess } from './support/operator.ts';
import { tool, runOk } from './support/tools.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

const root = join(import.meta.dirname, '..');
/** The chart's default policy.agentImages entry: the operator's own image (the agent runs from it). */
const AGENT_IMAGE = `ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:${APP_VERSION}`;
const CHART = join(root, 'charts', 'apiserver-upgrade-operator');
const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';
const SECRET_NS = 'default';
const SECRET = 'hook-token';
const TOKEN = `e2e-policy-token-${process.pid}`;
/** healthPorts 18130-18139 belong to this file. */
const HEALTH_PORT = 18130;

interface TrapRequest { at: number; method: string; path: string; authorization?: string; body: string }

/** An HTTPS endpoint that records everything it receives and answers 503 (a transient failure: the operator retries). */
class Trap {
  readonly requests: TrapRequest[] = [];
  url = '';
  private server: Server | undefined;

  async start(cluster: Cluster): Promise<void> {
    const cert = await createServingCert(cluster.pki, 'policy-trap', ['127.0.0.1'], []);
    this.server = createServer({ cert: readFileSync(cert.cert), key: readFileSync(cert.key) }, (req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        this.requests.push({ at: Date.now(), method: req.method ?? '', path: req.url ?? '', ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}), body });
        res.writeHead(503, { 'Content-Type': 'application/json' });
        res.end('{"error":"trap"}');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}/collect`;
  }

  close(): Promise<void> {
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

let cluster: Cluster;
let hook: ReplaceWebhook;
let trap: Trap;
let op: OperatorProcess;
let helm: string;
let work: string;
let policyPath: string;
let caBundle: string;

/** The policy exactly as the chart renders it (ConfigMap <fullname>-policy, key policy.yaml), from `policy.*` values. */
async function chartPolicy(values: { webhooks?: object[]; webhookTokens?: object[] }): Promise<string> {
  const set = Object.entries(values).flatMap(([k, v]) => ['--set-json', `policy.${k}=${JSON.stringify(v)}`]);
  const out = await runOk(helm, ['template', 'auo', CHART, '--namespace', 'upgrade-system', '--kube-version', OLD_VERSION, '--show-only', 'templates/policy-configmap.yaml', ...set]);
  const cm = parse(out) as { kind: string; data: Record<string, string> };
  assert.equal(cm.kind, 'ConfigMap');
  return cm.data['policy.yaml']!;
}

/** Replaces the policy file at once (rename), as the kubelet swaps a ConfigMap volume: never a half-written file. */
function writePolicy(text: string): void {
  const tmp = `${policyPath}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, policyPath);
}

const tokenRef = { namespace: SECRET_NS, name: SECRET, key: 'token' };
/** The baseline: the real hook may be called, with or without the token; the trap nowhere. */
const BASELINE = (): { webhooks: object[]; webhookTokens: object[] } => ({
  webhooks: [{ url: hook.url }],
  webhookTokens: [{ secret: { namespace: SECRET_NS, name: SECRET }, urls: [{ url: hook.url }] }],
});

function webhookUpgrade(name: string, url: string, withToken: boolean): Record<string, unknown> {
  return {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name },
    spec: {
      targetVersion: NEW_VERSION,
      strategy: { batchSize: 1, soakDuration: '5s', batchTimeout: '3m' },
      proxy: { allowAlphaGate: true },
      driver: { webhook: { url, caBundle, timeout: '5s', ...(withToken ? { authSecretRef: tokenRef } : {}) } },
      analysis: { interval: '2s', failureLimit: 3 },
    },
  };
}

function staticPodUpgrade(name: string, image: string, agentImage: string, paths: Record<string, string> = {}): Record<string, unknown> {
  return {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name },
    spec: { targetVersion: NEW_VERSION, proxy: { allowAlphaGate: true }, driver: { staticPod: { image, agentImage, namespace: 'kube-system', ...paths } }, analysis: { interval: '2s' } },
  };
}

/** The allowed hook, with its signals read from a Prometheus at `address`. */
function prometheusUpgrade(name: string, address: string): Record<string, unknown> {
  const u = webhookUpgrade(name, hook.url, false) as { spec: { analysis: Record<string, unknown> } };
  u.spec.analysis = { interval: '2s', source: 'Prometheus', prometheus: { address } };
  return u;
}

async function remove(name: string): Promise<void> {
  const r = await cluster.request('lb', `${UPGRADES}/${name}`, { method: 'DELETE' });
  assert.ok(r.status === 200 || r.status === 404, `delete ${name}: HTTP ${r.status}`);
  await waitFor(`${name} to be gone`, 30_000, async () => ((await cluster.request('lb', `${UPGRADES}/${name}`)).status === 404 ? true : undefined));
}

async function eventsOf(name: string): Promise<{ reason: string; note: string }[]> {
  const evs = JSON.parse((await cluster.request('lb', '/apis/events.k8s.io/v1/namespaces/default/events')).body) as { items: { reason: string; note: string; regarding: { name: string } }[] };
  return evs.items.filter((e) => e.regarding.name === name).map((e) => ({ reason: e.reason, note: e.note }));
}

const condition = (u: ApiServerUpgrade | undefined, type: string) => u?.status?.conditions?.find((c) => c.type === type);
const callLines = (name: string): Record<string, unknown>[] => op.logLines().filter((l) => l.upgrade === name && (l.message === 'calling driver' || l.message === 'driver answered'));

before(async () => {
  helm = tool('helm');
  work = mkdtempSync(join(tmpdir(), 'auo-policy-'));
  policyPath = join(work, 'policy.yaml');
  // The gate is already on: an upgrade is three Upgrade calls, one per batch.
  cluster = await Cluster.start({ servers: 3, version: OLD_VERSION, featureGates: { [PROXY_GATE]: true }, verbose: true });
  await installCrd(cluster);
  hook = await ReplaceWebhook.start(cluster);
  caBundle = hook.caBundle;
  trap = new Trap();
  await trap.start(cluster);
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: SECRET, namespace: SECRET_NS }, data: { token: Buffer.from(TOKEN).toString('base64') } };
  const r = await cluster.request('lb', `/api/v1/namespaces/${SECRET_NS}/secrets`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(secret) });
  assert.equal(r.status, 201, r.body);
  writePolicy(await chartPolicy(BASELINE()));
  op = await startOperator(cluster, { healthPort: HEALTH_PORT, extraArgs: ['--policy-file', policyPath] });
});

after(async () => {
  await op?.stop();
  await trap?.close();
  await hook?.close();
  await cluster?.teardown();
  if (work) rmSync(work, { recursive: true, force: true });
});

test('the chart renders the policy the operator reads: a ConfigMap mounted at --policy-file; the -edit ClusterRole grants no create', async () => {
  const objs = parseAllDocuments(await runOk(helm, ['template', 'auo', CHART, '--namespace', 'upgrade-system', '--kube-version', OLD_VERSION]))
    .map((d) => d.toJSON() as { kind: string; metadata: { name: string }; [k: string]: unknown } | null).filter((o) => o !== null);
  const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'auo-apiserver-upgrade-operator-policy') as unknown as { data: Record<string, string> };
  assert.ok(cm, 'the policy ConfigMap is rendered with the default values');
  assert.deepEqual(parse(cm.data['policy.yaml']!), {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'OperatorPolicy',
    apiserverImages: [{ repository: 'registry.k8s.io/kube-apiserver' }], agentImages: [{ image: AGENT_IMAGE }], webhooks: [], webhookTokens: [],
    manifestPaths: [{ path: '/etc/kubernetes/manifests/kube-apiserver.yaml' }], backupDirs: [{ prefix: '/etc/kubernetes/apiserver-upgrade-backup' }],
    peerCAFiles: [{ path: '/etc/kubernetes/pki/ca.crt' }], prometheusAddresses: [],
    // admissionPolicy.anyKubeApiserverRepository, off: a node's own repository must be listed in apiserverImages too.
    anyKubeApiserverRepository: false,
  });
  const dep = objs.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { spec: { containers: { args: string[]; volumeMounts: { name: string; mountPath: string }[] }[]; volumes: { name: string; configMap?: { name: string } }[] } } } };
  const c = dep.spec.template.spec.containers[0]!;
  assert.ok(c.args.includes('--policy-file=/etc/apiserver-upgrade-operator/policy/policy.yaml'), c.args.join(' '));
  assert.equal(c.volumeMounts.find((m) => m.name === 'policy')?.mountPath, '/etc/apiserver-upgrade-operator/policy');
  assert.deepEqual(dep.spec.template.spec.volumes.find((v) => v.name === 'policy')?.configMap, { name: 'auo-apiserver-upgrade-operator-policy' });
  const edit = objs.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'auo-apiserver-upgrade-operator-edit') as unknown as { rules: { verbs: string[] }[] };
  assert.ok(edit.rules.every((r) => !r.verbs.includes('create') && !r.verbs.includes('*')), JSON.stringify(edit.rules));
  // A token Secret bound to URLs in the policy is one the operator may get (and no other).
  const withToken = parseAllDocuments(await runOk(helm, ['template', 'auo', CHART, '--namespace', 'upgrade-system', '--kube-version', OLD_VERSION,
    '--set-json', `policy.webhookTokens=${JSON.stringify([{ secret: { namespace: 'upgrade-system', name: 'cpm' }, urls: [{ prefix: 'https://cpm.example.com/v1/' }] }])}`]))
    .map((d) => d.toJSON() as { kind: string; metadata: { name: string; namespace?: string }; rules?: unknown[] } | null).filter((o) => o !== null);
  assert.deepEqual(withToken.find((o) => o.kind === 'Role' && o.metadata.name === 'auo-apiserver-upgrade-operator-auth-cpm')?.rules, [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['cpm'], verbs: ['get'] }]);

  // The operator read the rendered file: its startup line names it.
  const loaded = op.logLines().find((l) => l.message === 'policy loaded');
  assert.equal(loaded?.policyFile, policyPath);
  assert.equal(loaded?.webhooks, 1);
  assert.equal(loaded?.webhookTokens, 1);
});

test('the operator does not start on a policy file it cannot use', () => {
  const bad = join(work, 'bad.yaml');
  writeFileSync(bad, 'webhooks:\n  - url: http://hooks.example.com/replace\n');
  const r = spawnSync(process.execPath, [join(root, 'src', 'main.ts'), '--kubeconfig', cluster.kubeconfig, '--health-port', String(HEALTH_PORT + 1), '--health-host', '127.0.0.1', '--policy-file', bad], { encoding: 'utf8', timeout: 30_000 });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /bad\.yaml: webhooks\[0\]\.url: "http:\/\/hooks\.example\.com\/replace" uses http, not https/);
});

test('a spec outside the policy is refused, naming the field and the rule; the hook receives nothing and the token is never sent', async () => {
  const hookPort = new URL(hook.url).port;
  const trapPort = new URL(trap.url).port;
  const cases: { name: string; obj: Record<string, unknown>; field: RegExp; why: RegExp }[] = [
    { name: 'token-to-elsewhere', obj: webhookUpgrade('token-to-elsewhere', trap.url, true), field: /spec\.driver\.webhook\.url/, why: /is not a URL the Secret default\/hook-token key token may be sent to \(webhookTokens: allowed: url https:\/\/127\.0\.0\.1:\d+\/replace\)/ },
    // What a string prefix check would let through: it starts with the allowed hook's "https://127.0.0.1:<port>".
    { name: 'userinfo-trick', obj: webhookUpgrade('userinfo-trick', `https://127.0.0.1:${hookPort}@127.0.0.1:${trapPort}/replace`, true), field: /spec\.driver\.webhook\.url/, why: /has userinfo .* the host is 127\.0\.0\.1/ },
    { name: 'unlisted-url', obj: webhookUpgrade('unlisted-url', trap.url, false), field: /spec\.driver\.webhook\.url/, why: /matches no entry of webhooks \(allowed: url https:\/\/127\.0\.0\.1:\d+\/replace\)/ },
    { name: 'agent-image', obj: staticPodUpgrade('agent-image', 'registry.k8s.io/kube-apiserver', 'evil.example.com/root-shell:latest'), field: /spec\.driver\.staticPod\.agentImage "evil\.example\.com\/root-shell:latest"/, why: new RegExp(`matches no entry of agentImages \\(allowed: image ${AGENT_IMAGE.replace(/[./]/g, '\\$&')}\\)`) },
    { name: 'apiserver-image', obj: staticPodUpgrade('apiserver-image', 'evil.example.com/kube-apiserver', AGENT_IMAGE), field: /spec\.driver\.staticPod\.image "evil\.example\.com\/kube-apiserver"/, why: /matches no entry of apiserverImages \(allowed: repository registry\.k8s\.io\/kube-apiserver\)/ },
    // The node paths: the whole of /etc mounted read-write as the backup folder; another file as the peers' CA.
    { name: 'backup-dir', obj: staticPodUpgrade('backup-dir', 'registry.k8s.io/kube-apiserver', AGENT_IMAGE, { backupDir: '/etc' }), field: /spec\.driver\.staticPod\.backupDir "\/etc"/, why: /matches no entry of backupDirs \(allowed: prefix \/etc\/kubernetes\/apiserver-upgrade-backup\)/ },
    { name: 'peer-ca-file', obj: staticPodUpgrade('peer-ca-file', 'registry.k8s.io/kube-apiserver', AGENT_IMAGE, { peerCAFile: '/etc/kubernetes/pki/front-proxy-ca.crt' }), field: /spec\.driver\.staticPod\.peerCAFile "\/etc\/kubernetes\/pki\/front-proxy-ca\.crt"/, why: /matches no entry of peerCAFiles \(allowed: path \/etc\/kubernetes\/pki\/ca\.crt\)/ },
    // A cloud metadata address as the Prometheus to query: the chart allows no address until one is listed.
    { name: 'prometheus-metadata', obj: prometheusUpgrade('prometheus-metadata', 'http://169.254.169.254/latest/meta-data/'), field: /spec\.analysis\.prometheus\.address "http:\/\/169\.254\.169\.254\/latest\/meta-data\/"/, why: /matches no entry of prometheusAddresses \(the list is empty\)/ },
  ];
  for (const c of cases) {
    await createUpgrade(cluster, c.obj);
    const u = await waitFor(`${c.name} to be refused`, 60_000, async () => {
      const x = await getUpgrade(cluster, c.name);
      return condition(x, 'PreflightPassed')?.reason === 'NotAllowedByPolicy' ? x : undefined;
    });
    // A few more reconciles (preflight is checked again every 5 s): still nothing.
    await sleep(6_000);
    const now = await getUpgrade(cluster, c.name);
    const pf = condition(now, 'PreflightPassed');
    process.stderr.write(`[${c.name}] ${pf?.reason}: ${pf?.message}\n`);
    assert.equal(pf?.status, 'False');
    assert.match(pf!.message, /^not allowed by the operator's policy \(.*policy\.yaml\): /);
    assert.match(pf!.message, c.field, c.name);
    assert.match(pf!.message, c.why, c.name);
    assert.equal(now?.status?.phase, 'Preflight');
    assert.equal(now?.status?.driverCalls, undefined, `${c.name}: no call recorded`);
    assert.equal(u.status?.plan, undefined, `${c.name}: no plan frozen`);
    assert.deepEqual((await eventsOf(c.name)).filter((e) => e.reason === 'NotAllowedByPolicy').length, 1, `${c.name}: one Warning event`);
    assert.deepEqual(callLines(c.name), [], `${c.name}: the operator never built a driver`);
    await remove(c.name);
  }
  assert.deepEqual(trap.requests, [], 'the trap received nothing');
  assert.equal(hook.calls.size, 0, 'the real hook received nothing');
  const jobs = JSON.parse((await cluster.request('lb', '/apis/batch/v1/namespaces/kube-system/jobs')).body) as { items: unknown[] };
  assert.equal(jobs.items.length, 0, 'no agent Job was created');
});

test('control: allowed by a policy change, the same spec reaches the trap with the token; narrowed again mid-run, it pauses and the trap hears no more', async () => {
  const name = 'trap-allowed';
  await createUpgrade(cluster, webhookUpgrade(name, trap.url, true));
  await waitFor('the refusal', 60_000, async () => (condition(await getUpgrade(cluster, name), 'PreflightPassed')?.reason === 'NotAllowedByPolicy' ? true : undefined));
  assert.equal(trap.requests.length, 0);

  const base = BASELINE();
  writePolicy(await chartPolicy({ ...base, webhookTokens: [{ secret: { namespace: SECRET_NS, name: SECRET }, urls: [{ url: hook.url }, { prefix: new URL('/', trap.url).href }] }] }));
  // Preflight also asks the hook to Describe each server (docs/trust.md); the calls are the rest.
  const calls = (): TrapRequest[] => trap.requests.filter((r) => !r.body.includes('DescribeServerRequest'));
  const first = await waitFor('the trap to receive the call', 60_000, async () => calls()[0], 250);
  assert.equal(first.method, 'POST');
  assert.equal(first.authorization, `Bearer ${TOKEN}`, 'allowed, the token is sent (so the refusals above would have shown it)');
  assert.ok(trap.requests.every((r) => r.authorization === `Bearer ${TOKEN}`), 'every delivery carries the token');
  const allowed = await getUpgrade(cluster, name);
  assert.equal(condition(allowed, 'PreflightPassed')?.reason, 'Passed');
  assert.equal(allowed?.status?.phase, 'Upgrading');
  await waitFor('a retry of the transient call', 30_000, async () => (calls().length >= 2 ? true : undefined));

  writePolicy(await chartPolicy(base));
  const paused = await waitFor('the pause', 60_000, async () => {
    const u = await getUpgrade(cluster, name);
    return u?.status?.phase === 'Paused' ? u : undefined;
  });
  const heard = trap.requests.length;
  assert.ok(calls().length >= 2);
  assert.equal(paused.status?.pause?.reason, 'NotAllowedByPolicy');
  assert.equal(paused.status?.pause?.resumePhase, 'Upgrading');
  assert.match(paused.status!.pause!.message!, /spec\.driver\.webhook\.url "https:\/\/127\.0\.0\.1:\d+\/collect" .* is not a URL the Secret default\/hook-token key token may be sent to/);
  assert.equal(condition(paused, 'Degraded')?.reason, 'NotAllowedByPolicy');
  await sleep(12_000);
  assert.equal(trap.requests.length, heard, 'paused: the Requested call is not re-sent');
  assert.equal((await getUpgrade(cluster, name))?.status?.driverCalls?.[0]?.result, 'Requested');
  process.stderr.write(`[${name}] the trap heard ${heard} deliveries of one key, all with the token, then nothing for 12 s while paused\n`);
  await remove(name);
});

test('a policy narrowed under a real rolling upgrade pauses it before the next call; a resume does not override it; restored, the upgrade finishes', async () => {
  const name = 'narrowed-mid-run';
  writePolicy(await chartPolicy(BASELINE()));
  await createUpgrade(cluster, webhookUpgrade(name, hook.url, true));
  await waitFor('the first call', 120_000, async () => (hook.calls.size >= 1 ? true : undefined), 100);
  writePolicy(await chartPolicy({ webhooks: [], webhookTokens: [] }));
  const paused = await waitFor('the pause', 60_000, async () => {
    const u = await getUpgrade(cluster, name);
    return u?.status?.phase === 'Paused' ? u : undefined;
  });
  assert.equal(paused.status?.pause?.reason, 'NotAllowedByPolicy');
  assert.match(paused.status!.pause!.message!, /the Secret default\/hook-token key token is not listed under webhookTokens/);
  // The replacement already under way completes, and is recorded Done while paused; nothing else is called.
  const done = await waitFor('the first call to be Done', 120_000, async () => {
    const u = await getUpgrade(cluster, name);
    return u?.status?.driverCalls?.[0]?.result === 'Done' ? u : undefined;
  });
  assert.equal(done.status?.phase, 'Paused');
  const resume = await cluster.request('lb', `${UPGRADES}/${name}`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify({ metadata: { annotations: { 'upgrade.apiserver.dev/resume': 'e2e-1' } } }) });
  assert.equal(resume.status, 200, resume.body);
  await waitFor('the resume to be refused', 30_000, async () => ((await eventsOf(name)).some((e) => e.reason === 'ResumeRefused') ? true : undefined));
  await sleep(8_000);
  assert.equal((await getUpgrade(cluster, name))?.status?.phase, 'Paused');
  assert.equal(hook.calls.size, 1, 'no call while refused');

  writePolicy(await chartPolicy(BASELINE()));
  const final = await waitFor(`${name} to finish`, 6 * 60_000, async () => {
    const u = await getUpgrade(cluster, name);
    return u?.status?.phase === 'Succeeded' || u?.status?.phase === 'Failed' || (u?.status?.phase === 'Paused' && u.status.pause?.reason !== 'NotAllowedByPolicy') ? u : undefined;
  }, 500);
  assert.equal(final.status?.phase, 'Succeeded', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  const calls = [...hook.calls.values()].sort((a, b) => a.at - b.at);
  assert.deepEqual(calls.map((c) => `${c.action}:${c.hostname}`), ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  for (const c of calls) assert.equal(c.deliveries, 1, `key ${c.key} delivered once`);
  // The events follow the status write that decided them.
  const reasons = await waitFor('the events of the run', 30_000, async () => {
    const rs = (await eventsOf(name)).map((e) => e.reason);
    return ['Paused', 'ResumeRefused', 'Resumed', 'Succeeded'].every((r) => rs.includes(r)) ? rs : undefined;
  }).catch(async () => (await eventsOf(name)).map((e) => e.reason));
  for (const r of ['Paused', 'ResumeRefused', 'Resumed', 'Succeeded']) assert.ok(reasons.includes(r), `event ${r} (${reasons.join(', ')})`);
  assert.equal(trap.requests.filter((r) => r.at > calls[0]!.at).length, 0);
  await hook.idle();
});
