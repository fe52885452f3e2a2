import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from './logger.ts';
import type { MetricsAuth } from './metrics-auth.ts';

export interface ReadyCheck {
  name: string;
  ready: boolean;
  detail?: string;
}

export interface MetricsListenerOptions {
  /** 0 picks a free port (tests). */
  port: number;
  host?: string;
  /**
   * HTTPS: a PEM certificate and key in files (re-read when either changes), or in memory (a self-signed pair
   * made at start, src/runtime/self-signed.ts). Absent: plain HTTP.
   */
  tls?: { certFile: string; keyFile: string; reloadIntervalMs?: number } | { cert: string; key: string };
}

export interface HealthServerOptions {
  /** 0 picks a free port (tests). */
  port: number;
  host?: string;
  registry: Registry;
  /** Evaluated on every /readyz, e.g. one entry per informer: synced or not. */
  readiness: () => ReadyCheck[];
  logger: Logger;
  /** /healthz fails when the event loop has not ticked for this long. Default 10 s. */
  maxEventLoopStallMs?: number;
  /**
   * /metrics on a listener of its own (and no longer on `port`), so that a NetworkPolicy can open the health
   * port to the kubelet and the metrics port to Prometheus only. Absent: /metrics is served on `port`.
   */
  metrics?: MetricsListenerOptions;
  /** Every /metrics request must pass it (bearer token, TokenReview, SubjectAccessReview); health endpoints stay open. */
  metricsAuth?: MetricsAuth;
}

export interface HealthServer {
  readonly port: number;
  /** Where /metrics is served: `port` unless a metrics listener was asked for. */
  readonly metricsPort: number;
  close(): Promise<void>;
}

type Send = (code: number, body: string, type?: string, headers?: Record<string, string>) => void;

function sender(res: ServerResponse): Send {
  return (code, body, type = 'text/plain; charset=utf-8', headers = {}) => {
    res.writeHead(code, { 'Content-Type': type, 'Cache-Control': 'no-store', ...headers });
    res.end(body);
  };
}

const STATUS_TEXT: Record<401 | 403 | 429 | 503, string> = { 401: 'Unauthorized', 403: 'Forbidden', 429: 'Too Many Requests', 503: 'Service Unavailable' };

const pathOf = (req: IncomingMessage): string => (req.url ?? '/').split('?')[0]!;

/**
 * /healthz (the process is alive and its event loop turns), /readyz (every readiness check passes;
 * the body names those that do not) and /metrics (the registry, behind `metricsAuth` when given, on its own
 * listener when `metrics` is given). Plain node:http: three routes do not need a framework.
 */
export async function startHealthServer(o: HealthServerOptions): Promise<HealthServer> {
  const stallMs = o.maxEventLoopStallMs ?? 10_000;
  let lastTick = Date.now();
  // A loop blocked by a runaway computation cannot run this timer, so the gap shows the stall
  // even though /healthz itself is answered only once the loop is free again.
  const ticker = setInterval(() => (lastTick = Date.now()), 500);
  ticker.unref();

  const serveMetrics = (req: IncomingMessage, send: Send): void => {
    const auth = o.metricsAuth;
    const scrape = (): void => {
      o.registry.metrics().then(
        (text) => send(200, text, o.registry.contentType),
        (err: unknown) => send(500, `metrics failed: ${err instanceof Error ? err.message : String(err)}\n`),
      );
    };
    if (!auth) return scrape();
    auth.check(req.headers.authorization).then(
      (d) => {
        if (d.allowed) return scrape();
        const headers: Record<string, string> = d.code === 401 ? { 'WWW-Authenticate': 'Bearer realm="apiserver-upgrade-operator"' } : d.code === 429 ? { 'Retry-After': '1' } : {};
        send(d.code, `${STATUS_TEXT[d.code]}: ${d.message}\n`, undefined, headers);
      },
      (err: unknown) => send(500, `authorization failed: ${err instanceof Error ? err.message : String(err)}\n`),
    );
  };

  const separateMetrics = o.metrics !== undefined;
  const server: Server = createServer((req, res) => {
    const path = pathOf(req);
    const send = sender(res);
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed\n');
    if (path === '/healthz' || path === '/livez') {
      const gap = Date.now() - lastTick;
      return gap > stallMs ? send(503, `event loop stalled for ${gap} ms\n`) : send(200, 'ok\n');
    }
    if (path === '/readyz') {
      let checks: ReadyCheck[];
      try {
        checks = o.readiness();
      } catch (err) {
        return send(503, `readiness check failed: ${err instanceof Error ? err.message : String(err)}\n`);
      }
      const lines = checks.map((c) => `[${c.ready ? '+' : '-'}]${c.name} ${c.ready ? 'ok' : `not ready${c.detail ? `: ${c.detail}` : ''}`}`);
      const ok = checks.every((c) => c.ready);
      return send(ok ? 200 : 503, `${lines.join('\n')}${lines.length ? '\n' : ''}readyz check ${ok ? 'passed' : 'failed'}\n`);
    }
    if (path === '/metrics' && !separateMetrics) return serveMetrics(req, send);
    send(404, 'not found\n');
  });

  let metricsServer: Server | HttpsServer | undefined;
  let stopReload = (): void => {};
  if (o.metrics) {
    const handler = (req: IncomingMessage, res: ServerResponse): void => {
      const send = sender(res);
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed\n');
      if (pathOf(req) === '/metrics') return serveMetrics(req, send);
      send(404, 'not found\n');
    };
    const tls = o.metrics.tls;
    if (tls && 'cert' in tls) {
      metricsServer = createHttpsServer({ cert: tls.cert, key: tls.key }, handler);
    } else if (tls) {
      const read = (): { cert: Buffer; key: Buffer } => ({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) });
      const s = createHttpsServer(read(), handler);
      // Secret volumes are updated by swapping a symlink: stat polling follows it. A half-written pair
      // (new cert, old key) fails to load and is retried at the next change of either file.
      const reload = (): void => {
        try {
          s.setSecureContext(read());
          o.logger.info('metrics serving certificate reloaded', { certFile: tls.certFile });
        } catch (err) {
          o.logger.warn('metrics serving certificate not reloaded', { err: err instanceof Error ? err.message : String(err) });
        }
      };
      const interval = tls.reloadIntervalMs ?? 30_000;
      for (const f of [tls.certFile, tls.keyFile]) watchFile(f, { interval, persistent: false }, reload);
      stopReload = () => [tls.certFile, tls.keyFile].forEach((f) => unwatchFile(f, reload));
      metricsServer = s;
    } else {
      metricsServer = createServer(handler);
    }
  }

  const servers = [server, ...(metricsServer ? [metricsServer] : [])];
  for (const s of servers) s.on('clientError', (_err, socket) => socket.destroy());
  const listen = (s: Server | HttpsServer, port: number, host: string | undefined): Promise<number> =>
    new Promise<number>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, host, () => {
        s.off('error', reject);
        resolve((s.address() as AddressInfo).port);
      });
    });
  const port = await listen(server, o.port, o.host);
  let metricsPort = port;
  if (metricsServer) {
    try {
      metricsPort = await listen(metricsServer, o.metrics!.port, o.metrics!.host ?? o.host);
    } catch (err) {
      stopReload();
      server.close();
      throw err;
    }
  }
  o.logger.info('health server listening', {
    port, metricsPort, metricsScheme: o.metrics?.tls ? 'https' : 'http', metricsAuth: o.metricsAuth ? 'TokenReview+SubjectAccessReview' : 'none',
  });
  const closeOne = (s: Server | HttpsServer): Promise<void> =>
    new Promise<void>((resolve) => {
      // Scrapers keep connections alive; drop idle ones so close() does not wait for their timeout.
      s.close(() => resolve());
      s.closeIdleConnections();
    });
  return {
    port,
    metricsPort,
    close: async () => {
      clearInterval(ticker);
      stopReload();
      await Promise.all(servers.map(closeOne));
    },
  };
}
