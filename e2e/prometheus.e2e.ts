// The analysis source `Prometheus` against a real Prometheus that scrapes the real servers: the PromQL
// the operator sends is valid, names every server, and gives the same verdicts as the direct scrapes.
//   node_modules/.bin/node --test --test-reporter=spec e2e/prometheus.e2e.ts
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, OLD_VERSION, NEW_VERSION, PROXY_GATE, waitFor, sleep } from './cluster/index.ts';
import { loadKubeConfig, KubeClient } from '../src/runtime/kube.ts';
import { silentLogger } from '../src/runtime/logger.ts';
import { FleetObserver, type AnalysisSettings } from '../src/observe/fleet.ts';
import {
  PrometheusAnalysis, buildQueries, httpQuery, nameInstances, parseQueryResponse, windowsFromResults,
  type PrometheusSettings, type QueryName, type QueryResults, type VectorSample,
} from '../src/observe/prometheus-source.ts';
import type { Observation } from '../src/plan/observation.ts';
import { EACH_LOOK_A_CHECK } from './support/each-look.ts';

const NEW_ONLY = '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies';
const GATE_ON = { [PROXY_GATE]: true };
/** Long enough for increase() to see several 1 s scrapes, short enough that the kill dominates it. */
const WINDOW_SECONDS = 8;
const THRESHOLDS = { proxyErrorRatio: 0.01, errorRatio: 0.05, latencyP99Seconds: 1 };

let cluster: Cluster;
let prom: PrometheusSettings;
let direct: FleetObserver;
let viaPrometheus: FleetObserver;

function report(msg: string): void {
  process.stderr.write(`[prometheus] ${msg}\n`);
}

before(async () => {
  // Two old servers and one new, the proxy gate on everywhere: cp-1 and cp-2 proxy the new-only resource to cp-3.
  cluster = await Cluster.start({ servers: 3, featureGates: GATE_ON, perServer: [{}, {}, { version: NEW_VERSION }], verbose: true });
  prom = { address: await cluster.startPrometheus({ scrapeIntervalSeconds: 1 }), selector: 'job="apiserver"', windowMs: WINDOW_SECONDS * 1000 };
  const kc = loadKubeConfig({ file: cluster.kubeconfig });
  const kube = new KubeClient(kc, { logger: silentLogger() });
  direct = new FleetObserver(kc, (p) => kube.request('GET', p), silentLogger());
  const source = new PrometheusAnalysis({ log: silentLogger() });
  viaPrometheus = new FleetObserver(kc, (p) => kube.request('GET', p), silentLogger(), { analysisSource: source.source });
  await waitFor('cp-1 to proxy the new-only resource to cp-3', 60_000, async () => ((await cluster.request(0, NEW_ONLY)).status === 200 ? true : undefined));
});

after(async () => {
  direct?.close();
  viaPrometheus?.close();
  await cluster?.teardown();
});

// A check through Prometheus is made once per window (8 s) and answered from memory in between.
const promSettings = (): AnalysisSettings => ({ ...EACH_LOOK_A_CHECK, ...THRESHOLDS, prometheus: prom });
const directSettings: AnalysisSettings = { ...EACH_LOOK_A_CHECK, ...THRESHOLDS };

async function proxiedRequests(n: number): Promise<Record<string, number>> {
  const codes: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const s = String((await cluster.request(0, NEW_ONLY)).status);
    codes[s] = (codes[s] ?? 0) + 1;
  }
  return codes;
}

async function queryAll(windowSecs: number): Promise<QueryResults> {
  const queries = buildQueries(prom.selector, windowSecs);
  const ask = httpQuery();
  const names = Object.keys(queries) as QueryName[];
  const answers = await Promise.all(names.map(async (n) => [n, parseQueryResponse(await ask(prom, queries[n], Date.now() / 1000))] as const));
  const results: Partial<Record<QueryName, VectorSample[]>> = {};
  for (const [n, samples] of answers) results[n] = samples;
  return results as QueryResults;
}

test('every PromQL query the operator sends is valid on a real Prometheus, and its answers name every server', async () => {
  // Let Prometheus hold a full window first: in a window longer than its own history every target is new
  // to it, and windowIncrease then misses the first increment of each series born in the window.
  await sleep((WINDOW_SECONDS + 1) * 1000);
  const before = await direct.observe(directSettings);
  await proxiedRequests(20);
  await sleep(2_500); // two scrapes
  const results = await queryAll(WINDOW_SECONDS);
  const raw = windowsFromResults(results);
  const named = nameInstances(raw.windows, raw.versionOf, before.peers);
  report(`instances ${[...raw.windows.keys()].join(', ')} -> ${[...named.windows.keys()].join(', ')}; versions ${JSON.stringify(Object.fromEntries(named.versionOf))}`);

  // Instances are address:port; the join with the identity leases turns them into hostnames.
  assert.deepEqual([...named.windows.keys()].sort(), ['cp-1', 'cp-2', 'cp-3']);
  assert.deepEqual(Object.fromEntries(named.versionOf), { 'cp-1': OLD_VERSION, 'cp-2': OLD_VERSION, 'cp-3': NEW_VERSION });
  // kubernetes_build_info alone (without the join) tells the same versions.
  assert.deepEqual([...raw.versionOf.values()].sort(), [OLD_VERSION, OLD_VERSION, NEW_VERSION].sort());
  for (const [name, w] of named.windows) {
    assert.ok((w.requests ?? []).reduce((a, d) => a + d.delta, 0) > 0, `${name}: apiserver_request_total increased`);
    const hist = w.requestDuration?.[0];
    assert.ok(hist && hist.buckets.at(-1)?.le === Infinity && hist.count > 0, `${name}: request duration buckets up to +Inf`);
  }
  // cp-1 proxied the 20 requests: they show up as rerouted 200s (increase() extrapolates, so about 20, not exactly).
  const rerouted200 = (named.windows.get('cp-1')?.rerouted ?? []).filter((d) => d.labels.code === '200').reduce((a, d) => a + d.delta, 0);
  report(`cp-1 rerouted 200s in the window: ${rerouted200.toFixed(1)}`);
  assert.ok(rerouted200 >= 15, `cp-1 rerouted 200s ${rerouted200}`);
  // cp-3 serves the resource itself and proxies nothing.
  assert.equal((named.windows.get('cp-3')?.rerouted ?? []).reduce((a, d) => a + d.delta, 0), 0);
});

test('Healthy, then a proxyErrorRatio Breach on cp-1 when cp-3 is killed: the same verdicts as the direct scrapes', async () => {
  // A quiet window first, so only proxied 200s are in it.
  await sleep(WINDOW_SECONDS * 1000);
  const d0 = await direct.observe(directSettings);
  await proxiedRequests(20);
  await sleep(2_500);
  const [healthyProm, healthyDirect] = await Promise.all([viaPrometheus.observe(promSettings()), direct.observe(directSettings)]);
  report(`healthy: prometheus ${JSON.stringify(healthyProm.analysis)}; direct ${JSON.stringify(healthyDirect.analysis)} (window from ${d0.analysis?.time})`);
  for (const [name, o] of [['prometheus', healthyProm], ['direct', healthyDirect]] as const) {
    assert.equal(o.analysis?.signals.proxyErrorRatio, 0, `${name}: no proxied request failed`);
    assert.deepEqual(o.analysis?.breaches.filter((b) => b.signal === 'proxyErrorRatio'), [], `${name}: no proxyErrorRatio breach`);
  }
  assert.notEqual(healthyProm.analysis?.verdict, 'Inconclusive', 'Prometheus had data');

  await cluster.kill(2);
  await sleep(500);
  const codes = await proxiedRequests(30);
  report(`after SIGKILL of cp-3, 30 requests through cp-1: ${JSON.stringify(codes)}`);
  assert.ok((codes['503'] ?? 0) > 0, 'some proxied requests answered 503');

  const directBreach = await direct.observe(directSettings);
  // Prometheus needs a scrape or two after the last request, and cp-3 is now down for it: wait for the breach.
  const promBreach = await waitFor('a Breach from Prometheus', 20_000, async () => {
    const o: Observation = await viaPrometheus.observe(promSettings());
    return o.analysis?.verdict === 'Breach' && o.analysis.breaches.some((b) => b.signal === 'proxyErrorRatio') ? o : undefined;
  }, 1000);
  const promCp1 = promBreach.analysis?.breaches.find((b) => b.signal === 'proxyErrorRatio' && b.server === 'cp-1');
  const directCp1 = directBreach.analysis?.breaches.find((b) => b.signal === 'proxyErrorRatio' && b.server === 'cp-1');
  report(`breach: prometheus ${JSON.stringify(promBreach.analysis?.breaches)}; direct ${JSON.stringify(directBreach.analysis?.breaches)}`);
  assert.ok(promCp1, 'Prometheus: a proxyErrorRatio breach on cp-1');
  assert.ok(directCp1, 'direct: a proxyErrorRatio breach on cp-1');
  const subjects = (o: Observation) => (o.analysis?.breaches ?? []).filter((b) => b.signal === 'proxyErrorRatio').map((b) => b.server).sort();
  assert.deepEqual(subjects(promBreach), subjects(directBreach), 'both sources blame the same servers and cohorts');
  assert.equal(promCp1.threshold, '0.01');
  const ratio = Number(promCp1.observed);
  report(`cp-1 proxyErrorRatio: prometheus ${ratio}, direct ${directCp1.observed}`);
  assert.ok(ratio > 0.01 && ratio <= 1, `Prometheus cp-1 proxyErrorRatio ${ratio}`);
});
