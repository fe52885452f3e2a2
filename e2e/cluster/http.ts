import { request } from 'node:https';
import { readFileSync } from 'node:fs';
import type { Pki } from './pki.ts';

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const loaded = new WeakMap<Pki, { ca: Buffer; cert: Buffer; key: Buffer }>();

/** The PKI's files, read once per cluster rather than on every request (the traffic client sends 10 a second). */
function material(pki: Pki): { ca: Buffer; cert: Buffer; key: Buffer } {
  let m = loaded.get(pki);
  if (!m) {
    m = { ca: readFileSync(pki.caCert), cert: readFileSync(pki.adminCert), key: readFileSync(pki.adminKey) };
    loaded.set(pki, m);
  }
  return m;
}

/**
 * One HTTPS request as the cluster admin, straight to an address (a server or the balancer).
 * node:https rather than fetch: fetch ignores TLS agents, and tests must verify the real serving certs.
 */
export function adminRequest(pki: Pki, url: string, opts: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number; anonymous?: boolean; newConnection?: boolean } = {}): Promise<HttpResult> {
  const { ca, cert, key } = material(pki);
  const cred = opts.anonymous ? {} : { cert, key };
  return new Promise((resolve, reject) => {
    const req = request(url, { method: opts.method ?? 'GET', headers: opts.headers, ca, ...cred, servername: 'kubernetes.default.svc', timeout: opts.timeoutMs ?? 10_000, ...(opts.newConnection ? { agent: false } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`timeout after ${opts.timeoutMs ?? 10_000} ms: ${url}`)));
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}
