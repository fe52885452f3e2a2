// The Prometheus analysis source: query building, response parsing, and the signals computed from answers.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  buildQueries,
  httpQuery,
  QUERY_NAMES,
  matchers,
  nameInstances,
  parseQueryResponse,
  PrometheusAnalysis,
  PrometheusQueryError,
  promDuration,
  windowSeconds,
  windowsFromResults,
  type PrometheusSettings,
  type QueryResults,
  type VectorSample,
} from '../../src/observe/prometheus-source.ts';
import { computeSignals } from '../../src/observe/signals.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import type { ObservedAnalysis, ObservedPeer } from '../../src/plan/observation.ts';
import { FleetObserver } from '../../src/observe/fleet.ts';
import { DirectClient } from '../../src/observe/direct-client.ts';

const vector = (result: { metric: Record<string, string>; value: string }[]) =>
  JSON.stringify({ status: 'success', data: { resultType: 'vector', result: result.map((r) => ({ metric: r.metric, value: [1764400000.5, r.value] })) } });

const NONE: QueryResults = { rerouted: [], peerProxyErrors: [], requests: [], durationBuckets: [], buildInfo: [], apiServices: [], webhookRequests: [], webhookRejections: [] };
const s = (labels: Record<string, string>, value: number): VectorSample => ({ labels, value });

describe('PromQL building', () => {
  it('wraps the selector in braces, with or without its own, and adds extra matchers', () => {
    assert.equal(matchers('job="apiserver"'), '{job="apiserver"}');
    assert.equal(matchers(' {job="apiserver", cluster="a"} '), '{job="apiserver", cluster="a"}');
    assert.equal(matchers('', 'verb!="WATCH"'), '{verb!="WATCH"}');
    assert.equal(matchers(''), '{}');
  });

  it('windows: the window, or the interval when longer, in whole seconds, as a PromQL duration', () => {
    assert.equal(windowSeconds(10_000), 60);
    assert.equal(windowSeconds(300_000), 300);
    assert.equal(windowSeconds(90_500, 30_000), 91);
    assert.equal(windowSeconds(2_000, 5_000), 5);
    assert.equal(windowSeconds(1, 1), 1);
    assert.equal(promDuration(60), '1m');
    assert.equal(promDuration(300), '5m');
    assert.equal(promDuration(91), '91s');
    assert.equal(promDuration(0), '1s');
  });

  it('asks for increases by instance (and code or le), long-running requests left out of latency', () => {
    const q = buildQueries('job="apiserver"', 120);
    const inc = (sel: string) => `((${sel} unless ${sel} offset 2m) and on (instance) (up offset 2m)) or increase(${sel}[2m])`;
    assert.equal(q.rerouted, `sum by (instance, code) (${inc('apiserver_rerouted_request_total{job="apiserver"}')})`);
    assert.equal(q.peerProxyErrors, `sum by (instance) (${inc('apiserver_peer_proxy_errors_total{job="apiserver"}')})`);
    assert.equal(q.requests, `sum by (instance, code) (${inc('apiserver_request_total{job="apiserver",subresource!~"/(readyz|livez|healthz)(/.*)?"}')})`);
    assert.equal(
      q.durationBuckets,
      `sum by (instance, le) (${inc('apiserver_request_duration_seconds_bucket{job="apiserver",verb!~"WATCH|WATCHLIST|CONNECT",subresource!~"log|exec|attach|portforward|proxy|/(readyz|livez|healthz)(/.*)?"}')})`,
    );
    assert.equal(q.buildInfo, 'max by (instance, git_version) (kubernetes_build_info{job="apiserver"})');
  });

  it('issue 13: the unavailable-APIService gauge as it is now, webhook calls and 4xx calling errors as window increases', () => {
    const q = buildQueries('job="apiserver"', 120);
    const inc = (sel: string) => `((${sel} unless ${sel} offset 2m) and on (instance) (up offset 2m)) or increase(${sel}[2m])`;
    assert.equal(q.apiServices, 'max by (instance, name) (aggregator_unavailable_apiservice{job="apiserver"})');
    assert.equal(q.webhookRequests, `sum by (instance, name, code, rejected) (${inc('apiserver_admission_webhook_request_total{job="apiserver"}')})`);
    assert.equal(
      q.webhookRejections,
      `sum by (instance, name, error_type, rejection_code) (${inc('apiserver_admission_webhook_rejection_count{job="apiserver",error_type="calling_webhook_error",rejection_code=~"4.."}')})`,
    );
    assert.deepEqual(Object.keys(q).sort(), [...QUERY_NAMES].sort());
  });
});

describe('parseQueryResponse', () => {
  it('reads a vector, NaN and infinities included', () => {
    const samples = parseQueryResponse(vector([
      { metric: { instance: '10.0.0.1:6443', code: '200' }, value: '12.5' },
      { metric: { instance: '10.0.0.2:6443' }, value: 'NaN' },
      { metric: { instance: '10.0.0.3:6443' }, value: '+Inf' },
      { metric: {}, value: '-Inf' },
    ]));
    assert.deepEqual(samples.map((x) => x.labels), [{ instance: '10.0.0.1:6443', code: '200' }, { instance: '10.0.0.2:6443' }, { instance: '10.0.0.3:6443' }, {}]);
    assert.equal(samples[0]!.value, 12.5);
    assert.ok(Number.isNaN(samples[1]!.value));
    assert.equal(samples[2]!.value, Infinity);
    assert.equal(samples[3]!.value, -Infinity);
  });

  it('an empty vector is an empty list', () => {
    assert.deepEqual(parseQueryResponse(vector([])), []);
  });

  it('rejects errors, other result types and malformed answers', () => {
    assert.throws(() => parseQueryResponse(JSON.stringify({ status: 'error', errorType: 'bad_data', error: 'parse error at char 5' })), (e: Error) => e instanceof PrometheusQueryError && /bad_data: parse error/.test(e.message));
    assert.throws(() => parseQueryResponse(JSON.stringify({ status: 'success', data: { resultType: 'matrix', result: [] } })), /expected a vector result, got matrix/);
    assert.throws(() => parseQueryResponse(JSON.stringify({ status: 'success', data: { resultType: 'scalar', result: [1, '2'] } })), /got scalar/);
    assert.throws(() => parseQueryResponse('<html>bad gateway</html>'), /not JSON/);
    assert.throws(() => parseQueryResponse(JSON.stringify({ status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [1, 'x'] }] } })), /is not a number/);
    assert.throws(() => parseQueryResponse(JSON.stringify({ status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: 3 }] } })), /not \[time, "number"\]/);
  });
});

describe('windowsFromResults', () => {
  it('no series at all: no windows, every signal noData', () => {
    const { windows } = windowsFromResults(NONE);
    assert.equal(windows.size, 0);
  });

  it('builds counter and histogram windows per instance, and versions from kubernetes_build_info', () => {
    const { windows, versionOf } = windowsFromResults({
      ...NONE,
      rerouted: [s({ instance: 'a:6443', code: '200' }, 90), s({ instance: 'a:6443', code: '503' }, 10)],
      peerProxyErrors: [],
      requests: [s({ instance: 'a:6443', code: '200' }, 950), s({ instance: 'a:6443', code: '500' }, 50), s({ instance: 'b:6443', code: '200' }, 10)],
      durationBuckets: [
        s({ instance: 'a:6443', le: '+Inf' }, 100),
        s({ instance: 'a:6443', le: '0.1' }, 50),
        s({ instance: 'a:6443', le: '0.5' }, 90),
        s({ instance: 'a:6443', le: '1' }, 100),
      ],
      buildInfo: [s({ instance: 'a:6443', git_version: 'v1.35.4' }, 1), s({ instance: 'b:6443', git_version: 'v1.36.3' }, 1)],
    });
    assert.deepEqual([...windows.keys()], ['a:6443', 'b:6443']);
    assert.deepEqual(Object.fromEntries(versionOf), { 'a:6443': 'v1.35.4', 'b:6443': 'v1.36.3' });
    const a = computeSignals(windows.get('a:6443')!);
    assert.deepEqual(a.proxyErrorRatio, { kind: 'value', value: 0.1, samples: 100 });
    assert.deepEqual(a.errorRatio, { kind: 'value', value: 0.05, samples: 1000 });
    assert.equal(a.latencyP99Seconds.kind, 'value');
    assert.ok(a.latencyP99Seconds.kind === 'value' && Math.abs(a.latencyP99Seconds.value - 0.95) < 1e-9);
    // b: requests only. Rerouted and latency are absent: noData, not healthy.
    const b = computeSignals(windows.get('b:6443')!);
    assert.equal(b.proxyErrorRatio.kind, 'noData');
    assert.equal(b.latencyP99Seconds.kind, 'noData');
    assert.deepEqual(b.errorRatio, { kind: 'value', value: 0, samples: 10 });
  });

  it('drops NaN counters and NaN bucket sets; zero increases are noData, not a ratio', () => {
    const { windows } = windowsFromResults({
      ...NONE,
      rerouted: [s({ instance: 'a:6443', code: '200' }, NaN)],
      requests: [s({ instance: 'a:6443', code: '200' }, 0)],
      durationBuckets: [s({ instance: 'a:6443', le: '1' }, NaN), s({ instance: 'a:6443', le: '+Inf' }, 4)],
    });
    const a = computeSignals(windows.get('a:6443')!);
    assert.equal(a.proxyErrorRatio.kind, 'noData');
    assert.equal(a.errorRatio.kind, 'noData');
    assert.equal(a.latencyP99Seconds.kind, 'noData');
  });

  it('counts peer proxy errors as failed attempts, like Direct', () => {
    const { windows } = windowsFromResults({ ...NONE, rerouted: [s({ instance: 'a:1', code: '200' }, 8)], peerProxyErrors: [s({ instance: 'a:1' }, 2)] });
    assert.deepEqual(computeSignals(windows.get('a:1')!).proxyErrorRatio, { kind: 'value', value: 0.2, samples: 10 });
  });
});

describe('nameInstances', () => {
  const { windows, versionOf } = windowsFromResults({
    ...NONE,
    requests: [s({ instance: '10.0.0.1:6443', code: '200' }, 1), s({ instance: '10.0.0.9:6443', code: '200' }, 1)],
    buildInfo: [s({ instance: '10.0.0.1:6443', git_version: 'v0' }, 1), s({ instance: '10.0.0.9:6443', git_version: 'v1.36.3' }, 1)],
  });

  it('names instances after the up peer with the same IP (ports may differ), prefers its version, and leaves out servers that are not up', () => {
    const named = nameInstances(windows, versionOf, [{ hostname: 'cp-1', address: '10.0.0.1:16443', version: 'v1.35.4' }]);
    assert.deepEqual([...named.windows.keys()], ['cp-1']);
    assert.deepEqual(Object.fromEntries(named.versionOf), { 'cp-1': 'v1.35.4' });
  });

  it('keeps every instance under its own name when none matches a peer (Prometheus scrapes other addresses)', () => {
    const named = nameInstances(windows, versionOf, [{ hostname: 'cp-1', address: '192.168.0.1:6443', version: 'v1.35.4' }]);
    assert.deepEqual([...named.windows.keys()], ['10.0.0.1:6443', '10.0.0.9:6443']);
    assert.deepEqual(Object.fromEntries(named.versionOf), { '10.0.0.1:6443': 'v0', '10.0.0.9:6443': 'v1.36.3' });
  });
});

describe('PrometheusAnalysis (fake HTTP)', () => {
  const prom: PrometheusSettings = { address: 'http://prom:9090', selector: 'job="apiserver"' };
  const up: ObservedPeer[] = [
    { identity: 'apiserver-a', hostname: 'cp-1', address: '10.0.0.1:6443', version: 'v1.35.4', ready: true, proxyGate: 'on', stale: false },
    { identity: 'apiserver-b', hostname: 'cp-2', address: '10.0.0.2:6443', version: 'v1.36.3', ready: true, proxyGate: 'on', stale: false },
  ];
  const settings = { intervalMs: 10_000, proxyErrorRatio: 0.01, errorRatio: 0.05, latencyP99Seconds: 1, prometheus: prom };
  const answers: Record<string, string> = {
    rerouted: vector([{ metric: { instance: '10.0.0.1:6443', code: '200' }, value: '13' }, { metric: { instance: '10.0.0.1:6443', code: '503' }, value: '17' }]),
    peerProxyErrors: vector([]),
    requests: vector([{ metric: { instance: '10.0.0.1:6443', code: '200' }, value: '300' }, { metric: { instance: '10.0.0.2:6443', code: '200' }, value: '200' }]),
    durationBuckets: vector([{ metric: { instance: '10.0.0.1:6443', le: '0.05' }, value: '300' }, { metric: { instance: '10.0.0.1:6443', le: '+Inf' }, value: '300' }]),
    buildInfo: vector([]),
    apiServices: vector([]),
    webhookRequests: vector([]),
    webhookRejections: vector([]),
  };
  const which = (query: string) =>
    query.includes('aggregator_unavailable_apiservice') ? 'apiServices'
    : query.includes('webhook_request_total') ? 'webhookRequests'
    : query.includes('webhook_rejection_count') ? 'webhookRejections'
    : query.includes('rerouted') ? 'rerouted' : query.includes('peer_proxy') ? 'peerProxyErrors' : query.includes('_bucket') ? 'durationBuckets' : query.includes('build_info') ? 'buildInfo' : 'requests';
  const fake = (calls: string[], given: Record<string, string> = answers) => async (_s: PrometheusSettings, query: string, time: number) => {
    calls.push(`${time} ${query}`);
    return given[which(query)]!;
  };
  const N = QUERY_NAMES.length;
  /** Queries of a gauge, answered at the check's time without a range. */
  const instant = (c: string) => c.includes('build_info') || c.includes('aggregator_unavailable_apiservice');

  it('computes the verdict per server and cohort, with the Direct status shape', async () => {
    const calls: string[] = [];
    const pa = new PrometheusAnalysis({ log: silentLogger(), query: fake(calls) });
    const a = await pa.source(up, settings, 1_764_400_000_000);
    assert.ok(a);
    assert.equal(calls.length, N);
    assert.ok(calls.every((c) => c.startsWith('1764400000 ')));
    assert.equal(a.verdict, 'Breach');
    assert.equal(a.time, new Date(1_764_400_000_000).toISOString());
    assert.deepEqual(a.signals, { proxyErrorRatio: 0.566667, errorRatio: 0, latencyP99Seconds: 0.0495 });
    assert.deepEqual(a.breaches.map((b) => [b.server, b.signal, b.observed, b.threshold]), [
      ['cp-1', 'proxyErrorRatio', '0.566667', '0.01'],
      ['cohort v1.35.4', 'proxyErrorRatio', '0.566667', '0.01'],
    ]);
    // Within the window (the default 60 s here) the same check is answered again, without asking:
    // checks never overlap, so one burst is not counted again at every interval.
    assert.equal(await pa.source(up, settings, 1_764_400_005_000), a);
    assert.equal(await pa.source(up, settings, 1_764_400_059_000), a);
    assert.equal(calls.length, N);
    const next = await pa.source(up, settings, 1_764_400_060_000);
    assert.notEqual(next, a);
    assert.equal(calls.length, 2 * N);
    assert.ok(calls.slice(N).filter((c) => !instant(c)).every((c) => c.includes('[1m]') && c.includes('offset 1m')));
  });

  it('a shorter window from the spec: shorter ranges and checks as often as the window allows', async () => {
    const calls: string[] = [];
    const pa = new PrometheusAnalysis({ log: silentLogger(), query: fake(calls) });
    const short = { ...settings, intervalMs: 2_000, prometheus: { ...prom, windowMs: 5_000 } };
    await pa.source(up, short, 0);
    await pa.source(up, short, 4_000);
    assert.equal(calls.length, N);
    await pa.source(up, short, 5_000);
    assert.equal(calls.length, 2 * N);
    assert.ok(calls.filter((c) => !instant(c)).every((c) => c.includes('[5s]') && c.includes('offset 5s')));
  });

  it('issue 13 from Prometheus: an APIService and a webhook failing from the new server only, named in the breaches', async () => {
    const named: Record<string, string> = {
      ...answers,
      rerouted: vector([]),
      apiServices: vector([
        { metric: { instance: '10.0.0.1:6443', name: 'v1beta1.metrics.k8s.io' }, value: '0' },
        { metric: { instance: '10.0.0.2:6443', name: 'v1beta1.metrics.k8s.io' }, value: '1' },
        { metric: { instance: '10.0.0.1:6443', name: 'v1.apps' }, value: '0' },
        { metric: { instance: '10.0.0.2:6443', name: 'v1.apps' }, value: '0' },
      ]),
      webhookRequests: vector([
        { metric: { instance: '10.0.0.1:6443', name: 'policy.example.com', code: '200', rejected: 'false' }, value: '40' },
        { metric: { instance: '10.0.0.2:6443', name: 'policy.example.com', code: '200', rejected: 'false' }, value: '12.5' },
        { metric: { instance: '10.0.0.2:6443', name: 'policy.example.com', code: '500', rejected: 'true' }, value: '7.5' },
        { metric: { instance: '10.0.0.2:6443', name: 'policy.example.com', code: '403', rejected: 'true' }, value: '5' },
      ]),
      webhookRejections: vector([]),
    };
    const pa = new PrometheusAnalysis({ log: silentLogger(), query: fake([], named) });
    const a = await pa.source(up, { ...settings, webhookErrorRatio: 0.1, webhookMinCalls: 20 }, 0);
    assert.equal(a?.verdict, 'Breach');
    assert.deepEqual(a?.breaches.map((b) => [b.signal, b.server, b.observed, b.threshold, b.message]), [
      ['unavailableAPIServices', 'cp-2', '1', '0', 'APIService v1beta1.metrics.k8s.io is unavailable on cp-2 but available on cp-1 (1 such APIService on cp-2, 0 tolerated)'],
      ['webhookErrorRatio', 'cp-2', '0.3', '0.1', 'webhook policy.example.com: 8 of 25 calls from cp-2 failed (0.3 > 0.1)'],
      ['webhookErrorRatio', 'cohort v1.36.3', '0.3', '0.1', 'webhook policy.example.com: 8 of 25 calls from the v1.36.3 servers failed (0.3 > 0.1)'],
    ]);
    const loose = new PrometheusAnalysis({ log: silentLogger(), query: fake([], named) });
    const b = await loose.source(up, { ...settings, webhookErrorRatio: 0.1, webhookMinCalls: 30, unavailableAPIServices: 1 }, 0);
    assert.equal(b?.verdict, 'Healthy', 'one APIService tolerated, too few calls to judge');
  });

  it('no Prometheus in the settings: no answer (the observer scrapes directly)', async () => {
    const pa = new PrometheusAnalysis({ log: silentLogger(), query: fake([]) });
    assert.equal(await pa.source(up, { ...settings, prometheus: undefined }, 0), undefined);
  });

  it('empty answers everywhere: Inconclusive, not Healthy', async () => {
    const pa = new PrometheusAnalysis({ log: silentLogger(), query: async () => vector([]) });
    const a = await pa.source(up, settings, 0);
    assert.deepEqual(a, { time: new Date(0).toISOString(), verdict: 'Inconclusive', signals: {}, breaches: [] });
  });

  it('an unreachable Prometheus or a query error: Inconclusive', async () => {
    const down = new PrometheusAnalysis({ log: silentLogger(), query: async () => Promise.reject(new Error('ECONNREFUSED')) });
    assert.equal((await down.source(up, settings, 0))?.verdict, 'Inconclusive');
    const bad = new PrometheusAnalysis({ log: silentLogger(), query: async () => JSON.stringify({ status: 'error', errorType: 'timeout', error: 'query timed out' }) });
    assert.equal((await bad.source(up, settings, 0))?.verdict, 'Inconclusive');
  });
});

describe('httpQuery (local HTTP server)', () => {
  it('GETs <address>/api/v1/query with the query and the time, keeping a path prefix', async () => {
    const seen: string[] = [];
    const agents: (string | undefined)[] = [];
    const server = createServer((req, res) => {
      seen.push(req.url ?? '');
      agents.push(req.headers['user-agent']);
      res.setHeader('Content-Type', 'application/json');
      if ((req.url ?? '').includes('bad')) {
        res.statusCode = 400;
        res.end(JSON.stringify({ status: 'error', errorType: 'bad_data', error: 'parse error' }));
      } else res.end(vector([{ metric: { instance: 'x' }, value: '1' }]));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      const q = httpQuery(2000);
      const body = await q({ address: `http://127.0.0.1:${port}/prom/`, selector: '' }, 'up{job="apiserver"}', 1_764_400_000.25);
      assert.deepEqual(parseQueryResponse(body), [{ labels: { instance: 'x' }, value: 1 }]);
      const url = new URL(seen[0]!, 'http://x');
      assert.equal(url.pathname, '/prom/api/v1/query');
      assert.equal(url.searchParams.get('query'), 'up{job="apiserver"}');
      assert.equal(url.searchParams.get('time'), '1764400000.250');
      assert.match(agents[0] ?? '', /^apiserver-upgrade-operator\/\d+\.\d+\.\d+/, 'the operator names itself to Prometheus');
      // A 400 with the API's JSON error body is an answer, which parseQueryResponse turns into the error.
      assert.throws(() => parseQueryResponse(''), /not JSON/);
      await assert.rejects(async () => parseQueryResponse(await q({ address: `http://127.0.0.1:${port}`, selector: '' }, 'bad', 0)), /bad_data: parse error/);
      await assert.rejects(q({ address: 'http://127.0.0.1:1', selector: '' }, 'up', 0), /GET http:\/\/127\.0\.0\.1:1\/api\/v1\/query: /);
    } finally {
      server.close();
    }
  });
});

describe('PrometheusAnalysis and a Prometheus that does not answer', () => {
  it('gives up within the look\'s deadline (a 2 s interval: 1.5 s): Inconclusive, not a look held for 10 s', async () => {
    // Process seed 231 #12: Prometheus stopped (SIGSTOP) held each look for the query's 10 s, and the operator
    // counted no check of a server that was down for 11 s.
    const server = createServer(() => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      const pa = new PrometheusAnalysis({ log: silentLogger(), query: httpQuery() });
      const started = Date.now();
      const a = await pa.analysis([], { intervalMs: 2_000, prometheus: { address: `http://127.0.0.1:${port}`, selector: '' } }, Date.now());
      const tookMs = Date.now() - started;
      assert.equal(a?.verdict, 'Inconclusive');
      assert.ok(tookMs >= 1_400 && tookMs < 1_900, `the look waited ${tookMs} ms for Prometheus`);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('FleetObserver analysisSource hook', () => {
  const noServers = async <T>(path: string): Promise<T> => ({ items: [], path }) as T;
  const direct = new DirectClient(async () => ({ headers: {}, rejectUnauthorized: true }));

  it('is asked when the settings carry prometheus, and only then', async () => {
    const asked: string[] = [];
    const canned: ObservedAnalysis = { time: new Date(0).toISOString(), verdict: 'Healthy', signals: { errorRatio: 0 }, breaches: [] };
    const observer = new FleetObserver(direct, noServers, silentLogger(), {
      analysisSource: async (up, s) => {
        asked.push(`${up.length} ${s.prometheus?.address}`);
        return canned;
      },
    });
    const base = { intervalMs: 1, proxyErrorRatio: 0.01, errorRatio: 0.05, latencyP99Seconds: 1 };
    const viaProm = await observer.observe({ ...base, prometheus: { address: 'http://prom:9090', selector: 'job="apiserver"' } }, 1000);
    // The source's check, with the observer's own count of stale identity Leases (none here).
    assert.deepEqual(viaProm.analysis, { ...canned, signals: { ...canned.signals, stalePeers: 0 } });
    assert.deepEqual(asked, ['0 http://prom:9090']);
    const direct2 = await observer.observe(base, 2000);
    assert.equal(direct2.analysis, undefined, 'no servers scraped: no direct analysis');
    assert.equal(asked.length, 1);
    observer.close();
  });
});
