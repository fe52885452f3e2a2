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
  const restarted = [rerouted, peerProxyErrors, requests, requestDuration].some((list) => list?.some((d) => d.reset) ?? false);
  return { rerouted, peerProxyErrors, requests, requestDuration, restarted };
}

export type GateState = 'on' | 'off' | 'unknown';

/** The proxy gate as the server reports it; `unknown` when the gauge is missing (older binaries, scrape failed). */
export function proxyGateState(metrics: ParsedMetrics): GateState {
  const family = metrics.get(FAMILIES.featureEnabled);
  const sample = family?.samples.find((s) => s.labels.name === PROXY_GATE);
  if (!sample) return 'unknown';
  if (sample.value === 1) return 'on';
  if (sample.value === 0) return 'off';
  return 'unknown';
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
}

export interface SignalSubject {
  scope: 'server' | 'cohort';
  /** Server identity or cohort version. */
  name: string;
  signals: Signals;
}

export interface Breach {
  signal: SignalName;
  scope: SignalSubject['scope'];
  name: string;
  value: number;
  threshold: number;
  samples: number;
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
