// The blocks of docs/monitoring.md that e2e/alerting.e2e.ts runs: found by their markers
// (e2e/support/doc-blocks.ts), valid YAML, and consistent with each other, so a page edit that breaks them fails
// here in seconds rather than in the e2e suite. The e2e test is what proves they work on real components.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { docBlock, docBlocks, substitute } from '../../e2e/support/doc-blocks.ts';

const PAGE = join(import.meta.dirname, '..', '..', 'docs', 'monitoring.md');
const TAG = 'e2e/alerting.e2e.ts';
const yaml = (name: string): unknown => parse(docBlock(PAGE, TAG, name).text);

test('docBlocks: the block right under a marker, by name; a marker without a block, an unclosed or a repeated block throws', () => {
  const page = ['text', '<!-- t: a.yml -->', '```yaml', 'x: 1', '```', '', '<!-- other: b -->', '```sh', 'echo', '```', '<!-- t: c.sh -->', '```sh', 'ls', '', 'pwd', '```'].join('\n');
  const blocks = docBlocks(page, 't');
  assert.deepEqual([...blocks.keys()], ['a.yml', 'c.sh']);
  assert.deepEqual(blocks.get('a.yml'), { name: 'a.yml', lang: 'yaml', text: 'x: 1\n', line: 2 });
  assert.equal(blocks.get('c.sh')?.text, 'ls\n\npwd\n');
  assert.throws(() => docBlocks('<!-- t: a -->\ntext\n```\nx\n```', 't'), /not right above a fenced code block/);
  assert.throws(() => docBlocks('<!-- t: a -->\n```\nx', 't'), /never closed/);
  assert.throws(() => docBlocks('<!-- t: a -->\n```\nx\n```\n<!-- t: a -->\n```\ny\n```', 't'), /a second block named a/);
  const b = blocks.get('a.yml')!;
  assert.equal(substitute(b, [['1', '2']]), 'x: 2\n');
  assert.throws(() => substitute(b, [['nowhere', 'x']]), /no longer contains "nowhere"/);
});

test('docs/monitoring.md has the six monitoring blocks e2e/alerting.e2e.ts runs, the YAML ones valid', () => {
  const blocks = docBlocks(readFileSync(PAGE, 'utf8'), TAG);
  assert.deepEqual([...blocks.keys()].sort(), ['alertmanager.yml', 'amtool.sh', 'monitoring-values.yaml', 'prometheus-rbac.yaml', 'prometheus.yml', 'rules.sh']);
  for (const b of blocks.values()) {
    if (b.lang === 'yaml') assert.ok(parseAllDocuments(b.text).every((d) => d.errors.length === 0), `${b.name} is YAML`);
    else assert.equal(b.lang, 'sh', b.name);
  }
});

test('the blocks agree: the ServiceAccount, the alert label Alertmanager routes on, the rules file, the receivers', () => {
  const values = yaml('monitoring-values.yaml') as { metrics: { reader: { subjects: { kind: string; namespace: string; name: string }[] } }; prometheusRule: { alertLabels: Record<string, string> } };
  const rbac = parseAllDocuments(docBlock(PAGE, TAG, 'prometheus-rbac.yaml').text).map((d) => d.toJS() as { kind: string; metadata: { name: string; namespace?: string }; subjects?: unknown[] });
  const sa = rbac.find((o) => o.kind === 'ServiceAccount')!;
  // The chart binds the same ServiceAccount to its metrics-reader role that the page creates and binds for discovery.
  assert.deepEqual(values.metrics.reader.subjects, [{ kind: 'ServiceAccount', namespace: sa.metadata.namespace, name: sa.metadata.name }]);
  assert.deepEqual(rbac.find((o) => o.kind === 'ClusterRoleBinding')?.subjects, values.metrics.reader.subjects);

  const am = yaml('alertmanager.yml') as { route: { receiver: string; routes: { matchers: string[]; receiver: string; group_by: string[]; routes: { matchers: string[]; receiver: string }[] }[] }; receivers: { name: string }[] };
  const branch = am.route.routes[0]!;
  for (const [label, value] of Object.entries(values.prometheusRule.alertLabels)) assert.ok(branch.matchers.includes(`${label}="${value}"`), `the route matches ${label}=${value}`);
  assert.deepEqual(branch.group_by, ['alertname', 'upgrade']);
  const names = am.receivers.map((r) => r.name);
  for (const r of [am.route.receiver, branch.receiver, ...branch.routes.map((x) => x.receiver)]) assert.ok(names.includes(r), `receiver ${r} is defined`);

  const prom = yaml('prometheus.yml') as { rule_files: string[]; scrape_configs: { job_name: string }[] };
  assert.deepEqual(prom.scrape_configs.map((j) => j.job_name), ['apiserver', 'apiserver-upgrade-operator']);
  const rules = docBlock(PAGE, TAG, 'rules.sh').text;
  for (const f of prom.rule_files) assert.ok(rules.includes(`> ${f}`), `rules.sh writes ${f}`);
  assert.match(rules, /-f monitoring-values\.yaml/);
  // The e2e renders the checkout's chart in place of the published one: it replaces exactly this text.
  const version = (JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
  assert.ok(rules.includes(`oci://ghcr.io/apiserver-upgrade-operator/charts/apiserver-upgrade-operator --version ${version}`), 'rules.sh renders the published chart of package.json\'s version');
});
