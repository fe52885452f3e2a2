/**
 * Differences between two scrapes of one server, per label set.
 *
 * Counters only grow while a process lives, so a decrease means the server restarted between the
 * scrapes: the increase since the restart is the new value itself (the counter started from 0),
 * and the delta is flagged `reset` so callers can tell a quiet window from a restarted one.
 *
 * A series present now but absent before is new: apiserver creates a labelled series on its first
 * increment, so its whole value happened in the window. A series that vanished contributes
 * nothing. Whether there *was* a previous scrape at all is the caller's business: with no
 * previous scrape there is no window and no delta to compute.
 */
import { histograms, labelKey } from './prom-text.ts';
import type { HistogramBucket, Labels, MetricFamily } from './prom-text.ts';

export interface CounterDelta {
  labels: Labels;
  delta: number;
  reset: boolean;
}

export interface HistogramDelta {
  /** Labels without `le`. */
  labels: Labels;
  /** Cumulative bucket deltas, sorted by `le`. */
  buckets: HistogramBucket[];
  sum: number;
  count: number;
  reset: boolean;
}

/**
 * Per-label-set deltas of a counter family. Only samples named like the family (or its `_total`,
 * for OpenMetrics pages) count; `_created` samples are timestamps, not counts.
 */
export function counterDeltas(prev: MetricFamily | undefined, curr: MetricFamily | undefined): CounterDelta[] {
  if (!curr) return [];
  const before = new Map<string, number>();
  if (prev) for (const s of counterSamples(prev)) before.set(labelKey(s.labels), s.value);
  const out: CounterDelta[] = [];
  for (const s of counterSamples(curr)) {
    const old = before.get(labelKey(s.labels));
    if (old === undefined) out.push({ labels: s.labels, delta: s.value, reset: false });
    else if (s.value < old) out.push({ labels: s.labels, delta: s.value, reset: true });
    else out.push({ labels: s.labels, delta: s.value - old, reset: false });
  }
  return out;
}

/** The samples of a counter family that count (shared with compact-scrape.ts, which keeps the same ones). */
export function counterSamples(family: MetricFamily) {
  return family.samples.filter((s) => s.name === family.name || s.name === `${family.name}_total`);
}

/**
 * Per-label-set deltas of a histogram family. A series resets as a whole when its count or any
 * bucket went down; its delta is then its current state. When the bucket layout changed between
 * scrapes (a different binary), only the bounds present in both are differenced.
 */
export function histogramDeltas(prev: MetricFamily | undefined, curr: MetricFamily | undefined): HistogramDelta[] {
  if (!curr) return [];
  const before = new Map<string, ReturnType<typeof histograms>[number]>();
  if (prev) for (const h of histograms(prev)) before.set(labelKey(h.labels), h);
  const out: HistogramDelta[] = [];
  for (const now of histograms(curr)) {
    const old = before.get(labelKey(now.labels));
    const fresh = { labels: now.labels, buckets: now.buckets.map((b) => ({ ...b })), sum: now.sum, count: now.count };
    if (!old) {
      out.push({ ...fresh, reset: false });
      continue;
    }
    const oldByLe = new Map(old.buckets.map((b) => [b.le, b.count]));
    const shared = now.buckets.filter((b) => oldByLe.has(b.le));
    const wentDown = now.count < old.count || shared.some((b) => b.count < (oldByLe.get(b.le) ?? 0));
    if (wentDown) {
      out.push({ ...fresh, reset: true });
      continue;
    }
    out.push({
      labels: now.labels,
      buckets: shared.map((b) => ({ le: b.le, count: b.count - (oldByLe.get(b.le) ?? 0) })),
      sum: now.sum - old.sum,
      count: now.count - old.count,
      reset: false,
    });
  }
  return out;
}
