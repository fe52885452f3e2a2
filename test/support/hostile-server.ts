// A hostile "apiserver" (issue 21): /apis answers 200 MiB of discovery, /api a gzip bomb (1 GiB from ~1 MiB on
// the wire), /metrics a bomb (millions of series), /apis/brackets/v1 a document of nested brackets, and the
// `slow` paths a body that trickles one byte per 100 ms and never ends. /version and /readyz answer like a
// healthy server, so an observer takes it for one and asks it for everything. Shared by the unit-level test
// (test/observe/hostile-server.test.ts) and the real-cluster one (e2e/hostile-server.e2e.ts).
import { createServer, type ServerOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';

export interface HostileServer {
  /** host:port it listens on. */
  address: string;
  /** Bytes written per path (socket buffers included): how much of each body a client let through. */
  served: Map<string, number>;
  /** Requests per path. */
  requests: Map<string, number>;
  close(): void;
}

export interface HostileOptions {
  host?: string;
  /** /version's gitVersion; without it /version is 404. */
  version?: string;
  /** Paths that trickle (default /apis/slow/v1); they take precedence over the bombs. */
  slow?: string[];
}

const MiB = 1024 * 1024;

export async function startHostileServer(tls: ServerOptions, o: HostileOptions = {}): Promise<HostileServer> {
  const bomb = gzipSync(Buffer.alloc(32 * MiB, 0x20), { level: 9 });
  const groups = Buffer.from('{"metadata":{"name":"hostile.example.com"},"versions":[]},'.repeat(16_384));
  const series = Buffer.from(Array.from({ length: 20_000 }, (_, i) => `apiserver_request_total{code="200",resource="r${i}",verb="GET"} 1\n`).join(''));
  const brackets = Buffer.from('[{},'.repeat(262_144));
  const slow = new Set(o.slow ?? ['/apis/slow/v1']);
  const served = new Map<string, number>();
  const requests = new Map<string, number>();
  const server = createServer(tls, (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    requests.set(path, (requests.get(path) ?? 0) + 1);
    // Writes `chunk` until `total` bytes or the client hangs up, respecting backpressure.
    const stream = (head: string, chunk: Buffer, total: number, headers: Record<string, string> = {}): void => {
      res.writeHead(200, { 'Content-Type': 'application/json', ...headers });
      res.write(head);
      let sent = 0;
      const more = (): void => {
        while (sent < total && !res.destroyed) {
          sent += chunk.length;
          served.set(path, (served.get(path) ?? 0) + chunk.length);
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    };
    if (slow.has(path)) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const timer = setInterval(() => res.write(' '), 100);
      res.on('close', () => clearInterval(timer));
      return;
    }
    if (path === '/version' && o.version) {
      const [major, minor] = o.version.replace(/^v/, '').split('.');
      res.writeHead(200, { 'Content-Type': 'application/json' });
      return void res.end(JSON.stringify({ major, minor, gitVersion: o.version, platform: 'linux/amd64' }));
    }
    if (path === '/readyz' || path === '/livez' || path === '/healthz') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
    if (path === '/apis') return stream('{"kind":"APIGroupDiscoveryList","items":[', groups, 200 * MiB);
    if (path === '/api') return stream('', bomb, 32 * bomb.length, { 'Content-Encoding': 'gzip' });
    if (path === '/metrics') return stream('# TYPE apiserver_request_total counter\n', series, 64 * MiB, { 'Content-Type': 'text/plain' });
    if (path === '/apis/brackets/v1') return stream('', brackets, brackets.length);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, o.host ?? '127.0.0.1', r));
  const { address, port } = server.address() as AddressInfo;
  return {
    address: `${address}:${port}`,
    served,
    requests,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
