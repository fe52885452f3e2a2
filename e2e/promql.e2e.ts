// The analysis queries on Prometheus' own PromQL engine (`promtool test rules`, Prometheus 2.42 from
// Debian), over series whose increases are known: a counter that grows, one that resets, one born inside
// the window the way kube-apiserver creates `code="503"` on its first failed proxy, and a target that
// Prometheus only started to scrape inside the window. No cluster needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { tool, run } from './support/tools.ts';
import { buildQueries } from '../src/observe/prometheus-source.ts';

/** One sample a minute, t = 0m … 10m; `_` is a missed scrape (the series does not exist yet). */
const SERIES = [
  // Targets a and b were scraped all along; c only from 7m (a new target, or a restarted Prometheus).
  { series: 'up{job="apiserver",instance="a:6443"}', values: '1 1 1 1 1 1 1 1 1 1 1' },
  { series: 'up{job="apiserver",instance="b:6443"}', values: '1 1 1 1 1 1 1 1 1 1 1' },
  { series: 'up{job="apiserver",instance="d:6443"}', values: '1 1 1 1 1 0 0 1 1 1 1' },
  { series: 'up{job="apiserver",instance="c:6443"}', values: '_ _ _ _ _ _ _ 1 1 1 1' },
  // Grows by one a minute: 5 in any 5-minute window.
  { series: 'apiserver_rerouted_request_total{job="apiserver",instance="a:6443",code="200"}', values: '0 1 2 3 4 5 6 7 8 9 10' },
  // Born at 7m with 30 failures already counted, then flat.
  { series: 'apiserver_rerouted_request_total{job="apiserver",instance="a:6443",code="503"}', values: '_ _ _ _ _ _ _ 30 30 30 30' },
  // Restarted at 8m (7 -> 1): still 5 in the window 5m-10m.
  { series: 'apiserver_rerouted_request_total{job="apiserver",instance="b:6443",code="200"}', values: '0 1 2 3 4 5 6 7 1 2 3' },
  // d was down at 5m-6m (failed scrapes leave stale markers) and came back with fresh counters: 4 since.
  { series: 'apiserver_rerouted_request_total{job="apiserver",instance="d:6443",code="200"}', values: '0 1 2 3 4 stale _ 1 2 3 4' },
  // c's counters carry their history into the window: growth is measured with increase() (3 over 3m,
  // extrapolated by half a scrape interval to 3.5), and a series born there counts as 0, not as 50.
  { series: 'apiserver_rerouted_request_total{job="apiserver",instance="c:6443",code="200"}', values: '_ _ _ _ _ _ _ 1000 1001 1002 1003' },
  { series: 'apiserver_rerouted_request_total{job="apiserver",instance="c:6443",code="503"}', values: '_ _ _ _ _ _ _ _ 50 50 50' },
  // Health probes answered 500 while a server starts are not errors; a 500 on a status subresource is.
  { series: 'apiserver_request_total{job="apiserver",instance="a:6443",code="500",subresource="/readyz"}', values: '0 10 20 30 40 50 60 70 80 90 100' },
  { series: 'apiserver_request_total{job="apiserver",instance="a:6443",code="500",subresource="/livez/etcd"}', values: '0 10 20 30 40 50 60 70 80 90 100' },
  { series: 'apiserver_request_total{job="apiserver",instance="a:6443",code="500",subresource="status"}', values: '0 1 2 3 4 5 6 7 8 9 10' },
  { series: 'apiserver_request_total{job="apiserver",instance="a:6443",code="200",subresource=""}', values: '0 1 2 3 4 5 6 7 8 9 10' },
  // Another job's series are not asked for.
  { series: 'apiserver_rerouted_request_total{job="other",instance="a:6443",code="503"}', values: '_ _ _ _ _ _ _ 99 99 99 99' },
  // Latency buckets: GET grows by one, a LIST label set is born at 8m with 3, WATCH is long-running and left out.
  { series: 'apiserver_request_duration_seconds_bucket{job="apiserver",instance="a:6443",verb="GET",le="0.1"}', values: '0 1 2 3 4 5 6 7 8 9 10' },
  { series: 'apiserver_request_duration_seconds_bucket{job="apiserver",instance="a:6443",verb="GET",le="+Inf"}', values: '0 1 2 3 4 5 6 7 8 9 10' },
  { series: 'apiserver_request_duration_seconds_bucket{job="apiserver",instance="a:6443",verb="LIST",le="0.1"}', values: '_ _ _ _ _ _ _ _ 3 3 3' },
  { series: 'apiserver_request_duration_seconds_bucket{job="apiserver",instance="a:6443",verb="LIST",le="+Inf"}', values: '_ _ _ _ _ _ _ _ 3 3 3' },
  { series: 'apiserver_request_duration_seconds_bucket{job="apiserver",instance="a:6443",verb="WATCH",le="+Inf"}', values: '0 100 200 300 400 500 600 700 800 900 1000' },
];

const BORN_503 = '{instance="a:6443",code="503"}';
/** What windowIncrease answers for apiserver_rerouted_request_total at 10m over 5m. */
const REROUTED = [
  { labels: '{instance="a:6443",code="200"}', value: 5 },
  { labels: BORN_503, value: 30 },
  { labels: '{instance="b:6443",code="200"}', value: 5 },
  { labels: '{instance="c:6443",code="200"}', value: 3.5 },
  { labels: '{instance="c:6443",code="503"}', value: 0 },
  { labels: '{instance="d:6443",code="200"}', value: 4 },
];

test('the window increase counts a series born in the window, survives a counter reset, keeps a new target\'s history out, leaves health probes out, and keeps to the selector', async () => {
  const promtool = tool('promtool');
  const q = buildQueries('job="apiserver"', 300);
  const spec = {
    rule_files: [],
    evaluation_interval: '1m',
    tests: [{
      interval: '1m',
      input_series: SERIES,
      promql_expr_test: [
        {
          expr: q.rerouted,
          eval_time: '10m',
          exp_samples: REROUTED,
        },
        {
          expr: q.requests,
          eval_time: '10m',
          exp_samples: [
            { labels: '{instance="a:6443",code="200"}', value: 5 },
            { labels: '{instance="a:6443",code="500"}', value: 5 },
          ],
        },
        {
          expr: q.durationBuckets,
          eval_time: '10m',
          exp_samples: [
            { labels: '{instance="a:6443",le="0.1"}', value: 8 },
            { labels: '{instance="a:6443",le="+Inf"}', value: 8 },
          ],
        },
        // Why the plain increase() is not enough: the 30 failures of the series born at 7m count as none.
        {
          expr: 'sum by (instance, code) (increase(apiserver_rerouted_request_total{job="apiserver"}[5m]))',
          eval_time: '10m',
          // Everything else agrees (Prometheus' zero-point extrapolation happens to recover d's restart here).
          exp_samples: REROUTED.map((e) => (e.labels === BORN_503 ? { ...e, value: 0 } : e)),
        },
      ],
    }],
  };
  await promtoolTest(promtool, spec);
});

async function promtoolTest(promtool: string, spec: unknown): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'auo-promql-'));
  try {
    const path = join(dir, 'promql-test.yaml');
    writeFileSync(path, stringify(spec));
    const r = await run(promtool, ['test', 'rules', path]);
    assert.equal(r.code, 0, `promtool test rules failed:\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /SUCCESS/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const P = 'name="policy.example.com"';
/** Issue 13: the aggregator's gauge and the admission webhook counters, one sample a minute as above. */
const NAMED_SERIES = [
  { series: 'up{job="apiserver",instance="a:6443"}', values: '1 1 1 1 1 1 1 1 1 1 1' },
  { series: 'up{job="apiserver",instance="b:6443"}', values: '1 1 1 1 1 1 1 1 1 1 1' },
  // b's aggregator lost the APIService at 8m; a still reaches it. Another job's gauge is not asked for.
  { series: 'aggregator_unavailable_apiservice{job="apiserver",instance="a:6443",name="v1beta1.metrics.k8s.io"}', values: '0 0 0 0 0 0 0 0 0 0 0' },
  { series: 'aggregator_unavailable_apiservice{job="apiserver",instance="b:6443",name="v1beta1.metrics.k8s.io"}', values: '0 0 0 0 0 0 0 0 1 1 1' },
  { series: 'aggregator_unavailable_apiservice{job="other",instance="a:6443",name="v1beta1.metrics.k8s.io"}', values: '1 1 1 1 1 1 1 1 1 1 1' },
  // a's answered calls, two operations summed (5 + 10); 4 unreachable calls in a series born at 8m.
  { series: `apiserver_admission_webhook_request_total{job="apiserver",instance="a:6443",${P},type="validating",operation="CREATE",code="200",rejected="false"}`, values: '0 1 2 3 4 5 6 7 8 9 10' },
  { series: `apiserver_admission_webhook_request_total{job="apiserver",instance="a:6443",${P},type="validating",operation="UPDATE",code="200",rejected="false"}`, values: '0 2 4 6 8 10 12 14 16 18 20' },
  { series: `apiserver_admission_webhook_request_total{job="apiserver",instance="a:6443",${P},type="validating",operation="CREATE",code="500",rejected="true"}`, values: '_ _ _ _ _ _ _ _ 4 4 4' },
  // b: denials (403, no_error) and two calls answered 404 (a calling error), born at 9m.
  { series: `apiserver_admission_webhook_request_total{job="apiserver",instance="b:6443",${P},type="validating",operation="CREATE",code="403",rejected="true"}`, values: '0 1 2 3 4 5 6 7 8 9 10' },
  { series: `apiserver_admission_webhook_request_total{job="apiserver",instance="b:6443",${P},type="validating",operation="CREATE",code="404",rejected="true"}`, values: '_ _ _ _ _ _ _ _ _ 2 2' },
  { series: `apiserver_admission_webhook_rejection_count{job="apiserver",instance="a:6443",${P},type="validating",operation="CREATE",error_type="calling_webhook_error",rejection_code="500"}`, values: '_ _ _ _ _ _ _ _ 4 4 4' },
  { series: `apiserver_admission_webhook_rejection_count{job="apiserver",instance="b:6443",${P},type="validating",operation="CREATE",error_type="no_error",rejection_code="403"}`, values: '0 1 2 3 4 5 6 7 8 9 10' },
  { series: `apiserver_admission_webhook_rejection_count{job="apiserver",instance="b:6443",${P},type="validating",operation="CREATE",error_type="calling_webhook_error",rejection_code="404"}`, values: '_ _ _ _ _ _ _ _ _ 2 2' },
];

test('issue 13 queries: the unavailable-APIService gauge now, webhook calls by code with born-in-window failures, only 4xx calling errors from the rejection counter', async () => {
  const promtool = tool('promtool');
  const q = buildQueries('job="apiserver"', 300);
  await promtoolTest(promtool, {
    rule_files: [],
    evaluation_interval: '1m',
    tests: [{
      interval: '1m',
      input_series: NAMED_SERIES,
      promql_expr_test: [
        {
          expr: q.apiServices,
          eval_time: '10m',
          exp_samples: [
            { labels: '{instance="a:6443",name="v1beta1.metrics.k8s.io"}', value: 0 },
            { labels: '{instance="b:6443",name="v1beta1.metrics.k8s.io"}', value: 1 },
          ],
        },
        {
          expr: q.webhookRequests,
          eval_time: '10m',
          exp_samples: [
            { labels: `{instance="a:6443",${P},code="200",rejected="false"}`, value: 15 },
            { labels: `{instance="a:6443",${P},code="500",rejected="true"}`, value: 4 },
            { labels: `{instance="b:6443",${P},code="403",rejected="true"}`, value: 5 },
            { labels: `{instance="b:6443",${P},code="404",rejected="true"}`, value: 2 },
          ],
        },
        {
          expr: q.webhookRejections,
          eval_time: '10m',
          exp_samples: [
            { labels: `{instance="b:6443",${P},error_type="calling_webhook_error",rejection_code="404"}`, value: 2 },
          ],
        },
      ],
    }],
  });
});
