// The Helm chart, checked with the ecosystem's own tools against a real apiserver:
// helm lint/template, and values.schema.json refusing wrong values; every rendered object sent to the server
// with a server-side dry run; the alert rules checked and unit-tested with promtool, every alert firing when it
// should and staying silent otherwise (their CRDs, monitoring.coreos.com, are absent from the cluster); the CRD
// upgrade step (kubectl apply --server-side --force-conflicts over a CRD Helm created, objects kept); the
// chart's RBAC created for real and asked with `kubectl auth can-i` for every call the operator makes (and a
// few it must not make), the aggregated -view/-edit roles used for real; then the operator itself run with a
// token of the chart's ServiceAccount, its /metrics guarded by TokenReview + SubjectAccessReview over HTTPS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { Cluster, OLD_VERSION, NEW_VERSION, waitFor } from './cluster/index.ts';
import { tool, run, runOk } from './support/tools.ts';
import { startOperator, getUpgrade, type OperatorProcess } from './support/operator.ts';
import { createServingCert } from './cluster/pki.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';
import { resolveSpec } from '../src/api/defaults.ts';
import { agentJob } from '../src/drivers/static-pod.ts';
import { idempotencyKey } from '../src/plan/keys.ts';
import type { DriverRequest } from '../src/plan/actions.ts';
import { anchorsOf, expanded, renderRules, type RuleFile } from './support/alert-rules.ts';

const root = join(import.meta.dirname, '..');
const CHART = join(root, 'charts', 'apiserver-upgrade-operator');
const CRD_FILE = 'apiserverupgrades.upgrade.apiserver.dev.yaml';
const RELEASE = 'apiserver-upgrade-operator';
const NS = 'upgrade-system';
const SA = `system:serviceaccount:${NS}:${RELEASE}`;
const MONITORING = 'monitoring.coreos.com/v1';
const HOOK_SECRET = 'hook-token';
const CRD_NAME = 'apiserverupgrades.upgrade.apiserver.dev';
const API_VERSION = 'upgrade.apiserver.dev/v1alpha1';
/** The ServiceAccount the chart binds to its metrics-reader ClusterRole (metrics.reader.subjects), as Prometheus's would be. */
const READER_SA = 'prometheus';
const AGENT_NS = 'apiserver-upgrade-agents';
/** A released chart's prometheusRule.runbookUrl (scripts/release/plan.ts): the tag's docs/operations.md. */
const RUNBOOK = 'https://github.com/apiserver-upgrade-operator/apiserver-upgrade-operator/blob/v0.2.0/docs/operations.md';
const ALERTS = [
  'ApiServerUpgradeEnablingProxyStalled', 'ApiServerUpgradeFailed', 'ApiServerUpgradeOperatorDown', 'ApiServerUpgradeOperatorNoLeader', 'ApiServerUpgradePaused',
  'ApiServerUpgradeReconcileErrors', 'ApiServerUpgradeRollbackStalled', 'ApiServerUpgradeRolledBack', 'ApiServerUpgradeStuck', 'ApiServerUpgradeWaiting',
  'ApiServerUpgradeWaitingForWindow',
];

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
const WITH_READER = ['metrics.reader.subjects[0].kind=ServiceAccount', `metrics.reader.subjects[0].namespace=${NS}`, `metrics.reader.subjects[0].name=${READER_SA}`];
/** Every optional object on (kubeadmConfig.write adds the admission policy on kube-system/kubeadm-config). */
const EVERYTHING_ON = [...MONITORING_ON, ...WITH_HOOK_SECRET, ...WITH_READER, 'networkPolicy.enabled=true', 'metrics.tls.secretName=metrics-tls', 'kubeadmConfig.write=true'];

const id = (o: K8sObject): string => `${o.kind}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
const find = (objs: K8sObject[], kind: string, name?: string): K8sObject[] => objs.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));

test('helm lint --strict passes with the default values, with monitoring on, with every optional object on and off', async () => {
  for (const set of [[], MONITORING_ON, WITH_HOOK_SECRET, EVERYTHING_ON, ['metrics.auth.enabled=false', 'rbac.aggregateToView=false', 'rbac.aggregateToEdit=false']]) {
    const r = await run(helm, ['lint', '--strict', CHART, '--namespace', NS, '--kube-version', OLD_VERSION, ...set.flatMap((s) => ['--set', s])]);
    assert.equal(r.code, 0, `helm lint ${set.join(' ')}:\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  }
});

test('values.schema.json: helm lint and helm template refuse a wrong type, an unknown key, a bad duration or URL', async () => {
  const cases: [string, RegExp][] = [
    ['replicas=two', /at '\/replicas': got string, want integer/],
    ['metrics.auth.enabled=maybe', /at '\/metrics\/auth\/enabled': got string, want boolean/],
    ['healthPort=http', /at '\/healthPort': got string, want integer/],
    ['logLevel=verbose', /at '\/logLevel'/],
    ['prometheusRule.paused.for=soon', /at '\/prometheusRule\/paused\/for': 'soon' does not match pattern/],
    ['metrics.auth.cacheTTL=1d', /at '\/metrics\/auth\/cacheTTL'/],
    ['prometheusRule.runbookUrl=docs/operations.md', /at '\/prometheusRule\/runbookUrl'/],
    ['replica=3', /additional properties 'replica' not allowed/],
    ['networkPolicy.metricsFrom[0].namespace=monitoring', /at '\/networkPolicy\/metricsFrom\/0': additional properties 'namespace' not allowed/],
  ];
  const base = [CHART, '--namespace', NS, '--kube-version', OLD_VERSION];
  for (const [set, why] of cases) {
    const lint = await run(helm, ['lint', '--strict', ...base, '--set', set]);
    assert.notEqual(lint.code, 0, `helm lint --set ${set} passed`);
    assert.match(lint.stdout + lint.stderr, why, `helm lint --set ${set}`);
    const tpl = await run(helm, ['template', RELEASE, ...base, '--set', set]);
    assert.notEqual(tpl.code, 0, `helm template --set ${set} rendered`);
    assert.match(tpl.stderr, /values don't meet the specifications of the schema/);
    assert.match(tpl.stderr, why, `helm template --set ${set}`);
  }
  // One rule JSON Schema cannot say: /metrics needs a port of its own.
  const same = await run(helm, ['template', RELEASE, ...base, '--set', 'metrics.port=8081']);
  assert.notEqual(same.code, 0);
  assert.match(same.stderr, /metrics\.port and healthPort must differ/);
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
  const c = pod.containers[0] as { args: string[]; env: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[]; livenessProbe: { httpGet: { path: string } }; readinessProbe: { httpGet: { path: string } }; securityContext: Record<string, unknown> };
  assert.equal(c.livenessProbe.httpGet.path, '/healthz');
  assert.equal(c.readinessProbe.httpGet.path, '/readyz');
  assert.equal(c.env.find((e) => e.name === 'POD_NAMESPACE')?.valueFrom?.fieldRef?.fieldPath, 'metadata.namespace');
  // The heap sizing the chart's memory figures were measured with (values.yaml nodeOptions, bench/fleet.bench.ts).
  assert.equal(c.env.find((e) => e.name === 'NODE_OPTIONS')?.value, '--max-semi-space-size=4 --max-old-space-size=160');
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  for (const flag of ['--in-cluster', `--leader-election-namespace=${NS}`, '--leader-election-name=apiserver-upgrade-operator', '--health-port=8081', '--log-level=info',
    '--metrics-port=8080', '--metrics-auth=true', '--metrics-auth-cache-ttl=1m', '--metrics-secure=true', '--metrics-auth-max-concurrent-reviews=4', '--metrics-auth-reviews-per-second=10']) {
    assert.ok(c.args.includes(flag), `args ${c.args.join(' ')} lack ${flag}`);
  }
  assert.ok(!c.args.some((a) => a.startsWith('--metrics-tls')), 'no TLS without metrics.tls.secretName');
  // The kubelet probes the health port; /metrics has a port of its own (a NetworkPolicy tells them apart).
  const ports = (c as unknown as { ports: { name: string; containerPort: number }[]; livenessProbe: { httpGet: { port: string } }; readinessProbe: { httpGet: { port: string } } });
  assert.deepEqual(ports.ports.map((p) => [p.name, p.containerPort]), [['health', 8081], ['metrics', 8080]]);
  assert.equal(ports.livenessProbe.httpGet.port, 'health');
  assert.equal(ports.readinessProbe.httpGet.port, 'health');
  const svc = find(objs, 'Service', `${RELEASE}-metrics`)[0] as unknown as { spec: { ports: { port: number; targetPort: string; appProtocol: string }[] } };
  assert.deepEqual(svc.spec.ports.map((p) => [p.port, p.targetPort, p.appProtocol]), [[8080, 'metrics', 'https']]);
  assert.equal(find(objs, 'NetworkPolicy').length, 0, 'the NetworkPolicy is off by default');

  // /metrics auth: the operator reviews tokens (the rules of system:auth-delegator), and Prometheus gets a role to bind.
  const rules = (name: string): unknown => (find(objs, 'ClusterRole', name)[0] as unknown as { rules: unknown } | undefined)?.rules;
  assert.deepEqual(rules(`${RELEASE}-metrics-auth`), [
    { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
    { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
  ]);
  assert.ok(find(objs, 'ClusterRoleBinding', `${RELEASE}-metrics-auth`).length === 1);
  assert.deepEqual(rules(`${RELEASE}-metrics-reader`), [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
  assert.equal(find(objs, 'ClusterRoleBinding', `${RELEASE}-metrics-reader`).length, 0, 'no subjects, no binding');
  // Aggregated roles for people: read, and annotate/patch (no status, no create or delete).
  const labels = (name: string): Record<string, string> => find(objs, 'ClusterRole', name)[0]!.metadata.labels ?? {};
  assert.deepEqual(rules(`${RELEASE}-view`), [{ apiGroups: ['upgrade.apiserver.dev'], resources: ['apiserverupgrades'], verbs: ['get', 'list', 'watch'] }]);
  assert.deepEqual(rules(`${RELEASE}-edit`), [{ apiGroups: ['upgrade.apiserver.dev'], resources: ['apiserverupgrades'], verbs: ['get', 'list', 'watch', 'patch', 'update'] }]);
  assert.equal(labels(`${RELEASE}-view`)['rbac.authorization.k8s.io/aggregate-to-view'], 'true');
  // Least privilege by default: the -edit role exists, for a ClusterRoleBinding, but reaches no built-in role.
  assert.equal(labels(`${RELEASE}-edit`)['rbac.authorization.k8s.io/aggregate-to-edit'], undefined, 'rbac.aggregateToEdit is off by default');
  assert.equal(labels(`${RELEASE}-edit`)['rbac.authorization.k8s.io/aggregate-to-admin'], undefined, 'rbac.aggregateToEdit is off by default');
  const aggregated = find(await render(['rbac.aggregateToEdit=true']), 'ClusterRole', `${RELEASE}-edit`)[0]!.metadata.labels ?? {};
  assert.equal(aggregated['rbac.authorization.k8s.io/aggregate-to-edit'], 'true');
  assert.equal(aggregated['rbac.authorization.k8s.io/aggregate-to-admin'], 'true');
  assert.equal(aggregated['rbac.authorization.k8s.io/aggregate-to-view'], undefined, 'view holders do not get writes');
  // Nothing but the operator's own calls: no wildcard, no secrets without a name.
  for (const o of [...find(objs, 'ClusterRole'), ...find(objs, 'Role')]) {
    for (const rule of (o as unknown as { rules: { resources?: string[]; verbs: string[]; resourceNames?: string[] }[] }).rules) {
      assert.ok(!rule.verbs.includes('*') && !(rule.resources ?? []).includes('*'), `${id(o)} has a wildcard rule`);
      assert.ok(!(rule.resources ?? []).includes('secrets'), `${id(o)} grants secrets with the default values`);
      // ConfigMaps: only kubeadm-config, by name, read only unless kubeadmConfig.write (docs/kubeadm-runbook.md, docs/security.md).
      if ((rule.resources ?? []).includes('configmaps')) assert.deepEqual([rule.resourceNames, rule.verbs], [['kubeadm-config'], ['get']], `${id(o)}: configmaps`);
    }
  }
});

test('helm template with every optional object on, and with metrics auth off', async () => {
  const objs = await render(EVERYTHING_ON);
  const np = find(objs, 'NetworkPolicy', RELEASE)[0] as unknown as { spec: { podSelector: unknown; policyTypes: string[]; ingress: { ports: { port: string }[]; from?: unknown[] }[] } };
  assert.deepEqual(np.spec.policyTypes, ['Ingress']);
  assert.deepEqual(np.spec.podSelector, { matchLabels: { 'app.kubernetes.io/name': 'apiserver-upgrade-operator', 'app.kubernetes.io/instance': RELEASE } });
  // The health port from anywhere (the kubelet probes from the node), the metrics port from Prometheus only.
  assert.deepEqual(np.spec.ingress, [
    { ports: [{ port: 'health', protocol: 'TCP' }] },
    { ports: [{ port: 'metrics', protocol: 'TCP' }], from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } }, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } } }] },
  ]);
  const custom = find(await render(['networkPolicy.enabled=true', 'networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=obs']), 'NetworkPolicy')[0] as unknown as typeof np;
  assert.deepEqual(custom.spec.ingress[1]!.from, [{ namespaceSelector: { matchLabels: { team: 'obs' } } }]);

  const dep = find(objs, 'Deployment', RELEASE)[0] as unknown as { spec: { template: { spec: { containers: { args: string[]; volumeMounts: { name: string; mountPath: string }[] }[]; volumes: { name: string; secret?: { secretName: string } }[] } } } };
  const c = dep.spec.template.spec.containers[0]!;
  assert.ok(c.args.includes('--metrics-tls-cert-file=/etc/apiserver-upgrade-operator/metrics-tls/tls.crt'));
  assert.ok(c.args.includes('--metrics-tls-key-file=/etc/apiserver-upgrade-operator/metrics-tls/tls.key'));
  assert.deepEqual(dep.spec.template.spec.volumes.find((v) => v.name === 'metrics-tls')?.secret, { secretName: 'metrics-tls' });
  const sm = find(objs, 'ServiceMonitor', RELEASE)[0] as unknown as { spec: { endpoints: Record<string, unknown>[] } };
  assert.deepEqual(sm.spec.endpoints[0], {
    port: 'metrics', path: '/metrics', scheme: 'https', interval: '30s', scrapeTimeout: '10s',
    authorization: { type: 'Bearer', credentials: { name: `${RELEASE}-metrics-scraper-token`, key: 'token' } },
    tlsConfig: { ca: { secret: { name: 'metrics-tls', key: 'ca.crt' } }, serverName: `${RELEASE}-metrics.${NS}.svc` },
  });
  const crb = find(objs, 'ClusterRoleBinding', `${RELEASE}-metrics-reader`)[0] as unknown as { roleRef: { name: string }; subjects: unknown[] };
  assert.equal(crb.roleRef.name, `${RELEASE}-metrics-reader`);
  assert.deepEqual(crb.subjects, [{ kind: 'ServiceAccount', namespace: NS, name: READER_SA }]);

  // Off: no review rights, the flag says false, Prometheus sends no token; people's roles can be left out too.
  const off = await render(['metrics.auth.enabled=false', 'serviceMonitor.enabled=true', 'rbac.aggregateToView=false', 'rbac.aggregateToEdit=false']);
  assert.equal(find(off, 'ClusterRole', `${RELEASE}-metrics-auth`).length, 0);
  assert.deepEqual(find(off, 'ClusterRole').map((o) => o.metadata.name).sort(), [RELEASE, `${RELEASE}-edit`, `${RELEASE}-metrics-reader`], 'the -edit role stays, aggregated nowhere');
  const offArgs = (find(off, 'Deployment')[0] as unknown as typeof dep).spec.template.spec.containers[0]!.args;
  assert.ok(offArgs.includes('--metrics-auth=false'));
  const offSm = (find(off, 'ServiceMonitor')[0] as unknown as typeof sm).spec.endpoints[0]!;
  // HTTPS with the self-signed certificate (metrics.secure), unverified; no token sent, no scraper made.
  assert.equal(offSm.scheme, 'https');
  assert.deepEqual(offSm.tlsConfig, { insecureSkipVerify: true });
  assert.equal(offSm.authorization, undefined);
  assert.equal(find(off, 'Secret', `${RELEASE}-metrics-scraper-token`).length, 0);
});

test('every rendered object passes a server-side dry run on the real apiserver (monitoring objects excepted)', async () => {
  const rendered = [...await render([], true), ...await render(EVERYTHING_ON)];
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
  for (const kind of ['NetworkPolicy', 'ClusterRole', 'ClusterRoleBinding']) assert.ok(rest.some((o) => o.kind === kind), `no ${kind} in the dry run`);
  // Both admission policies: their CEL compiled by the real apiserver.
  assert.deepEqual(rest.filter((o) => o.kind === 'ValidatingAdmissionPolicy').map((o) => o.metadata.name).sort(), [`${RELEASE}-agent-jobs`, `${RELEASE}-kubeadm-config`]);
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

async function ruleFile(set: string[] = []): Promise<RuleFile> {
  return renderRules(helm, work, { release: RELEASE, namespace: NS, set: [`prometheusRule.runbookUrl=${RUNBOOK}`, ...set] });
}

test('agentNamespace.create: the chart\'s namespace admits the agent Job\'s Pod (Pod Security privileged, enforced by the real apiserver); a baseline namespace refuses it', async () => {
  const objs = await render(['agentNamespace.create=true']);
  const [ns] = find(objs, 'Namespace');
  assert.equal(ns?.metadata.name, AGENT_NS);
  for (const mode of ['enforce', 'audit', 'warn']) assert.equal(ns?.metadata.labels?.[`pod-security.kubernetes.io/${mode}`], 'privileged', mode);
  const rules = find(objs, 'Role').filter((r) => r.metadata.namespace === AGENT_NS).flatMap((r) => (r as unknown as { rules: { resources: string[]; verbs: string[] }[] }).rules);
  assert.deepEqual(rules.map((r) => `${r.resources.join(',')}:${r.verbs.join(',')}`), ['jobs:create,get,list,patch', 'pods:list'], 'Jobs there (patched only to stop one; listed for the flag proof\'s Jobs), and its Pods listed for image pull errors and proof verdicts');
  assert.ok(find(objs, 'Role').some((r) => r.metadata.namespace === 'kube-system' && r.metadata.name.endsWith('-agent-jobs')), 'kube-system (rbac.jobNamespaces) keeps its Job role');

  // The Pod the static Pod driver's Job makes, created (server-side dry run: admission, Pod Security included) in the
  // chart's namespace and in one labelled baseline.
  await k(['apply', '-f', '-'], stringify(ns));
  await k(['create', 'namespace', 'agents-baseline']);
  await k(['label', 'namespace', 'agents-baseline', 'pod-security.kubernetes.io/enforce=baseline']);
  // What kube-controller-manager (not run here) gives every namespace: the ServiceAccount admission needs it.
  for (const ns of [AGENT_NS, 'agents-baseline']) await k(['create', 'serviceaccount', 'default', '-n', ns]);
  try {
    const spec = resolveSpec({ targetVersion: NEW_VERSION, driver: { staticPod: { namespace: AGENT_NS } } });
    assert.equal(spec.driver.kind, 'staticPod');
    if (spec.driver.kind !== 'staticPod') return;
    const request: DriverRequest = { idempotencyKey: idempotencyKey('uid', 1, 'cp-1', 'Upgrade', NEW_VERSION), action: 'Upgrade', upgrade: 'psa', batch: 1, server: { identity: 'apiserver-x', hostname: 'cp-1', address: '10.0.0.11:6443' }, targetVersion: NEW_VERSION, featureGates: {} };
    // The agent runs from the operator's own image (the chart's --agent-image).
    const job = agentJob(spec.driver.staticPod, request, 'psa', `registry.k8s.io/kube-apiserver:${NEW_VERSION}`, { operatorImage: 'ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:0.1.0' }) as { spec: { template: { spec: unknown } } };
    const pod = (namespace: string): string => stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'agent-psa', namespace }, spec: job.spec.template.spec });
    const admitted = await run(kubectl, ['--kubeconfig', cluster.kubeconfig, 'create', '--dry-run=server', '-f', '-'], { input: pod(AGENT_NS) });
    assert.equal(admitted.code, 0, admitted.stderr);
    assert.doesNotMatch(admitted.stderr, /PodSecurity/, 'no Pod Security warning either');
    const refused = await run(kubectl, ['--kubeconfig', cluster.kubeconfig, 'create', '--dry-run=server', '-f', '-'], { input: pod('agents-baseline') });
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /violates PodSecurity "baseline:latest"/);
  } finally {
    await k(['delete', 'namespace', AGENT_NS, 'agents-baseline', '--wait=false']);
  }
});

test('promtool check rules: valid rules; each alert has a severity and a runbook_url into its section of docs/operations.md', async () => {
  const { path, rules } = await ruleFile();
  // ApiServerUpgradeOperatorDown twice: paging while an upgrade changes servers, a ticket otherwise (e2e/alert-rules.e2e.ts).
  assert.deepEqual(rules.map((r) => r.alert).sort(), [...ALERTS, 'ApiServerUpgradeOperatorDown'].sort());
  const paused = rules.find((r) => r.alert === 'ApiServerUpgradePaused')!;
  assert.match(paused.expr, /reason!="PausedBySpec"/, 'a declarative pause never alerts');
  assert.match(paused.annotations.runbook!, /kubectl annotate asu \{\{ \$labels\.upgrade \}\} upgrade\.apiserver\.dev\/resume=\$\(date \+%s\) --overwrite/);
  assert.match(paused.annotations.runbook!, /kubectl patch asu \{\{ \$labels\.upgrade \}\} --type merge -p '\{"spec":\{"paused":false\}\}'/);
  const anchors = anchorsOf(readFileSync(join(root, 'docs', 'operations.md'), 'utf8'));
  for (const r of rules) {
    assert.ok(['critical', 'warning', 'info'].includes(r.labels.severity!), `${r.alert}: severity ${r.labels.severity}`);
    assert.equal(r.annotations.runbook_url, `${RUNBOOK}#${r.alert.toLowerCase()}`);
    assert.ok(anchors.has(r.alert.toLowerCase()), `docs/operations.md has no section ${r.alert}`);
    assert.ok(r.annotations.summary && r.annotations.description, `${r.alert} lacks a summary or description`);
  }
  assert.deepEqual(Object.fromEntries(rules.map((r) => [r.alert, r.labels.severity])), {  // the last of a name wins: OperatorDown's ticket
    ApiServerUpgradePaused: 'critical', ApiServerUpgradeStuck: 'warning', ApiServerUpgradeEnablingProxyStalled: 'warning', ApiServerUpgradeRollbackStalled: 'critical',
    ApiServerUpgradeRolledBack: 'warning', ApiServerUpgradeFailed: 'warning', ApiServerUpgradeOperatorDown: 'warning', ApiServerUpgradeOperatorNoLeader: 'critical',
    ApiServerUpgradeReconcileErrors: 'warning', ApiServerUpgradeWaiting: 'warning', ApiServerUpgradeWaitingForWindow: 'info',
  });
  const out = await runOk(promtool, ['check', 'rules', path]);
  assert.match(out, new RegExp(`SUCCESS: ${ALERTS.length + 1} rules found`));

  // Severities, the runbook's address and extra labels are values; an alertLabels severity does not override the alert's own.
  const custom = await ruleFile(['prometheusRule.paused.severity=page', 'prometheusRule.runbookUrl=https://runbooks.example.com/auo/', 'prometheusRule.alertLabels.team=platform', 'prometheusRule.alertLabels.severity=info']);
  assert.deepEqual(custom.rule('ApiServerUpgradePaused').labels, { severity: 'page', team: 'platform' });
  assert.deepEqual(custom.rule('ApiServerUpgradeFailed').labels, { severity: 'warning', team: 'platform' });
  assert.equal(custom.rule('ApiServerUpgradeFailed').annotations.runbook_url, 'https://runbooks.example.com/auo#apiserverupgradefailed');
});

test('promtool test rules: every alert fires on the series the operator exports, and only then', async () => {
  const { path, rule, rules } = await ruleFile();
  const idleDown = rules.find((r) => r.alert === 'ApiServerUpgradeOperatorDown' && r.labels.severity === 'warning')!;
  const op = `job="${RELEASE}-metrics", namespace="${NS}", pod="op-0"`;
  const op1 = `job="${RELEASE}-metrics", namespace="${NS}", pod="op-1"`;
  const runbook = (alert: string): string => `${RUNBOOK}#${alert.toLowerCase()}`;
  const alert = (name: string, labels: Record<string, string>, value?: string): { exp_labels: Record<string, string>; exp_annotations: Record<string, string> } =>
    ({ exp_labels: { severity: rule(name).labels.severity!, ...labels }, exp_annotations: expanded(rule(name), labels, value) });
  const server = (sel: string, upgrade: string, s: string, version: string, gate: string): string =>
    `apiserver_upgrade_server_info{${sel}, upgrade="${upgrade}", server="${s}", version="${version}", proxy_gate="${gate}", ready="true"}`;
  const tests = {
    rule_files: [path],
    evaluation_interval: '1m',
    tests: [
      {
        // Paused for 2 minutes: fires after its `for: 1m`, with the reason; the other upgrade, paused by its
        // spec (asked for, not an incident), never alerts. The operator is up and leads: no operator alert.
        interval: '1m',
        input_series: [
          { series: `apiserver_upgrade_paused{${op}, upgrade="to-v1-36", reason="AnalysisBreach"}`, values: '1x5' },
          { series: `apiserver_upgrade_paused{${op}, upgrade="calm", reason="PausedBySpec"}`, values: '1x5' },
          { series: `up{${op}}`, values: '1x5' },
          { series: `apiserver_upgrade_operator_leader{${op}}`, values: '1x5' },
          { series: `apiserver_upgrade_operator_reconcile_errors_total{${op}}`, values: '0x5' },
        ],
        alert_rule_test: [
          { eval_time: '30s', alertname: 'ApiServerUpgradePaused', exp_alerts: [] },
          {
            eval_time: '2m', alertname: 'ApiServerUpgradePaused',
            exp_alerts: [{
              exp_labels: { severity: 'critical', upgrade: 'to-v1-36', reason: 'AnalysisBreach' },
              exp_annotations: {
                summary: 'ApiServerUpgrade to-v1-36 is paused (AnalysisBreach)',
                description: 'The rolling upgrade of the kube-apiservers stopped with reason AnalysisBreach. Servers may be on different versions until it is resumed or rolled back. See why with: kubectl describe asu to-v1-36',
                runbook: 'Read status.pause.message and the events (kubectl describe asu to-v1-36), fix the cause (docs/operations.md, section "Pause reasons"), then resume: kubectl annotate asu to-v1-36 upgrade.apiserver.dev/resume=$(date +%s) --overwrite . For a declarative pause (reason PausedBySpec) set spec.paused to false in Git, or: kubectl patch asu to-v1-36 --type merge -p \'{"spec":{"paused":false}}\'',
                runbook_url: runbook('ApiServerUpgradePaused'),
              },
            }],
          },
          { eval_time: '5m', alertname: 'ApiServerUpgradeOperatorDown', exp_alerts: [] },
          { eval_time: '5m', alertname: 'ApiServerUpgradeOperatorNoLeader', exp_alerts: [] },
          { eval_time: '5m', alertname: 'ApiServerUpgradeReconcileErrors', exp_alerts: [] },
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
          {
            eval_time: '2h', alertname: 'ApiServerUpgradeStuck',
            exp_alerts: [{
              exp_labels: { severity: 'warning', upgrade: 'stuck' },
              exp_annotations: {
                summary: 'ApiServerUpgrade stuck has not advanced a batch for 1h',
                description: 'The upgrade is in phase Upgrading but its current batch has not changed. Check the operator\'s logs and the upgrade\'s status.peers (kubectl get asu stuck -o yaml): a server that never becomes ready at the target version, or an operator that cannot reach the apiservers.',
                runbook_url: runbook('ApiServerUpgradeStuck'),
              },
            }],
          },
        ],
      },
      {
        // EnablingProxy and RollingBack for an hour. Stalled (no server changed: fires 30 + 10 minutes in, even
        // though another operator pod took over at minute 21 and exports the same servers under its own pod
        // label); moving (a server's gate or version changed at minute 21: not stalled within 30 minutes of
        // that); young (in the phase only since minute 25).
        interval: '1m',
        input_series: [
          { series: `apiserver_upgrade_phase{${op}, upgrade="ep-stalled", phase="EnablingProxy"}`, values: '1x20' },
          { series: `apiserver_upgrade_phase{${op1}, upgrade="ep-stalled", phase="EnablingProxy"}`, values: '_x20 1x39' },
          { series: server(op, 'ep-stalled', 'cp-1', 'v1.35.4', 'On'), values: '1x20' },
          { series: server(op1, 'ep-stalled', 'cp-1', 'v1.35.4', 'On'), values: '_x20 1x39' },
          { series: server(op, 'ep-stalled', 'cp-2', 'v1.35.4', 'Off'), values: '1x20' },
          { series: server(op1, 'ep-stalled', 'cp-2', 'v1.35.4', 'Off'), values: '_x20 1x39' },
          { series: `apiserver_upgrade_phase{${op}, upgrade="ep-moving", phase="EnablingProxy"}`, values: '1x60' },
          { series: server(op, 'ep-moving', 'cp-1', 'v1.35.4', 'On'), values: '1x60' },
          { series: server(op, 'ep-moving', 'cp-2', 'v1.35.4', 'Off'), values: '1x20' },
          { series: server(op, 'ep-moving', 'cp-2', 'v1.35.4', 'On'), values: '_x20 1x39' },
          { series: `apiserver_upgrade_phase{${op}, upgrade="ep-young", phase="EnablingProxy"}`, values: '0x24 1x35' },
          { series: server(op, 'ep-young', 'cp-1', 'v1.35.4', 'Off'), values: '1x60' },
          { series: `apiserver_upgrade_phase{${op}, upgrade="rb-stalled", phase="RollingBack"}`, values: '1x60' },
          { series: server(op, 'rb-stalled', 'cp-1', 'v1.36.3', 'On'), values: '1x60' },
          { series: server(op, 'rb-stalled', 'cp-2', 'v1.35.4', 'On'), values: '1x60' },
          { series: `apiserver_upgrade_phase{${op}, upgrade="rb-moving", phase="RollingBack"}`, values: '1x60' },
          { series: server(op, 'rb-moving', 'cp-1', 'v1.36.3', 'On'), values: '1x20' },
          { series: server(op, 'rb-moving', 'cp-1', 'v1.35.4', 'On'), values: '_x20 1x39' },
          { series: `apiserver_upgrade_phase{${op}, upgrade="rb-young", phase="RollingBack"}`, values: '0x24 1x35' },
          { series: server(op, 'rb-young', 'cp-1', 'v1.36.3', 'On'), values: '1x60' },
        ],
        alert_rule_test: [
          { eval_time: '35m', alertname: 'ApiServerUpgradeEnablingProxyStalled', exp_alerts: [] },
          { eval_time: '35m', alertname: 'ApiServerUpgradeRollbackStalled', exp_alerts: [] },
          { eval_time: '45m', alertname: 'ApiServerUpgradeEnablingProxyStalled', exp_alerts: [alert('ApiServerUpgradeEnablingProxyStalled', { upgrade: 'ep-stalled' })] },
          { eval_time: '45m', alertname: 'ApiServerUpgradeRollbackStalled', exp_alerts: [alert('ApiServerUpgradeRollbackStalled', { upgrade: 'rb-stalled' })] },
        ],
      },
      {
        // Terminal phases: RolledBack and Failed alert after a minute, for as long as the object is there; a
        // Succeeded upgrade (its RolledBack and Failed series 0) does not.
        interval: '1m',
        input_series: [
          { series: `apiserver_upgrade_phase{${op}, upgrade="rb", phase="RolledBack"}`, values: '1x5' },
          { series: `apiserver_upgrade_phase{${op}, upgrade="rb", phase="Failed"}`, values: '0x5' },
          { series: `apiserver_upgrade_phase{${op}, upgrade="refused", phase="Failed"}`, values: '1x5' },
          { series: `apiserver_upgrade_phase{${op}, upgrade="refused", phase="RolledBack"}`, values: '0x5' },
          { series: `apiserver_upgrade_phase{${op}, upgrade="done", phase="Succeeded"}`, values: '1x5' },
          { series: `apiserver_upgrade_phase{${op}, upgrade="done", phase="RolledBack"}`, values: '0x5' },
          { series: `apiserver_upgrade_phase{${op}, upgrade="done", phase="Failed"}`, values: '0x5' },
        ],
        alert_rule_test: [
          { eval_time: '30s', alertname: 'ApiServerUpgradeRolledBack', exp_alerts: [] },
          { eval_time: '30s', alertname: 'ApiServerUpgradeFailed', exp_alerts: [] },
          { eval_time: '3m', alertname: 'ApiServerUpgradeRolledBack', exp_alerts: [alert('ApiServerUpgradeRolledBack', { upgrade: 'rb' })] },
          { eval_time: '3m', alertname: 'ApiServerUpgradeFailed', exp_alerts: [alert('ApiServerUpgradeFailed', { upgrade: 'refused' })] },
        ],
      },
      {
        // No scrape target up for 10 minutes, no upgrade known: down, as a ticket (the paging case: e2e/alert-rules.e2e.ts).
        // Up but not leading: no leader. Reconciles failing steadily.
        interval: '1m',
        input_series: [
          { series: `up{${op}}`, values: '0x20' },
          { series: `apiserver_upgrade_operator_leader{${op}}`, values: '0x20' },
          { series: `apiserver_upgrade_operator_reconcile_errors_total{${op}}`, values: '0+1x40' },
        ],
        alert_rule_test: [
          { eval_time: '10m', alertname: 'ApiServerUpgradeOperatorDown', exp_alerts: [{ exp_labels: { severity: 'warning' }, exp_annotations: expanded(idleDown, {}) }] },
          { eval_time: '10m', alertname: 'ApiServerUpgradeOperatorNoLeader', exp_alerts: [alert('ApiServerUpgradeOperatorNoLeader', {})] },
          { eval_time: '10m', alertname: 'ApiServerUpgradeReconcileErrors', exp_alerts: [] },
          { eval_time: '35m', alertname: 'ApiServerUpgradeReconcileErrors', exp_alerts: [alert('ApiServerUpgradeReconcileErrors', {}, '15')] },
        ],
      },
      {
        // Waiting since the start: on a gate for 40 minutes (waiting.after 30m, then for 1m), and for a window (info only).
        interval: '1m',
        input_series: [
          { series: `up{${op}}`, values: '1x45' },
          { series: `apiserver_upgrade_operator_leader{${op}}`, values: '1x45' },
          { series: `apiserver_upgrade_waiting_since_timestamp_seconds{${op}, upgrade="gated", reason="GateNotHeld"}`, values: '0x45' },
          { series: `apiserver_upgrade_waiting_since_timestamp_seconds{${op}, upgrade="nightly", reason="OutsideWindow"}`, values: '0x45' },
        ],
        alert_rule_test: [
          { eval_time: '20m', alertname: 'ApiServerUpgradeWaiting', exp_alerts: [] },
          { eval_time: '40m', alertname: 'ApiServerUpgradeWaiting', exp_alerts: [alert('ApiServerUpgradeWaiting', { upgrade: 'gated', reason: 'GateNotHeld' })] },
          { eval_time: '30s', alertname: 'ApiServerUpgradeWaitingForWindow', exp_alerts: [] },
          { eval_time: '5m', alertname: 'ApiServerUpgradeWaitingForWindow', exp_alerts: [alert('ApiServerUpgradeWaitingForWindow', { upgrade: 'nightly' })] },
        ],
      },
    ],
  };
  // Every alert is tested both ways: firing (with its labels and annotations) and silent.
  const checks = tests.tests.flatMap((t) => t.alert_rule_test as { alertname: string; exp_alerts: unknown[] }[]);
  assert.deepEqual([...new Set(checks.filter((c) => c.exp_alerts.length > 0).map((c) => c.alertname))].sort(), ALERTS, 'alerts never tested firing');
  assert.deepEqual([...new Set(checks.filter((c) => c.exp_alerts.length === 0).map((c) => c.alertname))].sort(), ALERTS, 'alerts never tested silent');
  const testPath = join(work, 'rules.test.yaml');
  writeFileSync(testPath, stringify(tests));
  const r = await run(promtool, ['test', 'rules', testPath]);
  assert.equal(r.code, 0, `promtool test rules:\n${r.stdout}${r.stderr}`);
  assert.match(r.stdout + r.stderr, /SUCCESS/);
});

test('CRD upgrade: kubectl apply --server-side --force-conflicts of crds/ replaces the CRD Helm created, objects kept', async () => {
  const crdPath = join(CHART, 'crds', CRD_FILE);
  const fresh = parse(readFileSync(crdPath, 'utf8')) as { spec: { versions: { name: string; schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, unknown> } } } } }[] } };
  const specFields = (crd: typeof fresh): string[] => Object.keys(crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties).sort();
  const old = readFileSync(join(root, 'e2e', 'fixtures', 'crd-apiserverupgrades-c1166a1.yaml'), 'utf8');
  assert.ok(specFields(fresh).includes('allowPrerelease') && !specFields(parse(old) as typeof fresh).includes('allowPrerelease'), 'the fixture is older than the chart\'s CRD');

  // Helm creates the CRDs of crds/ on the first install, with a plain create (as field manager "helm"), and never again.
  await k(['create', '--field-manager=helm', '-f', '-'], old);
  await k(['wait', '--for=condition=Established', `crd/${CRD_NAME}`, '--timeout=60s']);
  const name = 'crd-upgrade';
  await k(['create', '-f', '-'], stringify({ apiVersion: API_VERSION, kind: 'ApiServerUpgrade', metadata: { name }, spec: { targetVersion: NEW_VERSION, paused: true, driver: { webhook: { url: 'https://127.0.0.1:9/replace' } } } }));
  try {
    await crdUpgrade(name);
  } finally {
    // Leave no upgrade behind: the operator started below would see it as another upgrade.
    await k(['delete', 'asu', name, '--ignore-not-found', '--wait=true']);
  }
});

async function crdUpgrade(name: string): Promise<void> {
  const crdPath = join(CHART, 'crds', CRD_FILE);
  const fresh = parse(readFileSync(crdPath, 'utf8')) as { spec: { versions: { name: string; schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, unknown> } } } } }[] } };
  const specFields = (crd: typeof fresh): string[] => Object.keys(crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties).sort();
  await k(['patch', 'asu', name, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { phase: 'Paused', observedGeneration: 1 } })]);
  const before = JSON.parse(await k(['get', 'asu', name, '-o', 'json'])) as ApiServerUpgrade & { metadata: { uid: string } };
  const newField = stringify({ apiVersion: API_VERSION, kind: 'ApiServerUpgrade', metadata: { name: 'new-field' }, spec: { targetVersion: NEW_VERSION, allowPrerelease: false, driver: { webhook: { url: 'https://127.0.0.1:9/replace' } } } });
  const refused = await run(kubectl, ['--kubeconfig', cluster.kubeconfig, 'create', '--dry-run=server', '--validate=strict', '-f', '-'], { input: newField });
  assert.notEqual(refused.code, 0, 'the old CRD does not know spec.allowPrerelease');
  assert.match(refused.stderr, /unknown field "spec\.allowPrerelease"/);

  // Plain server-side apply stops on the fields Helm's create owns: hence --force-conflicts in the documented step.
  const plain = await run(kubectl, ['--kubeconfig', cluster.kubeconfig, 'apply', '--server-side', '-f', join(CHART, 'crds')]);
  assert.notEqual(plain.code, 0);
  assert.match(plain.stderr, /conflict with "helm"/);
  // The step docs/chart.md documents, twice: the second is a no-op.
  for (let i = 0; i < 2; i++) await k(['apply', '--server-side', '--force-conflicts', '-f', join(CHART, 'crds')]);
  await k(['wait', '--for=condition=Established', `crd/${CRD_NAME}`, '--timeout=60s']);
  const served = JSON.parse(await k(['get', 'crd', CRD_NAME, '-o', 'json', '--show-managed-fields'])) as typeof fresh & { status: { storedVersions: string[] }; metadata: { managedFields: { manager: string; operation: string }[] } };
  assert.deepEqual(specFields(served), specFields(fresh), 'the served schema is the chart\'s');
  assert.deepEqual(served.status.storedVersions, ['v1alpha1']);
  assert.ok(served.metadata.managedFields.some((f) => f.manager === 'kubectl' && f.operation === 'Apply'), JSON.stringify(served.metadata.managedFields));

  // The object is the same object, its spec and status as they were (plus what the new schema defaults on read).
  const after = JSON.parse(await k(['get', 'asu', name, '-o', 'json'])) as typeof before;
  assert.equal(after.metadata.uid, before.metadata.uid);
  const missing = (was: unknown, now: unknown, at: string): string[] =>
    typeof was === 'object' && was !== null && !Array.isArray(was)
      ? Object.entries(was).flatMap(([key, v]) => missing(v, (now as Record<string, unknown> | undefined)?.[key], `${at}.${key}`))
      : JSON.stringify(was) === JSON.stringify(now) ? [] : [`${at}: ${JSON.stringify(was)} -> ${JSON.stringify(now)}`];
  assert.deepEqual(missing(before.spec, after.spec, 'spec'), [], 'every field of the spec is kept');
  assert.equal(after.status?.phase, 'Paused');
  assert.equal(after.status?.observedGeneration, 1);
  await k(['create', '--dry-run=server', '--validate=strict', '-f', '-'], newField);
}

/** `kubectl auth can-i <verb> <what> [-n ns] [--subresource s]` as the chart's ServiceAccount. */
async function canI(verb: string, what: string, o: { ns?: string; sub?: string } = {}): Promise<boolean> {
  const args = ['--kubeconfig', cluster.kubeconfig, 'auth', 'can-i', verb, what, `--as=${SA}`, ...(o.ns ? ['-n', o.ns] : []), ...(o.sub ? [`--subresource=${o.sub}`] : [])];
  const r = await run(kubectl, args);
  if (r.code !== 0 && r.code !== 1) throw new Error(`kubectl ${args.join(' ')}: exit ${r.code}: ${r.stderr}`);
  return r.stdout.trim() === 'yes';
}

test('the chart\'s RBAC, created for real, grants each call the operator makes and nothing it must not make', async () => {
  const objs = (await render([...WITH_HOOK_SECRET, ...WITH_READER], true)).filter((o) => ['CustomResourceDefinition', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind));
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
    ['list', 'endpointslices.discovery.k8s.io', { ns: 'default' }], ['watch', 'endpointslices.discovery.k8s.io', { ns: 'default' }],
    ['list', 'pods', { ns: 'kube-system' }], ['watch', 'pods', { ns: 'kube-system' }],
    ['create', 'events.events.k8s.io', { ns: 'default' }],
    ['get', `secrets/${HOOK_SECRET}`, { ns: NS }],
    ['create', 'jobs.batch', { ns: 'kube-system' }], ['get', 'jobs.batch', { ns: 'kube-system' }],
    ['list', 'apiservices.apiregistration.k8s.io'], ['watch', 'apiservices.apiregistration.k8s.io'],
    // The /metrics guard: who a scrape's token is, and whether it may GET /metrics.
    ['create', 'tokenreviews.authentication.k8s.io'], ['create', 'subjectaccessreviews.authorization.k8s.io'],
    ...['/version', '/readyz', '/metrics', '/flagz', '/statusz', '/api', '/api/v1', '/apis', '/apis/apps/v1'].map((p): [string, string] => ['get', p]),
    // kubeadm clusters (docs/kubeadm-runbook.md): kubeadm-config by name (read only by default), the Nodes' kubelet versions, etcd health.
    ['get', 'configmaps/kubeadm-config', { ns: 'kube-system' }],
    ['list', 'nodes'], ['get', '/readyz/etcd'],
  ];
  const denied: [string, string, { ns?: string; sub?: string }?][] = [
    ['delete', 'secrets', { ns: NS }], ['list', 'secrets', { ns: NS }], ['get', 'secrets/other', { ns: NS }], ['get', `secrets/${HOOK_SECRET}`, { ns: 'kube-system' }],
    ['update', upgrades], ['patch', upgrades], ['delete', upgrades], ['create', upgrades], ['update', upgrades, { sub: 'status' }],
    ['update', 'leases.coordination.k8s.io/some-other-lease', { ns: NS }], ['delete', 'leases.coordination.k8s.io/apiserver-upgrade-operator', { ns: NS }],
    ['update', 'leases.coordination.k8s.io', { ns: 'kube-system' }], ['create', 'leases.coordination.k8s.io', { ns: 'kube-system' }],
    ['create', 'jobs.batch', { ns: 'default' }], ['delete', 'jobs.batch', { ns: 'kube-system' }],
    ['create', 'pods', { ns: 'kube-system' }], ['list', 'pods', { ns: NS }], ['watch', 'pods', { ns: NS }], ['get', 'pods', { ns: 'kube-system' }],
    ['create', 'events.events.k8s.io', { ns: 'kube-system' }],
    ['get', '/debug/pprof/'], ['get', '/logs/'],
    ['get', 'configmaps/kube-proxy', { ns: 'kube-system' }], ['update', 'configmaps/coredns', { ns: 'kube-system' }], ['list', 'configmaps', { ns: 'kube-system' }],
    ['delete', 'configmaps/kubeadm-config', { ns: 'kube-system' }], ['patch', 'configmaps/kubeadm-config', { ns: 'kube-system' }], ['get', 'configmaps/kubeadm-config', { ns: NS }],
    // Without kubeadmConfig.write: a token of the operator cannot rewrite ClusterConfiguration (docs/security.md).
    ['update', 'configmaps/kubeadm-config', { ns: 'kube-system' }],
    ['get', 'nodes'], ['update', 'nodes'], ['patch', 'nodes', { sub: 'status' }], ['get', '/readyz/log'], ['get', '/livez/etcd'],
    ['create', 'serviceaccounts', { ns: NS, sub: 'token' }],
  ];
  const check = async (list: typeof allowed, want: boolean): Promise<string[]> => {
    const answers = await Promise.all(list.map(async ([verb, what, o]) => ({ q: `${verb} ${what}${o?.sub ? `/${o.sub}` : ''}${o?.ns ? ` -n ${o.ns}` : ''}`, yes: await canI(verb, what, o) })));
    return answers.filter((a) => a.yes !== want).map((a) => a.q);
  };
  assert.deepEqual(await check(allowed, true), [], 'the chart\'s RBAC lacks calls the operator makes');
  assert.deepEqual(await check(denied, false), [], 'the chart\'s RBAC grants more than the operator needs');
  // Resources only v1.36 serves (listed before a phase-two rollback orphans them): kubectl can-i cannot name
  // them on this v1.35 server, so ask the authorizer directly with a SubjectAccessReview.
  for (const resource of ['mutatingadmissionpolicies', 'mutatingadmissionpolicybindings']) {
    const sar = { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: SA, groups: ['system:serviceaccounts', `system:serviceaccounts:${NS}`], resourceAttributes: { group: 'admissionregistration.k8s.io', resource, verb: 'list' } } };
    const r = await cluster.request(0, '/apis/authorization.k8s.io/v1/subjectaccessreviews', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(sar) });
    assert.equal((JSON.parse(r.body) as { status?: { allowed?: boolean } }).status?.allowed, true, `list ${resource}.admissionregistration.k8s.io: ${r.body}`);
  }
});

test('the -view and -edit ClusterRoles: used for real, and selected by the built-in view, edit and admin roles', async () => {
  // Bound directly: the harness runs no kube-controller-manager, whose clusterrole-aggregation controller copies
  // the rules of the roles an aggregationRule selects into view/edit/admin. Which roles those select is asked
  // of the real apiserver below.
  await k(['create', 'clusterrolebinding', 'e2e-viewer', `--clusterrole=${RELEASE}-view`, '--user=viewer']);
  await k(['create', 'clusterrolebinding', 'e2e-editor', `--clusterrole=${RELEASE}-edit`, '--user=editor']);
  // A namespace's RoleBinding to the same role grants nothing on the cluster-scoped ApiServerUpgrades.
  await k(['create', 'rolebinding', 'e2e-ns-editor', `--clusterrole=${RELEASE}-edit`, '--user=ns-editor', '-n', NS]);
  const name = 'rbac-people';
  await k(['create', '-f', '-'], stringify({ apiVersion: API_VERSION, kind: 'ApiServerUpgrade', metadata: { name }, spec: { targetVersion: NEW_VERSION, paused: true, driver: { webhook: { url: 'https://127.0.0.1:9/replace' } } } }));
  try {
    await peopleRoles(name);
  } finally {
    await k(['delete', 'asu', name, '--ignore-not-found', '--wait=true']);
  }

  // The built-in roles' aggregationRules (bootstrap policy of this apiserver) select ours by their labels.
  const selected = async (builtin: string): Promise<string[]> => {
    const role = JSON.parse(await k(['get', 'clusterrole', builtin, '-o', 'json'])) as { aggregationRule?: { clusterRoleSelectors: { matchLabels?: Record<string, string> }[] } };
    const names = new Set<string>();
    for (const sel of role.aggregationRule?.clusterRoleSelectors ?? []) {
      const l = Object.entries(sel.matchLabels ?? {}).map(([key, v]) => `${key}=${v}`).join(',');
      for (const n of (await k(['get', 'clusterroles', '-l', l, '-o', 'name'])).trim().split('\n')) if (n) names.add(n.replace(/^clusterrole\.rbac\.authorization\.k8s\.io\//, ''));
    }
    return [...names].filter((n) => n.startsWith(RELEASE)).sort();
  };
  // rbac.aggregateToEdit is off by default: the built-in edit and admin roles get reads only.
  assert.deepEqual(await selected('view'), [`${RELEASE}-view`]);
  assert.deepEqual(await selected('edit'), [`${RELEASE}-view`]);
  assert.deepEqual(await selected('admin'), [`${RELEASE}-view`]);
});

async function peopleRoles(name: string): Promise<void> {
  const as = (user: string, args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> => run(kubectl, ['--kubeconfig', cluster.kubeconfig, `--as=${user}`, ...args], input === undefined ? {} : { input });
  const ok = async (user: string, args: string[]): Promise<void> => {
    const r = await as(user, args);
    assert.equal(r.code, 0, `${user}: kubectl ${args.join(' ')}: ${r.stderr}`);
  };
  const forbidden = async (user: string, args: string[], input?: string): Promise<void> => {
    const r = await as(user, args, input);
    assert.notEqual(r.code, 0, `${user}: kubectl ${args.join(' ')} was allowed`);
    assert.match(r.stderr, /forbidden/i, `${user}: kubectl ${args.join(' ')}`);
  };
  const annotate = ['annotate', 'asu', name, 'upgrade.apiserver.dev/resume=e2e', '--overwrite'];
  const unpause = ['patch', 'asu', name, '--type=merge', '-p', '{"spec":{"paused":false}}'];
  const status = ['patch', 'asu', name, '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Succeeded"}}'];
  await ok('viewer', ['get', 'asu']);
  await ok('viewer', ['get', 'asu', name]);
  await forbidden('viewer', annotate);
  await forbidden('viewer', unpause);
  await ok('editor', annotate);
  await ok('editor', ['patch', 'asu', name, '--type=merge', '-p', '{"spec":{"paused":true}}']);
  await forbidden('editor', status);
  await forbidden('editor', ['delete', 'asu', name]);
  await forbidden('editor', ['create', '-f', '-'], stringify({ apiVersion: API_VERSION, kind: 'ApiServerUpgrade', metadata: { name: 'by-editor' }, spec: { targetVersion: NEW_VERSION, paused: true, driver: { webhook: { url: 'https://127.0.0.1:9/replace' } } } }));
  await forbidden('ns-editor', ['get', 'asu', name]);
  await forbidden('ns-editor', annotate);
  const got = JSON.parse(await k(['get', 'asu', name, '-o', 'json'])) as ApiServerUpgrade;
  assert.equal(got.metadata?.annotations?.['upgrade.apiserver.dev/resume'], 'e2e');
}

/** A GET of the operator's /metrics over HTTPS (the harness's CA signed its serving cert), with a bearer token or none. */
function scrape(port: number, token?: string, authorization = token === undefined ? undefined : `Bearer ${token}`): Promise<{ status: number; body: string; www?: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path: '/metrics', ca: readFileSync(cluster.pki.caCert), servername: 'localhost', headers: authorization ? { Authorization: authorization } : {}, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ...(res.headers['www-authenticate'] ? { www: String(res.headers['www-authenticate']) } : {}) }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

const METRICS_AUTH_TTL_S = 10;

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
    spec: { targetVersion: NEW_VERSION, proxy: { allowAlphaGate: true }, driver: { webhook: { url: 'https://127.0.0.1:9/replace', timeout: '2s', authSecretRef: { namespace: NS, name: HOOK_SECRET, key: 'token' } } }, analysis: { interval: '5s' } },
  }));

  // /metrics as the chart runs it: its own port, TokenReview + SubjectAccessReview made with the chart's RBAC,
  // HTTPS with a serving certificate from a file (the chart mounts metrics.tls.secretName there).
  const cert = await createServingCert(cluster.pki, 'operator-metrics', ['127.0.0.1'], []);
  const healthPort = 18000 + Math.floor(Math.random() * 1000);
  operator = await startOperator(cluster, {
    healthPort,
    extraArgs: ['--kubeconfig', saKubeconfig, '--leader-election-namespace', NS, `--metrics-port=${healthPort + 1000}`, '--metrics-auth=true',
      `--metrics-auth-cache-ttl=${METRICS_AUTH_TTL_S}s`, `--metrics-tls-cert-file=${cert.cert}`, `--metrics-tls-key-file=${cert.key}`],
  });
  const u = await waitFor('the operator to write the upgrade\'s status', 90_000, async () => {
    const x = await getUpgrade(cluster, name);
    return x?.status?.phase && x.status.phase !== 'Pending' ? x : undefined;
  });
  assert.equal(u.status?.observedGeneration, 1);
  const lease = JSON.parse(await k(['get', 'lease', 'apiserver-upgrade-operator', '-n', NS, '-o', 'json'])) as { spec: { holderIdentity?: string } };
  assert.ok(lease.spec.holderIdentity, 'the leader Lease has a holder');
  const events = JSON.parse(await k(['get', 'events.events.k8s.io', '-n', 'default', '--field-selector', `regarding.name=${name}`, '-o', 'json'])) as { items: { reason: string }[] };
  assert.ok(events.items.some((e) => e.reason === 'Started'), `events: ${events.items.map((e) => e.reason).join(', ')}`);
  await k(['create', 'serviceaccount', READER_SA, '-n', NS]);
  const metrics = await scrape(operator.healthPort + 1000, (await k(['create', 'token', READER_SA, '-n', NS])).trim());
  assert.equal(metrics.status, 200, metrics.body);
  assert.match(metrics.body, /^apiserver_upgrade_operator_leader 1$/m);

  // The gate is off on v1.35, so the operator first asks the driver to turn it on: the call goes out
  // (and fails to connect), which it could only do after reading the Secret.
  const attempt = await waitFor('a driver call that got past the Secret', 90_000, async () => {
    const lines = operator!.logLines();
    return lines.find((l) => /secret|forbidden/i.test(String(l.err ?? ''))) ?? lines.find((l) => String(l.message).startsWith('driver call not delivered'));
  });
  assert.doesNotMatch(`${String(attempt.err ?? '')} ${String(attempt.detail)}`, /secret|forbidden/i, JSON.stringify(attempt));
  assert.match(String(attempt.detail), /127\.0\.0\.1:9/, JSON.stringify(attempt));
  const forbidden = operator.logLines().filter((l) => /forbidden|\b403\b/i.test(JSON.stringify(l)));
  assert.deepEqual(forbidden, [], 'the operator hit a permission it lacks');
});

test('/metrics: TokenReview and SubjectAccessReview by the real apiserver decide 401, 403 or 200; health stays open; decisions are cached for the TTL', async () => {
  assert.ok(operator, 'the operator of the previous test runs');
  const port = operator.healthPort + 1000;
  const token = async (sa: string, ...extra: string[]): Promise<string> => (await k(['create', 'token', sa, '-n', NS, ...extra])).trim();
  await k(['create', 'serviceaccount', 'nobody', '-n', NS]);

  // Health endpoints: open, plain HTTP on their own port, which no longer serves /metrics.
  for (const path of ['/healthz', '/readyz']) assert.equal((await fetch(`http://127.0.0.1:${operator.healthPort}${path}`)).status, 200, path);
  assert.equal((await fetch(`http://127.0.0.1:${operator.healthPort}/metrics`)).status, 404);

  const none = await scrape(port);
  assert.equal(none.status, 401, none.body);
  assert.equal(none.www, 'Bearer realm="apiserver-upgrade-operator"');
  assert.equal((await scrape(port, undefined, 'Basic dXNlcjpwYXNz')).status, 401);
  assert.equal((await scrape(port, 'not-a-token')).status, 401, 'TokenReview: not authenticated');
  // A real token, but for another audience than the apiserver's: TokenReview does not authenticate it.
  assert.equal((await scrape(port, await token(READER_SA, '--audience=https://elsewhere.example.com'))).status, 401);
  // Authenticated, not authorized: the ServiceAccount is not bound to the metrics-reader ClusterRole.
  const nobody = await token('nobody');
  const denied = await scrape(port, nobody);
  assert.equal(denied.status, 403, denied.body);
  assert.match(denied.body, new RegExp(`user "system:serviceaccount:${NS}:nobody" cannot get path "/metrics"`));
  assert.ok(operator.logLines().some((l) => l.message === 'metrics authorization: forbidden' && l.user === `system:serviceaccount:${NS}:nobody`), 'the refusal is logged with the user');
  // Bound by the chart's metrics.reader.subjects: allowed.
  const reader = await token(READER_SA);
  const ok = await scrape(port, reader);
  assert.equal(ok.status, 200, ok.body);
  assert.match(ok.body, /^apiserver_upgrade_operator_leader 1$/m);

  // Revoked: the allowed decision is reused until its TTL runs out, then the next review refuses.
  const fresh = await token(READER_SA); // a new token: a decision of its own, made now
  assert.equal((await scrape(port, fresh)).status, 200);
  const reviewedAt = Date.now();
  await k(['delete', 'clusterrolebinding', `${RELEASE}-metrics-reader`]);
  const cached = await scrape(port, fresh);
  if (Date.now() - reviewedAt < METRICS_AUTH_TTL_S * 1000 - 1000) assert.equal(cached.status, 200, 'a cached decision');
  const refusedAfter = await waitFor('the revocation to take effect', (METRICS_AUTH_TTL_S + 15) * 1000, async () => ((await scrape(port, fresh)).status === 403 ? Date.now() - reviewedAt : undefined));
  assert.ok(refusedAfter >= METRICS_AUTH_TTL_S * 1000 - 500, `refused ${refusedAfter} ms after the review: before the TTL`);
  // Granted: a refusal is reused for at most min(TTL, 10 s).
  await k(['create', 'clusterrolebinding', 'e2e-nobody-reads-metrics', `--clusterrole=${RELEASE}-metrics-reader`, `--serviceaccount=${NS}:nobody`]);
  await waitFor('the grant to take effect', (Math.min(METRICS_AUTH_TTL_S, 10) + 15) * 1000, async () => ((await scrape(port, nobody)).status === 200 ? true : undefined));
  // The operator made every review with the chart's RBAC: no forbidden from the apiserver itself.
  assert.deepEqual(operator.logLines().filter((l) => /TokenReview failed|SubjectAccessReview failed/.test(String(l.message))), []);
});
