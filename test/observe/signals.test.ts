// Signal math over synthetic, hand-written scrapes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parsePromText } from '../../src/observe/prom-text.ts';
import type { WindowDeltas } from '../../src/observe/signals.ts';
import {
  cohortSignals,
  computeSignals,
  evaluateThresholds,
  histogramQuantile,
  proxyGateState,
  SIGNAL_FAMILIES,
  sumBuckets,
  windowDeltas,
} from '../../src/observe/signals.ts';

const scrape = (lines: string[]) => parsePromText(lines.join('\n'), SIGNAL_FAMILIES);

const EMPTY: WindowDeltas = { rerouted: undefined, peerProxyErrors: undefined, requests: undefined, requestDuration: undefined, restarted: false };

describe('histogramQuantile (synthetic)', () => {
  const buckets = [
    { le: 0.1, count: 50 },
    { le: 0.5, count: 90 },
    { le: 1, count: 100 },
    { le: Infinity, count: 100 },
  ];
  it('interpolates linearly inside the bucket like Prometheus', () => {
    assert.equal(histogramQuantile(0.5, buckets), 0.1);
    assert.ok(Math.abs(histogramQuantile(0.7, buckets) - 0.3) < 1e-12);
    assert.ok(Math.abs(histogramQuantile(0.99, buckets) - 0.95) < 1e-12);
    assert.ok(Math.abs(histogramQuantile(0.25, buckets) - 0.05) < 1e-12); // first bucket starts at 0
  });
  it('answers the highest finite bound when the rank lands in +Inf', () => {
    assert.equal(histogramQuantile(0.99, [{ le: 1, count: 1 }, { le: Infinity, count: 10 }]), 1);
  });
  it('is NaN without observations or without a +Inf bucket', () => {
    assert.ok(Number.isNaN(histogramQuantile(0.99, [{ le: 1, count: 0 }, { le: Infinity, count: 0 }])));
    assert.ok(Number.isNaN(histogramQuantile(0.99, [{ le: 1, count: 3 }])));
  });
  it('sums bucket lists over their shared bounds', () => {
    assert.deepEqual(sumBuckets([[{ le: 1, count: 1 }, { le: 2, count: 2 }, { le: Infinity, count: 3 }], [{ le: 1, count: 5 }, { le: Infinity, count: 6 }]]), [
      { le: 1, count: 6 },
      { le: Infinity, count: 9 },
    ]);
  });
});

describe('signals of one server (synthetic)', () => {
  const prev = scrape([
    '# TYPE apiserver_rerouted_request_total counter',
    'apiserver_rerouted_request_total{code="200"} 10',
    '# TYPE apiserver_request_total counter',
    'apiserver_request_total{code="200",verb="GET"} 100',
    'apiserver_request_total{code="500",verb="GET"} 1',
    '# TYPE apiserver_request_duration_seconds histogram',
    'apiserver_request_duration_seconds_bucket{verb="GET",subresource="",le="0.1"} 0',
    'apiserver_request_duration_seconds_bucket{verb="GET",subresource="",le="1"} 0',
    'apiserver_request_duration_seconds_bucket{verb="GET",subresource="",le="+Inf"} 0',
    'apiserver_request_duration_seconds_count{verb="GET",subresource=""} 0',
  ]);
  const curr = scrape([
    '# TYPE apiserver_rerouted_request_total counter',
    'apiserver_rerouted_request_total{code="200",group="apps",version="v1",resource="deployments"} 18',
    'apiserver_rerouted_request_total{code="503",group="apps",version="v1",resource="deployments"} 1',
    'apiserver_rerouted_request_total{code="200"} 10',
    '# TYPE apiserver_peer_proxy_errors_total counter',
    'apiserver_peer_proxy_errors_total{type="dial",group="apps",version="v1",resource="deployments"} 1',
    '# TYPE apiserver_request_total counter',
    'apiserver_request_total{code="200",verb="GET"} 190',
    'apiserver_request_total{code="500",verb="GET"} 6',
    'apiserver_request_total{code="503",verb="WATCH"} 5',
    'apiserver_request_total{code="500",verb="GET",subresource="/readyz"} 30',
    'apiserver_request_total{code="200",verb="GET",subresource="/livez/etcd"} 7',
    '# TYPE apiserver_request_duration_seconds histogram',
    'apiserver_request_duration_seconds_bucket{verb="GET",subresource="/readyz",le="0.1"} 0',
    'apiserver_request_duration_seconds_bucket{verb="GET",subresource="/readyz",le="1"} 0',
    'apiserver_request_duration_seconds_bucket{verb="GET",subresource="/readyz",le="+Inf"} 30',
    'apiserver_request_duration_seconds_count{verb="GET",subresource="/readyz"} 30',
    'apiserver_request_duration_seconds_bucket{verb="GET",subresource="",le="0.1"} 90',
    'apiserver_request_duration_seconds_bucket{verb="GET",subresource="",le="1"} 100',
    'apiserver_request_duration_seconds_bucket{verb="GET",subresource="",le="+Inf"} 100',
    'apiserver_request_duration_seconds_count{verb="GET",subresource=""} 100',
    'apiserver_request_duration_seconds_bucket{verb="WATCH",subresource="",le="0.1"} 0',
    'apiserver_request_duration_seconds_bucket{verb="WATCH",subresource="",le="1"} 0',
    'apiserver_request_duration_seconds_bucket{verb="WATCH",subresource="",le="+Inf"} 50',
    'apiserver_request_duration_seconds_count{verb="WATCH",subresource=""} 50',
    'apiserver_request_duration_seconds_bucket{verb="CREATE",subresource="exec",le="0.1"} 0',
    'apiserver_request_duration_seconds_bucket{verb="CREATE",subresource="exec",le="1"} 0',
    'apiserver_request_duration_seconds_bucket{verb="CREATE",subresource="exec",le="+Inf"} 9',
    'apiserver_request_duration_seconds_count{verb="CREATE",subresource="exec"} 9',
    '# TYPE kubernetes_feature_enabled gauge',
    'kubernetes_feature_enabled{name="UnknownVersionInteroperabilityProxy",stage="BETA"} 1',
  ]);

  it('computes proxy error ratio, 5xx ratio and p99 without long-running requests and health probes', () => {
    const s = computeSignals(windowDeltas(prev, curr));
    // 1 rerouted 503 + 1 proxy error over 19 rerouted + 1 proxy error
    assert.deepEqual(s.proxyErrorRatio, { kind: 'value', value: 2 / 20, samples: 20 });
    assert.deepEqual(s.errorRatio, { kind: 'value', value: 10 / 100, samples: 100 });
    assert.equal(s.latencyP99Seconds.kind, 'value');
    if (s.latencyP99Seconds.kind === 'value') {
      assert.ok(Math.abs(s.latencyP99Seconds.value - 0.91) < 1e-9);
      assert.equal(s.latencyP99Seconds.samples, 100);
    }
  });

  it('reports no data, never zero, for a quiet window or absent families', () => {
    const s = computeSignals(windowDeltas(curr, curr));
    assert.equal(s.proxyErrorRatio.kind, 'noData');
    assert.equal(s.errorRatio.kind, 'noData');
    assert.equal(s.latencyP99Seconds.kind, 'noData');
    const none = computeSignals(EMPTY);
    assert.match(none.proxyErrorRatio.kind === 'noData' ? none.proxyErrorRatio.reason : '', /absent/);
  });

  it('flags a restart when a counter went down', () => {
    assert.equal(windowDeltas(curr, prev).restarted, true);
    assert.equal(windowDeltas(prev, curr).restarted, false);
  });

  it('reads the proxy gate state', () => {
    assert.equal(proxyGateState(curr), 'on');
    assert.equal(proxyGateState(prev), 'unknown');
    assert.equal(proxyGateState(scrape(['kubernetes_feature_enabled{name="UnknownVersionInteroperabilityProxy",stage="ALPHA"} 0'])), 'off');
  });
});

describe('cohorts and thresholds (synthetic)', () => {
  const requests = (ok: number, failed: number) => scrape([`apiserver_request_total{code="200"} ${ok}`, `apiserver_request_total{code="500"} ${failed}`]);
  const zero = requests(0, 0);
  const perServer = new Map([
    ['a', windowDeltas(zero, requests(90, 10))],
    ['b', windowDeltas(zero, requests(100, 0))],
    ['c', windowDeltas(zero, requests(50, 0))],
    ['d', windowDeltas(zero, requests(0, 0))],
  ]);
  const versions = new Map([
    ['a', 'v1.36.3'],
    ['b', 'v1.36.3'],
    ['c', 'v1.35.4'],
  ]);

  it('sums counters per version cohort before taking ratios', () => {
    const cohorts = cohortSignals(perServer, versions);
    assert.deepEqual([...cohorts.keys()], ['unknown', 'v1.35.4', 'v1.36.3']);
    assert.deepEqual(cohorts.get('v1.36.3')?.errorRatio, { kind: 'value', value: 10 / 200, samples: 200 });
    assert.deepEqual(cohorts.get('v1.35.4')?.errorRatio, { kind: 'value', value: 0, samples: 50 });
    assert.equal(cohorts.get('unknown')?.errorRatio.kind, 'noData');
  });

  it('reports breaches above threshold and no-data separately', () => {
    const cohorts = cohortSignals(perServer, versions);
    const subjects = [
      ...[...perServer].map(([name, w]) => ({ scope: 'server' as const, name, signals: computeSignals(w) })),
      ...[...cohorts].map(([name, signals]) => ({ scope: 'cohort' as const, name, signals })),
    ];
    const { breaches, inconclusive } = evaluateThresholds(subjects, { errorRatio: 0.05 });
    assert.deepEqual(breaches, [{ signal: 'errorRatio', scope: 'server', name: 'a', value: 0.1, threshold: 0.05, samples: 100 }]);
    assert.deepEqual(
      inconclusive.map((i) => `${i.scope}/${i.name}/${i.signal}`),
      ['server/d/errorRatio', 'cohort/unknown/errorRatio'],
    );
  });

  it('treats too few samples as inconclusive', () => {
    const signals = computeSignals(windowDeltas(zero, requests(1, 1)));
    const { breaches, inconclusive } = evaluateThresholds([{ scope: 'server', name: 'x', signals }], { errorRatio: 0.05, minSamples: 20 });
    assert.deepEqual(breaches, []);
    assert.match(inconclusive[0]?.reason ?? '', /only 2 requests/);
  });
});
