// The webhook driver's URL in the campaign points here, a loopback TCP forwarder to the real hook (TLS passes
// through): the fault injector switches how it behaves, as a sick platform API would, without a spec edit (the
// driver is frozen while the upgrade runs).
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * pass: forward both ways. refuse: reset each new connection at once. slow: hold each chunk `slowMs` before passing
 * it on. (Lost answers are the hook's own: ReplaceWebhook.loseAnswers, since TLS hides where an answer begins.)
 */
export type DoorMode = 'pass' | 'refuse' | 'slow';

export class HookDoor {
  mode: DoorMode = 'pass';
  slowMs = 4000;
  private readonly open = new Set<Socket>();

  private readonly server: Server;
  readonly port: number;

  private constructor(server: Server, port: number) {
    this.server = server;
    this.port = port;
  }

  static async start(to: number): Promise<HookDoor> {
    const ref: { door?: HookDoor } = {};
    const server = createServer((client) => ref.door!.handle(client, to));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ref.door = new HookDoor(server, (server.address() as AddressInfo).port);
    return ref.door;
  }

  private handle(client: Socket, to: number): void {
    const mode = this.mode;
    if (mode === 'refuse') {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(to, '127.0.0.1');
    for (const s of [client, upstream]) {
      this.open.add(s);
      s.on('close', () => this.open.delete(s));
      s.on('error', () => { client.destroy(); upstream.destroy(); });
    }
    const delay = mode === 'slow' ? this.slowMs : 0;
    const pass = (from: Socket, into: Socket): void => {
      from.on('data', (chunk: Buffer) => {
        if (delay === 0) into.write(chunk);
        else setTimeout(() => { if (!into.destroyed) into.write(chunk); }, delay);
      });
      from.on('end', () => setTimeout(() => into.end(), delay));
    };
    pass(client, upstream);
    pass(upstream, client);
  }

  async close(): Promise<void> {
    for (const s of this.open) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
