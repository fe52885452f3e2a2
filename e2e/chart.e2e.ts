// The Helm chart, checked with the ecosystem's own tools against a real apiserver:
// helm lint/template; every rendered object sent to the server with a server-side dry run; the alert rules
// checked and unit-tested with promtool (their CRDs, monitoring.coreos.com, are absent from the cluster);
// the chart's RBAC created for real and asked with `kubectl auth can-i` for every call the operator makes
// (and a few it must not make); then the operator itself run with a token of the chart's ServiceAccount.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { Cluster, OLD_VERSION, NEW_VERSION, waitFor } from './cluster/index.ts';
import { tool, run, runOk } from './support/tools.ts';
import { startOperator, getUpgrade, type OperatorProcess } from './support/operator.ts';

const root = join(import.meta.dirname, '..');
const CHART = join(root, 'charts', 'apiserver-upgrade-operator');
const CRD_FILE = 'apiserverupgrades.upgrade.apiserver.dev.yaml';
const RELEASE = 'apiserver-upgrade-operator';
const NS = 'upgrade-system';
const SA = `system:serviceaccount:${NS}:${RELEASE}`;
const MONITORING = 'monitoring.coreos.com/v1';
const HOOK_SECRET = 'hook-token';

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [k: string]: unknown;
}

let cluster: Cluster;
let helm: string;
let kubectl: string;
let promtool: string;
let work: string;
let operator: OperatorProcess | undefined;

before(async () => {
  // Fail at once, with the command that installs it, when a tool is missing.
  helm = tool('helm');
  kubectl = tool('kubectl');
  promtool = tool('promtool');
  work = mkdtempSync(join(tmpdir(), 'auo-chart-'));
  cluster = await Cluster.start({ servers: 1, verbose: true });
  await k(['create', 'namespace', NS]);
});
after(async () => {
  await operator?.stop();
  await cluster?.teardown();
  if (work) rmSync(work, { recursive: true, force: true });
});

function k(args: string[], input?: string): Promise<string> {
  return runOk(kubectl, ['--kubeconfig', cluster.kubeconfig, ...args], input === undefined ? {} : { input });
}

/** `helm template` of the chart into parsed objects; `--kube-version` is the cluster's (a `go install`ed helm defaults to v1.20). */
async function render(set: string[] = [], includeCrds = false): Promise<K8sObject[]> {
  const args = ['template', RELEASE, CHART, '--namespace', NS, '--kube-version', OLD_VERSION, ...(includeCrds ? ['--include-crds'] : []), ...set.flatMap((s) => ['--set', s])];
  const out = await runOk(helm, args);
  return parseAllDocuments(out).map((d) => d.toJSON() as K8sObject | null).filter((o): o is K8sObject => o !== null);
}

const MONITORING_ON = ['serviceMonitor.enabled=true', 'prometheusRule.enabled=true'];
const WITH_HOOK_SECRET = [`rbac.webhookAuthSecrets[0].namespace=${NS}`, `rbac.webhookAuthSecrets[0].name=${HOOK_SECRET}`];

const id = (o: K8sObject): string => `${o.kind}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
const find = (objs: K8sObject[], kind: string, name?: string): K8sObject[] => objs.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));

test('helm lint --strict passes with the default values and with monitoring on', async () => {
  for (const set of [[], MONITORING_ON, WITH_HOOK_SECRET]) {
    const r = await run(helm, ['lint', '--strict', CHART, '--namespace', NS, '--kube-version', OLD_VERSION, ...set.flatMap((s) => ['--set', s])]);
    assert.equal(r.code, 0, `helm lint ${set.join(' ')}:\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  }
});

test('helm template with the default values: the objects a Deployment of the operator needs', async () => {
  const objs = await render([], true);
  const kinds = objs.map((o) => o.kind).sort();
  for (const kind of ['CustomResourceDefinition', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Deployment', 'Service', 'PodDisruptionBudget']) {
    assert.ok(kinds.includes(kind), `no ${kind} rendered: ${kinds.join(', ')}`);
  }
  assert.equal(find(objs, 'ServiceMonitor').length + find(objs, 'PrometheusRule').length, 0, 'monitoring objects are off by default');

  // The chart's CRD is the generated one (test/api/generated.test.ts keeps the files equal).
  const crd = find(objs, 'CustomResourceDefinition')[0]!;
  assert.deepEqual(crd, parse(readFileSync(join(root, 'crds', CRD_FILE), 'utf8')));

  const dep = find(objs, 'Deployment', RELEASE)[0] as unknown as { spec: { replicas: number; template: { spec: Record<string, unknown> & { containers: Record<string, unknown>[] } } } };
  assert.equal(dep.spec.replicas, 2);
  const pod = dep.spec.template.spec;
  assert.ok((pod.terminationGracePeriodSeconds as number) >= 35, 'the operator drains for up to 30 s after SIGTERM');
  assert.deepEqual(pod.nodeSelector, { 'node-role.kubernetes.io/control-plane': '' });
  assert.equal((pod.securityContext as { runAsNonRoot: boolean }).runAsNonRoot, true);
  const c = pod.containers[0] as { args: string[]; env: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[]; livenessProbe: { httpGet: { path: string } }; readinessProbe: { httpGet: { path: string } }; securityContext: Record<string, unknown> };
  assert.equal(c.livenessProbe.httpGet.path, '/healthz');
  assert.equal(c.readinessProbe.httpGet.path, '/readyz');
  assert.equal(c.env.find((e) => e.name === 'POD_NAMESPACE')?.valueFrom?.fieldRef?.fieldPath, 'metadata.namespace');
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  for (const flag of ['--in-cluster', `--leader-election-namespace=${NS}`, '--leader-election-name=apiserver-upgrade-operator', '--health-port=8081', '--log-level=info']) {
    assert.ok(c.args.includes(flag), `args ${c.args.join(' ')} lack ${flag}`);
  }
  // Nothing but the operator's own calls: no wildcard, no secrets without a name.
  for (const o of [...find(objs, 'ClusterRole'), ...find(objs, 'Role')]) {
    for (const rule of (o as unknown as { rules: { resources?: string[]; verbs: string[]; resourceNames?: string[] }[] }).rules) {
      assert.ok(!rule.verbs.includes('*') && !(rule.resources ?? []).includes('*'), `${id(o)} has a wildcard rule`);
      assert.ok(!(rule.resources ?? []).includes('secrets'), `${id(o)} grants secrets with the default values`);
    }
  }
});

test('every rendered object passes a server-side dry run on the real apiserver (monitoring objects excepted)', async () => {
  const rendered = [...await render([], true), ...await render([...MONITORING_ON, ...WITH_HOOK_SECRET])];
  const seen = new Set<string>();
  const objs = rendered.filter((o) => {
    const key = `${o.apiVersion}/${id(o)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const monitoring = objs.filter((o) => o.apiVersion === MONITORING);
  assert.deepEqual(monitoring.map((o) => o.kind).sort(), ['PrometheusRule', 'ServiceMonitor']);
  const rest = objs.filter((o) => o.apiVersion !== MONITORING);
  const out = await k(['apply', '--server-side', '--field-manager=helm-e2e', '--dry-run=server', '-o', 'name', '-f', '-'], rest.map((o) => `---\n${stringify(o)}`).join(''));
  const names = out.trim().split('\n').filter(Boolean);
  assert.equal(names.length, rest.length, `dry run answered for ${names.length} of ${rest.length} objects:\n${out}`);
  // Nothing was created: a dry run leaves the cluster as it was.
  const r = await run(kubectl, ['--kubeconfig', cluster.kubeconfig, 'get', 'deployment', RELEASE, '-n', NS]);
  assert.notEqual(r.code, 0);
  // The ServiceMonitor and PrometheusRule cannot be dry-run without prometheus-operator's CRDs: the server says so.
  const refused = await run(kubectl, ['--kubeconfig', cluster.kubeconfig, 'apply', '--server-side', '--dry-run=server', '-f', '-'], { input: stringify(monitoring[0]) });
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /no matches for kind|resource mapping not found/);
});

type RuleGroup = { name: string; rules: { alert: string; expr: string; annotations: Record<string, string> }[] };

async function ruleFile(): Promise<{ path: string; groups: RuleGroup[]; annotations: (alert: string) => Record<string, string> }> {
  const rule = find(await render(MONITORING_ON), 'PrometheusRule')[0] as unknown as { spec: { groups: { name: string; rules: { alert: string; expr: string; annotations: Record<string, string> }[] }[] } };
  const path = join(work, 'rules.yaml');
  writeFileSync(path, stringify({ groups: rule.spec.groups }));
  const annotations = (alert: string): Record<string, string> => {
    const a = { ...rule.spec.groups.flatMap((g) => g.rules).find((r) => r.alert === alert)!.annotations };
    delete a.runbook_url;
    return a;
  };
  return { path, groups: rule.spec.groups, annotations };
}

test('promtool check rules: the PrometheusRule groups are valid Prometheus rules', async () => {
  const { path, groups } = await ruleFile();
  const alerts = groups.flatMap((g) => g.rules.map((r) => r.alert)).sort();
  assert.deepEqual(alerts, ['ApiServerUpgradeOperatorDown', 'ApiServerUpgradeOperatorNoLeader', 'ApiServerUpgradePaused', 'ApiServerUpgradeReconcileErrors', 'ApiServerUpgradeStuck']);
  const paused = groups[0]!.rules.find((r) => r.alert === 'ApiServerUpgradePaused')!;
  assert.match(paused.annotations.runbook!, /kubectl annotate asu \{\{ \$labels\.upgrade \}\} upgrade\.apiserver\.dev\/resume=\$\(date \+%s\) --overwrite/);
  assert.match(paused.annotations.runbook!, /kubectl patch asu \{\{ \$labels\.upgrade \}\} --type merge -p '\{"spec":\{"paused":false\}\}'/);
  const out = await runOk(promtool, ['check', 'rules', path]);
  assert.match(out, /SUCCESS: 5 rules found/);
});

test('promtool test rules: the alerts fire on the series the operator exports, and only then', async () => {
  const { path, annotations } = await ruleFile();
  const op = `job="${RELEASE}-metrics", namespace="${NS}", pod="op-0"`;
  const tests = {
    rule_files: [path],
    evaluation_interval: '1m',
    tests: [
      {
        // Paused for 2 minutes: fires after its `for: 1m`, with the reason; the other upgrade, paused by its
        // spec (asked for, not an incident), never pages.
        interval: '1m',
        input_series: [
          { series: `apiserver_upgrade_paused{${op}, upgrade="to-v1-36", reason="AnalysisBreach"}`, values: '1x5' },
          { series: `apiserver_upgrade_paused{${op}, upgrade="calm", reason="PausedBySpec"}`, values: '1x5' },
          { series: `up{${op}}`, values: '1x5' },
          { series: `apiserver_upgrade_operator_leader{${op}}`, values: '1x5' },
        ],
        alert_rule_test: [
          { eval_time: '30s', alertname: 'ApiServerUpgradePaused', exp_alerts: [] },
          {
            eval_time: '2m', alertname: 'ApiServerUpgradePaused',
            exp_alerts: [{
              exp_labels: { severity: 'page', upgrade: 'to-v1-36', reason: 'AnalysisBreach' },
              exp_annotations: {
                summary: 'ApiServerUpgrade to-v1-36 is paused (AnalysisBreach)',
                description: 'The rolling upgrade of the kube-apiservers stopped with reason AnalysisBreach. Servers may be on different versions until it is resumed or rolled back. See why with: kubectl describe asu to-v1-36',
                runbook: 'Read status.pause.message and the events (kubectl describe asu to-v1-36), fix the cause (docs/operations.md, section "Pause reasons"), then resume: kubectl annotate asu to-v1-36 upgrade.apiserver.dev/resume=$(date +%s) --overwrite . For a declarative pause (reason PausedBySpec) set spec.paused to false in Git, or: kubectl patch asu to-v1-36 --type merge -p \'{"spec":{"paused":false}}\'',
              },
            }],
          },
          { eval_time: '2m', alertname: 'ApiServerUpgradeOperatorDown', exp_alerts: [] },
          { eval_time: '5m', alertname: 'ApiServerUpgradeOperatorNoLeader', exp_alerts: [] },
        ],
      },
      {
        // Never paused: nothing fires.
        interval: '1m',
        input_series: [{ series: `apiserver_upgrade_paused{${op}, upgrade="to-v1-36", reason="AnalysisBreach"}`, values: '0x10' }],
        alert_rule_test: [{ eval_time: '10m', alertname: 'ApiServerUpgradePaused', exp_alerts: [] }],
      },
      {
        // Upgrading on batch 2 for 2 hours: stuck (not before an hour and 15 minutes). Another upgrade advanced
        // a batch 30 minutes ago: not stuck. One that was paused until 30 minutes ago: not stuck either.
        interval: '5m',
        input_series: [
          { series: `apiserver_upgrade_phase{${op}, upgrade="stuck", phase="Upgrading"}`, values: '1x24' },
          { series: `apiserver_upgrade_batch_current{${op}, upgrade="stuck"}`, values: '2x24' },
          { series: `apiserver_upgrade_phase{${op}, upgrade="moving", phase="Upgrading"}`, values: '1x24' },
          { series: `apiserver_upgrade_batch_current{${op}, upgrade="moving"}`, values: '1x17 2x6' },
          { series: `apiserver_upgrade_phase{${op}, upgrade="resumed", phase="Upgrading"}`, values: '0x17 1x6' },
          { series: `apiserver_upgrade_batch_current{${op}, upgrade="resumed"}`, values: '3x24' },
        ],
        alert_rule_test: [
          { eval_time: '30m', alertname: 'ApiServerUpgradeStuck', exp_alerts: [] },
          { eval_time: '70m', alertname: 'ApiServerUpgradeStuck', exp_alerts: [] },
          { eval_time: '2h', alertname: 'ApiServerUpgradeStuck', exp_alerts: [{ exp_labels: { severity: 'warning', upgrade: 'stuck' }, exp_annotations: { summary: 'ApiServerUpgrade stuck has not advanced a batch for 1h', description: 'The upgrade is in phase Upgrading but its current batch has not changed. Check the operator\'s logs and the upgrade\'s status.peers (kubectl get asu stuck -o yaml): a server that never becomes ready at the target version, or an operator that cannot reach the apiservers.' } }] },
        ],
      },
      {
        // No scrape target up for 10 minutes: down. Up but not leading: no leader. Reconciles failing steadily.
        interval: '1m',
        input_series: [
          { series: `up{${op}}`, values: '0x20' },
          { series: `apiserver_upgrade_operator_leader{${op}}`, values: '0x20' },
          { series: `apiserver_upgrade_operator_reconcile_errors_total{${op}}`, values: '0+1x40' },
        ],
        alert_rule_test: [
          { eval_time: '10m', alertname: 'ApiServerUpgradeOperatorDown', exp_alerts: [{ exp_labels: { severity: 'critical' }, exp_annotations: annotations('ApiServerUpgradeOperatorDown') }] },
          { eval_time: '10m', alertname: 'ApiServerUpgradeOperatorNoLeader', exp_alerts: [{ exp_labels: { severity: 'critical' }, exp_annotations: annotations('ApiServerUpgradeOperatorNoLeader') }] },
          { eval_time: '10m', alertname: 'ApiServerUpgradeReconcileErrors', exp_alerts: [] },
          {
            eval_time: '35m', alertname: 'ApiServerUpgradeReconcileErrors',
            exp_alerts: [{ exp_labels: { severity: 'warning' }, exp_annotations: { ...annotations('ApiServerUpgradeReconcileErrors'), description: annotations('ApiServerUpgradeReconcileErrors').description!.replace('{{ $value | humanize }}', '15') } }],
          },
        ],
      },
    ],
  };
  const testPath = join(work, 'rules.test.yaml');
  writeFileSync(testPath, stringify(tests));
  const r = await run(promtool, ['test', 'rules', testPath]);
  assert.equal(r.code, 0, `promtool test rules:\n${r.stdout}${r.stderr}`);
  assert.match(r.stdout + r.stderr, /SUCCESS/);
});

/** `kubectl auth can-i <verb> <what> [-n ns] [--subresource s]` as the chart's ServiceAccount. */
async function canI(verb: string, what: string, o: { ns?: string; sub?: string } = {}): Promise<boolean> {
  const args = ['--kubeconfig', cluster.kubeconfig, 'auth', 'can-i', verb, what, `--as=${SA}`, ...(o.ns ? ['-n', o.ns] : []), ...(o.sub ? [`--subresource=${o.sub}`] : [])];
  const r = await run(kubectl, args);
  if (r.code !== 0 && r.code !== 1) throw new Error(`kubectl ${args.join(' ')}: exit ${r.code}: ${r.stderr}`);
  return r.stdout.trim() === 'yes';
}

test('the chart\'s RBAC, created for real, grants each call the operator makes and nothing it must not make', async () => {
  const objs = (await render(WITH_HOOK_SECRET, true)).filter((o) => ['CustomResourceDefinition', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind));
  await k(['apply', '--server-side', '--field-manager=helm-e2e', '-f', '-'], objs.map((o) => `---\n${stringify(o)}`).join(''));
  await k(['wait', '--for=condition=Established', `crd/${CRD_FILE.replace(/\.yaml$/, '')}`, '--timeout=60s']);

  const upgrades = 'apiserverupgrades.upgrade.apiserver.dev';
  const allowed: [string, string, { ns?: string; sub?: string }?][] = [
    ['get', upgrades], ['list', upgrades], ['watch', upgrades],
    ['patch', upgrades, { sub: 'status' }],
    ['list', 'leases.coordination.k8s.io', { ns: 'kube-system' }], ['watch', 'leases.coordination.k8s.io', { ns: 'kube-system' }],
    ['create', 'leases.coordination.k8s.io', { ns: NS }],
    ['get', 'leases.coordination.k8s.io/apiserver-upgrade-operator', { ns: NS }],
    ['update', 'leases.coordination.k8s.io/apiserver-upgrade-operator', { ns: NS }],
    ['list', 'endpointslices.discovery.k8s.io', { ns: 'default' }],
    ['list', 'pods', { ns: 'kube-system' }],
    ['create', 'events.events.k8s.io', { ns: 'default' }],
    ['get', `secrets/${HOOK_SECRET}`, { ns: NS }],
    ['create', 'jobs.batch', { ns: 'kube-system' }], ['get', 'jobs.batch', { ns: 'kube-system' }],
    ['list', 'apiservices.apiregistration.k8s.io'],
    ...['/version', '/readyz', '/metrics', '/api', '/api/v1', '/apis', '/apis/apps/v1'].map((p): [string, string] => ['get', p]),
  ];
  const denied: [string, string, { ns?: string; sub?: string }?][] = [
    ['delete', 'secrets', { ns: NS }], ['list', 'secrets', { ns: NS }], ['get', 'secrets/other', { ns: NS }], ['get', `secrets/${HOOK_SECRET}`, { ns: 'kube-system' }],
    ['update', upgrades], ['patch', upgrades], ['delete', upgrades], ['create', upgrades], ['update', upgrades, { sub: 'status' }],
    ['update', 'leases.coordination.k8s.io/some-other-lease', { ns: NS }], ['delete', 'leases.coordination.k8s.io/apiserver-upgrade-operator', { ns: NS }],
    ['update', 'leases.coordination.k8s.io', { ns: 'kube-system' }], ['create', 'leases.coordination.k8s.io', { ns: 'kube-system' }],
    ['create', 'jobs.batch', { ns: 'default' }], ['delete', 'jobs.batch', { ns: 'kube-system' }],
    ['create', 'pods', { ns: 'kube-system' }], ['list', 'pods', { ns: NS }],
    ['create', 'events.events.k8s.io', { ns: 'kube-system' }],
    ['get', '/debug/pprof/'], ['get', '/logs/'],
  ];
  const check = async (list: typeof allowed, want: boolean): Promise<string[]> => {
    const answers = await Promise.all(list.map(async ([verb, what, o]) => ({ q: `${verb} ${what}${o?.sub ? `/${o.sub}` : ''}${o?.ns ? ` -n ${o.ns}` : ''}`, yes: await canI(verb, what, o) })));
    return answers.filter((a) => a.yes !== want).map((a) => a.q);
  };
  assert.deepEqual(await check(allowed, true), [], 'the chart\'s RBAC lacks calls the operator makes');
  assert.deepEqual(await check(denied, false), [], 'the chart\'s RBAC grants more than the operator needs');
});

test('the operator runs with a token of the chart\'s ServiceAccount: leads, reconciles, reads its Secret, with no 403', async () => {
  // A kubeconfig with nothing but a token of the ServiceAccount the chart created (TokenRequest API).
  const token = (await k(['create', 'token', RELEASE, '-n', NS, '--duration=1h'])).trim();
  const saKubeconfig = join(work, 'sa.kubeconfig');
  writeFileSync(saKubeconfig, stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'sa',
    clusters: [{ name: 'e2e', cluster: { server: cluster.lbUrl, 'certificate-authority': cluster.pki.caCert } }],
    users: [{ name: 'sa', user: { token } }],
    contexts: [{ name: 'sa', context: { cluster: 'e2e', user: 'sa' } }],
  }));
  await k(['create', 'secret', 'generic', HOOK_SECRET, '-n', NS, '--from-literal=token=e2e-token']);
  const name = 'chart-rbac';
  await k(['apply', '-f', '-'], stringify({
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name },
    // Nobody listens on port 9: every driver call fails transiently and is retried, after the Secret was read.
    spec: { targetVersion: NEW_VERSION, driver: { webhook: { url: 'https://127.0.0.1:9/replace', timeout: '2s', authSecretRef: { namespace: NS, name: HOOK_SECRET, key: 'token' } } }, analysis: { interval: '5s' } },
  }));

  operator = await startOperator(cluster, { healthPort: 18000 + Math.floor(Math.random() * 1000), extraArgs: ['--kubeconfig', saKubeconfig, '--leader-election-namespace', NS] });
  const u = await waitFor('the operator to write the upgrade\'s status', 90_000, async () => {
    const x = await getUpgrade(cluster, name);
    return x?.status?.phase && x.status.phase !== 'Pending' ? x : undefined;
  });
  assert.equal(u.status?.observedGeneration, 1);
  const lease = JSON.parse(await k(['get', 'lease', 'apiserver-upgrade-operator', '-n', NS, '-o', 'json'])) as { spec: { holderIdentity?: string } };
  assert.ok(lease.spec.holderIdentity, 'the leader Lease has a holder');
  const events = JSON.parse(await k(['get', 'events.events.k8s.io', '-n', 'default', '--field-selector', `regarding.name=${name}`, '-o', 'json'])) as { items: { reason: string }[] };
  assert.ok(events.items.some((e) => e.reason === 'Started'), `events: ${events.items.map((e) => e.reason).join(', ')}`);
  const metrics = await (await fetch(`http://127.0.0.1:${operator.healthPort}/metrics`)).text();
  assert.match(metrics, /^apiserver_upgrade_operator_leader 1$/m);

  // The gate is off on v1.35, so the operator first asks the driver to turn it on: the call goes out
  // (and fails to connect), which it could only do after reading the Secret.
  const attempt = await waitFor('a driver call that got past the Secret', 90_000, async () => {
    const lines = operator!.logLines();
    return lines.find((l) => /secret|forbidden/i.test(String(l.err ?? ''))) ?? lines.find((l) => l.message === 'driver call failed, will retry with the same key');
  });
  assert.doesNotMatch(String(attempt.err), /secret|forbidden/i, JSON.stringify(attempt));
  assert.match(String(attempt.err), /127\.0\.0\.1:9/, JSON.stringify(attempt));
  const forbidden = operator.logLines().filter((l) => /forbidden|\b403\b/i.test(JSON.stringify(l)));
  assert.deepEqual(forbidden, [], 'the operator hit a permission it lacks');
});
