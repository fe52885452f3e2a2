// The Grafana dashboard (charts/apiserver-upgrade-operator/dashboards/apiserver-upgrade.json) without Prometheus:
// its thresholds are the ones scripts/dashboard.ts writes from the CRD's defaults and the chart's values (never typed
// by hand), and every query is scoped to the `cluster` variable, so one Prometheus of several clusters shows one
// cluster at a time. e2e/dashboard.e2e.ts runs every query against a real Prometheus during a real upgrade.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { stringify, parse } from 'yaml';
import { DASHBOARD_FILE, RECONCILE_ERRORS_PANEL, dashboardThresholds, renderDashboard } from '../../scripts/dashboard.ts';

const text = readFileSync(DASHBOARD_FILE, 'utf8');
interface Target { refId: string; expr: string }
interface Panel { title: string; targets?: Target[]; panels?: Panel[]; fieldConfig?: { defaults?: { thresholds?: { steps?: { color: string; value: number | null }[] } } } }
interface Variable { name: string; type: string; definition?: string; current?: { value?: string } }
const dashboard = JSON.parse(text) as { panels: Panel[]; templating: { list: Variable[] } };
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const variable = (name: string): Variable | undefined => dashboard.templating.list.find((v) => v.name === name);
const CLUSTER = 'cluster=~"$cluster"';

test('the committed dashboard is what scripts/dashboard.ts writes (run npx node scripts/dashboard.ts --write)', () => {
  assert.equal(text, renderDashboard(text));
});

test('its thresholds come from the CRD\'s defaults and the chart\'s values, and follow them', () => {
  const t = dashboardThresholds();
  assert.deepEqual(t, { proxyErrorRatio: 0.01, errorRatio: 0.05, latencyP99Seconds: 1, reconcileErrors: 5 }, 'today\'s defaults (src/api/schema-spec.ts, values.yaml)');
  assert.equal(variable('proxy_error_ratio_threshold')?.current?.value, String(t.proxyErrorRatio));
  assert.equal(variable('error_ratio_threshold')?.current?.value, String(t.errorRatio));
  assert.equal(variable('latency_p99_threshold')?.current?.value, String(t.latencyP99Seconds));
  const steps = panels.find((p) => p.title === RECONCILE_ERRORS_PANEL)?.fieldConfig?.defaults?.thresholds?.steps ?? [];
  const red = steps.find((s) => s.color === 'red')?.value ?? NaN;
  assert.ok(red > t.reconcileErrors && red < t.reconcileErrors + 0.01, `red just above the alert's threshold: ${red}`);
  // Another default in values.yaml moves the panel with it: the generator reads it, nobody types it.
  const values = parse(readFileSync(DASHBOARD_FILE.replace(/dashboards\/apiserver-upgrade\.json$/, 'values.yaml'), 'utf8')) as { prometheusRule: { reconcileErrors: { threshold: number } } };
  values.prometheusRule.reconcileErrors.threshold = 12;
  const moved = JSON.parse(renderDashboard(text, dashboardThresholds(stringify(values)))) as typeof dashboard;
  const movedRed = moved.panels.flatMap((p) => [p, ...(p.panels ?? [])]).find((p) => p.title === RECONCILE_ERRORS_PANEL)?.fieldConfig?.defaults?.thresholds?.steps?.find((s) => s.color === 'red')?.value;
  assert.ok(movedRed !== undefined && movedRed !== null && movedRed > 12 && movedRed < 12.01, String(movedRed));
  assert.throws(() => dashboardThresholds('prometheusRule: {}\n'), /reconcileErrors\.threshold/);
});

test('a cluster variable, and every series a query or a variable reads is selected in that cluster', () => {
  const v = variable('cluster');
  assert.equal(v?.type, 'query');
  assert.equal(v?.definition, 'label_values(apiserver_upgrade_phase, cluster)');
  const order = dashboard.templating.list.map((x) => x.name);
  assert.ok(order.indexOf('cluster') < order.indexOf('upgrade') && order.indexOf('cluster') < order.indexOf('apiserver_job'), 'chosen before the variables that depend on it');
  assert.equal(variable('upgrade')?.definition, `label_values(apiserver_upgrade_phase{${CLUSTER}}, upgrade)`);
  assert.equal(variable('apiserver_job')?.definition, `label_values(apiserver_request_total{${CLUSTER}}, job)`);
  let selectors = 0;
  for (const p of panels) {
    for (const t of p.targets ?? []) {
      // Every metric name outside string literals: followed by a selector that names the cluster.
      const code = t.expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
      const found = [...code.matchAll(/\b((?:apiserver|kubernetes)_\w+|up)\b(\{[^}]*\})?/g)];
      for (const m of found) assert.ok(m[2]?.startsWith('{cluster=~""'), `${p.title} ${t.refId}: ${m[1]} without the cluster matcher in ${t.expr}`);
      assert.equal(t.expr.split(`{${CLUSTER}`).length - 1, found.length, `${p.title} ${t.refId}: the matcher is ${CLUSTER}`);
      selectors += found.length;
    }
  }
  assert.ok(selectors > 50, `${selectors} selectors checked`);
});
