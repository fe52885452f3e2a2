import { request as httpsRequest } from 'node:https';
import type { DriverRequest } from '../plan/actions.ts';
import { PROXY_GATE } from '../api/constants.ts';
import { TransientDriverError, type Driver, type DriverOutcome } from './driver.ts';

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
  featureGates: Record<string, boolean>;
  /** Flags the replaced server must run with for the Mixed Version Proxy, when the gate is on. */
  flags: string[];
}

export function caFromBundle(bundle: string | undefined): string | undefined {
  if (bundle === undefined || bundle === '') return undefined;
  return bundle.includes('-----BEGIN') ? bundle : Buffer.from(bundle, 'base64').toString('utf8');
}

export function webhookPayload(r: DriverRequest): WebhookPayload {
  const gateOn = r.featureGates[PROXY_GATE] === true;
  const [ip, port] = (r.server.address ?? '').split(':');
  const flags = gateOn && ip ? [`--peer-advertise-ip=${ip}`, `--peer-advertise-port=${port ?? '6443'}`] : [];
  return { apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ReplaceServerRequest', idempotencyKey: r.idempotencyKey, action: r.action, upgrade: r.upgrade, batch: r.batch, server: r.server, targetVersion: r.targetVersion, featureGates: r.featureGates, flags };
}

/**
 * POSTs the replacement request. 2xx (and 409 for a key the hook already holds) is accepted; other 4xx is
 * a refusal; 5xx, 429, timeouts and connection errors are transient and the same key is sent again later.
 */
export class WebhookDriver implements Driver {
  private readonly cfg: WebhookConfig;

  constructor(cfg: WebhookConfig) {
    if (!cfg.url.startsWith('https://')) throw new Error(`webhook url must be https: ${cfg.url}`);
    this.cfg = cfg;
  }

  call(r: DriverRequest): Promise<DriverOutcome> {
    const body = JSON.stringify(webhookPayload(r));
    const ca = caFromBundle(this.cfg.caBundle);
    return new Promise((resolve, reject) => {
      const req = httpsRequest(this.cfg.url, {
        method: 'POST',
        timeout: this.cfg.timeoutMs,
        ...(ca ? { ca } : {}),
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(body),
          'Idempotency-Key': r.idempotencyKey,
          ...(this.cfg.token ? { Authorization: `Bearer ${this.cfg.token}` } : {}),
        },
      }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          if (text.length < 4096) text += c;
        });
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const msg = `HTTP ${status}${text ? `: ${text.trim().slice(0, 512)}` : ''}`;
          if ((status >= 200 && status < 300) || status === 409) resolve({ kind: 'accepted', message: msg });
          else if (status >= 400 && status < 500 && status !== 429 && status !== 408) resolve({ kind: 'rejected', message: msg });
          else reject(new TransientDriverError(`webhook ${this.cfg.url}: ${msg}`));
        });
      });
      req.on('timeout', () => req.destroy(new TransientDriverError(`webhook ${this.cfg.url}: no answer within ${this.cfg.timeoutMs} ms`)));
      req.on('error', (err) => reject(err instanceof TransientDriverError ? err : new TransientDriverError(`webhook ${this.cfg.url}: ${err.message}`)));
      req.end(body);
    });
  }
}
