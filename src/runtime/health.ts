import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from './logger.ts';

export interface ReadyCheck {
  name: string;
  ready: boolean;
  detail?: string;
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
}

export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * /healthz (the process is alive and its event loop turns), /readyz (every readiness check passes;
 * the body names those that do not) and /metrics (the registry). Plain node:http: three routes do not need a framework.
 */
export async function startHealthServer(o: HealthServerOptions): Promise<HealthServer> {
  const stallMs = o.maxEventLoopStallMs ?? 10_000;
  let lastTick = Date.now();
  // A loop blocked by a runaway computation cannot run this timer, so the gap shows the stall
  // even though /healthz itself is answered only once the loop is free again.
  const ticker = setInterval(() => (lastTick = Date.now()), 500);
  ticker.unref();

  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (code: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(code, { 'Content-Type': type, 'Cache-Control': 'no-store' });
      res.end(body);
    };
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
    if (path === '/metrics') {
      o.registry.metrics().then(
        (text) => send(200, text, o.registry.contentType),
        (err: unknown) => send(500, `metrics failed: ${err instanceof Error ? err.message : String(err)}\n`),
      );
      return;
    }
    send(404, 'not found\n');
  });
  server.on('clientError', (_err, socket) => socket.destroy());

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  o.logger.info('health server listening', { port });
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(ticker);
        // Scrapers keep connections alive; drop idle ones so close() does not wait for their timeout.
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
