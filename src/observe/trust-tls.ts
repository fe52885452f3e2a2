import { connect } from 'node:tls';
import { hostOf } from './inventory.ts';
import type { ObservedHandshake } from '../plan/trust.ts';
import { PEER_SERVER_NAME } from '../plan/trust.ts';

/**
 * A TLS handshake with a server's peer address as a peer's proxy makes it: SNI `kubernetes.default.svc`. Reads
 * the certificate's DNS names and validity; sends no request, so not verifying the chain leaks nothing (the
 * chain is the peer's --peer-ca-file's business, a file the operator cannot read). Never rejects: a failure is
 * `{ ok: false }` with what failed. `timeoutMs` bounds the whole handshake.
 */
export function peerHandshake(address: string, timeoutMs = 3000): Promise<ObservedHandshake> {
  const host = hostOf(address);
  const port = Number(address.slice(address.lastIndexOf(':') + 1)) || 443;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (r: ObservedHandshake): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const socket = connect({ host, port, rejectUnauthorized: false, servername: PEER_SERVER_NAME }, () => {
      const cert = socket.getPeerCertificate();
      if (!cert || Object.keys(cert).length === 0) return settle({ ok: false, error: 'the server presented no certificate' });
      const dnsNames = (cert.subjectaltname ?? '').split(',').map((x) => x.trim()).filter((x) => x.startsWith('DNS:')).map((x) => x.slice(4));
      const iso = (d: string | undefined): string | undefined => (d && !Number.isNaN(Date.parse(d)) ? new Date(d).toISOString() : undefined);
      const notBefore = iso(cert.valid_from);
      const notAfter = iso(cert.valid_to);
      settle({ ok: true, dnsNames, ...(notBefore ? { notBefore } : {}), ...(notAfter ? { notAfter } : {}) });
    });
    const timer = setTimeout(() => settle({ ok: false, error: `no TLS handshake within ${timeoutMs} ms` }), timeoutMs);
    socket.on('error', (err: NodeJS.ErrnoException) => settle({ ok: false, error: err.code ? `${err.code}: ${err.message}` : err.message }));
    socket.on('close', () => settle({ ok: false, error: 'connection closed during the handshake' }));
  });
}
