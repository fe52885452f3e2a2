// Signal math over synthetic, hand-written scrapes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parsePromText } from '../../src/observe/prom-text.ts';
import type { WindowDeltas } from '../../src/observe/signals.ts';
import { summarizeAnalysis } from '../../src/observe/analysis-summary.ts';
import { fixtureVersions, readFixture } from './fixtures.ts';
import {
  apiServiceBreaches,
  apiServiceStates,
  cohortWindows,
  isFailedWebhookCall,
  webhookBreaches,
  webhookCalls,
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

describe('unavailable APIServices (captured fixtures + synthetic)', () => {
  const versions = fixtureVersions();
  const page = (version: string) => readFixture(version, 'metrics.txt');
  /** The captured page with some APIServices marked unavailable, as the aggregator reports them. */
  const marked = (version: string, unavailable: string[]) =>
    parsePromText(page(version).replace(/^aggregator_unavailable_apiservice\{name="([^"]*)"\} 0$/gm, (line, name: string) => (unavailable.includes(name) ? line.replace(/ 0$/, ' 1') : line)), SIGNAL_FAMILIES);
  const window = (metrics: ReturnType<typeof scrape>) => windowDeltas(metrics, metrics);

  it('reads aggregator_unavailable_apiservice{name} from every captured page, all available', () => {
    assert.ok(versions.length >= 2);
    for (const v of versions) {
      const states = apiServiceStates(parsePromText(page(v), SIGNAL_FAMILIES));
      assert.ok(states && states.length >= 20, v);
      assert.ok(states.some((a) => a.name === 'v1.apps'));
      assert.ok(states.every((a) => !a.unavailable));
    }
    assert.equal(apiServiceStates(scrape(['apiserver_request_total{code="200"} 1'])), undefined);
  });

  it('a healthy mixed-version fleet: no breach', () => {
    const perServer = new Map(versions.map((v, i) => [`cp-${i + 1}`, window(parsePromText(page(v), SIGNAL_FAMILIES))]));
    assert.deepEqual(apiServiceBreaches(perServer), []);
  });

  it('unavailable on the new server only: one breach per (server, APIService)', () => {
    const perServer = new Map([
      ['cp-1', window(marked('v1.35.4', []))],
      ['cp-2', window(marked('v1.35.4', []))],
      ['cp-3', window(marked('v1.36.3', ['v1.apps', 'v1.batch']))],
    ]);
    const breaches = apiServiceBreaches(perServer, 0);
    assert.deepEqual(breaches.map((b) => [b.signal, b.scope, b.name, b.subject, b.value, b.threshold]), [
      ['unavailableAPIServices', 'server', 'cp-3', 'v1.apps', 2, 0],
      ['unavailableAPIServices', 'server', 'cp-3', 'v1.batch', 2, 0],
    ]);
    assert.equal(breaches[0]?.message, 'APIService v1.apps is unavailable on cp-3 but available on cp-1, cp-2 (2 such APIServices on cp-3, 0 tolerated)');
    assert.deepEqual(apiServiceBreaches(perServer, 2), [], 'two tolerated');
  });

  it('unavailable on every server (its backend is down) or on the only server: no breach', () => {
    const down = ['v1.apps'];
    assert.deepEqual(apiServiceBreaches(new Map([['cp-1', window(marked('v1.35.4', down))], ['cp-2', window(marked('v1.36.3', down))]])), []);
    assert.deepEqual(apiServiceBreaches(new Map([['cp-1', window(marked('v1.36.3', down))]])), []);
  });

  it('summarizeAnalysis applies the default (0) and names server and APIService in the status breach', () => {
    const perServer = new Map([['cp-1', window(marked('v1.35.4', []))], ['cp-2', window(marked('v1.36.3', ['v1.policy']))]]);
    const a = summarizeAnalysis(perServer, new Map([['cp-1', 'v1.35.4'], ['cp-2', 'v1.36.3']]), {}, 0);
    assert.equal(a.verdict, 'Breach');
    assert.deepEqual(a.breaches, [{
      signal: 'unavailableAPIServices', observed: '1', threshold: '0', server: 'cp-2',
      message: 'APIService v1.policy is unavailable on cp-2 but available on cp-1 (1 such APIService on cp-2, 0 tolerated)',
    }]);
  });
});

describe('admission webhook failures (synthetic deltas)', () => {
  const T_REQ = '# TYPE apiserver_admission_webhook_request_total counter';
  const T_REJ = '# TYPE apiserver_admission_webhook_rejection_count counter';
  const req = (name: string, code: string, rejected: boolean, v: number) =>
    `apiserver_admission_webhook_request_total{code="${code}",name="${name}",operation="CREATE",rejected="${rejected}",type="validating"} ${v}`;
  const rej = (name: string, errorType: string, code: string, v: number) =>
    `apiserver_admission_webhook_rejection_count{error_type="${errorType}",name="${name}",operation="CREATE",rejection_code="${code}",type="validating"} ${v}`;

  it('classifies calls: 2xx ok, 4xx denial not a failure, 0 and 5xx failures, a non-2xx that was let through (fail open) a failure', () => {
    assert.equal(isFailedWebhookCall({ code: '200', rejected: 'false' }), false);
    assert.equal(isFailedWebhookCall({ code: '403', rejected: 'true' }), false);
    assert.equal(isFailedWebhookCall({ code: '400', rejected: 'true' }), false);
    assert.equal(isFailedWebhookCall({ code: '0', rejected: 'true' }), true);
    assert.equal(isFailedWebhookCall({ code: '500', rejected: 'true' }), true);
    assert.equal(isFailedWebhookCall({ code: '503', rejected: 'false' }), true);
    assert.equal(isFailedWebhookCall({ code: '404', rejected: 'false' }), true);
    assert.equal(isFailedWebhookCall({ rejected: 'false' }), false);
  });

  it('counts per webhook over the window: series born in the window, denials left out, 4xx calling errors from the rejection counter', () => {
    const prev = scrape([T_REQ, req('a.example.com', '200', false, 100), req('a.example.com', '403', true, 5), T_REJ, rej('a.example.com', 'no_error', '403', 5)]);
    const curr = scrape([
      T_REQ,
      req('a.example.com', '200', false, 150), // 50 answered
      req('a.example.com', '403', true, 10), // 5 denials
      req('a.example.com', '500', true, 3), // born in the window: 3 unreachable (failurePolicy Fail)
      req('a.example.com', '404', true, 2), // 2 calls answered 404 by a wrong path: calling errors
      req('b.example.com', '503', false, 7), // failurePolicy Ignore: failed open, still failed
      T_REJ,
      rej('a.example.com', 'no_error', '403', 10),
      rej('a.example.com', 'calling_webhook_error', '500', 3),
      rej('a.example.com', 'calling_webhook_error', '404', 2),
    ]);
    const calls = webhookCalls(windowDeltas(prev, curr));
    assert.deepEqual(Object.fromEntries(calls ?? []), { 'a.example.com': { calls: 60, failed: 5 }, 'b.example.com': { calls: 7, failed: 7 } });
    assert.equal(webhookCalls(windowDeltas(scrape([]), scrape([]))), undefined, 'no webhook family: no data');
  });

  it('breaches per server and per cohort above the ratio, from the minimum number of calls', () => {
    const zero = scrape([]);
    const server = (ok: number, failed: number) => windowDeltas(zero, scrape([T_REQ, req('policy.example.com', '200', false, ok), req('policy.example.com', '500', true, failed)]));
    const perServer = new Map([
      ['cp-1', server(100, 0)],
      ['cp-2', server(20, 10)], // new: failing (a CA the new binary no longer trusts)
      ['cp-3', server(6, 3)], // new: failing too, but under the minimum of 10 calls on its own
    ]);
    const versions = new Map([['cp-1', 'v1.35.4'], ['cp-2', 'v1.36.3'], ['cp-3', 'v1.36.3']]);
    const subjects = [
      ...[...perServer].map(([name, window]) => ({ scope: 'server' as const, name, window })),
      ...[...cohortWindows(perServer, versions)].map(([name, window]) => ({ scope: 'cohort' as const, name, window })),
    ];
    const breaches = webhookBreaches(subjects, 0.05, 10);
    assert.deepEqual(breaches.map((b) => [b.scope, b.name, b.subject, Math.round(b.value * 1000) / 1000, b.samples]), [
      ['server', 'cp-2', 'policy.example.com', 0.333, 30],
      ['cohort', 'v1.36.3', 'policy.example.com', 0.333, 39],
    ]);
    assert.equal(breaches[0]?.message, 'webhook policy.example.com: 10 of 30 calls from cp-2 failed (0.3333 > 0.05)');
    assert.equal(breaches[1]?.message, 'webhook policy.example.com: 13 of 39 calls from the v1.36.3 servers failed (0.3333 > 0.05)');
    assert.deepEqual(webhookBreaches(subjects, 0.5, 10), [], 'a looser ratio');

    const a = summarizeAnalysis(perServer, versions, { webhookErrorRatio: 0.05 }, 0);
    assert.deepEqual(a.breaches.map((b) => [b.signal, b.server, b.observed, b.threshold]), [
      ['webhookErrorRatio', 'cp-2', '0.333333', '0.05'],
      ['webhookErrorRatio', 'cohort v1.36.3', '0.333333', '0.05'],
    ]);
  });

  it('the captured pages have no webhook series (no webhook was configured): no data, no breach', () => {
    for (const v of fixtureVersions()) {
      const m = parsePromText(readFixture(v, 'metrics.txt'), SIGNAL_FAMILIES);
      assert.equal(webhookCalls(windowDeltas(m, m)), undefined, v);
    }
  });
});

describe('status breaches are capped at the CRD maxItems', () => {
  it('keeps 63 and says how many more', () => {
    const perServer = new Map<string, WindowDeltas>();
    const names = Array.from({ length: 40 }, (_, i) => `v1.g${String(i).padStart(2, '0')}.example.com`);
    perServer.set('old', { ...EMPTY, apiServices: names.map((name) => ({ name, unavailable: false })) });
    perServer.set('new-1', { ...EMPTY, apiServices: names.map((name) => ({ name, unavailable: true })) });
    perServer.set('new-2', { ...EMPTY, apiServices: names.map((name) => ({ name, unavailable: true })) });
    const a = summarizeAnalysis(perServer, new Map(), {}, 0);
    assert.equal(a.breaches.length, 64);
    assert.deepEqual(a.breaches.at(-1), { signal: 'moreBreaches', observed: '17', message: '17 more breaches not listed' });
  });
});
