// The monitoring set-up of docs/monitoring.md ("With a Prometheus you configure yourself"), run as written on real
// components. Its blocks are read from the page by their marker comments and changed only where an address must
// be this machine's (the Alertmanager target, the receivers' URLs); the page's commands run in a folder laid out
// as they expect (the values file, `charts/` of this repository, alertmanager.yml):
// - three real kube-apiservers v1.35.4 behind haproxy; the operator as a process, /metrics behind TokenReview +
//   SubjectAccessReview (--metrics-auth=true, the chart's default), behind the chart's metrics Service rendered
//   with `helm template` and created in the real apiserver, with the EndpointSlice kube-controller-manager would
//   write for a ready Pod (this mode runs none);
// - the page's RBAC for Prometheus's ServiceAccount, then the chart's metrics RBAC rendered with the page's values;
// - a real Prometheus (upstream's v3, built from the Go module proxy with kubernetes_sd_configs, which Debian's
//   prometheus is built without) with the page's prometheus.yml, given what the kubelet gives a Pod (the ServiceAccount's
//   token and CA at the standard path, in a private mount namespace, and KUBERNETES_SERVICE_HOST/PORT), loaded
//   with the rules the page's `helm template … | sed …` renders from the real chart;
// - a real Alertmanager with the page's alertmanager.yml, whose receivers post to an HTTP server of this test;
// - an upgrade that pauses on its own (the e2e hook refuses the call: DriverFailed) and one that preflight
//   refuses (SkipsMinor: Failed), so one critical and one warning alert go through the routing;
// - an upgrade the operator's policy refuses (--policy-file lists the e2e hook only), which waits in preflight:
//   ApiServerUpgradeWaiting goes to the ticket receiver with the cluster's name (Prometheus' external label).
// Shortened for the test, and only here: scrape and evaluation every second (Prometheus's `global:`, which the
// page leaves to the reader) and the alerts' `for:` (5 s instead of 1m) through the values file, which the chart
// lets set; Alertmanager's group_wait stays the page's 30 s.
//   flock /tmp/auo-e2e.lock node_modules/.bin/node --test --test-reporter=spec e2e/alerting.e2e.ts
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { Cluster, ReplaceWebhook, OLD_VERSION, PROXY_GATE, waitFor } from './cluster/index.ts';
import { binary, PROMETHEUS_VERSION } from './cluster/binaries.ts';
import { freePort } from './cluster/cluster.ts';
import { requireCommands } from './cluster/requirements.ts';
import { tool, run, runOk } from './support/tools.ts';
import { createUpgrade, getUpgrade, installCrd, startOperator, type OperatorProcess } from './support/operator.ts';
import { upgradeManifest } from './support/rig.ts';
import { docBlock, substitute } from './support/doc-blocks.ts';
import { RELEASE_VERSION } from './support/release.ts';
import { AlertReceiver } from './support/alert-receiver.ts';
import { startAlertmanager, type Alertmanager } from './support/alertmanager.ts';
import { startInClusterPrometheus, type InClusterPrometheus } from './support/in-cluster-prometheus.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

const root = join(import.meta.dirname, '..');
const PAGE = join(root, 'docs', 'monitoring.md');
/** The page renders the rules from the published chart; this test renders the checkout's (at charts/ in its folder). */
const PUBLISHED_CHART = `oci://ghcr.io/apiserver-upgrade-operator/charts/apiserver-upgrade-operator --version ${RELEASE_VERSION}`;
const TAG = 'e2e/alerting.e2e.ts';
const block = (name: string) => docBlock(PAGE, TAG, name);

// The names the page uses: the chart's defaults (a release named like the chart keeps the chart's name as its fullname).
const RELEASE = 'apiserver-upgrade-operator';
const NS = 'apiserver-upgrade-operator';
const MONITORING = 'monitoring';
const METRICS_SERVICE = `${RELEASE}-metrics`;
/** The alerts' `for:` in this test (the chart's default is 1m): set through the values file, as a reader could. */
const ALERT_FOR = '5s';
const PAUSED = 'alerting-refused';
/** An upgrade the operator's policy refuses (its hook URL is not listed): it waits in preflight, NotAllowedByPolicy. */
const POLICY_REFUSED = 'alerting-policy-refused';
/** The cluster's name, as kube-prometheus-stack users set it: an external label of their Prometheus. */
const CLUSTER_NAME = 'e2e-east';
const FAILED = 'alerting-skips-minor';
/** A version no binary is built for: the e2e hook refuses to stop a server it cannot start again (422). */
const UNBUILDABLE = 'v1.36.99';
// The receivers' URLs of the page, and the paths of this test's server they are changed to.
const PAGER_BRIDGE = 'http://pager-bridge.monitoring.svc:8080';
const TICKET_BRIDGE = 'http://ticket-bridge.monitoring.svc:8080';
const PAGER_PATH = '/pager/alerts';
const TICKETS_PATH = '/tickets/alerts';

let cluster: Cluster | undefined;
let hook: ReplaceWebhook | undefined;
let op: OperatorProcess | undefined;
let receiver: AlertReceiver | undefined;
let am: Alertmanager | undefined;
let prom: InClusterPrometheus | undefined;
let kubectl: string;
let work: string;
let metricsAddress: string;

function report(msg: string): void {
  process.stderr.write(`[alerting] ${msg}\n`);
}

function k(args: string[], input?: string): Promise<string> {
  return runOk(kubectl, ['--kubeconfig', cluster!.kubeconfig, ...args], input === undefined ? {} : { input });
}

/** A block of the page run with bash (pipefail: a failing helm must not hide behind sed) in the test's folder. */
async function runPageScript(name: string, replacements: [string, string][] = []): Promise<{ code: number; stdout: string; stderr: string }> {
  const b = block(name);
  assert.equal(b.lang, 'sh', `${name} is a shell block`);
  // helm and promtool from where scripts/setup.ts puts them; the script runs as written but for the replacements.
  const path = [...new Set([dirname(tool('helm')), dirname(tool('promtool'))])].join(':');
  return run('bash', ['-e', '-o', 'pipefail', '-c', `export PATH=${path}:"$PATH"\n${substitute(b, replacements)}`], { cwd: work });
}

/** `helm template` of one chart template with the page's values file (as the page renders the rules). */
async function renderChart(template: string): Promise<string> {
  return runOk(tool('helm'), ['template', RELEASE, join(root, 'charts', 'apiserver-upgrade-operator'), '--namespace', NS, '--kube-version', OLD_VERSION,
    '-f', join(work, 'monitoring-values.yaml'), '--show-only', template]);
}

interface Target { scrapePool: string; scrapeUrl: string; labels: Record<string, string>; health: string; lastError: string }
interface Alert { labels: Record<string, string>; annotations: Record<string, string>; state: string; activeAt: string }

async function promGet<T>(path: string): Promise<T> {
  const res = await fetch(`${prom!.url}${path}`);
  const doc = (await res.json()) as { status: string; error?: string; data: T };
  assert.equal(doc.status, 'success', `${path}: ${doc.error}`);
  return doc.data;
}
const targets = async (): Promise<Target[]> => (await promGet<{ activeTargets: Target[] }>('/api/v1/targets?state=active')).activeTargets;
const firing = async (): Promise<Alert[]> => (await promGet<{ alerts: Alert[] }>('/api/v1/alerts')).alerts.filter((a) => a.state === 'firing');
const byJob = (ts: Target[], job: string): Target[] => ts.filter((t) => t.labels.job === job);

before(async () => {
  // Fail at once, naming the install command, when a tool is missing.
  kubectl = tool('kubectl');
  tool('helm');
  tool('promtool');
  requireCommands(['prometheus-alertmanager', 'amtool', 'unshare'], 'e2e/alerting.e2e.ts');
  // Built once from the Go module proxy (scripts/setup.ts e2e does it first), then from the cache.
  const promBin = await binary('prometheus', PROMETHEUS_VERSION);

  cluster = await Cluster.start({ servers: 3, featureGates: { [PROXY_GATE]: true }, verbose: true });
  await installCrd(cluster);
  hook = await ReplaceWebhook.start(cluster);

  // The folder the page's commands run in: its values file (with this test's `for:`), the chart at charts/.
  work = join(cluster.dir, 'monitoring');
  mkdirSync(work, { recursive: true });
  symlinkSync(join(root, 'charts'), join(work, 'charts'));
  const values = parse(block('monitoring-values.yaml').text) as { prometheusRule: Record<string, unknown> };
  values.prometheusRule.paused = { for: ALERT_FOR };
  values.prometheusRule.failed = { for: ALERT_FOR };
  // ApiServerUpgradeWaiting after 5 s of waiting (30m by default), for 5 s.
  values.prometheusRule.waiting = { after: '5s', for: ALERT_FOR, severity: 'warning' };
  writeFileSync(join(work, 'monitoring-values.yaml'), stringify(values));

  await k(['create', 'namespace', NS]);
  await k(['create', 'namespace', MONITORING]);
  await k(['apply', '-f', '-'], block('prometheus-rbac.yaml').text);

  // The operator as the chart runs it: /metrics on a port of its own, behind TokenReview + SubjectAccessReview,
  // over HTTPS with a self-signed certificate made at start (metrics.secure, metrics.tls.secretName empty). On the host end of the cluster's veth, a non-loopback address an
  // EndpointSlice may carry.
  const metricsPort = await freePort();
  metricsAddress = `${cluster.netns.hostAddress}:${metricsPort}`;
  // The operator's policy allows the e2e hook, and only it.
  const policyFile = join(work, 'policy.yaml');
  writeFileSync(policyFile, `apiVersion: upgrade.apiserver.dev/v1alpha1\nkind: OperatorPolicy\nwebhooks:\n  - url: ${hook.url}\n`);
  op = await startOperator(cluster, {
    healthPort: await freePort(),
    extraArgs: [`--metrics-port=${metricsPort}`, `--metrics-host=${cluster.netns.hostAddress}`, '--metrics-auth=true', '--policy-file', policyFile],
  });
  await k(['apply', '-f', '-'], await renderChart('templates/service.yaml'));
  // What the EndpointSlice controller writes for the Service's one ready Pod: the slice's port is the Pod's
  // port that the Service's targetPort (`metrics`) names, here the process's.
  await k(['apply', '-f', '-'], stringify({
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
    metadata: { name: `${METRICS_SERVICE}-e2e`, namespace: NS, labels: { 'kubernetes.io/service-name': METRICS_SERVICE, 'endpointslice.kubernetes.io/managed-by': 'e2e.apiserver-upgrade-operator' } },
    addressType: 'IPv4',
    ports: [{ name: 'metrics', port: metricsPort, protocol: 'TCP' }],
    endpoints: [{ addresses: [cluster.netns.hostAddress], conditions: { ready: true } }],
  }));

  // Alertmanager with the page's routing; its receivers post to this test.
  receiver = await AlertReceiver.start();
  am = await startAlertmanager({ dir: work, config: substitute(block('alertmanager.yml'), [[PAGER_BRIDGE, `${receiver.url}/pager`], [TICKET_BRIDGE, `${receiver.url}/tickets`]]) });

  // The page's rules command, run as written: it writes apiserver-upgrade-operator.rules.yml next to prometheus.yml.
  const rules = await runPageScript('rules.sh', [[PUBLISHED_CHART, 'charts/apiserver-upgrade-operator']]);
  assert.equal(rules.code, 0, `the page's rules command:\n${rules.stdout}${rules.stderr}`);
  assert.match(rules.stdout, /SUCCESS: 12 rules found/, rules.stdout); // eleven alerts, ApiServerUpgradeOperatorDown as a page and as a ticket

  const lb = new URL(cluster.lbUrl);
  prom = await startInClusterPrometheus({
    bin: promBin,
    dir: work,
    config: `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n  external_labels:\n    cluster: ${CLUSTER_NAME}\n${substitute(block('prometheus.yml'), [['alertmanager.monitoring.svc:9093', am.address]])}`,
    token: (await k(['create', 'token', 'prometheus', '-n', MONITORING, '--duration=1h'])).trim(),
    caFile: cluster.pki.caCert,
    api: { host: lb.hostname, port: Number(lb.port) },
  });
  report(`Prometheus ${prom.url}, Alertmanager ${am.url}, receivers ${receiver.url}, operator /metrics ${metricsAddress}; files in ${work}`);
});

after(async () => {
  await prom?.stop();
  await am?.stop();
  await receiver?.close();
  await op?.stop();
  await hook?.close();
  await cluster?.teardown();
});

test('the rules file of the page is the chart\'s eleven alerts, with the values\' labels and for:', () => {
  const file = parse(readFileSync(join(work, 'apiserver-upgrade-operator.rules.yml'), 'utf8')) as { groups: { name: string; rules: { alert: string; for: string; labels: Record<string, string>; expr: string }[] }[] };
  const rules = file.groups.flatMap((g) => g.rules);
  assert.equal(rules.length, 12);
  assert.equal(new Set(rules.map((r) => r.alert)).size, 11, 'eleven alerts: ApiServerUpgradeOperatorDown has a paging rule and a ticket rule');
  const paused = rules.find((r) => r.alert === 'ApiServerUpgradePaused');
  assert.deepEqual(paused?.labels, { severity: 'critical', team: 'control-plane' });
  assert.equal(paused?.for, ALERT_FOR);
  assert.match(paused?.expr ?? '', new RegExp(`job="${METRICS_SERVICE}", namespace="${NS}"`), 'the rules select the release\'s metrics job and namespace');
  for (const r of rules) assert.ok(['critical', 'warning', 'info'].includes(r.labels.severity!) && r.labels.team === 'control-plane', `${r.alert}: ${JSON.stringify(r.labels)}`);
});

test('with the page\'s discovery RBAC alone, Prometheus finds the three apiservers and the operator, and each refuses it (403)', async () => {
  const ts = await waitFor('4 targets discovered and scraped', 60_000, async () => {
    const all = await targets();
    const scraped = all.filter((t) => t.health !== 'unknown');
    return byJob(scraped, 'apiserver').length === 3 && byJob(scraped, METRICS_SERVICE).length === 1 ? all : undefined;
  }, 500);
  for (const t of ts) report(`before the metrics RBAC: ${t.labels.job} ${t.labels.instance} ${t.health} ${t.lastError}`);
  assert.equal(ts.length, 4, JSON.stringify(ts.map((t) => t.labels)));
  for (const t of ts) {
    assert.equal(t.health, 'down', `${t.scrapeUrl}`);
    assert.match(t.lastError, /403/, `${t.scrapeUrl}: ${t.lastError}`);
  }
});

test('with the chart\'s metrics RBAC (the page\'s values), the apiservers and the operator are up, labelled as the alert rules select them', async () => {
  await k(['apply', '-f', '-'], await renderChart('templates/clusterrole-metrics.yaml'));
  const t0 = Date.now();
  // The operator keeps a refusal for at most 10 s (metrics.auth.cacheTTL caps it), the apiservers none.
  const ts = await waitFor('every target up', 60_000, async () => {
    const all = await targets();
    return all.length === 4 && all.every((t) => t.health === 'up') ? all : undefined;
  }, 500);
  report(`all 4 targets up ${Date.now() - t0} ms after the chart's metrics RBAC`);
  const apiservers = byJob(ts, 'apiserver');
  assert.deepEqual(apiservers.map((t) => t.labels.instance).sort(), cluster!.servers.map((s) => `${s.address}:${s.port}`).sort(), 'each server directly, at its own address');
  for (const t of apiservers) assert.match(t.scrapeUrl, /^https:\/\//);
  const [operator] = byJob(ts, METRICS_SERVICE);
  assert.equal(operator?.labels.namespace, NS);
  assert.equal(operator?.labels.instance, metricsAddress);
  assert.equal(operator?.scrapeUrl, `https://${metricsAddress}/metrics`);
  // The expressions of the chart's operator alerts find the operator: ApiServerUpgradeOperatorDown's absent()
  // would be empty, NoLeader's max() is 1.
  const sel = `job="${METRICS_SERVICE}", namespace="${NS}"`;
  const q = async (query: string) => (await promGet<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(`/api/v1/query?query=${encodeURIComponent(query)}`)).result;
  assert.deepEqual(await q(`absent(up{${sel}} == 1)`), []);
  assert.deepEqual((await waitFor('the leader series', 15_000, async () => {
    const r = await q(`max(apiserver_upgrade_operator_leader{${sel}})`);
    return r.length > 0 ? r : undefined;
  }, 500)).map((s) => s.value[1]), ['1']);
  assert.equal((await q('count(kubernetes_build_info{job="apiserver"})'))[0]?.value[1], '3');
});

test('an upgrade that pauses on its own and one preflight refuses: ApiServerUpgradePaused (critical) and ApiServerUpgradeFailed (warning) fire in Prometheus', async () => {
  await createUpgrade(cluster!, {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name: FAILED },
    spec: { targetVersion: 'v1.37.0', driver: { webhook: { url: hook!.url, caBundle: hook!.caBundle } } },
  });
  const failed = await waitFor(`${FAILED} Failed`, 60_000, async () => {
    const u = await getUpgrade(cluster!, FAILED);
    return u?.status?.phase === 'Failed' ? u : undefined;
  }, 500);
  report(`${FAILED}: ${failed.status?.phase} ${failed.status?.conditions?.find((c) => c.type === 'PreflightPassed')?.reason}`);
  const m = upgradeManifest(PAUSED, hook!) as { spec: Record<string, unknown> };
  await createUpgrade(cluster!, { ...m, spec: { ...m.spec, targetVersion: UNBUILDABLE } });
  const paused = await waitFor(`${PAUSED} paused`, 90_000, async () => {
    const u: ApiServerUpgrade | undefined = await getUpgrade(cluster!, PAUSED);
    return u?.status?.phase === 'Paused' ? u : undefined;
  }, 500);
  const pausedAt = Date.now();
  report(`${PAUSED}: paused ${paused.status?.pause?.reason}: ${paused.status?.pause?.message}`);
  assert.equal(paused.status?.pause?.reason, 'DriverFailed');
  assert.ok([...hook!.log].some((e) => e.event === 'refused' && e.status === 422), 'the hook refused the call (422): nothing was stopped');

  const alerts = await waitFor('both alerts firing', 60_000, async () => {
    const a = await firing();
    const names = new Set(a.map((x) => x.labels.alertname));
    return names.has('ApiServerUpgradePaused') && names.has('ApiServerUpgradeFailed') ? a : undefined;
  }, 500);
  report(`firing ${Date.now() - pausedAt} ms after the pause: ${alerts.map((a) => JSON.stringify(a.labels)).join(' ')}`);
  assert.deepEqual(alerts.map((a) => a.labels.alertname).sort(), ['ApiServerUpgradeFailed', 'ApiServerUpgradePaused'], 'nothing else fires');
  const p = alerts.find((a) => a.labels.alertname === 'ApiServerUpgradePaused')!;
  assert.deepEqual(p.labels, { alertname: 'ApiServerUpgradePaused', upgrade: PAUSED, reason: 'DriverFailed', severity: 'critical', team: 'control-plane' });
  assert.equal(p.annotations.runbook_url, undefined, 'a chart from a checkout links to no runbook (a release sets prometheusRule.runbookUrl)');
  assert.match(p.annotations.summary ?? '', new RegExp(`${PAUSED} is paused \\(DriverFailed\\)`));
  const f = alerts.find((a) => a.labels.alertname === 'ApiServerUpgradeFailed')!;
  assert.deepEqual(f.labels, { alertname: 'ApiServerUpgradeFailed', upgrade: FAILED, severity: 'warning', team: 'control-plane' });
  assert.equal(f.annotations.runbook_url, undefined);
});

test('Alertmanager, with the page\'s routing, pages ApiServerUpgradePaused and files ApiServerUpgradeFailed as a ticket, each grouped by alertname and upgrade', async () => {
  const t0 = Date.now();
  await waitFor('a notification on each receiver', 120_000, async () => (receiver!.alerts(PAGER_PATH).length > 0 && receiver!.alerts(TICKETS_PATH).length > 0 ? true : undefined), 500);
  report(`delivered ${Date.now() - t0} ms after both fired (group_wait 30s): ${receiver!.received.map((r) => `${r.path} ${r.body.receiver} ${JSON.stringify(r.body.groupLabels)}`).join('; ')}`);
  assert.deepEqual([...new Set(receiver!.received.map((r) => r.path))].sort(), [PAGER_PATH, TICKETS_PATH], 'only the two receivers of the page');

  const pager = receiver!.alerts(PAGER_PATH);
  assert.deepEqual(pager.map((x) => x.alert.labels.alertname), ['ApiServerUpgradePaused'], 'the pager got the pause, and nothing else');
  const { notification: pn, alert: pa } = pager[0]!;
  assert.equal(pn.receiver, 'control-plane-pager');
  assert.equal(pn.status, 'firing');
  assert.deepEqual(pn.groupLabels, { alertname: 'ApiServerUpgradePaused', upgrade: PAUSED });
  assert.deepEqual(pa.labels, { alertname: 'ApiServerUpgradePaused', upgrade: PAUSED, reason: 'DriverFailed', severity: 'critical', team: 'control-plane', cluster: CLUSTER_NAME });
  assert.equal(pa.annotations.runbook_url, undefined);
  assert.match(pa.annotations.runbook ?? '', new RegExp(`kubectl annotate asu ${PAUSED} upgrade.apiserver.dev/resume=`), 'the resume command');

  const tickets = receiver!.alerts(TICKETS_PATH);
  assert.deepEqual(tickets.map((x) => x.alert.labels.alertname), ['ApiServerUpgradeFailed'], 'the ticket queue got the failure, and not the pause');
  assert.equal(tickets[0]!.notification.receiver, 'control-plane-tickets');
  assert.deepEqual(tickets[0]!.notification.groupLabels, { alertname: 'ApiServerUpgradeFailed', upgrade: FAILED });
  assert.equal(tickets[0]!.alert.labels.severity, 'warning');
});

test('the page\'s amtool checks pass on its alertmanager.yml, and amtool fails a route test that names the wrong receiver', async () => {
  const r = await runPageScript('amtool.sh');
  report(`amtool: ${r.stdout.trim().replace(/\n/g, ' | ')}`);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /SUCCESS/);
  for (const receiverName of ['control-plane-pager', 'control-plane-tickets', 'default']) assert.match(r.stdout, new RegExp(`^${receiverName}$`, 'm'));
  // The same warning alert the page sends to the tickets, checked against the pager: refused.
  const wrong = await run('amtool', ['config', 'routes', 'test', '--config.file=alertmanager.yml', '--verify.receivers=control-plane-pager',
    'alertname=ApiServerUpgradeStuck', 'severity=warning', 'team=control-plane', 'upgrade=to-v1-36'], { cwd: work });
  assert.notEqual(wrong.code, 0, wrong.stdout);
  assert.match(wrong.stdout + wrong.stderr, /control-plane-tickets/);
});

test('an upgrade the operator\'s policy refuses waits in preflight: ApiServerUpgradeWaiting fires through Alertmanager to the ticket receiver, its summary naming the cluster', async () => {
  // One upgrade at a time: the paused one goes first (its alert resolves).
  const del = await cluster!.request('lb', `/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades/${PAUSED}`, { method: 'DELETE' });
  assert.ok(del.status === 200 || del.status === 404, del.body);
  await createUpgrade(cluster!, {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name: POLICY_REFUSED },
    spec: { targetVersion: 'v1.36.3', driver: { webhook: { url: 'https://replacer.not-allowed.example/replace' } } },
  });
  const u = await waitFor(`${POLICY_REFUSED} waiting on the policy`, 60_000, async () => {
    const x = await getUpgrade(cluster!, POLICY_REFUSED);
    return x?.status?.waiting?.reason === 'NotAllowedByPolicy' ? x : undefined;
  }, 500);
  assert.equal(u.status?.phase, 'Preflight');
  assert.deepEqual(u.status?.driverCalls ?? [], []);
  const t0 = Date.now();
  const [alert] = await waitFor('ApiServerUpgradeWaiting firing', 90_000, async () => {
    const a = (await firing()).filter((x) => x.labels.alertname === 'ApiServerUpgradeWaiting');
    return a.length > 0 ? a : undefined;
  }, 500);
  report(`ApiServerUpgradeWaiting firing ${Date.now() - t0} ms after the wait was seen: ${JSON.stringify(alert!.labels)} ${alert!.annotations.summary}`);
  assert.equal(alert!.labels.upgrade, POLICY_REFUSED);
  assert.equal(alert!.labels.reason, 'NotAllowedByPolicy');
  assert.equal(alert!.annotations.summary, `${CLUSTER_NAME}: ApiServerUpgrade ${POLICY_REFUSED} has waited more than 5s (NotAllowedByPolicy)`);
  const delivered = await waitFor('the ticket receiver to get it', 120_000, async () => {
    const t = receiver!.alerts(TICKETS_PATH).filter((x) => x.alert.labels.alertname === 'ApiServerUpgradeWaiting');
    return t.length > 0 ? t : undefined;
  }, 500);
  const { notification, alert: got } = delivered[0]!;
  report(`delivered to ${notification.receiver} ${Date.now() - t0} ms after the wait was seen: ${JSON.stringify(got.labels)}`);
  assert.equal(notification.receiver, 'control-plane-tickets');
  assert.equal(got.labels.cluster, CLUSTER_NAME, 'the cluster\'s name is a label of the alert Alertmanager got');
  assert.equal(got.labels.severity, 'warning');
  assert.equal(got.annotations.summary, `${CLUSTER_NAME}: ApiServerUpgrade ${POLICY_REFUSED} has waited more than 5s (NotAllowedByPolicy)`);
  assert.ok(!receiver!.alerts(PAGER_PATH).some((x) => x.alert.labels.alertname === 'ApiServerUpgradeWaiting'), 'a wait is a ticket, not a page');
});
