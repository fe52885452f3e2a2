/**
 * The optional analysis source `spec.analysis.source: Prometheus`: the same signals as the direct
 * scrapes (proxy error ratio, 5xx ratio, p99 latency, unavailable APIServices, webhook failures), from PromQL over the Prometheus HTTP API
 * (`/api/v1/query`), returned in the same `ObservedAnalysis` shape.
 *
 * The queries ask for the increase over the window (`windowIncrease`), grouped by `instance` (and `code` or `le`),
 * and the answers become the same `WindowDeltas` the direct scrapes produce. So ratios, the p99
 * (histogram_quantile interpolation over summed buckets), cohorts, thresholds and "no data" all come
 * from `signals.ts` and match Direct exactly. An empty answer means the family is absent, which is
 * `noData`, never healthy and never a breach. The queries are listed in docs/observe.md.
 *
 * Pure parts: `buildQueries`, `parseQueryResponse`, `windowsFromResults`, `nameInstances`,
 * `summarizeAnalysis`. The shell is `PrometheusAnalysis`, with the HTTP query function injectable.
 */
import http from 'node:http';
import https from 'node:https';
import type { Logger } from '../runtime/logger.ts';
import { USER_AGENT } from '../runtime/kube-request.ts';
import { readBody } from '../runtime/https-call.ts';
import { bigBodySlots, checkJsonContainers, PROMETHEUS_MAX_BYTES, type Slots } from '../runtime/body-limits.ts';
import { prometheusAddressProblem } from '../plan/prometheus-address.ts';
import { probeDeadlineMs } from '../plan/probe-deadline.ts';
import type { ObservedAnalysis, ObservedPeer } from '../plan/observation.ts';
import type { CounterDelta, HistogramDelta } from './deltas.ts';
import { hostOf } from './inventory.ts';
import { summarizeAnalysis } from './analysis-summary.ts';
import { parsePromNumber, type HistogramBucket, type Labels } from './prom-text.ts';
import { FAMILIES, HEALTH_PROBE_SUBRESOURCE_RE, LONG_RUNNING_SUBRESOURCES, LONG_RUNNING_VERBS, type APIServiceState, type Thresholds, type WindowDeltas } from './signals.ts';

import type { PrometheusSettings } from '../plan/observation.ts';
import { safeMessage } from '../plan/redact.ts';

export type { PrometheusSettings } from '../plan/observation.ts';

/** What the analysis needs from the caller: window length and thresholds (FleetObserver's AnalysisSettings fits). */
export interface PrometheusAnalysisSettings extends Thresholds {
  intervalMs: number;
  prometheus?: PrometheusSettings;
}

export type QueryName = 'rerouted' | 'peerProxyErrors' | 'requests' | 'durationBuckets' | 'buildInfo' | 'apiServices' | 'webhookRequests' | 'webhookRejections';

/** The order `PrometheusAnalysis` asks them in. */
export const QUERY_NAMES: readonly QueryName[] = ['rerouted', 'peerProxyErrors', 'requests', 'durationBuckets', 'buildInfo', 'apiServices', 'webhookRequests', 'webhookRejections'];

/** The same requests signals.ts leaves out: health probes everywhere, long-running requests from latency. */
const NOT_HEALTH_PROBES = `subresource!~"${HEALTH_PROBE_SUBRESOURCE_RE}"`;
const LONG_RUNNING_MATCHERS = `verb!~"${[...LONG_RUNNING_VERBS].join('|')}",subresource!~"${[...LONG_RUNNING_SUBRESOURCES, HEALTH_PROBE_SUBRESOURCE_RE].join('|')}"`;

/** `{<selector>,<extra>}`; the selector may come with or without its braces. */
export function matchers(selector: string, extra = ''): string {
  let s = selector.trim();
  if (s.startsWith('{') && s.endsWith('}')) s = s.slice(1, -1).trim();
  return `{${[s, extra].filter((m) => m !== '').join(',')}}`;
}

/** A PromQL range like `5m` or `90s` for a window of whole seconds. */
export function promDuration(seconds: number): string {
  const s = Math.max(1, Math.ceil(seconds));
  return s % 60 === 0 ? `${s / 60}m` : `${s}s`;
}

/** The CRD's default `window`: `increase()` needs two samples in range, and 30 s scrape intervals are common. */
export const DEFAULT_WINDOW_MS = 60_000;

/**
 * The range of one check, in whole seconds: the window, or the check interval when that is longer. A
 * check is made once per range and answered from memory until the next, so checks never overlap: an
 * error burst counts in one check (or two, when it straddles them), as with the direct scrapes, and
 * `failureLimit` counts consecutive breached windows rather than the same burst seen again and again.
 */
export function windowSeconds(intervalMs: number, windowMs = DEFAULT_WINDOW_MS): number {
  return Math.max(1, Math.ceil(Math.max(windowMs, intervalMs) / 1000));
}

/**
 * How much the counters `series` grew over the window `w`, per series. `increase()` alone misses a
 * series born inside the window: kube-apiserver creates a labelled series on its first increment (the
 * first `code="503"` of `apiserver_rerouted_request_total` arrives with the first failed proxy), so a
 * burst of errors shows up as a new series already at its final value, and `increase()` over samples
 * that never change says 0. Found against a real Prometheus: 30 proxied 503s gave no breach.
 *
 * So a series with no sample at the window's start is counted from zero (its current value), as the
 * direct scrapes count a series absent from the previous scrape — but only when Prometheus already
 * scraped its target then (`up offset w`): a target new to Prometheus would otherwise bring its whole
 * history into one window. Every other series keeps `increase()`, which handles counter resets.
 */
export function windowIncrease(series: string, w: string): string {
  return `((${series} unless ${series} offset ${w}) and on (instance) (up offset ${w})) or increase(${series}[${w}])`;
}

/** The queries of one check. Every result is an instant vector. */
export function buildQueries(selector: string, windowSecs: number): Record<QueryName, string> {
  const w = promDuration(windowSecs);
  const sel = matchers(selector);
  return {
    rerouted: `sum by (instance, code) (${windowIncrease(`${FAMILIES.rerouted}${sel}`, w)})`,
    peerProxyErrors: `sum by (instance) (${windowIncrease(`${FAMILIES.peerProxyErrors}${sel}`, w)})`,
    requests: `sum by (instance, code) (${windowIncrease(`${FAMILIES.requests}${matchers(selector, NOT_HEALTH_PROBES)}`, w)})`,
    durationBuckets: `sum by (instance, le) (${windowIncrease(`${FAMILIES.requestDuration}_bucket${matchers(selector, LONG_RUNNING_MATCHERS)}`, w)})`,
    buildInfo: `max by (instance, git_version) (kubernetes_build_info${sel})`,
    // A gauge: its value now, as the direct scrape reads it.
    apiServices: `max by (instance, name) (${FAMILIES.unavailableAPIService}${sel})`,
    webhookRequests: `sum by (instance, name, code, rejected) (${windowIncrease(`${FAMILIES.webhookRequests}${sel}`, w)})`,
    // Only the calling errors answered 4xx: every other failure is already a failed request (signals.ts isFailedWebhookRejection).
    webhookRejections: `sum by (instance, name, error_type, rejection_code) (${windowIncrease(`${FAMILIES.webhookRejections}${matchers(selector, 'error_type="calling_webhook_error",rejection_code=~"4.."')}`, w)})`,
  };
}

export interface VectorSample {
  labels: Labels;
  /** NaN and ±Inf come back as the strings "NaN", "+Inf", "-Inf"; parsed to numbers. */
  value: number;
}

export class PrometheusQueryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PrometheusQueryError';
  }
}

interface ApiResponse {
  status?: string;
  errorType?: string;
  error?: string;
  data?: { resultType?: string; result?: unknown };
}

/** The samples of an `/api/v1/query` answer; throws on `status: error` and on any result type but a vector. */
export function parseQueryResponse(body: string): VectorSample[] {
  let doc: ApiResponse;
  try {
    doc = JSON.parse(body) as ApiResponse;
  } catch {
    throw new PrometheusQueryError(`not JSON: ${safeMessage(body, { maxChars: 200 })}`);
  }
  if (doc.status !== 'success') throw new PrometheusQueryError(safeMessage(`${doc.errorType ?? 'error'}: ${doc.error ?? `status ${String(doc.status)}`}`, { maxChars: 512 }));
  if (doc.data?.resultType !== 'vector') throw new PrometheusQueryError(`expected a vector result, got ${String(doc.data?.resultType)}`);
  if (!Array.isArray(doc.data.result)) throw new PrometheusQueryError('vector result is not a list');
  return doc.data.result.map((r: unknown, i: number) => {
    const item = r as { metric?: unknown; value?: unknown };
    const metric = item.metric ?? {};
    if (typeof metric !== 'object' || metric === null) throw new PrometheusQueryError(`result ${i}: metric is not an object`);
    const labels: Labels = {};
    for (const [k, v] of Object.entries(metric)) if (typeof v === 'string') labels[k] = v;
    const pair = item.value;
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[1] !== 'string') throw new PrometheusQueryError(`result ${i}: value is not [time, "number"]`);
    const value = parsePromNumber(pair[1]);
    if (value === undefined) throw new PrometheusQueryError(`result ${i}: value ${JSON.stringify(pair[1])} is not a number`);
    return { labels, value };
  });
}

export type QueryResults = Record<QueryName, readonly VectorSample[]>;

/**
 * One window per `instance`, as if two scrapes had been differenced. A family with no series for an
 * instance stays `undefined` (noData). Samples whose value isn't finite (NaN from a 0/0 inside the
 * query, or ±Inf) are dropped, and buckets with one are dropped whole, because they count nothing
 * we could trust. `increase()` already accounts for counter resets, so no delta is flagged `reset`.
 */
export function windowsFromResults(results: QueryResults): { windows: Map<string, WindowDeltas>; versionOf: Map<string, string> } {
  const instances = new Set<string>();
  for (const list of Object.values(results)) for (const s of list) if (s.labels.instance !== undefined) instances.add(s.labels.instance);

  const counters = (list: readonly VectorSample[]) => {
    const by = new Map<string, CounterDelta[]>();
    for (const s of list) {
      const instance = s.labels.instance;
      if (instance === undefined || !Number.isFinite(s.value)) continue;
      const { instance: _drop, ...labels } = s.labels;
      by.set(instance, [...(by.get(instance) ?? []), { labels, delta: s.value, reset: false }]);
    }
    return by;
  };
  const rerouted = counters(results.rerouted);
  const peerProxyErrors = counters(results.peerProxyErrors);
  const requests = counters(results.requests);
  const webhookRequests = counters(results.webhookRequests);
  const webhookRejections = counters(results.webhookRejections);
  const apiServices = new Map<string, APIServiceState[]>();
  for (const s of results.apiServices) {
    const { instance, name } = s.labels;
    if (instance === undefined || name === undefined || !Number.isFinite(s.value)) continue;
    apiServices.set(instance, [...(apiServices.get(instance) ?? []), { name, unavailable: s.value > 0 }]);
  }

  const buckets = new Map<string, HistogramBucket[]>();
  const badBuckets = new Set<string>();
  for (const s of results.durationBuckets) {
    const instance = s.labels.instance;
    const le = parsePromNumber(s.labels.le ?? '');
    if (instance === undefined || le === undefined || Number.isNaN(le)) continue;
    if (!Number.isFinite(s.value)) {
      badBuckets.add(instance);
      continue;
    }
    buckets.set(instance, [...(buckets.get(instance) ?? []), { le, count: s.value }]);
  }

  const windows = new Map<string, WindowDeltas>();
  for (const instance of [...instances].sort()) {
    let requestDuration: HistogramDelta[] | undefined;
    const list = badBuckets.has(instance) ? undefined : buckets.get(instance)?.sort((a, b) => a.le - b.le);
    if (list && list.at(-1)?.le === Infinity) {
      requestDuration = [{ labels: {}, buckets: list, sum: NaN, count: list.at(-1)?.count ?? 0, reset: false }];
    }
    windows.set(instance, {
      rerouted: rerouted.get(instance),
      peerProxyErrors: peerProxyErrors.get(instance),
      requests: requests.get(instance),
      requestDuration,
      apiServices: apiServices.get(instance),
      webhookRequests: webhookRequests.get(instance),
      webhookRejections: webhookRejections.get(instance),
      restarted: false,
    });
  }
  const versionOf = new Map<string, string>();
  for (const s of results.buildInfo) if (s.labels.instance !== undefined && s.labels.git_version) versionOf.set(s.labels.instance, s.labels.git_version);
  return { windows, versionOf };
}

/**
 * Names each Prometheus `instance` after the server it scrapes: the up peer with the same IP (the
 * peer-advertise port can differ from the scraped port). Instances that match no up peer are left
 * out, as the direct scrapes leave out servers that are not up: a server being replaced is down or
 * starting, and its window would land in an `unknown` cohort. If no instance matches any up peer,
 * Prometheus scrapes other addresses than the servers advertise; then every instance keeps its own
 * name, and `kubernetes_build_info` gives the versions. A matched peer's version wins over it.
 */
export function nameInstances(
  windows: ReadonlyMap<string, WindowDeltas>,
  versionOf: ReadonlyMap<string, string>,
  up: readonly Pick<ObservedPeer, 'hostname' | 'address' | 'version'>[],
): { windows: Map<string, WindowDeltas>; versionOf: Map<string, string> } {
  const byHost = new Map(up.filter((p) => p.address).map((p) => [hostOf(p.address!), p]));
  const anyMatch = [...windows.keys()].some((instance) => byHost.has(hostOf(instance)));
  const outWindows = new Map<string, WindowDeltas>();
  const outVersions = new Map<string, string>();
  for (const [instance, w] of windows) {
    const peer = byHost.get(hostOf(instance));
    if (!peer && anyMatch) continue;
    const name = peer?.hostname ?? instance;
    // Two instances (e.g. two jobs) scraping one server would be counted twice; keep the first, sorted.
    if (outWindows.has(name)) continue;
    outWindows.set(name, w);
    const version = peer?.version ?? versionOf.get(instance);
    if (version) outVersions.set(name, version);
  }
  return { windows: outWindows, versionOf: outVersions };
}


/** Runs one instant query and answers the raw response body; throws on transport errors only (a deadline passing among them). */
export type QueryFn = (settings: PrometheusSettings, query: string, timeSeconds: number, timeoutMs?: number) => Promise<string>;

/**
 * GET `<address>/api/v1/query` with node:http(s), verifying https against `caBundle` when given. The address is
 * checked first (prometheusAddressProblem); the answer is read inside one of the process-wide big-body slots, at
 * most `maxBytes` of it (gunzipped as it streams), and its JSON structure is bounded before anyone parses it.
 */
export function httpQuery(defaultTimeoutMs = 10_000, o: { maxBytes?: number; slots?: Slots } = {}): QueryFn {
  const maxBytes = o.maxBytes ?? PROMETHEUS_MAX_BYTES;
  const slots = o.slots ?? bigBodySlots;
  return (settings, query, timeSeconds, timeoutMs = defaultTimeoutMs) => {
    const problem = prometheusAddressProblem(settings.address);
    if (problem !== undefined) return Promise.reject(new Error(`spec.analysis.prometheus.address: ${problem}`));
    const base = settings.address.replace(/\/+$/, '');
    const url = new URL(`${base}/api/v1/query`);
    url.searchParams.set('query', query);
    url.searchParams.set('time', timeSeconds.toFixed(3));
    const isHttps = url.protocol === 'https:';
    const where = `GET ${url.origin}${url.pathname}`;
    const ca = settings.caBundle ? Buffer.from(settings.caBundle, 'base64').toString('utf8') : undefined;
    return slots.run(async () => {
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const options = { signal: AbortSignal.timeout(timeoutMs), headers: { Accept: 'application/json', 'Accept-Encoding': 'gzip', 'User-Agent': USER_AGENT } };
        const req = isHttps ? https.get(url, { ...options, ...(ca ? { ca } : {}) }, resolve) : http.get(url, options, resolve);
        req.on('error', (err) => reject(new Error(`${where}: ${err.name === 'AbortError' ? `no answer within ${timeoutMs}ms` : err.message}`, { cause: err })));
      });
      let body: string;
      try {
        body = await readBody(res, maxBytes, `${where}: the answer`);
      } catch (err) {
        if ((err as Error).name === 'AbortError') throw new Error(`${where}: no whole answer within ${timeoutMs}ms`, { cause: err });
        throw err;
      }
      // The API answers errors (400 bad query, 422 execution, 503 timeout) with a JSON body naming them.
      if (res.statusCode !== 200 && !body.startsWith('{')) throw new Error(`${where}: HTTP ${res.statusCode}: ${safeMessage(body, { maxChars: 200 })}`);
      checkJsonContainers(body, undefined, `${where}: the answer`);
      return body;
    });
  };
}

export interface PrometheusAnalysisOptions {
  log: Logger;
  /** Defaults to `httpQuery()`. */
  query?: QueryFn;
}

/**
 * The shell: one check per window (see `windowSeconds`), its queries (`QUERY_NAMES`) in parallel. When
 * Prometheus can't be asked (unreachable, bad query, bad answer), the check is `Inconclusive`:
 * the planner then neither counts it towards the failure limit nor resets the count.
 */
export class PrometheusAnalysis {
  private readonly log: Logger;
  private readonly query: QueryFn;
  private last: { at: number; key: string; analysis: ObservedAnalysis } | undefined;

  constructor(o: PrometheusAnalysisOptions) {
    this.log = o.log;
    this.query = o.query ?? httpQuery();
  }

  /** Matches FleetObserver's `AnalysisSource`; answers undefined when the settings name no Prometheus. */
  readonly source = (up: readonly ObservedPeer[], settings: PrometheusAnalysisSettings, now: number): Promise<ObservedAnalysis | undefined> => this.analysis(up, settings, now);

  async analysis(up: readonly ObservedPeer[], settings: PrometheusAnalysisSettings, now: number): Promise<ObservedAnalysis | undefined> {
    const prom = settings.prometheus;
    if (!prom) return undefined;
    const window = windowSeconds(settings.intervalMs, prom.windowMs);
    const key = `${prom.address} ${prom.selector} ${window}`;
    if (this.last && this.last.key === key && now - this.last.at < window * 1000) return this.last.analysis;
    const queries = buildQueries(prom.selector, window);
    const thresholds: Thresholds = {
      ...(settings.proxyErrorRatio !== undefined ? { proxyErrorRatio: settings.proxyErrorRatio } : {}),
      ...(settings.errorRatio !== undefined ? { errorRatio: settings.errorRatio } : {}),
      ...(settings.latencyP99Seconds !== undefined ? { latencyP99Seconds: settings.latencyP99Seconds } : {}),
      ...(settings.minSamples !== undefined ? { minSamples: settings.minSamples } : {}),
      ...(settings.unavailableAPIServices !== undefined ? { unavailableAPIServices: settings.unavailableAPIServices } : {}),
      ...(settings.webhookErrorRatio !== undefined ? { webhookErrorRatio: settings.webhookErrorRatio } : {}),
      ...(settings.webhookMinCalls !== undefined ? { webhookMinCalls: settings.webhookMinCalls } : {}),
    };
    let analysis: ObservedAnalysis;
    try {
      // The look waits for Prometheus no longer than for a server's probe: a hung Prometheus held every look for
      // the query's 10 s, and with it the operator's own count of a server that was down (process seed 231 #12:
      // two breaching checks, then none for 11 s). Past the deadline the check is Inconclusive, and the planner
      // still counts a member that is down (src/plan/analysis.ts).
      const deadline = probeDeadlineMs(settings.intervalMs);
      const ask = async (n: QueryName) => parseQueryResponse(await this.query(prom, queries[n], now / 1000, deadline));
      const answers = await Promise.all(QUERY_NAMES.map(async (n) => [n, await ask(n)] as const));
      const results: Partial<Record<QueryName, VectorSample[]>> = {};
      for (const [n, samples] of answers) results[n] = samples;
      const raw = windowsFromResults(results as QueryResults);
      const named = nameInstances(raw.windows, raw.versionOf, up);
      analysis = summarizeAnalysis(named.windows, named.versionOf, thresholds, now);
      if (named.windows.size === 0) this.log.info('prometheus analysis: no apiserver series match the selector', { address: prom.address, selector: prom.selector });
    } catch (err) {
      this.log.warn('prometheus analysis failed; the check is inconclusive', { address: prom.address, error: err instanceof Error ? err.message : String(err) });
      analysis = { time: new Date(now).toISOString(), verdict: 'Inconclusive', signals: {}, breaches: [] };
    }
    this.last = { at: now, key, analysis };
    if (analysis.verdict === 'Breach') this.log.info('analysis', { source: 'Prometheus', verdict: analysis.verdict, breaches: analysis.breaches });
    else this.log.debug('analysis', { source: 'Prometheus', verdict: analysis.verdict });
    return analysis;
  }
}
