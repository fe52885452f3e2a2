// The node agent's view of its own kube-apiserver: GET /readyz and /version over HTTPS, 5 s per request, at most
// 64 KiB of body read. The server's certificate is NOT verified (rejectUnauthorized: false), as the script's
// `wget --no-check-certificate` did: the agent runs before, during and after the server's restart, has no CA
// mounted and sends nothing secret; a wrong answer can only make it revert or wait, never write more.
import { request } from 'node:https';

export const PROBE_TIMEOUT_MS = 5000;
export const PROBE_BODY_MAX = 64 * 1024;

export type ProbeResult =
  | { status: number; body: string }
  /** No HTTP answer: `tls` when the TLS handshake itself failed (the agent cannot talk to this server at all). */
  | { error: string; tls: boolean };

/** The base URL of a server: https://ip:port, IPv6 in brackets. */
export function serverUrl(ip: string, port: number): string {
  return `https://${ip.includes(':') ? `[${ip}]` : ip}:${port}`;
}

const TLS_CODES = /^(ERR_SSL_|ERR_TLS_|EPROTO$|ECONNRESET_TLS)/;

function describe(err: NodeJS.ErrnoException): { error: string; tls: boolean } {
  const code = err.code ?? '';
  if (code === 'ECONNREFUSED') return { error: `connection refused (${err.message})`, tls: false };
  const tls = TLS_CODES.test(code) || /\b(SSL|TLS|handshake|alert)\b/i.test(err.message);
  // One line: OpenSSL's messages hold newlines, and this goes into the termination message.
  return { error: `${err.message}${code && !err.message.includes(code) ? ` (${code})` : ''}`.replace(/\s+/g, ' ').trim().slice(0, 300), tls };
}

/** One GET; never rejects. */
export function probe(base: string, path: string): Promise<ProbeResult> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: ProbeResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    const req = request(`${base}${path}`, { method: 'GET', rejectUnauthorized: false, headers: { accept: 'application/json, */*' } }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size >= PROBE_BODY_MAX) return;
        const room = PROBE_BODY_MAX - size;
        chunks.push(c.length > room ? c.subarray(0, room) : c);
        size += Math.min(c.length, room);
        // Enough read: the rest is not wanted.
        if (size >= PROBE_BODY_MAX) {
          finish({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
          req.destroy();
        }
      });
      res.on('end', () => finish({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (err) => finish(describe(err)));
    });
    const timer = setTimeout(() => {
      finish({ error: `no answer within ${PROBE_TIMEOUT_MS / 1000}s`, tls: false });
      req.destroy();
    }, PROBE_TIMEOUT_MS);
    req.on('error', (err) => finish(describe(err)));
    req.end();
  });
}

/** /readyz: undefined when it answered 200, else what it said instead (for the termination message). */
export async function notReady(base: string): Promise<{ why: string; tls: boolean } | undefined> {
  const r = await probe(base, '/readyz');
  if ('error' in r) return { why: r.error, tls: r.tls };
  if (r.status === 200) return undefined;
  // The body is shown cut and printable only: it goes into the termination message, then into status.
  // eslint-disable-next-line no-control-regex
  const said = r.body.replace(/[\x00-\x1f\x7f-\x9f\s]+/g, ' ').trim().slice(0, 200);
  return { why: `HTTP ${r.status}${said ? `: ${said}` : ''}`, tls: false };
}

/** /version's gitVersion, or undefined when it cannot be read. */
export async function gitVersion(base: string): Promise<string | undefined> {
  const r = await probe(base, '/version');
  if ('error' in r || r.status !== 200) return undefined;
  try {
    const v = (JSON.parse(r.body) as { gitVersion?: unknown }).gitVersion;
    return typeof v === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}
