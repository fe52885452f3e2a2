// The chart's alert rules where one Prometheus holds several clusters (kube-prometheus-stack with a cluster label,
// Thanos), and ApiServerUpgradeOperatorDown's severity, unit-tested with promtool on the rules `helm template`
// renders (no cluster needed: helm and promtool only). e2e/chart.e2e.ts tests every alert on one cluster.
//   node --test --test-concurrency=1 --test-reporter=spec e2e/alert-rules.e2e.ts
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { tool, run } from './support/tools.ts';
import { anchorsOf, CHART, expanded, renderRules, type Rule, type RuleFile } from './support/alert-rules.ts';
import { PHASES } from '../src/api/vocabulary.ts';

const root = join(import.meta.dirname, '..');
const RELEASE = 'apiserver-upgrade-operator';
const NS = 'upgrade-system';
const OP = `job="${RELEASE}-metrics", namespace="${NS}"`;

let helm: string;
let promtool: string;
let work: string;
before(() => {
  helm = tool('helm');
  promtool = tool('promtool');
  work = mkdtempSync(join(tmpdir(), 'auo-rules-'));
});
after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

const rules = (set: string[] = []): Promise<RuleFile> => renderRules(helm, work, { release: RELEASE, namespace: NS, set });

interface AlertTest { eval_time: string; alertname: string; exp_alerts: { exp_labels: Record<string, string>; exp_annotations: Record<string, string> }[] }
interface Case { interval: string; input_series: { series: string; values: string }[]; alert_rule_test: AlertTest[] }

/** promtool test rules on `cases`; fails with promtool's own report. */
async function promtoolTest(file: RuleFile, cases: Case[]): Promise<void> {
  const path = join(work, 'rules.test.yaml');
  writeFileSync(path, stringify({ rule_files: [file.path], evaluation_interval: '1m', tests: cases }));
  const r = await run(promtool, ['test', 'rules', path]);
  assert.equal(r.code, 0, `promtool test rules:\n${r.stdout}${r.stderr}`);
  assert.match(r.stdout + r.stderr, /SUCCESS/);
}

/** What promtool expects of a firing alert: the rule's own labels (its severity) and these, its annotations expanded. */
const firing = (r: Rule, labels: Record<string, string>, value?: string): AlertTest['exp_alerts'][number] =>
  ({ exp_labels: { ...r.labels, ...labels }, exp_annotations: expanded(r, labels, value) });

/** The two ApiServerUpgradeOperatorDown rules: the one that pages, the one that does not. */
function operatorDown(file: RuleFile): { page: Rule; idle: Rule } {
  const both = file.rules.filter((r) => r.alert === 'ApiServerUpgradeOperatorDown');
  assert.equal(both.length, 2, 'two rules: paging while an upgrade changes servers, a ticket otherwise');
  const page = both.find((r) => r.labels.severity === 'critical');
  const idle = both.find((r) => r.labels.severity === 'warning');
  assert.ok(page && idle, `severities ${both.map((r) => r.labels.severity).join(', ')}`);
  return { page, idle };
}

test('every alert keeps the cluster label apart: by (cluster, upgrade), on (cluster); prometheusRule.aggregationLabels changes the list', async () => {
  const file = await rules();
  for (const r of file.rules) {
    const lists = [...r.expr.matchAll(/\b(by|on)\s*\(([^)]*)\)/g)].map((m) => m[2]!.split(',').map((s) => s.trim()).filter(Boolean));
    assert.ok(lists.length > 0, `${r.alert}: aggregates`);
    for (const l of lists) assert.equal(l[0], 'cluster', `${r.alert}: every by/on list starts with cluster: ${r.expr}`);
    assert.doesNotMatch(r.expr, /\b(?:sum|max|min|count)\s*\(/, `${r.alert}: no aggregation without a by list`);
  }
  const thanos = await rules(['prometheusRule.aggregationLabels[0]=cluster', 'prometheusRule.aggregationLabels[1]=region']);
  for (const r of thanos.rules) for (const m of r.expr.matchAll(/\b(?:by|on)\s*\(([^)]*)\)/g)) assert.match(m[1]!, /^cluster, region\b/, r.alert);
  const none = await rules(['prometheusRule.aggregationLabels=null']);
  assert.match(none.rule('ApiServerUpgradePaused').expr, /max by \(upgrade, reason\)/);
  assert.match(none.rule('ApiServerUpgradeOperatorNoLeader').expr, /max by \(\) \(/);
  for (const f of [thanos, none]) assert.match((await run(promtool, ['check', 'rules', f.path])).stdout, /SUCCESS/);
  // A label the rules use themselves cannot be an aggregation label (it would be listed twice).
  const bad = await run(helm, ['template', RELEASE, CHART, '--set', 'prometheusRule.enabled=true', '--set', 'prometheusRule.aggregationLabels[0]=upgrade']);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /aggregationLabels/);
});

test('promtool: two clusters in one Prometheus, an upgrade of the same name in each: one alert per cluster; one cluster\'s operator down while the other\'s runs still alerts', async () => {
  const file = await rules();
  const down = operatorDown(file);
  const a = `${OP}, cluster="a", pod="op-a"`;
  const b = `${OP}, cluster="b", pod="op-b"`;
  await promtoolTest(file, [
    {
      interval: '1m',
      input_series: [
        { series: `apiserver_upgrade_paused{${a}, upgrade="to-v1-36", reason="AnalysisBreach"}`, values: '1x10' },
        { series: `apiserver_upgrade_paused{${b}, upgrade="to-v1-36", reason="BatchTimeout"}`, values: '1x10' },
        { series: `apiserver_upgrade_phase{${a}, upgrade="to-v1-36", phase="Failed"}`, values: '1x10' },
        { series: `apiserver_upgrade_phase{${b}, upgrade="to-v1-36", phase="Failed"}`, values: '0x10' },
        { series: `up{${a}}`, values: '1x10' },
        { series: `up{${b}}`, values: '1x10' },
        { series: `apiserver_upgrade_operator_leader{${a}}`, values: '1x10' },
        { series: `apiserver_upgrade_operator_leader{${b}}`, values: '0x10' },
        { series: `apiserver_upgrade_operator_reconcile_errors_total{${a}}`, values: '0+2x10' },
        { series: `apiserver_upgrade_operator_reconcile_errors_total{${b}}`, values: '0x10' },
      ],
      alert_rule_test: [
        {
          eval_time: '3m', alertname: 'ApiServerUpgradePaused', exp_alerts: [
            firing(file.rule('ApiServerUpgradePaused'), { cluster: 'a', upgrade: 'to-v1-36', reason: 'AnalysisBreach' }),
            firing(file.rule('ApiServerUpgradePaused'), { cluster: 'b', upgrade: 'to-v1-36', reason: 'BatchTimeout' }),
          ],
        },
        { eval_time: '3m', alertname: 'ApiServerUpgradeFailed', exp_alerts: [firing(file.rule('ApiServerUpgradeFailed'), { cluster: 'a', upgrade: 'to-v1-36' })] },
        // Without `by (cluster)` cluster a's leader would hide that b has none.
        { eval_time: '6m', alertname: 'ApiServerUpgradeOperatorNoLeader', exp_alerts: [firing(file.rule('ApiServerUpgradeOperatorNoLeader'), { cluster: 'b' })] },
        { eval_time: '6m', alertname: 'ApiServerUpgradeOperatorDown', exp_alerts: [] },
      ],
    },
    {
      // Cluster a's operator stops being scraped at minute 2 (its target gone, so its series end) in the middle of
      // an upgrade; cluster b's runs on, its upgrade finished. absent(up == 1) over the whole Prometheus would
      // see b's and say nothing; per cluster, a pages.
      interval: '1m',
      input_series: [
        { series: `up{${a}}`, values: '1x2 _x20' },
        { series: `apiserver_upgrade_phase{${a}, upgrade="to-v1-36", phase="Upgrading"}`, values: '1x2 _x20' },
        { series: `up{${b}}`, values: '1x22' },
        { series: `apiserver_upgrade_phase{${b}, upgrade="to-v1-36", phase="Upgrading"}`, values: '0x22' },
        { series: `apiserver_upgrade_phase{${b}, upgrade="to-v1-36", phase="Succeeded"}`, values: '1x22' },
        { series: `apiserver_upgrade_operator_leader{${b}}`, values: '1x22' },
      ],
      alert_rule_test: [
        { eval_time: '5m', alertname: 'ApiServerUpgradeOperatorDown', exp_alerts: [] },
        { eval_time: '15m', alertname: 'ApiServerUpgradeOperatorDown', exp_alerts: [firing(down.page, { cluster: 'a' })] },
        { eval_time: '15m', alertname: 'ApiServerUpgradeOperatorNoLeader', exp_alerts: [] },
      ],
    },
  ]);
});

test('promtool: ApiServerUpgradeOperatorDown pages only while an upgrade was changing servers; otherwise, and when never scraped, it is a ticket', async () => {
  const file = await rules();
  const { page, idle } = operatorDown(file);
  const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as { prometheusRule: { operatorDown: { severity: string; idleSeverity: string; pagePhases: string[] } } };
  assert.equal(page.labels.severity, values.prometheusRule.operatorDown.severity);
  assert.equal(idle.labels.severity, values.prometheusRule.operatorDown.idleSeverity);
  assert.deepEqual(values.prometheusRule.operatorDown.pagePhases, ['EnablingProxy', 'Upgrading', 'RollingBack'], 'the phases in which the operator changes servers');
  const op = `${OP}, pod="op-0"`;
  // One case per last phase before the operator went away at minute 2 (scrapes failing: up 0, no other series).
  const lastPhase = (phase: string): Case => ({
    interval: '1m',
    input_series: [
      { series: `up{${op}}`, values: '1x2 0x20' },
      ...PHASES.map((p) => ({ series: `apiserver_upgrade_phase{${op}, upgrade="u", phase="${p}"}`, values: `${p === phase ? 1 : 0}x2 _x20` })),
    ],
    alert_rule_test: [
      { eval_time: '5m', alertname: 'ApiServerUpgradeOperatorDown', exp_alerts: [] },
      { eval_time: '10m', alertname: 'ApiServerUpgradeOperatorDown', exp_alerts: [firing(values.prometheusRule.operatorDown.pagePhases.includes(phase) ? page : idle, {})] },
    ],
  });
  await promtoolTest(file, [
    ...PHASES.map(lastPhase),
    {
      // No upgrade object at all (no phase series): a ticket.
      interval: '1m',
      input_series: [{ series: `up{${op}}`, values: '0x20' }],
      alert_rule_test: [{ eval_time: '10m', alertname: 'ApiServerUpgradeOperatorDown', exp_alerts: [firing(idle, {})] }],
    },
    {
      // Never scraped (a ServiceMonitor nobody selects): no series of the operator at all, still a ticket.
      interval: '1m',
      input_series: [{ series: 'up{job="something-else"}', values: '1x20' }],
      alert_rule_test: [{ eval_time: '10m', alertname: 'ApiServerUpgradeOperatorDown', exp_alerts: [firing(idle, {})] }],
    },
    {
      // Up again: nothing.
      interval: '1m',
      input_series: [
        { series: `up{${op}}`, values: '1x2 0x8 1x10' },
        { series: `apiserver_upgrade_phase{${op}, upgrade="u", phase="Upgrading"}`, values: '1x2 _x8 1x10' },
        { series: `apiserver_upgrade_operator_leader{${op}}`, values: '1x2 _x8 1x10' },
      ],
      alert_rule_test: [
        { eval_time: '9m', alertname: 'ApiServerUpgradeOperatorDown', exp_alerts: [firing(page, {})] },
        { eval_time: '15m', alertname: 'ApiServerUpgradeOperatorDown', exp_alerts: [] },
      ],
    },
  ]);
});

test('runbook_url: none by default (a chart from a checkout links to nothing unpublished); with prometheusRule.runbookUrl, each anchor names a heading of docs/operations.md', async () => {
  const file = await rules();
  for (const r of file.rules) assert.equal(r.annotations.runbook_url, undefined, `${r.alert}: no runbook_url without prometheusRule.runbookUrl`);
  const base = 'https://github.com/apiserver-upgrade-operator/apiserver-upgrade-operator/blob/v0.2.0/docs/operations.md';
  const linked = await rules([`prometheusRule.runbookUrl=${base}`]);
  const anchors = anchorsOf(readFileSync(join(root, 'docs', 'operations.md'), 'utf8'));
  for (const r of linked.rules) {
    const url = r.annotations.runbook_url ?? '';
    assert.ok(url.startsWith(`${base}#`), `${r.alert}: ${url}`);
    const anchor = url.slice(base.length + 1);
    assert.ok(anchors.has(anchor), `${r.alert}: docs/operations.md has no heading with anchor #${anchor}`);
  }
  // Every link from docs/ into operations.md names a heading there too (what a reader of the runbook follows).
  for (const page of readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md'))) {
    const text = readFileSync(join(root, 'docs', page), 'utf8');
    for (const m of text.matchAll(/\]\((?:operations\.md)?#([^)\s]+)\)/g)) {
      if (page !== 'operations.md' && !m[0].includes('operations.md')) continue;
      assert.ok(anchors.has(m[1]!), `docs/${page}: link to operations.md#${m[1]} names no heading`);
    }
  }
});

test('promtool: ApiServerUpgradeWaiting fires for an upgrade waiting on a gate or a policy refusal longer than waiting.after, naming the cluster; waiting for the window fires only the info ApiServerUpgradeWaitingForWindow', async () => {
  const file = await rules();
  const waiting = file.rule('ApiServerUpgradeWaiting');
  const forWindow = file.rule('ApiServerUpgradeWaitingForWindow');
  assert.equal(waiting.labels.severity, 'warning');
  assert.equal(forWindow.labels.severity, 'info');
  const a = `${OP}, cluster="a", pod="op-a"`;
  const plain = `${OP}, pod="op-x"`;
  // Since 0 s (the test's epoch): the gate wait in cluster a, a policy refusal with no cluster label, a window wait in a.
  await promtoolTest(file, [{
    interval: '1m',
    input_series: [
      { series: `apiserver_upgrade_waiting_since_timestamp_seconds{${a}, upgrade="to-v1-36", reason="GateNotHeld"}`, values: '0x40' },
      { series: `apiserver_upgrade_waiting_since_timestamp_seconds{${plain}, upgrade="refused", reason="NotAllowedByPolicy"}`, values: '0x40' },
      { series: `apiserver_upgrade_waiting_since_timestamp_seconds{${a}, upgrade="nightly", reason="OutsideWindow"}`, values: '0x40' },
    ],
    alert_rule_test: [
      { eval_time: '29m', alertname: 'ApiServerUpgradeWaiting', exp_alerts: [] },
      {
        eval_time: '35m', alertname: 'ApiServerUpgradeWaiting', exp_alerts: [
          firing(waiting, { cluster: 'a', upgrade: 'to-v1-36', reason: 'GateNotHeld' }),
          firing(waiting, { upgrade: 'refused', reason: 'NotAllowedByPolicy' }),
        ],
      },
      { eval_time: '35m', alertname: 'ApiServerUpgradeWaitingForWindow', exp_alerts: [firing(forWindow, { cluster: 'a', upgrade: 'nightly' })] },
    ],
  }]);
  assert.equal(expanded(waiting, { cluster: 'a', upgrade: 'to-v1-36', reason: 'GateNotHeld' }).summary, 'a: ApiServerUpgrade to-v1-36 has waited more than 30m (GateNotHeld)');
  assert.equal(expanded(waiting, { upgrade: 'refused', reason: 'NotAllowedByPolicy' }).summary, 'ApiServerUpgrade refused has waited more than 30m (NotAllowedByPolicy)');
  // waiting.after in hours and seconds.
  for (const [after, seconds] of [['2h', 7200], ['90s', 90]] as const) {
    assert.match((await rules([`prometheusRule.waiting.after=${after}`])).rule('ApiServerUpgradeWaiting').expr, new RegExp(`> ${seconds}$`));
  }
});

test('promtool: a phase two held for an approval (AwaitingApproval) does not fire ApiServerUpgradeStuck, which still fires for an Upgrading upgrade whose batch does not move; ApiServerUpgradeWaiting reminds of the hold', async () => {
  const file = await rules();
  const stuck = file.rule('ApiServerUpgradeStuck');
  const waiting = file.rule('ApiServerUpgradeWaiting');
  const op = `${OP}, pod="op-x"`;
  await promtoolTest(file, [{
    interval: '1m',
    input_series: [
      { series: `apiserver_upgrade_phase{${op}, upgrade="held", phase="Upgrading"}`, values: '1x120' },
      { series: `apiserver_upgrade_batch_current{${op}, upgrade="held"}`, values: '3x120' },
      { series: `apiserver_upgrade_waiting_since_timestamp_seconds{${op}, upgrade="held", reason="AwaitingApproval"}`, values: '0x120' },
      { series: `apiserver_upgrade_phase{${op}, upgrade="stuck", phase="Upgrading"}`, values: '1x120' },
      { series: `apiserver_upgrade_batch_current{${op}, upgrade="stuck"}`, values: '2x120' },
    ],
    alert_rule_test: [
      { eval_time: '100m', alertname: 'ApiServerUpgradeStuck', exp_alerts: [firing(stuck, { upgrade: 'stuck' })] },
      { eval_time: '100m', alertname: 'ApiServerUpgradeWaiting', exp_alerts: [firing(waiting, { upgrade: 'held', reason: 'AwaitingApproval' })] },
    ],
  }]);
});
