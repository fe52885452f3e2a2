// A loopback TCP forwarder that a test opens and closes, so that a driver URL — frozen in the spec while an upgrade
// runs — can refuse connections and later reach the hook again, without a spec edit. TLS passes through unchanged.
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** A loopback port that refuses connections now (bound once to pick it, then released). */
export async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

export interface Forwarder {
  port: number;
  /** Stops listening and cuts every forwarded connection: the port refuses connections again. */
  close(): Promise<void>;
}

/** Forwards 127.0.0.1:<from> (0: any free port) to 127.0.0.1:<to>. */
export async function forward(from: number, to: number): Promise<Forwarder> {
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(to, '127.0.0.1');
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => { client.destroy(); upstream.destroy(); });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(from, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
