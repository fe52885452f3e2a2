import type { Cluster } from '../cluster/index.ts';

export interface Sample {
  at: number;
  status: number | 'error';
  error?: string;
}

/**
 * A client that keeps asking the balancer for one resource and records every answer. Each request opens
 * a new connection, so haproxy's round robin spreads them over every server — old ones included — like
 * many clients would (one keep-alive connection would stick to one server). Bounded: it stops by itself
 * after `maxMs` (or on stop()).
 */
export class TrafficRecorder {
  readonly samples: Sample[] = [];
  private stopped = false;
  private loop: Promise<void>;

  constructor(cluster: Pick<Cluster, 'request'>, path: string, o: { intervalMs?: number; maxMs?: number } = {}) {
    const until = Date.now() + (o.maxMs ?? 15 * 60_000);
    this.loop = (async () => {
      while (!this.stopped && Date.now() < until) {
        const at = Date.now();
        try {
          const r = await cluster.request('lb', path, { timeoutMs: 5000, newConnection: true });
          this.samples.push({ at, status: r.status });
        } catch (err) {
          this.samples.push({ at, status: 'error', error: (err as Error).message });
        }
        await new Promise((r) => setTimeout(r, o.intervalMs ?? 100));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  count(pred: (s: Sample) => boolean, from = 0, to = Infinity): number {
    return this.samples.filter((s) => s.at >= from && s.at <= to && pred(s)).length;
  }

  summary(from = 0, to = Infinity): Record<string, number> {
    const out: Record<string, number> = {};
    for (const s of this.samples) if (s.at >= from && s.at <= to) out[String(s.status)] = (out[String(s.status)] ?? 0) + 1;
    return out;
  }
}
