import { createServer, type Server } from 'node:https';
import { appendFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Cluster } from './cluster.ts';
import { createServingCert } from './pki.ts';
import { building } from './binaries.ts';
import { parseCommandFlags } from '../../src/observe/trust-flags.ts';

export interface ReceivedCall {
  key: string;
  action: string;
  hostname: string;
  targetVersion: string;
  featureGates: Record<string, boolean>;
  /** `--emulated-version` the replacement runs with (two-phase upgrades); absent: none. */
  emulatedVersion?: string;
  at: number;
  /** How many times this key was POSTed. */
  deliveries: number;
  /** Whether the replacement it started is waiting its turn, running, or finished, and how. */
  outcome: 'pending' | 'running' | 'done' | 'failed';
  /** What the server ran when its replacement began, and what it runs after. */
  from?: { version: string; proxyGate: boolean };
  to?: { version: string; proxyGate: boolean };
  /** When the replacement began (the drain), and when the replaced server was ready again. */
  startedAt?: number;
  doneAt?: number;
  /** When the new run was last found not ready (ServerInfo.notReadyAt): it was ready after this, up to a poll before doneAt. */
  notReadyAt?: number;
  error?: string;
}

/** One line of the hook's own log, also appended as JSON to `<cluster dir>/replace-webhook.log`. */
export interface HookLogEntry {
  at: number;
  event: 'accepted' | 'duplicate' | 'refused' | 'rejected' | 'held' | 'started' | 'done' | 'failed' | 'described';
  key?: string;
  action?: string;
  hostname?: string;
  targetVersion?: string;
  /** HTTP status answered, for the events that answer a request. */
  status?: number;
  detail?: string;
}

/**
 * The e2e cluster's replacement hook: the operator's webhook driver POSTs here and the cluster's own
 * replace() does the work, so the production code path runs end to end. Replacements run one after
 * another in the background (the hook answers 202 at once); a repeated key is answered 200 and changes
 * nothing.
 *
 * A call is accepted only when the binary of its target version exists and starts: the hook never stops a
 * server it cannot start again at once (docs/drivers.md asks this of every hook). A missing binary is refused
 * with 422 (a build in progress in this process: 503 with Retry-After, which the operator retries), and the
 * server is left running.
 */
export class ReplaceWebhook {
  readonly url: string;
  readonly caBundle: string;
  readonly calls = new Map<string, ReceivedCall>();
  /** Describe requests answered, by hostname (they change nothing and are not calls). */
  readonly describes = new Map<string, number>();
  /** Answer Describe with this status and no flags instead (a hook without Describe answers 404). */
  describeStatus: number | undefined;
  /** Status requests answered (they change nothing and are not logged). */
  statuses = 0;
  /** Handle each request, then cut the connection instead of answering (a fault campaign's lost answers). */
  loseAnswers = false;
  /**
   * By hostname: the feature gates the platform starts that server with instead of the call's, for the first call of
   * that action (a process that does not run what its call meant, docs/version-skew.md "The running process"). Used
   * once, then removed.
   */
  readonly gatesInstead = new Map<string, { action: string; featureGates: Record<string, boolean> }>();
  /** Everything the hook did, in order. */
  readonly log: HookLogEntry[] = [];
  readonly logPath: string;
  private readonly server: Server;
  private chain: Promise<void> = Promise.resolve();
  private readonly holds = new Map<string, number>();
  private readonly tails = new Map<string, number>();
  private failing = 0;

  private constructor(server: Server, url: string, caBundle: string, logPath: string) {
    this.server = server;
    this.url = url;
    this.caBundle = caBundle;
    this.logPath = logPath;
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
        void ref.hook!.handle(cluster, req.method, req.headers['idempotency-key'], body).then(({ status, body: obj, headers }) => {
          // The call was handled (maybe taken); its answer is lost on the way back.
          if (ref.hook!.loseAnswers) {
            req.socket.destroy();
            return;
          }
          res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
          res.end(JSON.stringify(obj));
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    ref.hook = new ReplaceWebhook(server, `https://127.0.0.1:${port}/replace`, Buffer.from(caPem).toString('base64'), join(cluster.dir, 'replace-webhook.log'));
    return ref.hook;
  }

  private record(e: Omit<HookLogEntry, 'at'>): void {
    const entry: HookLogEntry = { at: Date.now(), ...e };
    this.log.push(entry);
    try {
      appendFileSync(this.logPath, `${JSON.stringify(entry)}\n`);
    } catch {
      /* the cluster folder is gone after teardown; the in-memory log stays */
    }
  }

  private async handle(cluster: Cluster, method: string | undefined, headerKey: string | string[] | undefined, body: string): Promise<{ status: number; body: unknown; headers?: Record<string, string> }> {
    if (method !== 'POST') return { status: 405, body: { error: 'POST only' } };
    let p: { kind?: string; idempotencyKey?: string; action?: string; server?: { hostname?: string }; targetVersion?: string; emulatedVersion?: string; featureGates?: Record<string, boolean> };
    try {
      p = JSON.parse(body) as typeof p;
    } catch {
      this.record({ event: 'rejected', status: 400, detail: 'body is not JSON' });
      return { status: 400, body: { error: 'body is not JSON' } };
    }
    if (p.kind === 'DescribeServerRequest' || p.action === 'Describe') return this.describe(cluster, p.server?.hostname);
    if (p.kind === 'ReplaceStatusRequest' || p.action === 'Status') return this.status(p.idempotencyKey);
    const key = p.idempotencyKey ?? headerKey;
    const hostname = p.server?.hostname;
    const what = { key: typeof key === 'string' ? key : undefined, action: p.action, hostname, targetVersion: p.targetVersion };
    if (typeof key !== 'string' || !hostname || !p.targetVersion || !p.action) {
      const error = 'idempotencyKey, action, server.hostname and targetVersion are required';
      this.record({ ...what, event: 'rejected', status: 400, detail: error });
      return { status: 400, body: { error } };
    }
    const index = cluster.servers.findIndex((s) => s.hostname === hostname);
    if (index < 0) {
      const error = `no server with hostname ${hostname}`;
      this.record({ ...what, event: 'rejected', status: 404, detail: error });
      return { status: 404, body: { error } };
    }
    const duplicate = (): { status: number; body: unknown } | undefined => {
      const seen = this.calls.get(key);
      if (!seen) return undefined;
      seen.deliveries++;
      this.record({ ...what, event: 'duplicate', status: 200, detail: `delivery ${seen.deliveries}, outcome ${seen.outcome}` });
      return { status: 200, body: { key, duplicate: true, outcome: seen.outcome } };
    };
    const dup = duplicate();
    if (dup) return dup;
    // The replacement's binary must exist and start before the call is taken: nothing is stopped otherwise.
    try {
      await cluster.readyBinary(p.targetVersion);
    } catch (err) {
      const error = `${(err as Error).message}; ${hostname} keeps running`;
      const inProgress = building('kube-apiserver', p.targetVersion);
      const status = inProgress ? 503 : 422;
      this.record({ ...what, event: 'refused', status, detail: error });
      return { status, body: { error }, ...(inProgress ? { headers: { 'Retry-After': '30' } } : {}) };
    }
    // The same key may have arrived while the binary was being checked.
    const dup2 = duplicate();
    if (dup2) return dup2;
    const call: ReceivedCall = { key, action: p.action, hostname, targetVersion: p.targetVersion, featureGates: p.featureGates ?? {}, ...(p.emulatedVersion ? { emulatedVersion: p.emulatedVersion } : {}), at: Date.now(), deliveries: 1, outcome: 'pending' };
    this.calls.set(key, call);
    this.record({ ...what, event: 'accepted', status: 202 });
    this.chain = this.chain.then(async () => {
      const hold = this.holds.get(hostname);
      if (hold !== undefined) {
        this.holds.delete(hostname);
        this.record({ ...what, event: 'held', detail: `${hold} ms before starting` });
        await new Promise((r) => setTimeout(r, hold));
      }
      const before = cluster.server(index);
      if (this.failing > 0) {
        // A platform that took the call and then reported it failed, leaving the server as it was.
        this.failing--;
        call.outcome = 'failed';
        call.error = 'injected failure: the replacement was accepted and failed, the server left as it was';
        this.record({ ...what, event: 'failed', detail: call.error });
        return;
      }
      call.from = { version: before.config.version, proxyGate: before.proxyGate };
      call.outcome = 'running';
      call.startedAt = Date.now();
      this.record({ ...what, event: 'started', detail: `${before.config.version}${before.proxyGate ? ' (proxy gate on)' : ''}` });
      try {
        // The request says the whole goal: the emulation flag is set when asked for and removed otherwise.
        const flags = before.config.extraFlags.filter((f) => !f.startsWith('--emulated-version='));
        if (call.emulatedVersion) flags.push(`--emulated-version=${call.emulatedVersion}`);
        const instead = this.gatesInstead.get(hostname)?.action === call.action ? this.gatesInstead.get(hostname)!.featureGates : undefined;
        if (instead) this.gatesInstead.delete(hostname);
        if (instead) this.record({ ...what, event: 'started', detail: `with the feature gates ${JSON.stringify(instead)} instead of the call's` });
        const after = await cluster.replace(index, { version: call.targetVersion, featureGates: instead ?? call.featureGates, extraFlags: flags });
        const tail = this.tails.get(hostname);
        if (tail !== undefined) {
          // A platform's own steps after the server is ready (a check, a cleanup): the call is not ended yet.
          this.tails.delete(hostname);
          this.record({ ...what, event: 'held', detail: `${after.config.version} ready; ${tail} ms more before ending` });
          await new Promise((r) => setTimeout(r, tail));
        }
        call.to = { version: after.config.version, proxyGate: after.proxyGate };
        if (after.notReadyAt !== undefined) call.notReadyAt = after.notReadyAt;
        call.outcome = 'done';
        call.doneAt = Date.now();
        this.record({ ...what, event: 'done', detail: `${after.config.version}${after.proxyGate ? ' (proxy gate on)' : ''} ready in ${((call.doneAt - call.startedAt) / 1000).toFixed(1)} s` });
      } catch (err) {
        call.outcome = 'failed';
        call.error = (err as Error).message;
        this.record({ ...what, event: 'failed', detail: call.error });
      }
    });
    return { status: 202, body: { key, accepted: true } };
  }

  /**
   * Describe (docs/drivers.md): the flags the named server runs with, from the command line the harness
   * started it with (ServerInfo.flags), parsed as the operator parses a mirror Pod's. Changes nothing.
   */
  private describe(cluster: Cluster, hostname: string | undefined): { status: number; body: unknown } {
    const s = cluster.servers.find((x) => x.hostname === hostname);
    if (this.describeStatus !== undefined) {
      this.record({ event: 'described', ...(hostname ? { hostname } : {}), status: this.describeStatus, detail: 'answered without flags (describeStatus)' });
      return { status: this.describeStatus, body: { error: 'Describe not supported' } };
    }
    if (!s) {
      this.record({ event: 'rejected', action: 'Describe', ...(hostname ? { hostname } : {}), status: 404, detail: `no server with hostname ${hostname}` });
      return { status: 404, body: { error: `no server with hostname ${hostname}` } };
    }
    this.describes.set(s.hostname, (this.describes.get(s.hostname) ?? 0) + 1);
    this.record({ event: 'described', action: 'Describe', hostname: s.hostname, status: 200 });
    return { status: 200, body: { flags: parseCommandFlags(s.flags) } };
  }

  /**
   * Status (docs/drivers.md): what became of the replacement taken under `key`. Running until replace() has
   * returned — the server is drained, restarted, ready and back in the balancer — so the operator sends no other
   * call for the server before that. Changes nothing; not in the hook's log (the operator asks on every look).
   */
  private status(key: string | undefined): { status: number; body: unknown } {
    this.statuses++;
    const call = key === undefined ? undefined : this.calls.get(key);
    if (!call) return { status: 200, body: { state: 'NotFound', message: `no replacement taken under ${String(key)}` } };
    if (call.outcome === 'done') return { status: 200, body: { state: 'Succeeded', message: `${call.hostname} on ${call.to?.version ?? call.targetVersion}, back in the balancer` } };
    if (call.outcome === 'failed') return { status: 200, body: { state: 'Failed', message: call.error ?? 'failed' } };
    return { status: 200, body: { state: 'Running', message: `${call.action} of ${call.hostname} ${call.outcome}` } };
  }

  /**
   * Holds the next accepted replacement of `hostname` for `ms` before it starts, as a slow platform would:
   * the call is in flight (accepted, server unchanged) all that time.
   */
  holdBeforeStart(hostname: string, ms: number): void {
    this.holds.set(hostname, ms);
  }

  /**
   * The next replacement of `hostname` ends `ms` after its server is ready and back in the balancer: the server is
   * at its goal all that time, the call not yet ended (Status answers Running).
   */
  holdAfterReady(hostname: string, ms: number): void {
    this.tails.set(hostname, ms);
  }

  /** The next accepted replacement (of any server) is answered 202 and then fails without touching the server. */
  failNext(): void {
    this.failing++;
  }

  /** Cancels failNext() calls not yet used. */
  clearFailures(): void {
    this.failing = 0;
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
