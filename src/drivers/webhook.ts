import type { ClientRequest, IncomingMessage } from 'node:http';
import { X509Certificate } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import type { DriverRequest } from '../plan/actions.ts';
import { PROXY_GATE } from '../api/constants.ts';
import type { CallOutcome } from '../plan/call-outcome.ts';
import type { DescribeOutcome, Driver, DriverReport, ReportRequest } from './driver.ts';
import { reportFromStatusBody, STATUS_DEADLINE_MS, statusPayload } from './webhook-status.ts';
import { flagsFromDescribe } from '../observe/trust-flags.ts';
import { USER_AGENT } from '../runtime/kube-request.ts';
import { safeMessage } from '../plan/redact.ts';
import { classifyNetworkError, classifyStatus, errorCode, statusHint, statusText } from './webhook-outcome.ts';

export interface WebhookConfig {
  url: string;
  /** PEM (or base64 of PEM, as in the CRD) of the CA that signs the hook's serving cert; system roots when absent. */
  caBundle?: string;
  timeoutMs: number;
  /** Sent as `Authorization: Bearer …` when set (from spec.driver.webhook.authSecretRef). */
  token?: string;
}

/** The body the hook receives; `docs/drivers.md` documents it as a contract. */
export interface WebhookPayload {
  apiVersion: 'upgrade.apiserver.dev/v1alpha1';
  kind: 'ReplaceServerRequest';
  idempotencyKey: string;
  action: DriverRequest['action'];
  upgrade: string;
  batch: number;
  server: DriverRequest['server'];
  targetVersion: string;
  /**
   * The version the server must emulate ("1.35"): start targetVersion's binary with
   * `--emulated-version=<this>`. Absent: no `--emulated-version` flag (remove one the server had).
   */
  emulatedVersion?: string;
  featureGates: Record<string, boolean>;
  /**
   * Flags the replaced server must run with: `--peer-advertise-ip/port` for the Mixed Version Proxy when the
   * gate is on, and `--emulated-version=<emulatedVersion>` when that is set.
   */
  flags: string[];
}

/**
 * The body of a Describe request (docs/drivers.md): "which flags does this server run with?". A different
 * `kind` and no idempotencyKey or targetVersion, so a hook that only knows ReplaceServerRequest refuses it
 * (4xx) instead of taking it for a replacement. It changes nothing; the operator sends it only at preflight.
 */
export interface DescribePayload {
  apiVersion: 'upgrade.apiserver.dev/v1alpha1';
  kind: 'DescribeServerRequest';
  action: 'Describe';
  server: DriverRequest['server'];
}

export function describePayload(server: DriverRequest['server']): DescribePayload {
  return { apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'DescribeServerRequest', action: 'Describe', server };
}

export function caFromBundle(bundle: string | undefined): string | undefined {
  if (bundle === undefined || bundle === '') return undefined;
  return bundle.includes('-----BEGIN') ? bundle : Buffer.from(bundle, 'base64').toString('utf8');
}

/** Why a CA bundle cannot be used, or undefined when its first certificate parses. */
function unparsableCa(pem: string): string | undefined {
  try {
    new X509Certificate(pem);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

export function webhookPayload(r: DriverRequest): WebhookPayload {
  const gateOn = r.featureGates[PROXY_GATE] === true;
  const [ip, port] = (r.server.address ?? '').split(':');
  const flags = gateOn && ip ? [`--peer-advertise-ip=${ip}`, `--peer-advertise-port=${port ?? '6443'}`] : [];
  if (r.emulatedVersion) flags.push(`--emulated-version=${r.emulatedVersion}`);
  return {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1',
    kind: 'ReplaceServerRequest',
    idempotencyKey: r.idempotencyKey,
    action: r.action,
    upgrade: r.upgrade,
    batch: r.batch,
    server: r.server,
    targetVersion: r.targetVersion,
    ...(r.emulatedVersion ? { emulatedVersion: r.emulatedVersion } : {}),
    featureGates: r.featureGates,
    flags,
  };
}

/** The most of a response body the driver reads; beyond it the connection is closed. */
export const RESPONSE_BODY_CAP = 64 * 1024;
/** The most of the body that goes into the call's message (status.driverCalls[].message and the event), counted after redaction. */
export const MESSAGE_BODY_CHARS = 512;
/** The most of a whole message (where, status, hint and body): what safeMessage keeps. */
export const MESSAGE_CHARS = 1024;

/**
 * POSTs the replacement request and reads the answer by the table in docs/drivers.md ("Response"; the
 * classification is src/drivers/webhook-outcome.ts). `timeoutMs` is a deadline for the whole exchange —
 * DNS, connect, TLS, request and the complete response — enforced by a timer, so a hook that trickles bytes
 * cannot hold the reconcile. At most RESPONSE_BODY_CAP bytes of the body are read. Redirects are not
 * followed. Never rejects: every failure is an outcome.
 */
export class WebhookDriver implements Driver {
  private readonly cfg: WebhookConfig;

  constructor(cfg: WebhookConfig) {
    if (!cfg.url.startsWith('https://')) throw new Error(`webhook url must be https: ${cfg.url}`);
    this.cfg = cfg;
  }

  /**
   * POSTs a Describe request for one server and reads `{ "flags": { "--name": "value" } }` from a 2xx answer.
   * Everything else — a 4xx (a hook without Describe), a 5xx, a network or TLS error, the deadline, a body that
   * is not that shape — is `unknown` with what happened: the trust checks report the server's flags as
   * unknown, never as verified and never as an error.
   */
  async describe(server: DriverRequest['server']): Promise<DescribeOutcome> {
    const where = `POST ${this.cfg.url} (Describe ${server.hostname})`;
    const a = await this.exchange(where, JSON.stringify(describePayload(server)), this.cfg.timeoutMs);
    if (!a.ok) return { kind: 'unknown', message: a.message };
    if (a.code < 200 || a.code > 299) return { kind: 'unknown', message: this.shown(`${where}: ${statusText(a.code)}${a.code >= 400 && a.code < 500 ? ' (the hook does not answer Describe)' : ''}`) };
    let parsed: unknown;
    try {
      parsed = JSON.parse(a.text);
    } catch {
      return { kind: 'unknown', message: this.shown(`${where}: ${statusText(a.code)} with a body that is not JSON`) };
    }
    const flags = flagsFromDescribe(parsed);
    return flags ? { kind: 'flags', flags } : { kind: 'unknown', message: this.shown(`${where}: ${statusText(a.code)} without a "flags" object of strings`) };
  }

  /**
   * POSTs a status request for a call the hook accepted (docs/drivers.md "Status"; the shell asks only about ended
   * calls not yet settled, and only when spec.driver.webhook.reportsStatus is true) and reads the hook's state from a 2xx answer (src/drivers/webhook-status.ts), within STATUS_DEADLINE_MS
   * (or the call's timeout when shorter): it is asked before a look observes the fleet. Everything else — a 4xx,
   * a 5xx, a network or TLS error, the deadline, a body not of that shape — is `unknown`: the call is then taken as
   * still running, never as failed or settled on a guess.
   */
  async report(call: ReportRequest): Promise<DriverReport> {
    const where = `POST ${this.cfg.url} (Status ${call.action} ${call.server.hostname})`;
    const a = await this.exchange(where, JSON.stringify(statusPayload(call)), Math.min(this.cfg.timeoutMs, STATUS_DEADLINE_MS));
    if (!a.ok) return { kind: 'unknown', message: a.message };
    if (a.code < 200 || a.code > 299) return { kind: 'unknown', message: this.shown(`${where}: ${statusText(a.code)}${a.code >= 400 && a.code < 500 ? ' (does the hook answer ReplaceStatusRequest? spec.driver.webhook.reportsStatus says it does)' : ''}`) };
    const r = reportFromStatusBody(a.text, where, [this.cfg.token]);
    return { kind: r.kind, message: this.shown(r.message) };
  }

  /** A message from the hook's words: printable, capped, no credential (src/plan/redact.ts). */
  private shown(message: string): string {
    return safeMessage(message, { secrets: [this.cfg.token], maxChars: MESSAGE_CHARS });
  }

  /**
   * One POST that changes nothing (Describe, Status): the status code and at most RESPONSE_BODY_CAP bytes of the
   * body, or what failed. `timeoutMs` is a deadline for the whole exchange; redirects are not followed. Never rejects.
   */
  private exchange(where: string, body: string, timeoutMs: number): Promise<{ ok: true; code: number; text: string } | { ok: false; message: string }> {
    const { url, token } = this.cfg;
    const ca = caFromBundle(this.cfg.caBundle);
    if (ca !== undefined && unparsableCa(ca) !== undefined) return Promise.resolve({ ok: false, message: `${where}: spec.driver.webhook.caBundle holds no usable PEM certificate` });
    type Answer = { ok: true; code: number; text: string } | { ok: false; message: string };
    return new Promise<Answer>((resolve) => {
      let settled = false;
      let req: ClientRequest | undefined;
      const settle = (a: Answer): void => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        req?.destroy();
        resolve(a.ok ? a : { ok: false, message: this.shown(a.message) });
      };
      const deadline = setTimeout(() => settle({ ok: false, message: `${where}: no complete answer within ${timeoutMs} ms` }), timeoutMs);
      try {
        req = httpsRequest(url, {
          method: 'POST',
          agent: false,
          ...(ca ? { ca } : {}),
          headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'User-Agent': USER_AGENT, ...(token ? { Authorization: `Bearer ${token}` } : {}) },
        }, (res) => {
          const chunks: Buffer[] = [];
          let received = 0;
          res.on('data', (c: Buffer) => {
            received += c.length;
            if (received > RESPONSE_BODY_CAP) settle({ ok: false, message: `${where}: answer larger than ${RESPONSE_BODY_CAP} bytes` });
            else chunks.push(c);
          });
          res.on('end', () => settle({ ok: true, code: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', (err) => settle({ ok: false, message: `${where}: ${err.message}` }));
        });
      } catch (err) {
        settle({ ok: false, message: `${where}: cannot send: ${(err as Error).message}` });
        return;
      }
      req.on('error', (err) => settle({ ok: false, message: `${where}: ${classifyNetworkError(errorCode(err), err.message).reason}` }));
      req.end(body);
    });
  }

  call(r: DriverRequest): Promise<CallOutcome> {
    const { url, timeoutMs, token } = this.cfg;
    const where = `POST ${url}`;
    const started = performance.now();
    const after = (): string => `after ${Math.round(performance.now() - started)} ms`;
    return new Promise<CallOutcome>((resolve) => {
      let settled = false;
      let status: number | undefined;
      let received = 0;
      const chunks: Buffer[] = [];
      // Declared before use by settle(); assigned right below.
      let req: ClientRequest | undefined;
      const settle = (outcome: CallOutcome, destroy: boolean): void => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        if (destroy) req?.destroy();
        // The hook's answer becomes status, Events and logs: printable, capped, no credential (src/plan/redact.ts).
        resolve({ ...outcome, message: safeMessage(outcome.message, { secrets: [token], maxChars: MESSAGE_CHARS }) });
      };
      const deadline = setTimeout(() => {
        const got = status === undefined ? 'no response headers' : `${statusText(status)} and ${received} bytes of body, not the end`;
        settle({ kind: 'transient', message: `${where}: no complete answer within the ${timeoutMs} ms deadline (spec.driver.webhook.timeout): ${got}` }, true);
      }, timeoutMs);
      const answered = (res: IncomingMessage, truncated: boolean): void => {
        const code = res.statusCode ?? 0;
        const kind = classifyStatus(code);
        const location = res.headers.location;
        const hint = statusHint(code, location);
        // Made plain and redacted before it is cut: a cut first would leave a token that straddles it all but whole.
        const shown = safeMessage(new TextDecoder().decode(Buffer.concat(chunks)), { secrets: [token], maxChars: MESSAGE_BODY_CHARS }).trim();
        const parts = [`${where}: ${statusText(code)} ${after()}`, ...(hint ? [` (${hint})`] : []), ...(shown ? [`: ${shown}`] : []), ...(truncated ? [` [response body truncated: read the first ${RESPONSE_BODY_CAP} bytes]`] : [])];
        settle({ kind, message: parts.join('') }, truncated);
      };
      const failed = (err: Error): void => {
        const v = classifyNetworkError(errorCode(err), err.message);
        settle({ kind: v.kind, message: `${where}: ${v.reason} ${after()}` }, true);
      };
      const body = JSON.stringify(webhookPayload(r));
      const ca = caFromBundle(this.cfg.caBundle);
      // Node ignores a CA bundle it cannot parse, and the handshake then fails as an unknown CA: say what is wrong.
      const caProblem = ca === undefined ? undefined : unparsableCa(ca);
      if (caProblem !== undefined) {
        settle({ kind: 'rejected', message: `${where}: spec.driver.webhook.caBundle holds no usable PEM certificate (${caProblem})` }, false);
        return;
      }
      try {
        req = httpsRequest(url, {
          method: 'POST',
          // One connection per call, closed after it: nothing pooled for a socket destroyed mid-answer to poison.
          agent: false,
          ...(ca ? { ca } : {}),
          headers: {
            'Content-Type': 'application/json',
            'Content-Length': Buffer.byteLength(body),
            'Idempotency-Key': r.idempotencyKey,
            'User-Agent': USER_AGENT,
            ...(token ? { Authorization: `Bearer ${token}` } : {}),
          },
        }, (res) => {
          status = res.statusCode;
          res.on('data', (c: Buffer) => {
            if (settled) return;
            const room = RESPONSE_BODY_CAP - received;
            if (c.length > room) {
              chunks.push(c.subarray(0, room));
              received = RESPONSE_BODY_CAP;
              answered(res, true);
              return;
            }
            chunks.push(c);
            received += c.length;
          });
          res.on('end', () => answered(res, false));
          res.on('error', failed);
          // Closed before the end (after 'end' the call is settled and this does nothing).
          res.on('close', () => failed(Object.assign(new Error('the hook closed the connection mid-answer'), { code: 'ECONNRESET' })));
        });
      } catch (err) {
        // A URL Node refuses before any I/O: permanent, the spec must change.
        settle({ kind: 'rejected', message: `${where}: cannot send: ${(err as Error).message}; check spec.driver.webhook.url` }, true);
        return;
      }
      req.on('error', failed);
      req.end(body);
    });
  }
}
