// The chart's alert rules as `helm template` renders them, for promtool (e2e/chart.e2e.ts, e2e/alert-rules.e2e.ts):
// the rule groups written to a rules file, and an alert's annotations expanded as Prometheus expands them.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { stringify } from 'yaml';
import { OLD_VERSION } from '../cluster/index.ts';
import { runOk } from './tools.ts';

export const CHART = join(import.meta.dirname, '..', '..', 'charts', 'apiserver-upgrade-operator');

export type Rule = { alert: string; expr: string; for?: string; labels: Record<string, string>; annotations: Record<string, string> };
export type RuleGroup = { name: string; rules: Rule[] };

export interface RuleFile {
  path: string;
  groups: RuleGroup[];
  rules: Rule[];
  /** The first rule of that alert (ApiServerUpgradeOperatorDown has two: critical, then idle). */
  rule: (alert: string) => Rule;
}

/** `helm template` of the chart's PrometheusRule (prometheusRule.enabled and `set`), its groups written to `dir`/rules.yaml. */
export async function renderRules(helm: string, dir: string, o: { release: string; namespace: string; set?: string[] }): Promise<RuleFile> {
  const set = ['prometheusRule.enabled=true', ...(o.set ?? [])];
  const out = await runOk(helm, ['template', o.release, CHART, '--namespace', o.namespace, '--kube-version', OLD_VERSION, '--show-only', 'templates/prometheusrule.yaml', ...set.flatMap((s) => ['--set', s])]);
  const docs = parseAllDocuments(out).map((d) => d.toJSON() as { kind?: string; spec?: { groups: RuleGroup[] } } | null);
  const pr = docs.find((d) => d?.kind === 'PrometheusRule');
  assert.ok(pr?.spec, 'a PrometheusRule');
  const path = join(dir, 'rules.yaml');
  writeFileSync(path, stringify({ groups: pr.spec.groups }));
  const rules = pr.spec.groups.flatMap((g) => g.rules);
  return { path, groups: pr.spec.groups, rules, rule: (alert) => rules.find((r) => r.alert === alert)! };
}

/** The summary's prefix naming the cluster (charts/.../prometheusrule.yaml $cluster). */
export const CLUSTER_PREFIX = '{{ with $labels.cluster }}{{ . }}: {{ else }}{{ with $externalLabels.cluster }}{{ . }}: {{ end }}{{ end }}';

/** An alert's annotations as Prometheus expands them for these labels (the templates use $labels.<name>, $value | humanize and the cluster prefix only). */

export function expanded(r: Rule, labels: Record<string, string>, value = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.annotations)) {
    out[k] = v
      // The cluster prefix of a summary: the series' cluster label (promtool sets no external labels).
      .replace(CLUSTER_PREFIX, labels.cluster ? `${labels.cluster}: ` : '')
      .replace(/\{\{ \$labels\.(\w+) \}\}/g, (_m, l: string) => labels[l] ?? '').replaceAll('{{ $value | humanize }}', value);
  }
  assert.doesNotMatch(JSON.stringify(out), /\{\{/, `${r.alert}: an annotation template this helper does not expand`);
  return out;
}

/** GitHub's anchor of a markdown heading: lower case, punctuation dropped, spaces to hyphens. */
export const anchorOf = (heading: string): string => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');

/** The anchors of every heading of a markdown text. */
export const anchorsOf = (markdown: string): Set<string> =>
  new Set(markdown.split('\n').filter((l) => /^#{1,6} /.test(l)).map((l) => anchorOf(l.replace(/^#+/, ''))));
