// The page of `npm run demo -- --fault`: the chart's own PrometheusRule, rendered with helm (as the chart e2e
// does), evaluated by promtool on the operator's real `apiserver_upgrade_paused` series, scraped from its
// /metrics during the pause. promtool replays that series as held for 5 minutes on its own clock (the rule's
// `for:` is not waited out in real time); which alert fires, and with what labels and annotations, is
// promtool's evaluation of the chart's rule, printed as promtool reports it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { OLD_VERSION } from '../cluster/index.ts';
import { run, runOk, tool } from '../support/tools.ts';
import { parsePromText } from '../../src/observe/prom-text.ts';

const CHART = join(import.meta.dirname, '..', '..', 'charts', 'apiserver-upgrade-operator');
const RELEASE = 'auo';
const NS = 'upgrade-system';
const FAMILY = 'apiserver_upgrade_paused';

export interface PageResult {
  /** The samples of apiserver_upgrade_paused with value 1, as scraped (name{labels} value). */
  scraped: string[];
  /** promtool's report of the alerts that fired at the evaluation time, verbatim. */
  got: string;
  /** The alert's labels and annotations as promtool printed them. */
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The second promtool run, expecting exactly that alert (and none before its `for:`), passed. */
  confirmed: boolean;
  forDuration: string;
}

/** Go-quoted `{k="v", ...}` as promtool prints Labels and Annotations. */
function goMap(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of s.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) out[m[1]!] = JSON.parse(`"${m[2]!}"`) as string;
  return out;
}

export async function pageFromPause(metricsUrl: string): Promise<PageResult> {
  const helm = tool('helm');
  const promtool = tool('promtool');
  // 1. The operator's real series, now (the upgrade is paused).
  const text = await (await fetch(metricsUrl)).text();
  const samples = (parsePromText(text, new Set([FAMILY])).get(FAMILY)?.samples ?? []).filter((s) => s.value === 1);
  if (samples.length === 0) throw new Error(`${metricsUrl} has no ${FAMILY} sample with value 1`);
  const scraped = samples.map((s) => `${FAMILY}{${Object.entries(s.labels).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ')}} ${s.value}`);

  // 2. The chart's PrometheusRule, as helm renders it with the rule on.
  const out = await runOk(helm, ['template', RELEASE, CHART, '--namespace', NS, '--kube-version', OLD_VERSION, '--set', 'prometheusRule.enabled=true', '--set', 'serviceMonitor.enabled=true']);
  type Rule = { alert?: string; expr: string; for?: string };
  const pr = parseAllDocuments(out).map((d) => d.toJSON() as { kind?: string; spec?: { groups: { name: string; rules: Rule[] }[] } } | null).find((o) => o?.kind === 'PrometheusRule');
  if (!pr?.spec) throw new Error('helm template rendered no PrometheusRule');
  const rule = pr.spec.groups.flatMap((g) => g.rules).find((r) => r.alert === 'ApiServerUpgradePaused');
  if (!rule) throw new Error('the chart has no ApiServerUpgradePaused rule');
  // The labels Prometheus adds when it scrapes the operator through the chart's ServiceMonitor: the rule selects them.
  const sel = /apiserver_upgrade_paused\{([^}]*?),\s*reason!="PausedBySpec"\}/.exec(rule.expr)?.[1];
  if (!sel) throw new Error(`cannot read the operator selector from: ${rule.expr}`);
  const target = { ...goMap(sel), pod: `${RELEASE}-apiserver-upgrade-operator-0` };

  const dir = mkdtempSync(join(tmpdir(), 'auo-demo-page-'));
  try {
    const rulesPath = join(dir, 'rules.yaml');
    writeFileSync(rulesPath, stringify({ groups: pr.spec.groups }));
    const series = samples.map((s) => ({
      series: `${FAMILY}{${Object.entries({ ...target, ...s.labels }).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ')}}`,
      values: `${s.value}x5`,
    }));
    const tests = (expect: { labels: Record<string, string>; annotations: Record<string, string> }[]): string => stringify({
      rule_files: [rulesPath],
      evaluation_interval: '1m',
      tests: [{
        interval: '1m',
        input_series: series,
        alert_rule_test: [
          ...(expect.length ? [{ eval_time: '30s', alertname: 'ApiServerUpgradePaused', exp_alerts: [] }] : []),
          { eval_time: '2m', alertname: 'ApiServerUpgradePaused', exp_alerts: expect.map((e) => ({ exp_labels: e.labels, exp_annotations: e.annotations })) },
        ],
      }],
    });
    // 3. Ask promtool for no alert: it fails and reports the alert that did fire.
    const probePath = join(dir, 'probe.yaml');
    writeFileSync(probePath, tests([]));
    const probe = await run(promtool, ['test', 'rules', probePath]);
    const report = probe.stdout + probe.stderr;
    const got = /got:\[([\s\S]*?)\n\s*\]/.exec(report)?.[1];
    if (probe.code === 0 || !got) throw new Error(`promtool found no ApiServerUpgradePaused alert firing:\n${report}`);
    const labels = goMap(/Labels:\{(.*)\}/.exec(got)?.[1] ?? '');
    const annotations = goMap(/Annotations:\{(.*)\}/.exec(got)?.[1] ?? '');
    delete labels.alertname;
    // 4. And expecting exactly that alert (and none at 30s, before its `for:`): promtool passes.
    const confirmPath = join(dir, 'confirm.yaml');
    writeFileSync(confirmPath, tests([{ labels, annotations }]));
    const confirm = await run(promtool, ['test', 'rules', confirmPath]);
    return { scraped, got: got.replace(/^\n+/, '').trimEnd(), labels, annotations, confirmed: confirm.code === 0, forDuration: rule.for ?? '0s' };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
