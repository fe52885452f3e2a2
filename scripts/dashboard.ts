// The Grafana dashboard's thresholds, written from where they live instead of typed by hand:
// - the signal thresholds' textbox variables (their default, their option, their description) from the CRD's defaults
//   of spec.analysis.thresholds (src/api/schema-spec.ts, as resolveSpec applies them);
// - the "Reconcile errors (15 min)" stat's red step from the chart's prometheusRule.reconcileErrors.threshold, the
//   ApiServerUpgradeReconcileErrors alert's (values.yaml).
// The rest of charts/apiserver-upgrade-operator/dashboards/apiserver-upgrade.json is edited by hand.
//   npx node scripts/dashboard.ts --write    after changing either source (npm run generate runs it)
// test/chart/dashboard.test.ts fails when the committed file differs from what this writes.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { resolveSpec } from '../src/api/defaults.ts';
import type { ApiServerUpgradeSpec } from '../src/api/types.generated.ts';

const root = join(import.meta.dirname, '..');
export const CHART_DIR = join(root, 'charts', 'apiserver-upgrade-operator');
export const DASHBOARD_FILE = join(CHART_DIR, 'dashboards', 'apiserver-upgrade.json');
export const RECONCILE_ERRORS_PANEL = 'Reconcile errors (15 min)';

/** Grafana colours a stat from the step whose value is <= the number: "above N" is N plus this. */
const ABOVE = 0.0001;

export interface DashboardThresholds {
  proxyErrorRatio: number;
  errorRatio: number;
  latencyP99Seconds: number;
  /** ApiServerUpgradeReconcileErrors fires above this many failed reconciles in 15 minutes. */
  reconcileErrors: number;
}

/** The thresholds from their sources: the CRD's defaults and the chart's values. */
export function dashboardThresholds(valuesYaml: string = readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')): DashboardThresholds {
  // Any valid spec: only the defaults of analysis.thresholds are read.
  const t = resolveSpec({ targetVersion: 'v1.0.0', driver: { webhook: { url: 'https://hook.invalid' } } } as ApiServerUpgradeSpec).analysis.thresholds;
  const values = parse(valuesYaml) as { prometheusRule?: { reconcileErrors?: { threshold?: unknown } } };
  const reconcileErrors = values.prometheusRule?.reconcileErrors?.threshold;
  if (typeof reconcileErrors !== 'number') throw new Error('values.yaml has no number at prometheusRule.reconcileErrors.threshold');
  return { proxyErrorRatio: t.proxyErrorRatio, errorRatio: t.errorRatio, latencyP99Seconds: t.latencyP99Ms / 1000, reconcileErrors };
}

interface Variable { type: string; name: string; description?: string; query?: unknown; current?: unknown; options?: unknown[] }
interface Step { color: string; value: number | null }
interface Panel { title: string; description?: string; panels?: Panel[]; fieldConfig?: { defaults?: { thresholds?: { steps?: Step[] } } } }
interface Dashboard { panels: Panel[]; templating: { list: Variable[] } }

/** The textbox variables that carry a spec.analysis.thresholds value: name, field, unit of the description. */
const TEXTBOXES: { name: string; key: Exclude<keyof DashboardThresholds, 'reconcileErrors'>; field: string; unit: string }[] = [
  { name: 'proxy_error_ratio_threshold', key: 'proxyErrorRatio', field: 'proxyErrorRatio', unit: '' },
  { name: 'error_ratio_threshold', key: 'errorRatio', field: 'errorRatio', unit: '' },
  { name: 'latency_p99_threshold', key: 'latencyP99Seconds', field: 'latencyP99', unit: 's' },
];

/** The dashboard JSON with its thresholds set from `t`; everything else as it is. */
export function renderDashboard(text: string, t: DashboardThresholds = dashboardThresholds()): string {
  const d = JSON.parse(text) as Dashboard;
  for (const b of TEXTBOXES) {
    const v = d.templating.list.find((x) => x.name === b.name && x.type === 'textbox');
    if (!v) throw new Error(`the dashboard has no textbox variable ${b.name}`);
    const value = String(t[b.key]);
    v.description = `spec.analysis.thresholds.${b.field} of the upgrade${b.unit === 's' ? ', in seconds' : ''} (CRD default ${value}${b.unit}).`;
    v.query = value;
    v.current = { selected: false, text: value, value };
    v.options = [{ selected: true, text: value, value }];
  }
  const panel = d.panels.flatMap((p) => [p, ...(p.panels ?? [])]).find((p) => p.title === RECONCILE_ERRORS_PANEL);
  const steps = panel?.fieldConfig?.defaults?.thresholds?.steps;
  const red = steps?.find((s) => s.color === 'red');
  if (!panel || !red) throw new Error(`the dashboard has no "${RECONCILE_ERRORS_PANEL}" stat with a red step`);
  red.value = t.reconcileErrors + ABOVE;
  panel.description = `Reconciles that failed and were requeued with backoff in the last 15 minutes (apiserver_upgrade_operator_reconcile_errors_total). Red above ${t.reconcileErrors}, the chart's prometheusRule.reconcileErrors.threshold (the ApiServerUpgradeReconcileErrors alert).`;
  return `${JSON.stringify(d, null, 2)}\n`;
}

if (import.meta.main) {
  const before = readFileSync(DASHBOARD_FILE, 'utf8');
  const after = renderDashboard(before);
  if (process.argv.includes('--write')) {
    if (after !== before) writeFileSync(DASHBOARD_FILE, after);
  } else if (after !== before) {
    process.stderr.write(`${DASHBOARD_FILE} is not up to date: run npx node scripts/dashboard.ts --write\n`);
    process.exit(1);
  }
}
