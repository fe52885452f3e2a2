import { connect } from 'node:tls';
import type { V1PodList } from '@kubernetes/client-node';
import { hostOf } from './inventory.ts';
import { mapLimitSettled } from './map-limit.ts';

/**
 * Where a server's identity Lease carries no address (the peer-advertise annotation exists only with the
 * proxy gate on), the join needs another way from hostname to address. Two sources, in order:
 *  1. kubeadm's mirror pods: `kube-system/kube-apiserver-<node>` carry the annotation
 *     `kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint` and `spec.nodeName`;
 *  2. the serving certificate: kubeadm (and our e2e harness) put the node's hostname in the apiserver
 *     cert's DNS SANs, so a TLS handshake with each endpoint address names its host.
 */
const KUBEADM_ENDPOINT = 'kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint';

export function hintsFromMirrorPods(pods: V1PodList): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of pods.items) {
    const ep = p.metadata?.annotations?.[KUBEADM_ENDPOINT];
    const node = p.spec?.nodeName;
    if (ep && node) out.set(node, ep);
  }
  return out;
}

/** DNS names in a server's certificate, from a handshake that verifies nothing and sends nothing; the whole handshake has `timeoutMs`. */
export function certificateDnsNames(address: string, timeoutMs = 3000): Promise<string[]> {
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) return Promise.reject(new RangeError(`certificateDnsNames: timeoutMs must be positive, got ${timeoutMs}`));
  const host = hostOf(address);
  const port = Number(address.slice(address.lastIndexOf(':') + 1)) || 443;
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (err: Error | undefined, names?: string[]) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(names ?? []);
    };
    // Only the certificate's names are read; no request is sent, so skipping verification leaks nothing.
    const socket = connect({ host, port, rejectUnauthorized: false, servername: 'kubernetes.default.svc' }, () => {
      const cert = socket.getPeerCertificate();
      if (!cert || Object.keys(cert).length === 0) return settle(new Error(`TLS handshake with ${address}: no certificate`));
      const san = cert.subjectaltname ?? '';
      settle(undefined, san.split(',').map((x) => x.trim()).filter((x) => x.startsWith('DNS:')).map((x) => x.slice(4)));
    });
    // A deadline for the whole handshake (not an idle timeout).
    const timer = setTimeout(() => settle(new Error(`TLS handshake with ${address} timed out after ${timeoutMs}ms`)), timeoutMs);
    socket.on('error', (err) => settle(err));
    socket.on('close', () => settle(new Error(`TLS handshake with ${address}: connection closed`)));
  });
}

/** Looks up a certificate's DNS names by address. Only the address is passed: nothing else may leak in as an argument. */
export type DnsNamesFn = (address: string) => Promise<string[]>;

/** Maps each wanted hostname to the one address whose certificate names it (ambiguous matches are dropped). */
export async function hintsFromCertificates(addresses: readonly string[], hostnames: readonly string[], dnsNames: DnsNamesFn = certificateDnsNames): Promise<Map<string, string>> {
  // `(address) => dnsNames(address)`, not `dnsNames`: mapLimitSettled passes the index as a second argument,
  // which certificateDnsNames took as its timeout (0, 1, 2 ms...): every address but the first failed under load.
  const names = await mapLimitSettled(addresses, 4, (address) => dnsNames(address));
  const matches = new Map<string, string[]>();
  addresses.forEach((address, i) => {
    const r = names[i];
    if (r?.status !== 'fulfilled') return;
    for (const h of hostnames) if (r.value.includes(h)) matches.set(h, [...(matches.get(h) ?? []), address]);
  });
  const out = new Map<string, string>();
  for (const [h, list] of matches) if (list.length === 1) out.set(h, list[0]!);
  return out;
}

/** certificateDnsNames with memory (see `cachedCertificateDnsNames`). */
export interface CertificateNameCache {
  /** Remembered names of the address, or a handshake when there are none (or they are older than the TTL). */
  (address: string): Promise<string[]>;
  /** A handshake now, whatever is remembered; remembers what it finds. */
  fresh: DnsNamesFn;
}

/**
 * certificateDnsNames with memory: with the gate off every observation needs the hints, but a server's
 * certificate names change only when it is re-issued, so each address is asked once per `ttlMs`. Only a
 * handshake that found names is remembered: a failed one, or a certificate that names nothing, is asked
 * again at the next call. An address may come to belong to another server (a replacement on a reused IP):
 * `hintsFromCertificateCache` asks again whenever the remembered names leave a hostname unresolved.
 */
export function cachedCertificateDnsNames(ttlMs = 5 * 60_000, now: () => number = Date.now, handshake: DnsNamesFn = (address) => certificateDnsNames(address)): CertificateNameCache {
  const seen = new Map<string, { names: string[]; at: number }>();
  const fresh = async (address: string): Promise<string[]> => {
    seen.delete(address);
    const names = await handshake(address);
    if (names.length > 0) seen.set(address, { names, at: now() });
    return names;
  };
  const cached = async (address: string): Promise<string[]> => {
    const hit = seen.get(address);
    if (hit && now() - hit.at < ttlMs) return hit.names;
    return fresh(address);
  };
  return Object.assign(cached, { fresh });
}

/**
 * `hintsFromCertificates` over a cache: remembered names first; when they leave any wanted hostname without
 * exactly one address, every address is asked again, so a remembered certificate never hides a server.
 */
export async function hintsFromCertificateCache(addresses: readonly string[], hostnames: readonly string[], cache: CertificateNameCache): Promise<Map<string, string>> {
  const first = await hintsFromCertificates(addresses, hostnames, cache);
  if (hostnames.every((h) => first.has(h))) return first;
  return hintsFromCertificates(addresses, hostnames, cache.fresh);
}
