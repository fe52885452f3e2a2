// docs/monitoring.md "With kube-prometheus-stack (prometheus-operator)", run on real components:
// - three real kube-apiservers v1.35.4 behind haproxy, and a real kube-controller-manager running only its
//   serviceaccount-token controller (it fills the chart's scraper token Secret, as in any cluster);
// - the real prometheus-operator v0.85.0 (built from its Go module, run as a process with the admin's certificate)
//   with its own CRDs and the flags kube-prometheus-stack 77.14.0 gives it, and that chart's Prometheus and
//   Alertmanager objects with their default selectors (e2e/support/kube-prometheus-stack.ts says which fields);
//   the page's cluster name as prometheus.prometheusSpec.externalLabels, the page's routing merged into the
//   chart's alertmanager.config;
// - the page's install block, run as written with helm against the cluster (the chart from the checkout, and a
//   values file of this test that shortens the scrape interval and the alerts' `for:`); the operator as a process
//   behind the chart's metrics Service, with the Endpoints and EndpointSlice the controllers would write for its Pod;
// - no kubelet runs the StatefulSets prometheus-operator writes. What their Pods would run is run as processes, fed
//   with what prometheus-operator generated: the Prometheus binary (upstream v3.16.0) with the StatefulSet's
//   Secret and ConfigMap volumes laid out at their mount paths (a private mount namespace), the configuration as its
//   config-reloader writes it (gunzipped, $(POD_NAME) and $(SHARD) expanded), the StatefulSet's flags, and the
//   Prometheus ServiceAccount's token where the kubelet puts it; Debian's Alertmanager with the configuration
//   prometheus-operator generated from the chart's alertmanager Secret, reached through the Endpoints of the
//   chart's Alertmanager Service, its receivers posting to this test.
// Last, a token Secret filled after prometheus-operator read it (the token controller stopped meanwhile): with
// kube-prometheus-stack's --secret-field-selector no event of it reaches prometheus-operator, and the page's
// `kubectl label` of the ServiceMonitor brings the job in.
//   flock /tmp/auo-e2e.lock node_modules/.bin/node --test --test-reporter=spec e2e/extended/prometheus-operator.e2e.ts
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { Cluster, ReplaceWebhook, OLD_VERSION, PROXY_GATE, waitFor } from '../cluster/index.ts';
import { binary, ensureBinaries, PROMETHEUS_OPERATOR_VERSION, PROMETHEUS_VERSION } from '../cluster/binaries.ts';
import { freePort } from '../cluster/cluster.ts';
import { ManagedProcess } from '../cluster/process.ts';
import { requireCommands } from '../cluster/requirements.ts';
import { tool, run, runOk } from '../support/tools.ts';
import { createUpgrade, getUpgrade, installCrd, startOperator, type OperatorProcess } from '../support/operator.ts';
import { upgradeManifest } from '../support/rig.ts';
import { docBlock, substitute } from '../support/doc-blocks.ts';
import { RELEASE_VERSION } from '../support/release.ts';
import { AlertReceiver } from '../support/alert-receiver.ts';
import { startAlertmanager, type Alertmanager } from '../support/alertmanager.ts';
import { startInClusterPrometheus, type InClusterPrometheus } from '../support/in-cluster-prometheus.ts';
import { KPS_ALERTMANAGER, KPS_CHART_VERSION, KPS_NAMESPACE, KPS_PROMETHEUS, KPS_RELEASE, kpsAlertmanagerConfigWith, kpsObjects, kpsOperatorArgs, type AlertmanagerConfig } from '../support/kube-prometheus-stack.ts';
import { containerArgs, containerEnv, materializeMounts, prometheusOperatorCrdDir, reloaderOutput, startPrometheusOperator, type PrometheusOperatorProcess, type StatefulSet } from '../support/prometheus-operator.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

const root = join(import.meta.dirname, '..', '..');
const PAGE = join(root, 'docs', 'monitoring.md');
const TAG = 'e2e/extended/prometheus-operator.e2e.ts';
const PUBLISHED_CHART = `oci://ghcr.io/apiserver-upgrade-operator/charts/apiserver-upgrade-operator --version ${RELEASE_VERSION}`;
const RELEASE = 'apiserver-upgrade-operator';
const NS = 'apiserver-upgrade-operator';
const METRICS_SERVICE = `${RELEASE}-metrics`;
const SCRAPER = `system:serviceaccount:${NS}:${RELEASE}-metrics-scraper`;
const SM_JOB = `serviceMonitor/${NS}/${RELEASE}/0`;
const CLUSTER_NAME = 'e2e-east';
const PAUSED = 'kps-refused';
const AUTH_TTL = '5s';
/** A version no binary is built for: the e2e hook refuses to stop a server it cannot start again (422). */
const UNBUILDABLE = 'v1.36.99';
const PAGER_BRIDGE = 'http://pager-bridge.monitoring.svc:8080';
const TICKET_BRIDGE = 'http://ticket-bridge.monitoring.svc:8080';
const PAGER_PATH = '/pager/alerts';
/** The Pod prometheus-operator's StatefulSet would start first. */
const PROMETHEUS_POD = `prometheus-${KPS_PROMETHEUS}-0`;

let cluster: Cluster | undefined;
let hook: ReplaceWebhook | undefined;
let kcm: ManagedProcess | undefined;
let kcmBinPath: string;
let pop: PrometheusOperatorProcess | undefined;
let op: OperatorProcess | undefined;
let receiver: AlertReceiver | undefined;
let am: Alertmanager | undefined;
let prom: InClusterPrometheus | undefined;
let kubectl: string;
let work: string;
let metricsAddress: string;
let generated: string;

function report(msg: string): void {
  process.stderr.write(`[prometheus-operator] ${msg}\n`);
}

function k(args: string[], input?: string): Promise<string> {
  return runOk(kubectl, ['--kubeconfig', cluster!.kubeconfig, ...args], input === undefined ? {} : { input });
}

async function getJson<T>(args: string[]): Promise<T | undefined> {
  const r = await run(kubectl, ['--kubeconfig', cluster!.kubeconfig, 'get', ...args, '-o', 'json']);
  return r.code === 0 ? (JSON.parse(r.stdout) as T) : undefined;
}

async function data(kind: 'Secret' | 'ConfigMap', name: string, ns = KPS_NAMESPACE): Promise<Record<string, Buffer>> {
  const o = await getJson<{ data?: Record<string, string>; binaryData?: Record<string, string> }>([kind.toLowerCase(), name, '-n', ns]);
  if (!o) throw new Error(`${kind} ${ns}/${name} does not exist`);
  const out: Record<string, Buffer> = {};
  for (const [key, v] of Object.entries(o.data ?? {})) out[key] = kind === 'Secret' ? Buffer.from(v, 'base64') : Buffer.from(v, 'utf8');
  for (const [key, v] of Object.entries(o.binaryData ?? {})) out[key] = Buffer.from(v, 'base64');
  return out;
}

/** What the endpoints and EndpointSlice controllers write for a Service whose one ready Pod is this process. */
async function endpointsFor(ns: string, service: string, port: { name: string; port: number }, address: string): Promise<void> {
  await k(['apply', '-f', '-'], [
    stringify({ apiVersion: 'v1', kind: 'Endpoints', metadata: { name: service, namespace: ns }, subsets: [{ addresses: [{ ip: address }], ports: [{ ...port, protocol: 'TCP' }] }] }),
    stringify({
      apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
      metadata: { name: `${service}-e2e`, namespace: ns, labels: { 'kubernetes.io/service-name': service, 'endpointslice.kubernetes.io/managed-by': 'e2e.apiserver-upgrade-operator' } },
      addressType: 'IPv4', ports: [{ ...port, protocol: 'TCP' }], endpoints: [{ addresses: [address], conditions: { ready: true } }],
    }),
  ].join('---\n'));
}

/** A block of the page run with bash (pipefail) as a reader would: kubectl and helm first on PATH, KUBECONFIG the cluster's. */
function runPageScript(name: string, tag = TAG, replacements: [string, string][] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  const b = docBlock(PAGE, tag, name);
  assert.equal(b.lang, 'sh', `${name} is a shell block`);
  const path = [...new Set([dirname(tool('helm')), dirname(kubectl)])].join(':');
  return run('bash', ['-e', '-o', 'pipefail', '-c', `export PATH=${path}:"$PATH" KUBECONFIG=${cluster!.kubeconfig}\n${substitute(b, replacements)}`], { cwd: work });
}

/**
 * kube-controller-manager running its serviceaccount-token controller alone: it writes the token into Secrets of
 * type kubernetes.io/service-account-token, signed with the key the apiservers verify.
 */
async function startTokenController(): Promise<ManagedProcess> {
  const kcmDir = join(cluster!.dir, 'kcm');
  mkdirSync(kcmDir, { recursive: true });
  const port = await freePort();
  const p = new ManagedProcess(kcmBinPath, [
    `--kubeconfig=${cluster!.kubeconfig}`, `--authentication-kubeconfig=${cluster!.kubeconfig}`, `--authorization-kubeconfig=${cluster!.kubeconfig}`,
    '--bind-address=127.0.0.1', `--secure-port=${port}`, `--cert-dir=${kcmDir}`, '--leader-elect=false',
    '--controllers=serviceaccount-token', `--service-account-private-key-file=${cluster!.pki.saKey}`, `--root-ca-file=${cluster!.pki.caCert}`,
  ], join(kcmDir, 'kcm.log'));
  return p;
}

/** The configuration prometheus-operator generated, as the config-reloader hands it to Prometheus. */
async function generatedConfig(): Promise<string> {
  const gz = (await data('Secret', `prometheus-${KPS_PROMETHEUS}`))['prometheus.yaml.gz'];
  if (!gz) throw new Error(`prometheus-${KPS_PROMETHEUS} has no prometheus.yaml.gz`);
  return reloaderOutput(gz, { POD_NAME: PROMETHEUS_POD, SHARD: '0' });
}

interface Target { scrapePool: string; scrapeUrl: string; labels: Record<string, string>; health: string; lastError: string }
async function promGet<T>(path: string): Promise<T> {
  const res = await fetch(`${prom!.url}${path}`);
  const doc = (await res.json()) as { status: string; error?: string; data: T };
  assert.equal(doc.status, 'success', `${path}: ${doc.error}`);
  return doc.data;
}

before(async () => {
  kubectl = tool('kubectl');
  tool('helm');
  requireCommands(['prometheus-alertmanager', 'unshare'], 'e2e/extended/prometheus-operator.e2e.ts');
  const [, popBin, kcmBin] = await ensureBinaries([
    { what: 'prometheus', version: PROMETHEUS_VERSION }, { what: 'prometheus-operator', version: PROMETHEUS_OPERATOR_VERSION }, { what: 'kube-controller-manager', version: OLD_VERSION },
  ]);
  const crdDir = prometheusOperatorCrdDir(PROMETHEUS_OPERATOR_VERSION);

  cluster = await Cluster.start({ servers: 3, featureGates: { [PROXY_GATE]: true }, verbose: true });
  await installCrd(cluster);
  hook = await ReplaceWebhook.start(cluster);
  work = join(cluster.dir, 'kps');
  mkdirSync(work, { recursive: true });
  symlinkSync(join(root, 'charts'), join(work, 'charts'));
  await k(['create', 'namespace', NS]);
  await k(['create', 'namespace', KPS_NAMESPACE]);

  kcmBinPath = kcmBin!;
  kcm = await startTokenController();

  // prometheus-operator's CRDs (server-side: the Prometheus CRD is larger than a client-side apply's annotation).
  await k(['apply', '--server-side', '-f', crdDir]);
  await k(['wait', '--for=condition=Established', '--timeout=60s', ...readdirSync(crdDir).filter((f) => f.endsWith('.yaml')).map((f) => `crd/${f.replace(/^monitoring\.coreos\.com_(.*)\.yaml$/, '$1.monitoring.coreos.com')}`)]);

  // kube-prometheus-stack's objects, with the page's routing in alertmanager.config (receivers posting here).
  receiver = await AlertReceiver.start();
  const pageRouting = parse(substitute(docBlock(PAGE, 'e2e/alerting.e2e.ts', 'alertmanager.yml'), [[PAGER_BRIDGE, `${receiver.url}/pager`], [TICKET_BRIDGE, `${receiver.url}/tickets`]])) as AlertmanagerConfig;
  await k(['apply', '-f', '-'], kpsObjects({
    alertmanagerConfig: stringify(kpsAlertmanagerConfigWith(pageRouting)),
    // The page's value (prometheus.prometheusSpec.externalLabels), and for the test only: 1 s intervals.
    prometheusSpec: { externalLabels: { cluster: CLUSTER_NAME }, scrapeInterval: '1s', evaluationInterval: '1s' },
  }).map((o) => stringify(o)).join('---\n'));

  pop = await startPrometheusOperator({
    bin: popBin!, dir: work, apiserver: cluster.lbUrl, caFile: cluster.pki.caCert, certFile: cluster.pki.adminCert, keyFile: cluster.pki.adminKey, args: kpsOperatorArgs(),
  });

  // The operator as a process behind the chart's metrics Service (rendered by the install below).
  const metricsPort = await freePort();
  metricsAddress = `${cluster.netns.hostAddress}:${metricsPort}`;
  op = await startOperator(cluster, { healthPort: await freePort(), extraArgs: [`--metrics-port=${metricsPort}`, `--metrics-host=${cluster.netns.hostAddress}`, '--metrics-auth=true',
    // For the test only: an allowed review is reused 5 s (metrics.auth.cacheTTL, 1m by default).
    `--metrics-auth-cache-ttl=${AUTH_TTL}`] });

  // The page's install block, as written but for the chart's location and this test's shortened intervals.
  writeFileSync(join(work, 'e2e-shortened.yaml'), stringify({ serviceMonitor: { interval: '1s', scrapeTimeout: '1s' }, prometheusRule: { paused: { for: '5s' } } }));
  const install = await runPageScript('kube-prometheus-stack.sh', 'test/docs/install-blocks.test.ts', [
    [PUBLISHED_CHART, 'charts/apiserver-upgrade-operator'],
    ['--set-json \'prometheusRule.alertLabels={"team":"control-plane"}\'', '--set-json \'prometheusRule.alertLabels={"team":"control-plane"}\' -f e2e-shortened.yaml'],
  ]);
  assert.equal(install.code, 0, `the page's install block:\n${install.stdout}${install.stderr}`);
  await endpointsFor(NS, METRICS_SERVICE, { name: 'metrics', port: metricsPort }, cluster.netns.hostAddress);
  report(`prometheus-operator ${pop.url}, operator /metrics ${metricsAddress}, receivers ${receiver.url}; files in ${work}`);
});

after(async () => {
  await prom?.stop();
  await am?.stop();
  await receiver?.close();
  await op?.stop();
  await pop?.stop();
  await kcm?.stop(10_000);
  await hook?.close();
  await cluster?.teardown();
});

test('prometheus-operator, with kube-prometheus-stack\'s default selectors, puts the chart\'s ServiceMonitor in the generated configuration with the scraper\'s token', async () => {
  const t0 = Date.now();
  generated = await waitFor(`${SM_JOB} in prometheus-${KPS_PROMETHEUS}`, 90_000, async () => {
    const d = await data('Secret', `prometheus-${KPS_PROMETHEUS}`).catch(() => undefined);
    const gz = d?.['prometheus.yaml.gz'];
    if (!gz) return undefined;
    const text = reloaderOutput(gz, { POD_NAME: PROMETHEUS_POD, SHARD: '0' });
    return text.includes(`job_name: ${SM_JOB}`) ? text : undefined;
  }, 1000).catch((err: Error) => {
    const log = readFileSync(pop!.proc.logPath, 'utf8').split('\n').filter((l) => /servicemonitor|secret|level=(warn|error)/i.test(l)).slice(-20).join('\n');
    throw new Error(`${err.message}\nprometheus-operator's log:\n${log}`);
  });
  report(`${SM_JOB} generated ${Date.now() - t0} ms after the install`);
  const cfg = parse(generated) as { global: { external_labels: Record<string, string> }; scrape_configs: { job_name: string; authorization?: { type?: string; credentials?: string }; tls_config?: Record<string, unknown>; scheme?: string }[] };
  assert.equal(cfg.global.external_labels.cluster, CLUSTER_NAME);
  const job = cfg.scrape_configs.find((s) => s.job_name === SM_JOB)!;
  assert.equal(job.scheme, 'https');
  assert.equal(job.tls_config?.insecure_skip_verify, true);
  const token = (await data('Secret', `${RELEASE}-metrics-scraper-token`, NS)).token?.toString('utf8');
  assert.ok(token, 'the token controller filled the scraper\'s Secret');
  assert.equal(job.authorization?.credentials, token, 'the job sends the token of the chart\'s scraper Secret');
  const review = JSON.parse(await k(['create', '-o', 'json', '-f', '-'], JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } }))) as { status: { authenticated: boolean; user: { username: string } } };
  assert.equal(review.status.authenticated, true);
  assert.equal(review.status.user.username, SCRAPER);
  // The page's commands that check the same in a cluster, run as written.
  const check = await runPageScript('kube-prometheus-stack-check.sh');
  assert.equal(check.code, 0, `the page's check:\n${check.stdout}${check.stderr}`);
  assert.match(check.stdout, new RegExp(`job_name: ${SM_JOB}\n`));
  assert.match(check.stdout, /^yes$/m);
});

test('a ServiceMonitor without the documented release label is left out; the same one with it is taken', async () => {
  type Sm = { metadata: { name: string; namespace: string; labels: Record<string, string> }; spec: unknown };
  const sm = (await getJson<Sm>(['servicemonitor', RELEASE, '-n', NS]))!;
  const copy = (name: string, labels: Record<string, string>): string => JSON.stringify({ apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', metadata: { name, namespace: NS, labels }, spec: sm.spec });
  const { release, ...others } = sm.metadata.labels;
  assert.equal(release, KPS_RELEASE, 'the page\'s serviceMonitor.labels.release');
  // The unlabelled one first: the configuration that has the labelled one was generated with both there.
  await k(['create', '-f', '-'], copy(`${RELEASE}-unlabelled`, others));
  await k(['create', '-f', '-'], copy(`${RELEASE}-labelled`, sm.metadata.labels));
  const text = await waitFor('the labelled copy in the configuration', 60_000, async () => {
    const gz = (await data('Secret', `prometheus-${KPS_PROMETHEUS}`))['prometheus.yaml.gz']!;
    const t = reloaderOutput(gz, { POD_NAME: PROMETHEUS_POD, SHARD: '0' });
    return t.includes(`job_name: serviceMonitor/${NS}/${RELEASE}-labelled/0`) ? t : undefined;
  }, 1000);
  assert.ok(!text.includes(`serviceMonitor/${NS}/${RELEASE}-unlabelled/`), 'kube-prometheus-stack\'s serviceMonitorSelector leaves it out');
  await k(['delete', 'servicemonitor', '-n', NS, `${RELEASE}-unlabelled`, `${RELEASE}-labelled`]);
  await waitFor('the labelled copy gone from the configuration', 60_000, async () => {
    const gz = (await data('Secret', `prometheus-${KPS_PROMETHEUS}`))['prometheus.yaml.gz']!;
    return reloaderOutput(gz, { POD_NAME: PROMETHEUS_POD, SHARD: '0' }).includes(`${RELEASE}-labelled/`) ? undefined : true;
  }, 1000);
});

test('Prometheus, run with prometheus-operator\'s output, scrapes the operator up with the scraper\'s identity and loads the chart\'s PrometheusRule', async () => {
  // Alertmanager first, with the configuration prometheus-operator generated from kube-prometheus-stack's Secret.
  const amConfig = await waitFor('the generated Alertmanager configuration', 60_000, async () => (await data('Secret', `alertmanager-${KPS_ALERTMANAGER}-generated`).catch(() => undefined))?.['alertmanager.yaml.gz'], 1000);
  am = await startAlertmanager({ dir: join(work, 'alertmanager'), config: reloaderOutput(amConfig, {}), host: cluster!.netns.hostAddress });
  await endpointsFor(KPS_NAMESPACE, KPS_ALERTMANAGER, { name: 'http-web', port: Number(am.address.split(':')[1]) }, cluster!.netns.hostAddress);

  const sts = await waitFor('the Prometheus StatefulSet', 60_000, () => getJson<StatefulSet>(['statefulset', `prometheus-${KPS_PROMETHEUS}`, '-n', KPS_NAMESPACE]), 1000);
  const mounted = await materializeMounts(sts, 'prometheus', '/etc/prometheus', join(work, 'pod-root'), (kind, name) => data(kind, name));
  report(`the Prometheus container's volumes under /etc/prometheus: ${mounted.join(', ')}`);
  const args = containerArgs(sts, 'prometheus');
  const configFile = args.find((a) => a.startsWith('--config.file='))?.slice('--config.file='.length);
  if (configFile === undefined || !configFile.startsWith('/etc/prometheus/')) assert.fail(`the StatefulSet's --config.file: ${JSON.stringify(args)}`);
  // What the config-reloader writes into the shared emptyDir, from the Secret it mounts (the latest generated one).
  const gz = (await data('Secret', `prometheus-${KPS_PROMETHEUS}`))['prometheus.yaml.gz']!;
  const out = join(work, 'pod-root', configFile.slice(1));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, reloaderOutput(gz, containerEnv(sts, 'config-reloader', PROMETHEUS_POD)));
  const own = ['--config.file=', '--storage.tsdb.path=', '--web.listen-address=', '--storage.tsdb.retention.time=', '--log.level='];
  report(`the StatefulSet's Prometheus flags (${own.join(', ')} set by the harness instead): ${args.join(' ')}`);
  const lb = new URL(cluster!.lbUrl);
  const promDir = join(work, 'prometheus');
  prom = await startInClusterPrometheus({
    bin: await binary('prometheus', PROMETHEUS_VERSION), dir: promDir, config: '', configFile,
    binds: [{ from: join(work, 'pod-root', 'etc', 'prometheus'), to: '/etc/prometheus' }],
    args: args.filter((a) => !own.some((f) => a.startsWith(f))),
    token: (await k(['create', 'token', KPS_PROMETHEUS, '-n', KPS_NAMESPACE, '--duration=1h'])).trim(),
    caFile: cluster!.pki.caCert, api: { host: lb.hostname, port: Number(lb.port) },
  }).catch((err: Error) => {
    // The cluster's folder goes with the teardown: the log's end goes into the failure.
    throw new Error(`${err.message}\n${readFileSync(join(promDir, 'prometheus.log'), 'utf8').slice(-3000)}`);
  });

  const t0 = Date.now();
  const target = await waitFor(`${SM_JOB} up`, 60_000, async () => {
    const ts = (await promGet<{ activeTargets: Target[] }>('/api/v1/targets?state=active')).activeTargets.filter((t) => t.scrapePool === SM_JOB);
    return ts.length === 1 && ts[0]!.health === 'up' ? ts[0] : undefined;
  }, 500);
  report(`${SM_JOB} up ${Date.now() - t0} ms after Prometheus started: ${target.scrapeUrl} ${JSON.stringify(target.labels)}`);
  assert.equal(target.scrapeUrl, `https://${metricsAddress}/metrics`);
  assert.equal(target.labels.job, METRICS_SERVICE, 'job = the Service\'s name, as the chart\'s rules select');
  assert.equal(target.labels.namespace, NS);

  const groups = (await promGet<{ groups: { name: string; file: string; rules: { name: string; labels?: Record<string, string> }[] }[] }>('/api/v1/rules')).groups;
  const ours = groups.filter((g) => g.file.includes(`/${NS}-${RELEASE}-`));
  report(`rule groups from the PrometheusRule: ${ours.map((g) => `${g.name} (${g.rules.length}) in ${g.file}`).join('; ')}`);
  assert.ok(ours.length > 0, JSON.stringify(groups.map((g) => g.file)));
  assert.ok(ours.every((g) => g.file.startsWith(`/etc/prometheus/rules/prometheus-${KPS_PROMETHEUS}-rulefiles-`)), 'the rules ConfigMap prometheus-operator wrote, at its mount path');
  const rules = ours.flatMap((g) => g.rules);
  assert.equal(rules.length, 12, 'eleven alerts, ApiServerUpgradeOperatorDown as a page and as a ticket');
  assert.ok(rules.every((r) => r.labels?.team === 'control-plane'), 'the page\'s alertLabels');
});

test('the scrape is the scraper\'s: without the chart\'s binding of it the operator refuses that user (403), with the binding back the target is up', async () => {
  const binding = `${RELEASE}-metrics-scraper`;
  const saved = (await getJson<{ metadata: Record<string, unknown> } & Record<string, unknown>>(['clusterrolebinding', binding]))!;
  await k(['delete', 'clusterrolebinding', binding]);
  const t0 = Date.now();
  // The operator keeps an allowed review for metrics.auth.cacheTTL (AUTH_TTL here).
  const down = await waitFor(`${SM_JOB} refused`, 60_000, async () => {
    const [t] = (await promGet<{ activeTargets: Target[] }>('/api/v1/targets?state=active')).activeTargets.filter((x) => x.scrapePool === SM_JOB);
    return t?.health === 'down' ? t : undefined;
  }, 500);
  report(`without ${binding}: down ${Date.now() - t0} ms after the delete: ${down.lastError}`);
  assert.match(down.lastError, /403/);
  const refused = op!.logLines().filter((l) => l.message === 'metrics authorization: forbidden');
  assert.ok(refused.length > 0, 'the operator logged the refusal');
  assert.deepEqual([...new Set(refused.map((l) => l.user))], [SCRAPER], 'the only identity the operator refused is the chart\'s scraper');
  const { name, labels } = saved.metadata as { name: string; labels: Record<string, string> };
  await k(['create', '-f', '-'], JSON.stringify({ ...saved, metadata: { name, labels } }));
  await waitFor(`${SM_JOB} up again`, 60_000, async () => {
    const [t] = (await promGet<{ activeTargets: Target[] }>('/api/v1/targets?state=active')).activeTargets.filter((x) => x.scrapePool === SM_JOB);
    return t?.health === 'up' ? t : undefined;
  }, 500);
  report(`with ${binding} back: up ${Date.now() - t0} ms after the delete`);
});

test('an upgrade that pauses pages through Alertmanager with the cluster\'s name', async () => {
  const m = upgradeManifest(PAUSED, hook!) as { spec: Record<string, unknown> };
  await createUpgrade(cluster!, { ...m, spec: { ...m.spec, targetVersion: UNBUILDABLE } });
  const paused = await waitFor(`${PAUSED} paused`, 90_000, async () => {
    const u: ApiServerUpgrade | undefined = await getUpgrade(cluster!, PAUSED);
    return u?.status?.phase === 'Paused' ? u : undefined;
  }, 500);
  const pausedAt = Date.now();
  assert.equal(paused.status?.pause?.reason, 'DriverFailed');
  const delivered = await waitFor('the pager to get ApiServerUpgradePaused', 120_000, async () => {
    const a = receiver!.alerts(PAGER_PATH).filter((x) => x.alert.labels.alertname === 'ApiServerUpgradePaused');
    return a.length > 0 ? a : undefined;
  }, 500);
  const { notification, alert } = delivered[0]!;
  report(`paged ${Date.now() - pausedAt} ms after the pause: ${notification.receiver} ${JSON.stringify(alert.labels)}`);
  assert.equal(notification.receiver, 'control-plane-pager');
  assert.equal(alert.labels.cluster, CLUSTER_NAME, 'the external label of kube-prometheus-stack\'s Prometheus');
  assert.equal(alert.labels.prometheus, `${KPS_NAMESPACE}/${KPS_PROMETHEUS}`, 'prometheus-operator\'s own external label');
  assert.equal(alert.labels.upgrade, PAUSED);
  assert.equal(alert.labels.reason, 'DriverFailed');
  assert.equal(alert.labels.severity, 'critical');
  report(`kube-prometheus-stack ${KPS_CHART_VERSION} (${KPS_RELEASE}), prometheus-operator ${PROMETHEUS_OPERATOR_VERSION}`);
});

test('a scraper token filled after prometheus-operator read its Secret: the ServiceMonitor stays out (kube-prometheus-stack watches no token Secrets) until the page\'s label change brings it in', async () => {
  // Reproduced with a second ServiceMonitor and token Secret of the same scraper, made while no token controller runs.
  await kcm!.stop(10_000);
  const late = `${RELEASE}-late`;
  const sm = (await getJson<{ metadata: { labels: Record<string, string> }; spec: { endpoints: { authorization?: { credentials?: { name: string } } }[] } }>(['servicemonitor', RELEASE, '-n', NS]))!;
  await k(['create', '-f', '-'], JSON.stringify({
    apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/service-account-token',
    metadata: { name: `${late}-token`, namespace: NS, annotations: { 'kubernetes.io/service-account.name': `${RELEASE}-metrics-scraper` } },
  }));
  const endpoints = sm.spec.endpoints.map((e) => ({ ...e, authorization: { ...e.authorization, credentials: { name: `${late}-token`, key: 'token' } } }));
  await k(['create', '-f', '-'], JSON.stringify({ apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', metadata: { name: late, namespace: NS, labels: sm.metadata.labels }, spec: { ...sm.spec, endpoints } }));
  const skipped = await waitFor('prometheus-operator to skip it', 60_000, async () => readFileSync(pop!.proc.logPath, 'utf8').split('\n')
    .find((l) => l.includes('msg="skipping object"') && l.includes(`object=${NS}/${late}`) && l.includes(`secret \\"${late}-token\\" not found`)), 500);
  report(`prometheus-operator: ${skipped.replace(/^.*msg=/, 'msg=')}`);

  kcm = await startTokenController();
  await waitFor(`the token controller to fill ${late}-token`, 60_000, async () => ((await data('Secret', `${late}-token`, NS)).token ? true : undefined), 500);
  const filledAt = Date.now();
  // No event of that Secret reaches prometheus-operator (--secret-field-selector): the configuration stays as it was.
  await new Promise((r) => setTimeout(r, 15_000));
  assert.ok(!(await generatedConfig()).includes(`serviceMonitor/${NS}/${late}/`), `still left out ${Date.now() - filledAt} ms after the token was filled`);

  // An annotation is no change to prometheus-operator (it reacts to a ServiceMonitor's generation or labels).
  await k(['-n', NS, 'annotate', 'servicemonitor', RELEASE, `${RELEASE}/annotated-at=${Date.now()}`, '--overwrite']);
  await new Promise((r) => setTimeout(r, 5_000));
  assert.ok(!(await generatedConfig()).includes(`serviceMonitor/${NS}/${late}/`), 'still left out after an annotation');
  // The page's way out: a label change to a selected ServiceMonitor makes prometheus-operator read every Secret again.
  const touch = await runPageScript('kube-prometheus-stack-late-token.sh');
  assert.equal(touch.code, 0, touch.stdout + touch.stderr);
  const t0 = Date.now();
  await waitFor(`${late} in the configuration`, 60_000, async () => ((await generatedConfig()).includes(`job_name: serviceMonitor/${NS}/${late}/0`) ? true : undefined), 500);
  report(`${late}: left out for 15 s after its token was filled; in the configuration ${Date.now() - t0} ms after the label change`);
  await k(['delete', 'servicemonitor', '-n', NS, late]);
  await k(['delete', 'secret', '-n', NS, `${late}-token`]);
});
