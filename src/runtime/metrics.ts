import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { InformerOptions } from './informer.ts';
import type { WorkQueueHooks } from './workqueue.ts';

/**
 * The runtime's own Prometheus metrics, and the hooks that feed them: pass `informerHooks(name)`
 * into an Informer, `queueHooks` into the WorkQueue, call `setLeader` from the elector's callbacks.
 */
export class RuntimeMetrics {
  readonly watchRestarts: Counter<'informer' | 'reason'>;
  readonly queueDepth: Gauge;
  readonly queueAdds: Counter;
  readonly reconcileErrors: Counter;
  readonly reconcileDuration: Histogram<'result'>;
  readonly leader: Gauge;

  constructor(registry: Registry, prefix = 'apiserver_upgrade_operator_') {
    const registers = [registry];
    this.watchRestarts = new Counter({ name: `${prefix}watch_restarts_total`, help: 'Watch restarts and relists of the informers, by reason.', labelNames: ['informer', 'reason'], registers });
    this.queueDepth = new Gauge({ name: `${prefix}workqueue_depth`, help: 'Keys waiting to be reconciled.', registers });
    this.queueAdds = new Counter({ name: `${prefix}workqueue_adds_total`, help: 'Keys added to the work queue.', registers });
    this.reconcileErrors = new Counter({ name: `${prefix}reconcile_errors_total`, help: 'Reconciles that failed and were requeued with backoff.', registers });
    this.reconcileDuration = new Histogram({ name: `${prefix}reconcile_duration_seconds`, help: 'Reconcile duration.', labelNames: ['result'], buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60], registers });
    this.leader = new Gauge({ name: `${prefix}leader`, help: '1 while this process leads.', registers });
  }

  informerHooks(informer: string): Pick<InformerOptions, 'onRestart'> {
    return { onRestart: (reason) => this.watchRestarts.inc({ informer, reason }) };
  }

  get queueHooks(): WorkQueueHooks {
    return {
      onAdd: () => this.queueAdds.inc(),
      onDepth: (d) => this.queueDepth.set(d),
      onError: () => this.reconcileErrors.inc(),
      onProcessed: (_k, ms, ok) => this.reconcileDuration.observe({ result: ok ? 'success' : 'error' }, ms / 1000),
    };
  }

  setLeader(leading: boolean): void {
    this.leader.set(leading ? 1 : 0);
  }
}
