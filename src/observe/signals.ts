/**
 * Health signals of one analysis window, from the deltas between two scrapes of apiserver /metrics,
 * per server and per version cohort (the new batch vs the old servers).
 *
 * "No data" — no requests in the window, or the family is absent — is its own outcome
 * (`noData`): it is never read as healthy and never as a breach.
 */
import { counterDeltas, histogramDeltas } from './deltas.ts';
import type { CounterDelta, HistogramDelta } from './deltas.ts';
import type { HistogramBucket, ParsedMetrics } from './prom-text.ts';
import { PROXY_GATE } from '../api/constants.ts';

export const FAMILIES = {
  /** {code} in 1.35; 1.36 adds group, version, resource. Counted on the server that forwarded. */
  rerouted: 'apiserver_rerouted_request_total',
  /** {type, group, version, resource}, 1.36+. */
  peerProxyErrors: 'apiserver_peer_proxy_errors_total',
  requests: 'apiserver_request_total',
  requestDuration: 'apiserver_request_duration_seconds',
  featureEnabled: 'kubernetes_feature_enabled',
  /** Gauge: when this process started (Prometheus' process collector); tells restarts apart where the Lease does not. */
  processStart: 'process_start_time_seconds',
  /** Gauge {name}: 1 while this server's aggregator marks the APIService unavailable (cannot reach it), else 0. */
  unavailableAPIService: 'aggregator_unavailable_apiservice',
  /**
   * {name, type, operation, code, rejected}: every call this server made to an admission webhook. `code` is
   * 200 for an answered call, the HTTP status of a denial or of a failed call (500/503 when the webhook could
   * not be reached), 0 for an apiserver-internal error. A failed call under failurePolicy Ignore keeps
   * `rejected="false"`.
   */
  webhookRequests: 'apiserver_admission_webhook_request_total',
  /** {name, type, operation, error_type, rejection_code}; error_type calling_webhook_error, apiserver_internal_error or no_error (a denial). */
  webhookRejections: 'apiserver_admission_webhook_rejection_count',
} as const;

/** The families to ask the parser for. */
export const SIGNAL_FAMILIES: ReadonlySet<string> = new Set(Object.values(FAMILIES));

export { PROXY_GATE };

/** The counter and histogram deltas the signals need; `undefined` when the family is absent now. */
export interface WindowDeltas {
  rerouted: CounterDelta[] | undefined;
  peerProxyErrors: CounterDelta[] | undefined;
  requests: CounterDelta[] | undefined;
  requestDuration: HistogramDelta[] | undefined;
  /** `aggregator_unavailable_apiservice` now (a gauge: the state at the end of the window, not a delta). */
  apiServices?: APIServiceState[] | undefined;
  webhookRequests?: CounterDelta[] | undefined;
  webhookRejections?: CounterDelta[] | undefined;
  /** Some counter went down: the server restarted inside the window. */
  restarted: boolean;
}

export function windowDeltas(prev: ParsedMetrics, curr: ParsedMetrics): WindowDeltas {
  const counter = (name: string) => (curr.has(name) ? counterDeltas(prev.get(name), curr.get(name)) : undefined);
  const rerouted = counter(FAMILIES.rerouted);
  const peerProxyErrors = counter(FAMILIES.peerProxyErrors);
  const requests = counter(FAMILIES.requests);
  const requestDuration = curr.has(FAMILIES.requestDuration)
    ? histogramDeltas(prev.get(FAMILIES.requestDuration), curr.get(FAMILIES.requestDuration))
    : undefined;
  const webhookRequests = counter(FAMILIES.webhookRequests);
  const webhookRejections = counter(FAMILIES.webhookRejections);
  const restarted = [rerouted, peerProxyErrors, requests, requestDuration, webhookRequests, webhookRejections].some((list) => list?.some((d) => d.reset) ?? false);
  return { rerouted, peerProxyErrors, requests, requestDuration, apiServices: apiServiceStates(curr), webhookRequests, webhookRejections, restarted };
}

/** One APIService as one server's aggregator sees it. */
export interface APIServiceState {
  name: string;
  unavailable: boolean;
}

/** The unavailable-APIService gauge of one scrape; `undefined` when the family is absent (no aggregator metrics). */
export function apiServiceStates(metrics: ParsedMetrics): APIServiceState[] | undefined {
  const family = metrics.get(FAMILIES.unavailableAPIService);
  if (!family) return undefined;
  return family.samples
    .filter((s) => s.name === family.name && s.labels.name !== undefined && Number.isFinite(s.value))
    .map((s) => ({ name: s.labels.name!, unavailable: s.value > 0 }));
}

export type GateState = 'on' | 'off' | 'unknown';

/** The proxy gate as the server reports it; `unknown` when the gauge is missing (older binaries, scrape failed). */
export function proxyGateState(metrics: ParsedMetrics): GateState {
  return featureGateState(metrics, PROXY_GATE);
}

/** The CoordinatedLeaderElection gate (KEP-4355) as `kubernetes_feature_enabled` reports it (docs/version-skew.md). */
export const COORDINATED_LEADER_ELECTION = 'CoordinatedLeaderElection';

/** A feature gate as `kubernetes_feature_enabled{name}` reports it: 1 on, 0 off, no sample or another value unknown. */
export function featureGateState(metrics: ParsedMetrics, name: string): GateState {
  const family = metrics.get(FAMILIES.featureEnabled);
  const sample = family?.samples.find((s) => s.labels.name === name);
  if (!sample) return 'unknown';
  if (sample.value === 1) return 'on';
  if (sample.value === 0) return 'off';
  return 'unknown';
}

/** `process_start_time_seconds`, when the page has one finite sample of it. */
export function processStartOf(metrics: ParsedMetrics): number | undefined {
  const v = metrics.get(FAMILIES.processStart)?.samples[0]?.value;
  return v !== undefined && Number.isFinite(v) && v > 0 ? v : undefined;
}

export type SignalValue = { kind: 'value'; value: number; samples: number } | { kind: 'noData'; reason: string };

export interface Signals {
  proxyErrorRatio: SignalValue;
  errorRatio: SignalValue;
  latencyP99Seconds: SignalValue;
}

export type SignalName = keyof Signals;

const is5xx = (code: string | undefined) => code !== undefined && /^5\d\d$/.test(code);
const total = (list: CounterDelta[]) => list.reduce((acc, d) => acc + d.delta, 0);

/**
 * Failed proxied requests over all proxied requests. A failure is a rerouted request answered
 * 5xx, plus every `apiserver_peer_proxy_errors_total` increment (1.36). Whether a proxy error is
 * also counted as a rerouted 5xx is not confirmed (inferred); adding both can only overstate the
 * ratio, which errs towards pausing.
 */
export function proxyErrorRatio(w: WindowDeltas): SignalValue {
  if (!w.rerouted && !w.peerProxyErrors) return { kind: 'noData', reason: `${FAMILIES.rerouted} absent (no request was proxied since start)` };
  const rerouted = w.rerouted ?? [];
  const proxyErrors = total(w.peerProxyErrors ?? []);
  const failed = total(rerouted.filter((d) => is5xx(d.labels.code))) + proxyErrors;
  const attempts = total(rerouted) + proxyErrors;
  if (attempts <= 0) return { kind: 'noData', reason: 'no proxied requests in the window' };
  return { kind: 'value', value: failed / attempts, samples: attempts };
}

/**
 * Health probes (`/readyz`, `/livez`, `/healthz` and their checks, labelled `subresource="/readyz"` and so
 * on). A server that starts or stops answers its balancer's /readyz checks with 500 by design: the
 * v1.35.4 servers here counted 30 of them during one start-up. They say "not ready", not "failing
 * clients", and counting them made every replacement look like an error burst.
 */
export const HEALTH_PROBES: readonly string[] = ['readyz', 'livez', 'healthz'];
/** The `subresource` label of a health probe, as a regular expression body (PromQL anchors it; so does isHealthProbe). */
export const HEALTH_PROBE_SUBRESOURCE_RE = `/(${HEALTH_PROBES.join('|')})(/.*)?`;
const HEALTH_PROBE_SUBRESOURCE = new RegExp(`^${HEALTH_PROBE_SUBRESOURCE_RE}$`);

export function isHealthProbe(labels: Record<string, string>): boolean {
  return HEALTH_PROBE_SUBRESOURCE.test(labels.subresource ?? '');
}

/** 5xx responses over all requests, health probes left out. */
export function errorRatio(w: WindowDeltas): SignalValue {
  if (!w.requests) return { kind: 'noData', reason: `${FAMILIES.requests} absent` };
  const served = w.requests.filter((d) => !isHealthProbe(d.labels));
  const all = total(served);
  if (all <= 0) return { kind: 'noData', reason: 'no requests in the window' };
  return { kind: 'value', value: total(served.filter((d) => is5xx(d.labels.code))) / all, samples: all };
}

/** Requests whose duration is the length of a stream or session, not of the work. */
export const LONG_RUNNING_VERBS: ReadonlySet<string> = new Set(['WATCH', 'WATCHLIST', 'CONNECT']);
export const LONG_RUNNING_SUBRESOURCES: ReadonlySet<string> = new Set(['log', 'exec', 'attach', 'portforward', 'proxy']);

export function isLongRunning(labels: Record<string, string>): boolean {
  return LONG_RUNNING_VERBS.has(labels.verb ?? '') || LONG_RUNNING_SUBRESOURCES.has(labels.subresource ?? '');
}

/** p99 of request latency over the window, long-running requests and health probes left out. */
export function latencyP99Seconds(w: WindowDeltas): SignalValue {
  return latencyQuantile(w, 0.99);
}

export function latencyQuantile(w: WindowDeltas, q: number): SignalValue {
  if (!w.requestDuration) return { kind: 'noData', reason: `${FAMILIES.requestDuration} absent` };
  const buckets = sumBuckets(w.requestDuration.filter((h) => !isLongRunning(h.labels) && !isHealthProbe(h.labels)).map((h) => h.buckets));
  const count = buckets.at(-1)?.count ?? 0;
  if (count <= 0) return { kind: 'noData', reason: 'no short-running requests in the window' };
  return { kind: 'value', value: histogramQuantile(q, buckets), samples: count };
}

/**
 * Adds cumulative bucket lists. Lists with different layouts (servers of different versions) are
 * summed over the bounds they all share, which keeps the result correct, only coarser.
 */
export function sumBuckets(lists: HistogramBucket[][]): HistogramBucket[] {
  const nonEmpty = lists.filter((l) => l.length > 0);
  const first = nonEmpty[0];
  if (!first) return [];
  let bounds = first.map((b) => b.le);
  for (const list of nonEmpty.slice(1)) {
    const les = new Set(list.map((b) => b.le));
    bounds = bounds.filter((le) => les.has(le));
  }
  const sums = new Map(bounds.map((le) => [le, 0]));
  for (const list of nonEmpty) for (const b of list) if (sums.has(b.le)) sums.set(b.le, (sums.get(b.le) ?? 0) + b.count);
  return bounds.map((le) => ({ le, count: sums.get(le) ?? 0 }));
}

/**
 * Prometheus' histogram_quantile over cumulative buckets sorted by `le`: find the bucket holding
 * rank q·total and interpolate linearly inside it (the first bucket starts at 0). A rank in the
 * +Inf bucket answers the highest finite bound. NaN when there is nothing to rank.
 */
export function histogramQuantile(q: number, buckets: readonly HistogramBucket[]): number {
  if (Number.isNaN(q)) return NaN;
  if (q < 0) return -Infinity;
  if (q > 1) return Infinity;
  const last = buckets.at(-1);
  if (!last || last.le !== Infinity || buckets.length < 2) return NaN;
  // Make counts monotonic, as Prometheus does, so float noise cannot produce a negative width.
  const counts: number[] = [];
  for (const b of buckets) counts.push(Math.max(b.count, counts.at(-1) ?? 0));
  const totalCount = counts.at(-1) ?? 0;
  if (totalCount === 0) return NaN;
  const rank = q * totalCount;
  let i = counts.findIndex((c) => c >= rank);
  if (i === -1) i = counts.length - 1;
  const bucket = buckets[i];
  if (!bucket) return NaN;
  if (i === buckets.length - 1) return buckets[buckets.length - 2]?.le ?? NaN;
  if (i === 0 && bucket.le <= 0) return bucket.le;
  const start = i === 0 ? 0 : (buckets[i - 1]?.le ?? 0);
  const before = i === 0 ? 0 : (counts[i - 1] ?? 0);
  const inBucket = (counts[i] ?? 0) - before;
  if (inBucket === 0) return bucket.le;
  return start + (bucket.le - start) * ((rank - before) / inBucket);
}

export function computeSignals(w: WindowDeltas): Signals {
  return { proxyErrorRatio: proxyErrorRatio(w), errorRatio: errorRatio(w), latencyP99Seconds: latencyP99Seconds(w) };
}

/**
 * Pools several servers' windows. Ratios and quantiles are sums over label sets, so pooling is
 * concatenation: a family absent on every server stays absent.
 */
export function poolWindows(windows: readonly WindowDeltas[]): WindowDeltas {
  const pool = <T>(pick: (w: WindowDeltas) => T[] | undefined): T[] | undefined => {
    const present = windows.map(pick).filter((l): l is T[] => l !== undefined);
    return present.length === 0 ? undefined : present.flat();
  };
  return {
    rerouted: pool((w) => w.rerouted),
    peerProxyErrors: pool((w) => w.peerProxyErrors),
    requests: pool((w) => w.requests),
    requestDuration: pool((w) => w.requestDuration),
    webhookRequests: pool((w) => w.webhookRequests),
    webhookRejections: pool((w) => w.webhookRejections),
    restarted: windows.some((w) => w.restarted),
  };
}

export const UNKNOWN_VERSION = 'unknown';

/** Signals per version cohort; servers without a known version form the `unknown` cohort. */
export function cohortSignals(perServer: ReadonlyMap<string, WindowDeltas>, versionOf: ReadonlyMap<string, string>): Map<string, Signals> {
  const cohorts = new Map<string, WindowDeltas[]>();
  for (const [server, window] of perServer) {
    const version = versionOf.get(server) ?? UNKNOWN_VERSION;
    const list = cohorts.get(version) ?? [];
    list.push(window);
    cohorts.set(version, list);
  }
  const out = new Map<string, Signals>();
  for (const [version, windows] of [...cohorts].sort(([a], [b]) => a.localeCompare(b))) out.set(version, computeSignals(poolWindows(windows)));
  return out;
}

export interface Thresholds {
  proxyErrorRatio?: number;
  errorRatio?: number;
  latencyP99Seconds?: number;
  /** A value computed from fewer requests than this is inconclusive (default 1: any data counts). */
  minSamples?: number;
  /**
   * APIServices a server may report unavailable while another server reaches them (default 0). An APIService
   * no server reaches is an outage of its backend, not of the upgrade, and is not counted (see `apiServiceBreaches`).
   */
  unavailableAPIServices?: number;
  /** Largest share of one webhook's calls from one server (or cohort) that may fail over the window (default 0.05). */
  webhookErrorRatio?: number;
  /** A webhook with fewer calls than this in the window is not judged (default 10). */
  webhookMinCalls?: number;
}

/** The defaults of the thresholds of issue 13 (equal to the CRD's; test/api/defaults.test.ts checks). */
export const DEFAULT_UNAVAILABLE_APISERVICES = 0;
export const DEFAULT_WEBHOOK_ERROR_RATIO = 0.05;
export const DEFAULT_WEBHOOK_MIN_CALLS = 10;

export interface SignalSubject {
  scope: 'server' | 'cohort';
  /** Server identity or cohort version. */
  name: string;
  signals: Signals;
}

/** The signals judged per APIService or per webhook rather than as one number per subject. */
export type NamedSignalName = 'unavailableAPIServices' | 'webhookErrorRatio';

export interface Breach {
  signal: SignalName | NamedSignalName;
  scope: SignalSubject['scope'];
  name: string;
  value: number;
  threshold: number;
  samples: number;
  /** The APIService or webhook, for the named signals. */
  subject?: string;
  /** Says what broke, naming the server and the APIService or webhook; the generic message when absent. */
  message?: string;
}

export interface Inconclusive {
  signal: SignalName;
  scope: SignalSubject['scope'];
  name: string;
  reason: string;
}

const SIGNAL_NAMES: readonly SignalName[] = ['proxyErrorRatio', 'errorRatio', 'latencyP99Seconds'];

/** A signal breaches when its value is strictly above its threshold; unset thresholds are not evaluated. */
export function evaluateThresholds(subjects: readonly SignalSubject[], thresholds: Thresholds): { breaches: Breach[]; inconclusive: Inconclusive[] } {
  const breaches: Breach[] = [];
  const inconclusive: Inconclusive[] = [];
  const minSamples = thresholds.minSamples ?? 1;
  for (const subject of subjects) {
    for (const signal of SIGNAL_NAMES) {
      const threshold = thresholds[signal];
      if (threshold === undefined) continue;
      const where = { signal, scope: subject.scope, name: subject.name };
      const v = subject.signals[signal];
      if (v.kind === 'noData') inconclusive.push({ ...where, reason: v.reason });
      else if (v.samples < minSamples) inconclusive.push({ ...where, reason: `only ${v.samples} requests in the window (need ${minSamples})` });
      else if (Number.isNaN(v.value)) inconclusive.push({ ...where, reason: 'value is NaN' });
      else if (v.value > threshold) breaches.push({ ...where, value: v.value, threshold, samples: v.samples });
    }
  }
  return { breaches, inconclusive };
}

/**
 * An APIService is counted against a server when that server reports it unavailable while at least one
 * other server (of any version) reports it available: this server cannot reach what its peers reach,
 * the signature of a new server with another CA, TLS default, proxy or egress configuration. An
 * APIService unavailable on every server is its backend's outage (metrics-server down), not the upgrade's,
 * and pausing or rolling back would not help; it is left out, as is every APIService when only one
 * server reports the gauge (nothing to compare with). One breach per (server, APIService) when a
 * server's count is above `tolerated`. Servers without the gauge are not judged.
 */
export function apiServiceBreaches(perServer: ReadonlyMap<string, WindowDeltas>, tolerated = DEFAULT_UNAVAILABLE_APISERVICES): Breach[] {
  const reachedBy = new Map<string, string[]>();
  for (const [server, w] of perServer) {
    for (const a of w.apiServices ?? []) if (!a.unavailable) reachedBy.set(a.name, [...(reachedBy.get(a.name) ?? []), server]);
  }
  const breaches: Breach[] = [];
  for (const [server, w] of [...perServer].sort(([a], [b]) => a.localeCompare(b))) {
    const unreachable = [...new Set((w.apiServices ?? []).filter((a) => a.unavailable).map((a) => a.name))]
      .filter((name) => (reachedBy.get(name) ?? []).some((other) => other !== server))
      .sort();
    if (unreachable.length <= tolerated) continue;
    for (const name of unreachable) {
      const others = (reachedBy.get(name) ?? []).filter((o) => o !== server).sort();
      breaches.push({
        signal: 'unavailableAPIServices',
        scope: 'server',
        name: server,
        subject: name,
        value: unreachable.length,
        threshold: tolerated,
        samples: 1,
        message: `APIService ${name} is unavailable on ${server} but available on ${others.join(', ')} (${unreachable.length} such APIService${unreachable.length === 1 ? '' : 's'} on ${server}, ${tolerated} tolerated)`,
      });
    }
  }
  return breaches;
}

/** Calls to one webhook over the window, and how many of them failed. */
export interface WebhookCalls {
  calls: number;
  failed: number;
}

const httpClass = (code: string | undefined): number | undefined => {
  if (code === undefined || !/^\d+$/.test(code)) return undefined;
  return Math.floor(Number(code) / 100);
};

/**
 * Whether a `apiserver_admission_webhook_request_total` series counts failed calls: code 0 (apiserver-internal
 * error), 5xx (unreachable, TLS, timeout: kube-apiserver reports these as 500/503/504), anything but 2xx on a
 * call that was not rejected (a failure that failurePolicy Ignore let through, "fail open"). A 4xx on a
 * rejected call is the webhook's answer "no" — a denial, not a failure — or a calling error that
 * answered 4xx, which only `apiserver_admission_webhook_rejection_count{error_type="calling_webhook_error"}`
 * tells apart (see `isFailedWebhookRejection`).
 */
export function isFailedWebhookCall(labels: Record<string, string>): boolean {
  const cls = httpClass(labels.code);
  if (cls === undefined) return false;
  if (cls === 2) return false;
  if (cls === 4 && labels.rejected === 'true') return false;
  return true;
}

/** A calling error answered 4xx (a webhook path or authentication that no longer works): counted here, not by its request series. */
export function isFailedWebhookRejection(labels: Record<string, string>): boolean {
  return labels.error_type === 'calling_webhook_error' && httpClass(labels.rejection_code) === 4;
}

/** Calls and failed calls per webhook name; `undefined` when the request family is absent (no webhook was ever called). */
export function webhookCalls(w: WindowDeltas): Map<string, WebhookCalls> | undefined {
  if (!w.webhookRequests) return undefined;
  const out = new Map<string, WebhookCalls>();
  const entry = (name: string) => {
    let e = out.get(name);
    if (!e) out.set(name, (e = { calls: 0, failed: 0 }));
    return e;
  };
  for (const d of w.webhookRequests) {
    const name = d.labels.name;
    if (name === undefined) continue;
    const e = entry(name);
    e.calls += d.delta;
    if (isFailedWebhookCall(d.labels)) e.failed += d.delta;
  }
  for (const d of w.webhookRejections ?? []) {
    const name = d.labels.name;
    if (name !== undefined && isFailedWebhookRejection(d.labels)) entry(name).failed += d.delta;
  }
  // Two scrapes are not atomic across families: never more failures than calls.
  for (const e of out.values()) e.failed = Math.min(e.failed, e.calls);
  return out;
}

/**
 * A webhook breaches on a server (or a cohort, its servers' calls pooled) when more than `ratio` of its
 * calls failed over the window, judged only from `minCalls` calls up. Cohorts catch a webhook failing from
 * every new server at a rate too low on each to reach `minCalls`.
 */
export function webhookBreaches(subjects: readonly { scope: SignalSubject['scope']; name: string; window: WindowDeltas }[], ratio = DEFAULT_WEBHOOK_ERROR_RATIO, minCalls = DEFAULT_WEBHOOK_MIN_CALLS): Breach[] {
  const breaches: Breach[] = [];
  for (const subject of subjects) {
    const calls = webhookCalls(subject.window);
    if (!calls) continue;
    for (const [webhook, c] of [...calls].sort(([a], [b]) => a.localeCompare(b))) {
      if (c.calls <= 0 || c.calls < minCalls) continue;
      const value = c.failed / c.calls;
      if (!(value > ratio)) continue;
      const where = subject.scope === 'server' ? `from ${subject.name}` : `from the ${subject.name} servers`;
      breaches.push({
        signal: 'webhookErrorRatio',
        scope: subject.scope,
        name: subject.name,
        subject: webhook,
        value,
        threshold: ratio,
        samples: c.calls,
        message: `webhook ${webhook}: ${Math.round(c.failed)} of ${Math.round(c.calls)} calls ${where} failed (${Math.round(value * 1e4) / 1e4} > ${ratio})`,
      });
    }
  }
  return breaches;
}

/** Groups servers by version, as `cohortSignals` does, and pools each cohort's windows. */
export function cohortWindows(perServer: ReadonlyMap<string, WindowDeltas>, versionOf: ReadonlyMap<string, string>): Map<string, WindowDeltas> {
  const cohorts = new Map<string, WindowDeltas[]>();
  for (const [server, window] of perServer) {
    const version = versionOf.get(server) ?? UNKNOWN_VERSION;
    cohorts.set(version, [...(cohorts.get(version) ?? []), window]);
  }
  return new Map([...cohorts].sort(([a], [b]) => a.localeCompare(b)).map(([v, ws]) => [v, poolWindows(ws)]));
}
