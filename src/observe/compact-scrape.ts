/**
 * What the analysis keeps of one server's `/metrics` scrape between two analysis windows: per series of the
 * families the signals read, its numbers only (counter values; a histogram's count, sum and bucket counts in
 * a `Float64Array`), plus the unavailable-APIService gauge. No parsed page, no sample objects.
 *
 * Per series, not summed per projected label set: the deltas difference each series on its own (a series
 * that went down is a restart and counts its current value), and sums cannot reproduce that when only some
 * series reset. Label sets and bucket layouts are the same on every server of a fleet, so they are shared
 * through a `SeriesPool`: each server keeps an array of references and its numbers. `compactWindowDeltas`
 * gives exactly what `windowDeltas` gives for the two full pages (test/observe/compact-scrape.test.ts
 * checks both on the captured pages).
 */
import { counterSamples } from './deltas.ts';
import type { CounterDelta, HistogramDelta } from './deltas.ts';
import { histograms, labelKey } from './prom-text.ts';
import type { Labels, ParsedMetrics } from './prom-text.ts';
import { apiServiceStates, FAMILIES, type APIServiceState, type WindowDeltas } from './signals.ts';

/** One label set, shared by every server that has it. Never mutated. */
export interface SeriesRef {
  readonly key: string;
  readonly labels: Labels;
}

/** A counter family of one scrape: one value per sample the deltas read, in page order. */
export interface CompactCounter {
  readonly series: readonly SeriesRef[];
  readonly values: Float64Array;
}

/** A histogram family of one scrape, one entry per series in `histograms()` order. */
export interface CompactHistogram {
  readonly series: readonly SeriesRef[];
  /** The series' bucket bounds, sorted (shared: one array per layout). */
  readonly les: readonly (readonly number[])[];
  /** [count, sum, bucket counts in `les` order...] per series. */
  readonly numbers: readonly Float64Array[];
}

const COUNTERS = ['rerouted', 'peerProxyErrors', 'requests', 'webhookRequests', 'webhookRejections'] as const;
type CounterName = (typeof COUNTERS)[number];

export interface CompactScrape {
  /** Absent: the family was absent from the page. */
  readonly counters: Readonly<Partial<Record<CounterName, CompactCounter>>>;
  readonly requestDuration?: CompactHistogram;
  readonly apiServices: APIServiceState[] | undefined;
  /** The page's histogram could not be grouped (a bucket without a valid `le`): `windowDeltas` would have thrown this. */
  readonly invalid?: Error;
}

/**
 * Interns label sets and bucket layouts across servers. `rotate()` after each analysis keeps only what the
 * last one used, so a label set that disappeared from every server is not held forever.
 */
export class SeriesPool {
  private previous = new Map<string, SeriesRef>();
  private current = new Map<string, SeriesRef>();
  private previousLayouts = new Map<string, readonly number[]>();
  private currentLayouts = new Map<string, readonly number[]>();

  series(labels: Labels): SeriesRef {
    const key = labelKey(labels);
    let ref = this.current.get(key) ?? this.previous.get(key);
    if (!ref) ref = Object.freeze({ key, labels: Object.freeze({ ...labels }) });
    this.current.set(key, ref);
    return ref;
  }

  layout(les: readonly number[]): readonly number[] {
    const key = les.join(',');
    let layout = this.currentLayouts.get(key) ?? this.previousLayouts.get(key);
    if (!layout) layout = Object.freeze([...les]);
    this.currentLayouts.set(key, layout);
    return layout;
  }

  rotate(): void {
    this.previous = this.current;
    this.current = new Map();
    this.previousLayouts = this.currentLayouts;
    this.currentLayouts = new Map();
  }

  get size(): number {
    return this.current.size;
  }
}

/** The compact form of a page parsed for `SIGNAL_FAMILIES`; the page can be dropped afterwards. */
export function compactScrape(page: ParsedMetrics, pool: SeriesPool = new SeriesPool()): CompactScrape {
  const counters: Partial<Record<CounterName, CompactCounter>> = {};
  for (const name of COUNTERS) {
    const family = page.get(FAMILIES[name]);
    if (!family) continue;
    const samples = counterSamples(family);
    counters[name] = { series: samples.map((s) => pool.series(s.labels)), values: Float64Array.from(samples, (s) => s.value) };
  }
  const apiServices = apiServiceStates(page);
  const family = page.get(FAMILIES.requestDuration);
  if (!family) return { counters, apiServices };
  let series;
  try {
    series = histograms(family);
  } catch (err) {
    return { counters, apiServices, invalid: err instanceof Error ? err : new Error(String(err)) };
  }
  const requestDuration: CompactHistogram = {
    series: series.map((h) => pool.series(h.labels)),
    les: series.map((h) => pool.layout(h.buckets.map((b) => b.le))),
    numbers: series.map((h) => Float64Array.from([h.count, h.sum, ...h.buckets.map((b) => b.count)])),
  };
  return { counters, requestDuration, apiServices };
}

/** `counterDeltas` over compact families. */
function counterDeltas(prev: CompactCounter | undefined, curr: CompactCounter): CounterDelta[] {
  const before = new Map<string, number>();
  if (prev) prev.series.forEach((s, i) => before.set(s.key, prev.values[i]!));
  return curr.series.map((s, i) => {
    const value = curr.values[i]!;
    const old = before.get(s.key);
    if (old === undefined) return { labels: s.labels, delta: value, reset: false };
    if (value < old) return { labels: s.labels, delta: value, reset: true };
    return { labels: s.labels, delta: value - old, reset: false };
  });
}

/** `histogramDeltas` over compact families. */
function histogramDeltas(prev: CompactHistogram | undefined, curr: CompactHistogram): HistogramDelta[] {
  const before = new Map<string, number>();
  if (prev) prev.series.forEach((s, i) => before.set(s.key, i));
  return curr.series.map((s, i) => {
    const les = curr.les[i]!;
    const now = curr.numbers[i]!;
    const fresh = { labels: s.labels, buckets: les.map((le, b) => ({ le, count: now[b + 2]! })), sum: now[1]!, count: now[0]! };
    const j = before.get(s.key);
    if (j === undefined) return { ...fresh, reset: false };
    const oldLes = prev!.les[j]!;
    const old = prev!.numbers[j]!;
    const oldByLe = new Map(oldLes.map((le, b) => [le, old[b + 2]!]));
    const shared = fresh.buckets.filter((b) => oldByLe.has(b.le));
    const wentDown = now[0]! < old[0]! || shared.some((b) => b.count < (oldByLe.get(b.le) ?? 0));
    if (wentDown) return { ...fresh, reset: true };
    return {
      labels: s.labels,
      buckets: shared.map((b) => ({ le: b.le, count: b.count - (oldByLe.get(b.le) ?? 0) })),
      sum: now[1]! - old[1]!,
      count: now[0]! - old[0]!,
      reset: false,
    };
  });
}

/** The same as `windowDeltas(prevPage, currPage)`, from the two pages' compact forms. */
export function compactWindowDeltas(prev: CompactScrape, curr: CompactScrape): WindowDeltas {
  // In the order `windowDeltas` would meet them: the previous page's histogram first.
  if (prev.invalid && (curr.requestDuration || curr.invalid)) throw prev.invalid;
  if (curr.invalid) throw curr.invalid;
  const counter = (name: CounterName) => {
    const now = curr.counters[name];
    return now ? counterDeltas(prev.counters[name], now) : undefined;
  };
  const rerouted = counter('rerouted');
  const peerProxyErrors = counter('peerProxyErrors');
  const requests = counter('requests');
  const requestDuration = curr.requestDuration ? histogramDeltas(prev.requestDuration, curr.requestDuration) : undefined;
  const webhookRequests = counter('webhookRequests');
  const webhookRejections = counter('webhookRejections');
  const restarted = [rerouted, peerProxyErrors, requests, requestDuration, webhookRequests, webhookRejections].some((list) => list?.some((d) => d.reset) ?? false);
  return { rerouted, peerProxyErrors, requests, requestDuration, apiServices: curr.apiServices, webhookRequests, webhookRejections, restarted };
}
