// A client that keeps reading and writing one ConfigMap through the balancer, as an application would during a
// control-plane upgrade, and records every answer: a GET and a merge PATCH (its counter bumped) in turn, each on a
// new connection so haproxy's round robin spreads them over every server. Bounded by maxMs; stop() ends it.
import type { HttpResult } from '../cluster/http.ts';

export interface RwSample {
  at: number;
  op: 'read' | 'write';
  /** The HTTP status, or 'error' for a request that got no answer (refused, reset, timed out). */
  status: number | 'error';
  error?: string;
}

type Requester = (path: string, opts: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number; newConnection?: boolean }) => Promise<HttpResult>;

export class ReadWriteTraffic {
  readonly samples: RwSample[] = [];
  private stopped = false;
  private readonly loop: Promise<void>;

  private constructor(request: Requester, path: string, o: { intervalMs: number; maxMs: number }) {
    const until = Date.now() + o.maxMs;
    this.loop = (async () => {
      for (let n = 0; !this.stopped && Date.now() < until; n++) {
        const op = n % 2 === 0 ? 'read' : 'write';
        const at = Date.now();
        try {
          const r = op === 'read'
            ? await request(path, { timeoutMs: 5000, newConnection: true })
            : await request(path, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ data: { n: String(n) } }), timeoutMs: 5000, newConnection: true });
          this.samples.push({ at, op, status: r.status });
        } catch (err) {
          this.samples.push({ at, op, status: 'error', error: (err as Error).message });
        }
        await new Promise((r) => setTimeout(r, o.intervalMs));
      }
    })();
  }

  /** Creates the ConfigMap (namespace default) and starts the loop. */
  static async start(request: Requester, name: string, o: { intervalMs?: number; maxMs?: number } = {}): Promise<ReadWriteTraffic> {
    const created = await request('/api/v1/namespaces/default/configmaps', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { n: '0' } }) });
    if (created.status !== 201 && created.status !== 409) throw new Error(`creating ConfigMap ${name}: ${created.status} ${created.body.slice(0, 200)}`);
    return new ReadWriteTraffic(request, `/api/v1/namespaces/default/configmaps/${name}`, { intervalMs: o.intervalMs ?? 100, maxMs: o.maxMs ?? 60 * 60_000 });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  /** Requests, errors (no answer or not 2xx) and the statuses seen, in [from, to]. */
  window(from = 0, to = Infinity): { requests: number; errors: number; byStatus: Record<string, number>; firstErrors: string[] } {
    const s = this.samples.filter((x) => x.at >= from && x.at <= to);
    const bad = s.filter((x) => x.status === 'error' || x.status < 200 || x.status > 299);
    const byStatus: Record<string, number> = {};
    for (const x of s) byStatus[`${x.op} ${x.status}`] = (byStatus[`${x.op} ${x.status}`] ?? 0) + 1;
    return { requests: s.length, errors: bad.length, byStatus, firstErrors: bad.slice(0, 5).map((x) => `${new Date(x.at).toISOString()} ${x.op} ${x.status} ${x.error ?? ''}`.trim()) };
  }
}
