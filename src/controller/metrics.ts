import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ApiServerUpgrade, UpgradePhase } from '../api/types.generated.ts';

const PHASES: UpgradePhase[] = ['Pending', 'Preflight', 'EnablingProxy', 'Upgrading', 'Paused', 'RollingBack', 'Succeeded', 'RolledBack', 'Failed'];

/** The operator's own metrics; the alert rules in charts/ page on `apiserver_upgrade_paused`. */
export class OperatorMetrics {
  readonly registry = new Registry();
  readonly phase = new Gauge({ name: 'apiserver_upgrade_phase', help: 'Current phase of each upgrade (1 for the current phase).', labelNames: ['upgrade', 'phase'], registers: [this.registry] });
  readonly paused = new Gauge({ name: 'apiserver_upgrade_paused', help: '1 while an upgrade is paused, with the reason.', labelNames: ['upgrade', 'reason'], registers: [this.registry] });
  readonly batchCurrent = new Gauge({ name: 'apiserver_upgrade_batch_current', help: 'Batch being replaced.', labelNames: ['upgrade'], registers: [this.registry] });
  readonly batchTotal = new Gauge({ name: 'apiserver_upgrade_batch_total', help: 'Batches in the plan.', labelNames: ['upgrade'], registers: [this.registry] });
  readonly serverVersion = new Gauge({ name: 'apiserver_upgrade_server_info', help: 'One series per server with its observed version and proxy gate.', labelNames: ['upgrade', 'server', 'version', 'proxy_gate', 'ready'], registers: [this.registry] });
  readonly signal = new Gauge({ name: 'apiserver_upgrade_signal', help: 'Last analysed signal values (ratios, seconds).', labelNames: ['upgrade', 'signal'], registers: [this.registry] });
  readonly consecutiveBreaches = new Gauge({ name: 'apiserver_upgrade_consecutive_breaches', help: 'Consecutive breaching analysis checks.', labelNames: ['upgrade'], registers: [this.registry] });
  readonly reconcileErrors = new Counter({ name: 'apiserver_upgrade_reconcile_errors_total', help: 'Reconciles that failed and were requeued with backoff.', labelNames: ['reason'], registers: [this.registry] });
  readonly reconcileDuration = new Histogram({ name: 'apiserver_upgrade_reconcile_duration_seconds', help: 'Reconcile duration.', labelNames: ['result'], buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [this.registry] });
  readonly driverCalls = new Counter({ name: 'apiserver_upgrade_driver_calls_total', help: 'Driver calls by action and outcome.', labelNames: ['action', 'outcome'], registers: [this.registry] });
  readonly watchRestarts = new Counter({ name: 'apiserver_upgrade_watch_restarts_total', help: 'Informer watch restarts by resource and reason.', labelNames: ['resource', 'reason'], registers: [this.registry] });
  readonly isLeader = new Gauge({ name: 'apiserver_upgrade_operator_leader', help: '1 while this replica holds the leader Lease.', registers: [this.registry] });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'apiserver_upgrade_operator_' });
  }

  /** Mirrors one upgrade's status into the gauges. */
  observe(u: ApiServerUpgrade): void {
    const name = u.metadata?.name ?? '';
    const s = u.status ?? {};
    for (const p of PHASES) this.phase.set({ upgrade: name, phase: p }, s.phase === p ? 1 : 0);
    this.paused.reset();
    if (s.phase === 'Paused') this.paused.set({ upgrade: name, reason: s.pause?.reason ?? 'Unknown' }, 1);
    this.batchCurrent.set({ upgrade: name }, s.batch?.current ?? 0);
    this.batchTotal.set({ upgrade: name }, s.batch?.total ?? 0);
    this.serverVersion.reset();
    for (const p of s.peers ?? []) {
      this.serverVersion.set({ upgrade: name, server: p.hostname, version: p.version ?? 'unknown', proxy_gate: p.proxyGate ?? 'Unknown', ready: String(p.ready === true) }, 1);
    }
    const sig = s.lastAnalysis?.signals ?? {};
    for (const [k, v] of Object.entries(sig)) if (typeof v === 'number') this.signal.set({ upgrade: name, signal: k }, v);
    this.consecutiveBreaches.set({ upgrade: name }, s.lastAnalysis?.consecutiveBreaches ?? 0);
  }

  forget(name: string): void {
    for (const p of PHASES) this.phase.remove({ upgrade: name, phase: p });
    for (const g of [this.batchCurrent, this.batchTotal, this.consecutiveBreaches]) g.remove({ upgrade: name });
    // Series with more labels than the name cannot be removed by name alone; they are rebuilt on the next observe().
    for (const g of [this.paused, this.serverVersion, this.signal]) g.reset();
  }
}
