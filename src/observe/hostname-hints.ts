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

/** DNS names in a server's certificate, from a handshake that verifies nothing and sends nothing. */
export function certificateDnsNames(address: string, timeoutMs = 3000): Promise<string[]> {
  const host = hostOf(address);
  const port = Number(address.slice(address.lastIndexOf(':') + 1)) || 443;
  return new Promise((resolve, reject) => {
    // Only the certificate's names are read; no request is sent, so skipping verification leaks nothing.
    const socket = connect({ host, port, rejectUnauthorized: false, timeout: timeoutMs, servername: 'kubernetes.default.svc' }, () => {
      const san = socket.getPeerCertificate().subjectaltname ?? '';
      socket.destroy();
      resolve(san.split(',').map((s) => s.trim()).filter((s) => s.startsWith('DNS:')).map((s) => s.slice(4)));
    });
    socket.on('timeout', () => socket.destroy(new Error(`TLS handshake with ${address} timed out`)));
    socket.on('error', reject);
  });
}

/** Maps each wanted hostname to the one address whose certificate names it (ambiguous matches are dropped). */
export async function hintsFromCertificates(addresses: readonly string[], hostnames: readonly string[], dnsNames: (address: string) => Promise<string[]> = certificateDnsNames): Promise<Map<string, string>> {
  const names = await mapLimitSettled(addresses, 4, dnsNames);
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

/**
 * certificateDnsNames with memory: with the gate off every observation needs the hints, but a server's
 * certificate names change only when it is re-issued, so each address is asked once per `ttlMs`.
 */
export function cachedCertificateDnsNames(ttlMs = 5 * 60_000, now: () => number = Date.now): (address: string) => Promise<string[]> {
  const seen = new Map<string, { names: string[]; at: number }>();
  return async (address) => {
    const hit = seen.get(address);
    if (hit && now() - hit.at < ttlMs) return hit.names;
    const names = await certificateDnsNames(address);
    seen.set(address, { names, at: now() });
    return names;
  };
}
