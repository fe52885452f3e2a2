import { Counter, Gauge, type Registry } from 'prom-client';
import type { ApiServerUpgrade } from '../api/types.generated.ts';
import { PHASES } from '../api/vocabulary.ts';

type Labels = Record<string, string>;

/**
 * What the upgrades look like, as metrics (the runtime's own — watches, queue, leader — are in
 * src/runtime/metrics.ts). The alert rules in charts/ page on `apiserver_upgrade_paused`.
 */
export class OperatorMetrics {
  readonly phase: Gauge<'upgrade' | 'phase'>;
  readonly paused: Gauge<'upgrade' | 'reason'>;
  readonly batchCurrent: Gauge<'upgrade'>;
  readonly batchTotal: Gauge<'upgrade'>;
  readonly serverVersion: Gauge<'upgrade' | 'server' | 'version' | 'proxy_gate' | 'ready'>;
  readonly signal: Gauge<'upgrade' | 'signal'>;
  readonly consecutiveBreaches: Gauge<'upgrade'>;
  readonly driverCalls: Counter<'action' | 'outcome'>;
  readonly waitingSince: Gauge<'upgrade' | 'reason'>;
  readonly windowNextStart: Gauge<'upgrade'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.phase = new Gauge({ name: 'apiserver_upgrade_phase', help: 'Current phase of each upgrade (1 for the current phase).', labelNames: ['upgrade', 'phase'], registers });
    this.paused = new Gauge({ name: 'apiserver_upgrade_paused', help: '1 while an upgrade is paused, with the reason.', labelNames: ['upgrade', 'reason'], registers });
    this.batchCurrent = new Gauge({ name: 'apiserver_upgrade_batch_current', help: 'Batch being replaced.', labelNames: ['upgrade'], registers });
    this.batchTotal = new Gauge({ name: 'apiserver_upgrade_batch_total', help: 'Batches in the plan.', labelNames: ['upgrade'], registers });
    this.serverVersion = new Gauge({ name: 'apiserver_upgrade_server_info', help: 'One series per server with its observed version and proxy gate.', labelNames: ['upgrade', 'server', 'version', 'proxy_gate', 'ready'], registers });
    this.signal = new Gauge({ name: 'apiserver_upgrade_signal', help: 'Last analysed signal values (ratios, seconds).', labelNames: ['upgrade', 'signal'], registers });
    this.consecutiveBreaches = new Gauge({ name: 'apiserver_upgrade_consecutive_breaches', help: 'Consecutive breaching analysis checks.', labelNames: ['upgrade'], registers });
    this.waitingSince = new Gauge({ name: 'apiserver_upgrade_waiting_since_timestamp_seconds', help: 'While an upgrade waits before its next step without pausing (status.waiting): since when, by reason (GateNotHeld, GateUnknown, OutsideWindow, AwaitingApproval, or the preflight reason).', labelNames: ['upgrade', 'reason'], registers });
    this.windowNextStart = new Gauge({ name: 'apiserver_upgrade_window_next_start_timestamp_seconds', help: 'When the next maintenance window of the upgrade opens (status.window.nextStart); absent without a window or none within 60 days.', labelNames: ['upgrade'], registers });
    this.driverCalls = new Counter({ name: 'apiserver_upgrade_driver_calls_total', help: 'Driver calls by action and outcome.', labelNames: ['action', 'outcome'], registers });
  }

  /** Mirrors one upgrade's status into the gauges. */
  /**
   * Series whose labels carry more than the upgrade's name (reason, server, version), per upgrade, so that
   * one upgrade's stale series can be removed without wiping another's.
   */
  private readonly detailSeries = new Map<string, { paused: Labels[]; servers: Labels[]; signals: Labels[]; waiting: Labels[]; window: Labels[] }>();

  observe(u: ApiServerUpgrade): void {
    const name = u.metadata?.name ?? '';
    const s = u.status ?? {};
    this.removeDetail(name);
    const detail = { paused: [] as Labels[], servers: [] as Labels[], signals: [] as Labels[], waiting: [] as Labels[], window: [] as Labels[] };
    for (const p of PHASES) this.phase.set({ upgrade: name, phase: p }, s.phase === p ? 1 : 0);
    if (s.phase === 'Paused') detail.paused.push({ upgrade: name, reason: s.pause?.reason ?? 'Unknown' });
    for (const l of detail.paused) this.paused.set(l, 1);
    const since = s.waiting?.since === undefined ? Number.NaN : Date.parse(s.waiting.since);
    if (s.waiting && Number.isFinite(since)) {
      const l = { upgrade: name, reason: s.waiting.reason };
      detail.waiting.push(l);
      this.waitingSince.set(l, since / 1000);
    }
    const next = s.window?.nextStart === undefined ? Number.NaN : Date.parse(s.window.nextStart);
    if (Number.isFinite(next)) {
      detail.window.push({ upgrade: name });
      this.windowNextStart.set({ upgrade: name }, next / 1000);
    }
    this.batchCurrent.set({ upgrade: name }, s.batch?.current ?? 0);
    this.batchTotal.set({ upgrade: name }, s.batch?.total ?? 0);
    for (const p of s.peers ?? []) {
      const l = { upgrade: name, server: p.hostname, version: p.version ?? 'unknown', proxy_gate: p.proxyGate ?? 'Unknown', ready: String(p.ready === true) };
      detail.servers.push(l);
      this.serverVersion.set(l, 1);
    }
    for (const [k, v] of Object.entries(s.lastAnalysis?.signals ?? {})) {
      if (typeof v !== 'number') continue;
      const l = { upgrade: name, signal: k };
      detail.signals.push(l);
      this.signal.set(l, v);
    }
    this.detailSeries.set(name, detail);
    this.consecutiveBreaches.set({ upgrade: name }, s.lastAnalysis?.consecutiveBreaches ?? 0);
  }

  forget(name: string): void {
    for (const p of PHASES) this.phase.remove({ upgrade: name, phase: p });
    for (const g of [this.batchCurrent, this.batchTotal, this.consecutiveBreaches]) g.remove({ upgrade: name });
    this.removeDetail(name);
  }

  private removeDetail(name: string): void {
    const d = this.detailSeries.get(name);
    if (!d) return;
    for (const l of d.paused) this.paused.remove(l);
    for (const l of d.servers) this.serverVersion.remove(l);
    for (const l of d.signals) this.signal.remove(l);
    for (const l of d.waiting) this.waitingSince.remove(l);
    for (const l of d.window) this.windowNextStart.remove(l);
    this.detailSeries.delete(name);
  }
}
