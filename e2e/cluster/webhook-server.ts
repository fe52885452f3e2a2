import { createServer, type Server } from 'node:https';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import type { Cluster } from './cluster.ts';
import { createServingCert } from './pki.ts';

export interface ReceivedCall {
  key: string;
  action: string;
  hostname: string;
  targetVersion: string;
  featureGates: Record<string, boolean>;
  at: number;
  /** How many times this key was POSTed. */
  deliveries: number;
  /** Whether the replacement it started has finished, and how. */
  outcome: 'pending' | 'done' | 'failed';
  /** When the replaced server was ready again. */
  doneAt?: number;
  error?: string;
}

/**
 * The e2e cluster's replacement hook: the operator's webhook driver POSTs here and the cluster's own
 * replace() does the work, so the production code path runs end to end. Replacements run one after
 * another in the background (the hook answers 202 at once); a repeated key is answered 200 and changes
 * nothing.
 */
export class ReplaceWebhook {
  readonly url: string;
  readonly caBundle: string;
  readonly calls = new Map<string, ReceivedCall>();
  private readonly server: Server;
  private chain: Promise<void> = Promise.resolve();

  private constructor(server: Server, url: string, caBundle: string) {
    this.server = server;
    this.url = url;
    this.caBundle = caBundle;
  }

  static async start(cluster: Cluster): Promise<ReplaceWebhook> {
    const cert = await createServingCert(cluster.pki, 'replace-webhook', ['127.0.0.1'], []);
    const [certPem, keyPem, caPem] = await Promise.all([readFile(cert.cert), readFile(cert.key), readFile(cluster.pki.caCert, 'utf8')]);
    const ref: { hook?: ReplaceWebhook } = {};
    const server = createServer({ cert: certPem, key: keyPem }, (req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        const reply = (status: number, obj: unknown): void => {
          res.writeHead(status, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify(obj));
        };
        if (req.method !== 'POST') return reply(405, { error: 'POST only' });
        let p: { idempotencyKey?: string; action?: string; server?: { hostname?: string }; targetVersion?: string; featureGates?: Record<string, boolean> };
        try {
          p = JSON.parse(body) as typeof p;
        } catch {
          return reply(400, { error: 'body is not JSON' });
        }
        const key = p.idempotencyKey ?? req.headers['idempotency-key'];
        const hostname = p.server?.hostname;
        if (typeof key !== 'string' || !hostname || !p.targetVersion || !p.action) return reply(400, { error: 'idempotencyKey, action, server.hostname and targetVersion are required' });
        const index = cluster.servers.findIndex((s) => s.hostname === hostname);
        if (index < 0) return reply(404, { error: `no server with hostname ${hostname}` });
        const seen = ref.hook!.calls.get(key);
        if (seen) {
          seen.deliveries++;
          return reply(200, { key, duplicate: true, outcome: seen.outcome });
        }
        const call: ReceivedCall = { key, action: p.action, hostname, targetVersion: p.targetVersion, featureGates: p.featureGates ?? {}, at: Date.now(), deliveries: 1, outcome: 'pending' };
        ref.hook!.calls.set(key, call);
        ref.hook!.chain = ref.hook!.chain.then(async () => {
          try {
            await cluster.replace(index, { version: call.targetVersion, featureGates: call.featureGates });
            call.outcome = 'done';
            call.doneAt = Date.now();
          } catch (err) {
            call.outcome = 'failed';
            call.error = (err as Error).message;
          }
        });
        return reply(202, { key, accepted: true });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    ref.hook = new ReplaceWebhook(server, `https://127.0.0.1:${port}/replace`, Buffer.from(caPem).toString('base64'));
    return ref.hook;
  }

  /** Waits for replacements in flight. */
  async idle(): Promise<void> {
    await this.chain;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
  }
}
