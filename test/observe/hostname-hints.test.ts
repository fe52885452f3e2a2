// Hostname hints from serving certificates (the gate-off address fallback), against local TLS servers with
// the certificates of test/observe/tls, and the cache the FleetObserver keeps of them (issue 8, defect 21).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, createSecureContext, type Server } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { cachedCertificateDnsNames, certificateDnsNames, hintsFromCertificateCache, hintsFromCertificates, hintsFromMirrorPods } from '../../src/observe/hostname-hints.ts';
import { tlsMaterial } from './fixture-server.ts';

/**
 * cp-1..cp-3 at 127.0.0.1..3, each answering its ClientHello `delayMs` late, as a busy server (or a busy
 * operator's event loop) does: the handshake then has a pause longer than a millisecond or two.
 */
async function tlsServers(delayMs: number): Promise<{ addresses: string[]; close: () => void }> {
  const servers: Server[] = [];
  const addresses: string[] = [];
  for (const n of [1, 2, 3]) {
    const material = tlsMaterial(n);
    const context = createSecureContext(material);
    const server = createServer({ ...material, SNICallback: (_name, cb) => setTimeout(() => cb(null, context), delayMs) }, (socket) => socket.end());
    await new Promise<void>((resolve) => server.listen(0, `127.0.0.${n}`, resolve));
    servers.push(server);
    addresses.push(`127.0.0.${n}:${(server.address() as AddressInfo).port}`);
  }
  return { addresses, close: () => servers.forEach((s) => s.close()) };
}

describe('certificate hostname hints (issue 8, defect 21)', () => {
  let tls: Awaited<ReturnType<typeof tlsServers>>;
  before(async () => {
    tls = await tlsServers(20);
  });
  after(() => tls.close());

  it('reads the DNS names of a server certificate', async () => {
    assert.deepEqual(await certificateDnsNames(tls.addresses[1]!), ['kubernetes', 'kubernetes.default.svc', 'localhost', 'cp-2']);
  });

  it('defect 21: every address gets the whole handshake deadline (the index of mapLimitSettled was taken as a timeout of 0, 1, 2 ms)', async () => {
    // Before the fix only cp-1 (index 0: no timeout at all) was found; cp-2 and cp-3 timed out after 1 and 2 ms.
    const hints = await hintsFromCertificates(tls.addresses, ['cp-1', 'cp-2', 'cp-3']);
    assert.deepEqual([...hints].sort(), [['cp-1', tls.addresses[0]], ['cp-2', tls.addresses[1]], ['cp-3', tls.addresses[2]]]);
  });

  it('a handshake has one deadline for the whole of it, and a bad deadline is refused', async () => {
    await assert.rejects(certificateDnsNames(tls.addresses[0]!, 5), /timed out after 5ms/);
    await assert.rejects(certificateDnsNames(tls.addresses[0]!, 0), RangeError);
    await assert.rejects(certificateDnsNames('127.0.0.1:1'), /ECONNREFUSED|closed/);
  });

  it('the observer\'s cache over real handshakes finds every server, then answers from memory', async () => {
    let handshakes = 0;
    const cache = cachedCertificateDnsNames(60_000, Date.now, (a) => {
      handshakes++;
      return certificateDnsNames(a);
    });
    const want = ['cp-1', 'cp-2', 'cp-3'];
    assert.equal((await hintsFromCertificateCache(tls.addresses, want, cache)).size, 3);
    assert.equal((await hintsFromCertificateCache(tls.addresses, want, cache)).size, 3);
    assert.equal(handshakes, 3);
  });
});

describe('certificate name cache (issue 8, defect 21)', () => {
  /** A fake handshake: address -> names, or an Error to throw; counts calls per address. */
  const fake = (table: Map<string, string[] | Error>) => {
    const calls = new Map<string, number>();
    const fn = async (address: string): Promise<string[]> => {
      calls.set(address, (calls.get(address) ?? 0) + 1);
      const v = table.get(address);
      if (v instanceof Error || v === undefined) throw v ?? new Error('ECONNREFUSED');
      return v;
    };
    return { fn, calls };
  };
  const A = '10.0.0.1:6443';
  const B = '10.0.0.2:6443';

  it('a failed handshake is not remembered: the server is found at the next observation', async () => {
    const table = new Map<string, string[] | Error>([[A, ['cp-1']], [B, new Error('handshake timed out')]]);
    const { fn } = fake(table);
    const cache = cachedCertificateDnsNames(300_000, () => 0, fn);
    assert.deepEqual([...(await hintsFromCertificateCache([A, B], ['cp-1', 'cp-2'], cache))], [['cp-1', A]]);
    table.set(B, ['cp-2']);
    assert.deepEqual([...(await hintsFromCertificateCache([A, B], ['cp-1', 'cp-2'], cache))].sort(), [['cp-1', A], ['cp-2', B]]);
  });

  it('a certificate that names nothing is not remembered', async () => {
    const table = new Map<string, string[] | Error>([[A, []]]);
    const { fn, calls } = fake(table);
    const cache = cachedCertificateDnsNames(300_000, () => 0, fn);
    assert.deepEqual(await cache(A), []);
    table.set(A, ['cp-1']);
    assert.deepEqual(await cache(A), ['cp-1']);
    assert.deepEqual(await cache(A), ['cp-1']);
    assert.equal(calls.get(A), 2);
  });

  it('an address reused by another server: remembered names that leave a hostname unresolved are asked again', async () => {
    // cp-1 at A is replaced by cp-4 on the same IP (a new machine); cp-2 at B is replaced by cp-5 likewise.
    const table = new Map<string, string[] | Error>([[A, ['cp-1']], [B, ['cp-2']]]);
    const { fn, calls } = fake(table);
    const cache = cachedCertificateDnsNames(300_000, () => 0, fn);
    assert.equal((await hintsFromCertificateCache([A, B], ['cp-1', 'cp-2'], cache)).size, 2);
    table.set(A, ['cp-4']);
    table.set(B, ['cp-5']);
    // Before: the 5-minute memory said cp-1 and cp-2, so cp-4 and cp-5 had no address (and no single
    // leftover endpoint to fall back on) until it expired.
    assert.deepEqual([...(await hintsFromCertificateCache([A, B], ['cp-4', 'cp-5'], cache))].sort(), [['cp-4', A], ['cp-5', B]]);
    assert.deepEqual([calls.get(A), calls.get(B)], [2, 2]);
    // And from memory again afterwards.
    await hintsFromCertificateCache([A, B], ['cp-4', 'cp-5'], cache);
    assert.deepEqual([calls.get(A), calls.get(B)], [2, 2]);
  });

  it('remembered names expire after the TTL', async () => {
    let now = 0;
    const { fn, calls } = fake(new Map([[A, ['cp-1']]]));
    const cache = cachedCertificateDnsNames(1000, () => now, fn);
    await cache(A);
    now = 999;
    await cache(A);
    now = 1000;
    await cache(A);
    assert.equal(calls.get(A), 2);
  });
});

describe('mirror pod hints', () => {
  it('maps a kubeadm mirror pod\'s node to its advertise endpoint', () => {
    const hints = hintsFromMirrorPods({
      items: [
        { metadata: { annotations: { 'kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint': '10.0.0.1:6443' } }, spec: { nodeName: 'cp-1', containers: [] } },
        { metadata: {}, spec: { nodeName: 'cp-2', containers: [] } },
      ],
    });
    assert.deepEqual([...hints], [['cp-1', '10.0.0.1:6443']]);
  });
});
