import type { ObservedAnalysis } from '../plan/observation.ts';
import type { Breach as StatusBreach } from '../api/types.generated.ts';
import {
  apiServiceBreaches,
  cohortSignals,
  cohortWindows,
  computeSignals,
  DEFAULT_UNAVAILABLE_APISERVICES,
  DEFAULT_WEBHOOK_ERROR_RATIO,
  DEFAULT_WEBHOOK_MIN_CALLS,
  evaluateThresholds,
  poolWindows,
  webhookBreaches,
  type Breach,
  type SignalSubject,
  type SignalValue,
  type Thresholds,
  type WindowDeltas,
} from './signals.ts';

/** `status.lastAnalysis.breaches` holds at most this many (the CRD's maxItems). */
export const MAX_STATUS_BREACHES = 64;

function round(v: number): number {
  return Math.round(v * 1e6) / 1e6;
}

/** Fleet facts of the check that are not computed from metrics windows. */
export interface FleetFacts {
  /** Identity Leases judged stale by the inventory (unchanged for the staleness window on the operator's clock). */
  stalePeers?: number;
}

/**
 * Per-server and per-cohort signals, thresholds and verdict, in the status shape (what FleetObserver computes
 * for Direct). `facts.stalePeers` is reported as a signal of its own; no threshold reads it (the planner
 * already treats a stale server as not up).
 */
export function summarizeAnalysis(windows: ReadonlyMap<string, WindowDeltas>, versionOf: ReadonlyMap<string, string>, thresholds: Thresholds, now: number, facts: FleetFacts = {}): ObservedAnalysis {
  const subjects: SignalSubject[] = [...windows].map(([name, w]) => ({ scope: 'server', name, signals: computeSignals(w) }));
  for (const [version, signals] of cohortSignals(windows, versionOf)) subjects.push({ scope: 'cohort', name: version, signals });
  const breaches: Breach[] = evaluateThresholds(subjects, thresholds).breaches;
  // The thresholds of issue 13 apply at their defaults when the caller passes none.
  breaches.push(...apiServiceBreaches(windows, thresholds.unavailableAPIServices ?? DEFAULT_UNAVAILABLE_APISERVICES));
  const webhookSubjects = [
    ...[...windows].map(([name, window]) => ({ scope: 'server' as const, name, window })),
    ...[...cohortWindows(windows, versionOf)].map(([name, window]) => ({ scope: 'cohort' as const, name, window })),
  ];
  breaches.push(...webhookBreaches(webhookSubjects, thresholds.webhookErrorRatio ?? DEFAULT_WEBHOOK_ERROR_RATIO, thresholds.webhookMinCalls ?? DEFAULT_WEBHOOK_MIN_CALLS));
  const fleet = computeSignals(poolWindows([...windows.values()]));
  const val = (v: SignalValue): number | undefined => (v.kind === 'value' && !Number.isNaN(v.value) ? round(v.value) : undefined);
  const signals: ObservedAnalysis['signals'] = {};
  const p = val(fleet.proxyErrorRatio);
  const e = val(fleet.errorRatio);
  const l = val(fleet.latencyP99Seconds);
  if (p !== undefined) signals.proxyErrorRatio = p;
  if (e !== undefined) signals.errorRatio = e;
  if (l !== undefined) signals.latencyP99Seconds = l;
  if (facts.stalePeers !== undefined) signals.stalePeers = facts.stalePeers;
  let statusBreaches: StatusBreach[] = breaches.map((b) => ({
    signal: b.signal,
    observed: String(round(b.value)),
    threshold: String(b.threshold),
    server: b.scope === 'server' ? b.name : `cohort ${b.name}`,
    // Prometheus' increase() extrapolates, so its counts are fractional; a request count reads as a whole number.
    message: b.message ?? `${b.signal} ${round(b.value)} > ${b.threshold} over ${Math.round(b.samples)} requests`,
  }));
  if (statusBreaches.length > MAX_STATUS_BREACHES) {
    const left = statusBreaches.length - (MAX_STATUS_BREACHES - 1);
    statusBreaches = [...statusBreaches.slice(0, MAX_STATUS_BREACHES - 1), { signal: 'moreBreaches', observed: String(left), message: `${left} more breaches not listed` }];
  }
  // The named signals only ever add breaches: without traffic a check stays Inconclusive.
  const anyValue = subjects.some((sub) => Object.values(sub.signals).some((v: SignalValue) => v.kind === 'value'));
  const verdict = breaches.length > 0 ? 'Breach' : anyValue ? 'Healthy' : 'Inconclusive';
  return { time: new Date(now).toISOString(), verdict, signals, breaches: statusBreaches };
}

