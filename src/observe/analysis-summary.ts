import type { ObservedAnalysis } from '../plan/observation.ts';
import type { Breach as StatusBreach } from '../api/types.generated.ts';
import { cohortSignals, computeSignals, evaluateThresholds, poolWindows, type SignalSubject, type SignalValue, type Thresholds, type WindowDeltas } from './signals.ts';

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
  const { breaches } = evaluateThresholds(subjects, thresholds);
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
  const statusBreaches: StatusBreach[] = breaches.map((b) => ({
    signal: b.signal,
    observed: String(round(b.value)),
    threshold: String(b.threshold),
    server: b.scope === 'server' ? b.name : `cohort ${b.name}`,
    // Prometheus' increase() extrapolates, so its counts are fractional; a request count reads as a whole number.
    message: `${b.signal} ${round(b.value)} > ${b.threshold} over ${Math.round(b.samples)} requests`,
  }));
  const anyValue = subjects.some((sub) => Object.values(sub.signals).some((v: SignalValue) => v.kind === 'value'));
  const verdict = breaches.length > 0 ? 'Breach' : anyValue ? 'Healthy' : 'Inconclusive';
  return { time: new Date(now).toISOString(), verdict, signals, breaches: statusBreaches };
}

