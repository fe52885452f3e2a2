// Requests as someone other than the cluster admin: a user with a client certificate of the cluster CA, or the
// front-proxy client (the certificate kube-apiserver presents when it proxies, trusted to assert any user).
import { request } from 'node:https';
import { readFileSync } from 'node:fs';
import type { Cluster, HttpResult } from '../cluster/index.ts';
import { createClientCert } from '../cluster/pki.ts';

export interface Credentials {
  /** What the credentials say the caller is, for messages. */
  label: string;
  cert: Buffer;
  key: Buffer;
  /** Headers sent on every request (the front-proxy's X-Remote-User and X-Remote-Group). */
  headers?: Record<string, string>;
}

/** A user of the cluster CA: CN = `user`, O = each group. */
export async function userCredentials(cluster: Cluster, user: string, groups: string[] = []): Promise<Credentials> {
  const c = await createClientCert(cluster.pki, user.replace(/[^a-z0-9-]/gi, '-'), user, groups);
  return { label: user, cert: readFileSync(c.cert), key: readFileSync(c.key) };
}

/**
 * The front-proxy client certificate itself (CN front-proxy-client, signed by the front-proxy CA), asserting
 * `user` through the request headers as a proxying kube-apiserver does; `user` undefined sends no header.
 */
export function frontProxyCredentials(cluster: Cluster, user?: string, groups: string[] = []): Credentials {
  const headers: Record<string, string> = {};
  if (user !== undefined) headers['X-Remote-User'] = user;
  if (groups.length > 0) headers['X-Remote-Group'] = groups.join(',');
  return { label: `front-proxy-client${user === undefined ? '' : ` as ${user}`}`, cert: readFileSync(cluster.pki.proxyClientCert), key: readFileSync(cluster.pki.proxyClientKey), headers };
}

/** One HTTPS request with `who`'s certificate to server i (its own address) or the balancer ('lb'); the serving cert is verified. */
export function requestAs(cluster: Cluster, who: Credentials, i: number | 'lb', path: string, opts: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {}): Promise<HttpResult> {
  const url = (i === 'lb' ? cluster.lbUrl : cluster.server(i).url) + path;
  const ca = readFileSync(cluster.pki.caCert);
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: opts.method ?? 'GET', headers: { ...who.headers, ...opts.headers }, ca, cert: who.cert, key: who.key,
      servername: 'kubernetes.default.svc', timeout: opts.timeoutMs ?? 10_000, agent: false,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${url}`)));
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}
