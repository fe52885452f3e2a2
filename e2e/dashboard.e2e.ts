// The Grafana dashboard (charts/apiserver-upgrade-operator/dashboards/apiserver-upgrade.json, docs/dashboard.md):
// - its JSON: panels laid out on the grid, every query on the datasource variable, every metric it reads one that
//   the operator or kube-apiserver exports, the signals read as src/observe/signals.ts defines them;
// - the chart's ConfigMap (helm template): only with dashboards.enabled, with the sidecar label, the JSON unchanged;
// - a real upgrade (3 kube-apiservers v1.35.4 -> v1.36.3 through the rig's webhook) watched by a real Prometheus
//   that scrapes the apiservers and the operator's own /metrics, then EVERY panel's queries, with the template
//   variables substituted as Grafana does, run on Prometheus' HTTP API: each must answer data, and the panels that
//   state facts (phase, versions, driver calls) must state the run's.
//   flock /tmp/auo-e2e.lock node_modules/.bin/node --test --test-reporter=spec e2e/dashboard.e2e.ts
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Registry } from 'prom-client';
import { OLD_VERSION, NEW_VERSION, waitFor, sleep } from './cluster/index.ts';
import { operatorTargetsDir, OPERATOR_JOB } from './cluster/prometheus.ts';
import { tool, run, runOk } from './support/tools.ts';
import { createUpgrade, getUpgrade } from './support/operator.ts';
import { startRig, upgradeManifest, type Rig } from './support/rig.ts';
import { OperatorMetrics } from '../src/controller/metrics.ts';
import { RuntimeMetrics } from '../src/runtime/metrics.ts';
import { FAMILIES, HEALTH_PROBE_SUBRESOURCE_RE, LONG_RUNNING_SUBRESOURCES, LONG_RUNNING_VERBS } from '../src/observe/signals.ts';
import { windowIncrease } from '../src/observe/prometheus-source.ts';
import { resolveSpec } from '../src/api/defaults.ts';
import { PHASES } from '../src/api/vocabulary.ts';
import type { ApiServerUpgrade, ApiServerUpgradeSpec } from '../src/api/types.generated.ts';

const root = join(import.meta.dirname, '..');
const CHART = join(root, 'charts', 'apiserver-upgrade-operator');
const DASHBOARD_KEY = 'apiserver-upgrade.json';
const DASHBOARD_FILE = join(CHART, 'dashboards', DASHBOARD_KEY);
const DASHBOARD_TEXT = readFileSync(DASHBOARD_FILE, 'utf8');
const RELEASE = 'auo';
const NS = 'upgrade-system';
const UPGRADE = 'dashboard-to-v1-36';
const HEALTH_PORT = 18097;
const SCRAPE_SECONDS = 1;
const DS_REF = '${datasource}';

interface Target { refId: string; expr: string; legendFormat?: string; instant?: boolean; range?: boolean; format?: string; hide?: boolean; datasource?: { type: string; uid: string } }
interface Panel { id: number; type: string; title: string; description?: string; gridPos: { x: number; y: number; w: number; h: number }; datasource?: { type: string; uid: string }; targets?: Target[]; panels?: Panel[] }
interface Variable { type: string; name: string; query?: unknown; definition?: string; current?: { value?: string }; datasource?: { type: string; uid: string } }
interface Dashboard { uid: string; title: string; panels: Panel[]; templating: { list: Variable[] } }

const dashboard = JSON.parse(DASHBOARD_TEXT) as Dashboard;
/** Every panel, those inside collapsed rows too; rows themselves included. */
const allPanels: Panel[] = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const queryPanels = allPanels.filter((p) => p.type !== 'row');
const panel = (title: string): Panel => {
  const p = queryPanels.find((x) => x.title === title);
  assert.ok(p, `panel "${title}"`);
  return p;
};
const variable = (name: string): Variable => {
  const v = dashboard.templating.list.find((x) => x.name === name);
  assert.ok(v, `variable ${name}`);
  return v;
};

function report(msg: string): void {
  process.stderr.write(`[dashboard] ${msg}\n`);
}

// ---------------------------------------------------------------------------------------------------------------
// The JSON alone
// ---------------------------------------------------------------------------------------------------------------

/** Metric names the operator's registry exports (histograms with their series suffixes). */
function operatorMetricNames(): Set<string> {
  const registry = new Registry();
  new OperatorMetrics(registry);
  new RuntimeMetrics(registry);
  const names = new Set<string>();
  for (const m of registry.getMetricsAsArray()) {
    const name = (m as unknown as { name: string }).name;
    const type = (m as unknown as { type?: string }).type;
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_count', '_sum']) names.add(`${name}${s}`);
  }
  return names;
}

const PROMQL_WORDS = new Set([
  'sum', 'max', 'min', 'count', 'avg', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'offset',
  'increase', 'rate', 'irate', 'histogram_quantile', 'label_replace', 'vector', 'scalar', 'absent', 'max_over_time', 'min_over_time',
]);

/** The metric names an expression selects: identifiers that are not keywords, functions, label names or variables. */
function metricNames(expr: string): Set<string> {
  const s = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // string literals
    .replace(/\boffset\s+[\w${}]+/g, ' ') // offsets
    .replace(/\$\{?\w+\}?/g, ' ') // template variables
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // label lists
    .replace(/[a-zA-Z_]\w*\s*(?:=~|!~|!=|=)/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // ranges
    .replace(/\b\d[\w.]*/g, ' '); // numbers
  const out = new Set<string>();
  for (const m of s.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) if (!PROMQL_WORDS.has(m[0])) out.add(m[0]);
  return out;
}

/** Every `name{...}` selector of a metric in an expression. */
function selectors(expr: string, name: string): string[] {
  return [...expr.matchAll(new RegExp(`\\b${name}\\{[^}]*\\}`, 'g'))].map((m) => m[0]);
}

describe('the dashboard JSON', () => {
  test('panels: unique ids, on the 24-column grid without overlaps, every query on the datasource variable', () => {
    const ids = allPanels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    const cells = new Map<string, string>();
    for (const p of allPanels) {
      const g = p.gridPos;
      assert.ok(g.x >= 0 && g.w > 0 && g.x + g.w <= 24 && g.h > 0, `${p.title}: inside the grid`);
      for (let x = g.x; x < g.x + g.w; x++) {
        for (let y = g.y; y < g.y + g.h; y++) {
          const other = cells.get(`${x},${y}`);
          assert.equal(other, undefined, `${p.title} overlaps ${other}`);
          cells.set(`${x},${y}`, p.title);
        }
      }
    }
    assert.ok(queryPanels.length >= 20, `${queryPanels.length} panels`);
    for (const p of queryPanels) {
      assert.ok(p.description && p.description.length > 20, `${p.title} has a description`);
      assert.deepEqual(p.datasource, { type: 'prometheus', uid: DS_REF }, `${p.title}: datasource`);
      assert.ok((p.targets ?? []).length > 0, `${p.title} has queries`);
      for (const t of p.targets ?? []) {
        assert.deepEqual(t.datasource, { type: 'prometheus', uid: DS_REF }, `${p.title} ${t.refId}: datasource`);
        assert.ok(t.expr.trim() !== '', `${p.title} ${t.refId}: expression`);
      }
    }
    assert.equal(dashboard.uid, 'apiserver-upgrade');
  });

  test('variables: the Prometheus datasource, the upgrade, the apiserver job, and thresholds whose defaults are the CRD\'s', () => {
    assert.equal(variable('datasource').type, 'datasource');
    assert.equal(variable('datasource').query, 'prometheus');
    for (const [name, metric, label] of [['cluster', 'apiserver_upgrade_phase', 'cluster'], ['upgrade', 'apiserver_upgrade_phase{cluster=~"$cluster"}', 'upgrade'], ['apiserver_job', 'apiserver_request_total{cluster=~"$cluster"}', 'job']] as const) {
      const v = variable(name);
      assert.equal(v.type, 'query');
      assert.deepEqual(v.datasource, { type: 'prometheus', uid: DS_REF });
      assert.equal(v.definition, `label_values(${metric}, ${label})`);
    }
    assert.equal(variable('apiserver_job').current?.value, 'apiserver', 'the job the CRD\'s default selector names');
    const t = resolveSpec({ targetVersion: NEW_VERSION, driver: { webhook: { url: 'https://hook.example' } } } as ApiServerUpgradeSpec).analysis.thresholds;
    assert.equal(Number(variable('proxy_error_ratio_threshold').current?.value), t.proxyErrorRatio);
    assert.equal(Number(variable('error_ratio_threshold').current?.value), t.errorRatio);
    assert.equal(Number(variable('latency_p99_threshold').current?.value) * 1000, t.latencyP99Ms);
    for (const p of queryPanels) {
      for (const t2 of p.targets ?? []) {
        for (const m of t2.expr.matchAll(/\$\{?(\w+)\}?/g)) {
          const name = m[1]!;
          assert.ok(name.startsWith('__') || dashboard.templating.list.some((v) => v.name === name), `${p.title}: $${name} is a variable`);
        }
      }
    }
  });

  test('every metric a query reads is one the operator or kube-apiserver exports', () => {
    const known = operatorMetricNames();
    for (const f of Object.values(FAMILIES)) known.add(f);
    for (const s of ['_bucket', '_count', '_sum']) known.add(`${FAMILIES.requestDuration}${s}`);
    known.add('kubernetes_build_info');
    known.add('up');
    const used = new Set<string>();
    for (const p of queryPanels) {
      for (const t of p.targets ?? []) {
        for (const m of metricNames(t.expr)) {
          assert.ok(known.has(m), `${p.title} ${t.refId}: ${m} is exported by nobody (known: ${[...known].sort().join(', ')})`);
          used.add(m);
        }
      }
    }
    // The brief of the dashboard: phase and batches, per-server versions, the signals, driver calls, reconcile errors.
    for (const m of ['apiserver_upgrade_phase', 'apiserver_upgrade_batch_current', 'apiserver_upgrade_batch_total', 'apiserver_upgrade_server_info',
      'apiserver_upgrade_signal', 'apiserver_upgrade_paused', 'apiserver_upgrade_consecutive_breaches', 'apiserver_upgrade_driver_calls_total',
      'apiserver_upgrade_operator_reconcile_errors_total', 'kubernetes_build_info', FAMILIES.rerouted, FAMILIES.peerProxyErrors, FAMILIES.requests,
      `${FAMILIES.requestDuration}_bucket`, FAMILIES.featureEnabled]) assert.ok(used.has(m), `some panel reads ${m}`);
    report(`metrics read: ${[...used].sort().join(', ')}`);
  });

  test('the per-server signals are read as the operator reads them: its windowIncrease, its filters, the apiserver job', () => {
    const W = '$__rate_interval';
    const JOB = 'job="$apiserver_job"';
    const CLUSTER = 'cluster=~"$cluster"';
    const healthProbes = `subresource!~"${HEALTH_PROBE_SUBRESOURCE_RE}"`;
    const shortRunning = `verb!~"${[...LONG_RUNNING_VERBS].join('|')}",subresource!~"${[...LONG_RUNNING_SUBRESOURCES, HEALTH_PROBE_SUBRESOURCE_RE].join('|')}"`;
    const families = [FAMILIES.rerouted, FAMILIES.peerProxyErrors, FAMILIES.requests, `${FAMILIES.requestDuration}_bucket`];
    let checked = 0;
    for (const p of queryPanels) {
      for (const t of p.targets ?? []) {
        for (const f of families) {
          for (const sel of selectors(t.expr, f)) {
            assert.ok(sel.includes(JOB), `${p.title}: ${sel} selects the apiserver job`);
            if (f === FAMILIES.requests) assert.ok(sel.includes(healthProbes), `${p.title}: ${sel} leaves health probes out`);
            if (f.startsWith(FAMILIES.requestDuration)) assert.ok(sel.includes(shortRunning), `${p.title}: ${sel} leaves long-running requests and health probes out`);
            // A counter born inside a window counts from zero, as the operator's Prometheus source counts it.
            const increase = windowIncrease(sel, W).replace(`(up offset ${W})`, `(up{${CLUSTER},${JOB}} offset ${W})`);
            assert.ok(t.expr.includes(increase), `${p.title}: ${sel} is read through the operator's windowIncrease`);
            checked++;
          }
        }
      }
    }
    assert.ok(checked >= 10, `${checked} selectors checked`);
    for (const [title, v] of [['Proxy error ratio per server', 'proxy_error_ratio_threshold'], ['5xx ratio per server', 'error_ratio_threshold'], ['p99 latency per server', 'latency_p99_threshold']] as const) {
      assert.ok(panel(title).targets?.some((t) => t.expr === `vector($${v})` && t.legendFormat === 'threshold'), `${title} draws its threshold`);
    }
  });

  test('docs/dashboard.md describes every panel', () => {
    const doc = readFileSync(join(root, 'docs', 'dashboard.md'), 'utf8');
    for (const p of allPanels) assert.ok(doc.includes(p.title), `docs/dashboard.md names "${p.title}"`);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The chart
// ---------------------------------------------------------------------------------------------------------------

interface K8sObject { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> }; data?: Record<string, string> }

/** `helm template` of the chart into parsed objects; `--kube-version`: a `go install`ed helm defaults to v1.20, below the chart's kubeVersion. */
async function render(set: string[] = []): Promise<K8sObject[]> {
  const out = await runOk(tool('helm'), ['template', RELEASE, CHART, '--namespace', NS, '--kube-version', OLD_VERSION, ...set.flatMap((s) => ['--set', s])]);
  return parseAllDocuments(out).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null);
}
const dashboards = (objs: K8sObject[]) => objs.filter((o) => o.kind === 'ConfigMap' && o.data?.[DASHBOARD_KEY] !== undefined);

describe('the chart\'s dashboard ConfigMap (helm template)', () => {
  let helm: string;
  before(() => {
    helm = tool('helm');
  });

  test('off by default: no ConfigMap', async () => {
    const objs = await render();
    assert.ok(objs.length > 0, 'the chart renders');
    assert.deepEqual(dashboards(objs), []);
    assert.deepEqual(objs.filter((o) => o.metadata.name.endsWith('-dashboards')).map((o) => o.kind), []);
  });

  test('dashboards.enabled: one ConfigMap in the release namespace with the sidecar label, the JSON unchanged', async () => {
    const objs = await render(['dashboards.enabled=true']);
    const cms = dashboards(objs);
    assert.equal(cms.length, 1);
    const cm = cms[0]!;
    assert.equal(cm.metadata.name, `${RELEASE}-apiserver-upgrade-operator-dashboards`);
    assert.equal(cm.metadata.namespace, NS);
    assert.equal(cm.metadata.labels?.grafana_dashboard, '1');
    assert.equal(cm.metadata.labels?.['app.kubernetes.io/instance'], RELEASE);
    assert.equal(cm.metadata.annotations, undefined);
    assert.ok(cm.data?.[DASHBOARD_KEY] === DASHBOARD_TEXT, 'the ConfigMap carries the file byte for byte');
    assert.deepEqual(Object.keys(cm.data ?? {}), [DASHBOARD_KEY]);
    const lint = await run(helm, ['lint', CHART, '--set', 'dashboards.enabled=true', '--kube-version', OLD_VERSION]);
    assert.equal(lint.code, 0, lint.stdout + lint.stderr);
  });

  test('labels, annotations and namespace are configurable', async () => {
    const [cm] = dashboards(await render([
      'dashboards.enabled=true', 'dashboards.labels.grafana_dashboard=null', 'dashboards.labels.team-dashboards=yes',
      'dashboards.annotations.grafana_folder=Kubernetes', 'dashboards.namespace=monitoring',
    ]));
    assert.ok(cm);
    assert.equal(cm.metadata.namespace, 'monitoring');
    assert.equal(cm.metadata.labels?.grafana_dashboard, undefined);
    assert.equal(cm.metadata.labels?.['team-dashboards'], 'yes');
    assert.deepEqual(cm.metadata.annotations, { grafana_folder: 'Kubernetes' });
    assert.ok(cm.data?.[DASHBOARD_KEY] === DASHBOARD_TEXT);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// A real upgrade, every query on a real Prometheus
// ---------------------------------------------------------------------------------------------------------------

interface Series { metric: Record<string, string>; values?: [number, string][]; value?: [number, string] }
interface Answer { query: string; instant: boolean; series: Series[] }

describe('every panel against a real Prometheus after a real upgrade', () => {
  let rig: Rig | undefined;
  let prom = '';
  let from = 0;
  let to = 0;
  let final: ApiServerUpgrade | undefined;
  let operatorMetrics = '';
  const answers = new Map<string, Answer[]>();

  /** The variables as Grafana substitutes them: the defaults, this run's upgrade, and the interval variables for the range. */
  function substitute(expr: string): string {
    const range = Math.ceil(to - from);
    // Grafana: $__interval is range / max data points, at least the datasource's scrape interval;
    // $__rate_interval is max($__interval + scrape interval, 4 × scrape interval).
    const interval = Math.max(SCRAPE_SECONDS, Math.ceil(range / 1000));
    const rateInterval = Math.max(interval + SCRAPE_SECONDS, 4 * SCRAPE_SECONDS);
    const values: Record<string, string> = {
      // The harness's series carry no cluster label: Grafana's variable has no value, and "" matches them.
      cluster: '',
      upgrade: UPGRADE,
      apiserver_job: variable('apiserver_job').current?.value ?? '',
      __interval: `${interval}s`,
      __rate_interval: `${rateInterval}s`,
      __range: `${range}s`,
    };
    for (const v of dashboard.templating.list) if (v.type === 'textbox') values[v.name] = v.current?.value ?? '';
    const out = expr.replace(/\$\{(\w+)\}|\$(\w+)/g, (m, a: string | undefined, b: string | undefined) => values[(a ?? b)!] ?? m);
    assert.ok(!out.includes('$'), `every variable substituted: ${out}`);
    return out;
  }

  async function ask(path: string, params: Record<string, string>): Promise<{ resultType: string; result: Series[] }> {
    const res = await fetch(`${prom}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params) });
    const doc = (await res.json()) as { status: string; error?: string; data?: { resultType: string; result: Series[] } };
    assert.equal(doc.status, 'success', `${params.query}: ${doc.error}`);
    return doc.data!;
  }

  /** A target as Grafana runs it: an instant query at the end of the range, or a range query over it. */
  async function runTarget(t: Target): Promise<Answer> {
    const query = substitute(t.expr);
    const instant = t.instant === true && t.range !== true;
    const step = Math.max(SCRAPE_SECONDS, Math.ceil((to - from) / 1000));
    const data = instant
      ? await ask('/api/v1/query', { query, time: String(to) })
      : await ask('/api/v1/query_range', { query, start: String(from), end: String(to), step: String(step) });
    assert.equal(data.resultType, instant ? 'vector' : 'matrix', query);
    return { query, instant, series: data.result };
  }

  const numbers = (s: Series): number[] => (s.values ?? (s.value ? [s.value] : [])).map(([, v]) => Number(v));
  const finite = (s: Series): number[] => numbers(s).filter((v) => Number.isFinite(v));
  const last = (s: Series): number => numbers(s).at(-1) ?? NaN;
  const answer = (title: string, refId = 'A'): Answer => {
    const i = (panel(title).targets ?? []).findIndex((t) => t.refId === refId);
    const a = answers.get(title)?.[i];
    assert.ok(a, `${title} ${refId} was run`);
    return a;
  };

  before(async () => {
    rig = await startRig({ gate: false, healthPort: HEALTH_PORT });
    const { cluster, hook } = rig;
    // The operator's /metrics as a target of the harness' Prometheus (file_sd, written atomically).
    const dir = operatorTargetsDir(cluster.dir);
    mkdirSync(dir, { recursive: true });
    const tmp = join(dir, 'operator.json.tmp');
    writeFileSync(tmp, JSON.stringify([{ targets: [`127.0.0.1:${HEALTH_PORT}`], labels: {} }]));
    renameSync(tmp, join(dir, 'operator.json'));
    prom = await cluster.startPrometheus({ scrapeIntervalSeconds: SCRAPE_SECONDS });
    await waitFor('Prometheus to scrape the operator', 30_000, async () => {
      const r = await ask('/api/v1/query', { query: `up{job="${OPERATOR_JOB}"} == 1 and on (instance) apiserver_upgrade_operator_leader{job="${OPERATOR_JOB}"}` });
      return r.result.length === 1 ? true : undefined;
    }, 500);
    from = Math.floor(Date.now() / 1000);
    await sleep(5_000); // some history before the first driver call: a series born later counts from zero
    await createUpgrade(cluster, upgradeManifest(UPGRADE, hook, { analysis: { onBreach: 'Pause' } }));
    let phase = '';
    final = await waitFor(`${UPGRADE} to finish`, 8 * 60_000, async () => {
      const u = await getUpgrade(cluster, UPGRADE);
      const p = u?.status?.phase ?? '';
      if (p !== phase) report(`phase ${(phase = p)} ${u?.status?.batch?.progress ?? ''} ${u?.status?.pause?.message ?? ''}`);
      return p === 'Succeeded' || p === 'Paused' || p === 'Failed' || p === 'RolledBack' ? u : undefined;
    }, 500);
    await hook.idle();
    await sleep(4_000); // a few scrapes of the final state
    await rig.traffic.stop();
    to = Math.floor(Date.now() / 1000);
    operatorMetrics = await (await fetch(`http://127.0.0.1:${HEALTH_PORT}/metrics`)).text();
    report(`upgrade ${final?.status?.phase} over ${to - from} s; Prometheus at ${prom}`);
  });

  after(async () => {
    await rig?.teardown();
  });

  test('the upgrade Succeeded', () => {
    assert.equal(final?.status?.phase, 'Succeeded', JSON.stringify(final?.status?.pause ?? final?.status?.conditions));
  });

  test('every query of every panel answers data on Prometheus\' HTTP API', async () => {
    const empty: string[] = [];
    for (const p of queryPanels) {
      const list: Answer[] = [];
      for (const t of p.targets ?? []) {
        if (t.hide) continue;
        const a = await runTarget(t);
        list.push(a);
        const withData = a.series.filter((s) => finite(s).length > 0);
        const shown = withData.slice(0, 6).map((s) => `${JSON.stringify(s.metric)}=${last(s)}${a.instant ? '' : ` (max ${Math.max(...finite(s))})`}`).join(' ');
        report(`${p.title} ${t.refId} (${a.instant ? 'instant' : 'range'}): ${a.series.length} series, ${withData.length} with data ${shown}`);
        if (withData.length === 0) empty.push(`${p.title} ${t.refId}: ${a.query}`);
      }
      answers.set(p.title, list);
    }
    assert.deepEqual(empty, [], 'queries without data');
  });

  test('the chart\'s ConfigMap is accepted by the real apiserver (server-side dry run)', async () => {
    const [cm] = dashboards(await render(['dashboards.enabled=true', 'dashboards.namespace=default']));
    assert.ok(cm);
    const out = await runOk(tool('kubectl'), ['--kubeconfig', rig!.cluster.kubeconfig, 'apply', '--dry-run=server', '-o', 'json', '-f', '-'], { input: JSON.stringify(cm) });
    const created = JSON.parse(out) as K8sObject;
    assert.equal(created.metadata.labels?.grafana_dashboard, '1');
    assert.ok(created.data?.[DASHBOARD_KEY] === DASHBOARD_TEXT, 'stored unchanged');
  });

  test('the template variables\' queries list this run\'s upgrade and the apiserver job', async () => {
    for (const [name, label, want] of [['upgrade', 'upgrade', UPGRADE], ['apiserver_job', 'job', 'apiserver']] as const) {
      const m = /^label_values\((\w+)(\{[^}]*\})?, (\w+)\)$/.exec(variable(name).definition ?? '');
      assert.ok(m && m[3] === label, variable(name).definition);
      // Grafana substitutes $cluster (empty here: the harness's series carry no cluster label) before asking.
      const match = `${m[1]!}${(m[2] ?? '').replace('$cluster', '')}`;
      const res = await fetch(`${prom}/api/v1/label/${label}/values?${new URLSearchParams({ 'match[]': match, start: String(from), end: String(to) })}`);
      const doc = (await res.json()) as { data: string[] };
      assert.ok(doc.data.includes(want), `${name}: ${JSON.stringify(doc.data)}`);
    }
  });

  test('the panels state what happened: phases, batches, versions, servers, driver calls', () => {
    // Phase: Succeeded now; the timeline shows the gate pass and the batches before it.
    assert.deepEqual(answer('Phase').series.map((s) => s.metric.phase), ['Succeeded']);
    const visited = answer('Phase over time').series.map((s) => s.metric.phase);
    for (const p of ['EnablingProxy', 'Upgrading', 'Succeeded']) assert.ok(visited.includes(p), `phase ${p} on the timeline (${visited.join(', ')})`);
    for (const p of visited) assert.ok((PHASES as readonly string[]).includes(p!), p);
    assert.deepEqual(answer('Paused').series.map((s) => [s.metric.reason, last(s)]), [['none', 0]]);
    assert.equal(last(answer('Batch', 'B').series[0]!), 3, 'three batches of one server');
    assert.deepEqual(answer('Batch over time').series.flatMap((s) => finite(s)).reduce((a, v) => Math.max(a, v), 0), 3, 'batch 3 reached');

    // Servers: the operator's view and the scraped one agree on three servers at the target version.
    const peers = answer('Servers (operator\'s view)').series.map((s) => s.metric);
    assert.deepEqual(peers.map((m) => m.server).sort(), ['cp-1', 'cp-2', 'cp-3']);
    for (const m of peers) assert.deepEqual([m.version, m.ready, m.proxy_gate], [NEW_VERSION, 'true', 'Enabled'], JSON.stringify(m));
    const build = answer('kube-apiservers (scraped)', 'A').series;
    assert.equal(build.length, 3);
    for (const s of build) assert.equal(s.metric.git_version, NEW_VERSION);
    assert.deepEqual(answer('kube-apiservers (scraped)', 'B').series.map(last), [1, 1, 1], 'the proxy gate is on everywhere');
    assert.deepEqual(answer('kube-apiservers (scraped)', 'C').series.map(last), [1, 1, 1], 'all up');
    const versions = answer('kube-apiservers by version (scraped)').series.map((s) => s.metric.git_version).sort();
    assert.deepEqual(versions, [OLD_VERSION, NEW_VERSION].sort(), 'both versions over the range');
    const opVersions = new Set(answer('Servers by version (operator\'s view)').series.map((s) => s.metric.version));
    assert.ok(opVersions.has(OLD_VERSION) && opVersions.has(NEW_VERSION), [...opVersions].join(', '));

    // Driver calls over the range: what the operator counted, and what the webhook received.
    const table = new Map(answer('Driver calls in the time range').series.map((s) => [`${s.metric.action}/${s.metric.outcome}`, last(s)]));
    const counted = new Map([...operatorMetrics.matchAll(/^apiserver_upgrade_driver_calls_total\{action="(\w+)",outcome="(\w+)"\} (\d+)$/gm)].map((m) => [`${m[1]}/${m[2]}`, Number(m[3])]));
    report(`driver calls: dashboard ${JSON.stringify(Object.fromEntries(table))}, operator /metrics ${JSON.stringify(Object.fromEntries(counted))}`);
    assert.deepEqual(table, counted);
    const received = new Map<string, number>();
    for (const c of rig!.hook.calls.values()) received.set(`${c.action}/accepted`, (received.get(`${c.action}/accepted`) ?? 0) + 1);
    assert.deepEqual(table, received, 'each call accepted once');
  });

  test('the signals: the operator\'s checks and the per-server values name every server and version', () => {
    for (const s of ['Proxy error ratio', '5xx ratio', 'p99 latency']) {
      const threshold = answer(`${s}: operator's checks`, 'B').series;
      assert.equal(threshold.length, 1);
      const checks = answer(`${s}: operator's checks`, 'A').series.flatMap(finite);
      assert.ok(checks.length > 0, `${s}: the operator reported checks`);
      const perServer = answer(`${s} per server`).series;
      const named = perServer.filter((x) => finite(x).length > 0).map((x) => `${x.metric.instance} ${x.metric.git_version}`);
      report(`${s}: operator's checks max ${Math.max(...checks)}; per server ${named.join(', ')}`);
      for (const x of perServer) assert.ok(x.metric.instance && x.metric.git_version, `${s}: per-server series carry instance and version (${JSON.stringify(x.metric)})`);
    }
    // Every server served requests at both versions, so each has a 5xx ratio and a p99 under both.
    for (const s of ['5xx ratio', 'p99 latency']) {
      const versions = new Set(answer(`${s} per server`).series.filter((x) => finite(x).length > 0).map((x) => x.metric.git_version));
      assert.deepEqual([...versions].sort(), [OLD_VERSION, NEW_VERSION].sort(), s);
    }
    // Old servers forwarded the new-only resource to the new ones while versions were mixed.
    const proxied = answer('Proxy error ratio per server').series.filter((x) => finite(x).length > 0);
    assert.ok(proxied.some((x) => x.metric.git_version === OLD_VERSION), 'an old server proxied');
  });
});

