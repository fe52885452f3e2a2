// The trust checks' shell (src/observe/trust.ts, trust-tls.ts): where each server's flags come from (mirror Pod
// first, then the driver's Describe, else unknown with why), and a real TLS handshake with SNI kubernetes.default.svc.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:tls';
import type { AddressInfo } from 'node:net';
import type { V1PodList } from '@kubernetes/client-node';
import { observeTrust, APISERVER_PODS_PATH } from '../../src/observe/trust.ts';
import { peerHandshake } from '../../src/observe/trust-tls.ts';
import { MIRROR_ANNOTATION } from '../../src/observe/trust-flags.ts';
import type { ObservedPeer } from '../../src/plan/observation.ts';

const peer = (hostname: string, address?: string): ObservedPeer => ({ identity: `apiserver-${hostname}`, hostname, ...(address ? { address } : {}), version: 'v1.35.4', ready: true, proxyGate: 'on', stale: false });
const PODS: V1PodList = {
  items: [{ metadata: { name: 'kube-apiserver-cp-1', annotations: { [MIRROR_ANNOTATION]: 'x' } }, spec: { nodeName: 'cp-1', containers: [{ name: 'kube-apiserver', command: ['kube-apiserver', '--requestheader-allowed-names=front-proxy-client'] }] } }],
};

test('flags: the mirror Pod first; no mirror Pod: the driver\'s Describe; neither: unknown saying why', async () => {
  const asked: string[] = [];
  const listed: string[] = [];
  const t = await observeTrust([peer('cp-1', '10.0.0.1:6443'), peer('cp-2', '10.0.0.2:6443'), peer('cp-3')], undefined, {
    list: async <T>(path: string): Promise<T> => {
      listed.push(path);
      return PODS as T;
    },
    describe: async (s) => {
      asked.push(s.hostname);
      return s.hostname === 'cp-2' ? { kind: 'flags', flags: { '--requestheader-allowed-names': '' } } : { kind: 'unknown', message: 'POST https://hook/replace (Describe cp-3): HTTP 404' };
    },
    handshake: async (a) => ({ ok: true, dnsNames: [a] }),
  });
  assert.deepEqual(listed, [APISERVER_PODS_PATH]);
  assert.deepEqual(asked.sort(), ['cp-2', 'cp-3'], 'Describe is asked only where no mirror Pod answers');
  const [a, b, c] = t.servers;
  assert.deepEqual(a!.flags, { source: 'MirrorPod', values: { '--requestheader-allowed-names': 'front-proxy-client' } });
  assert.deepEqual(b!.flags, { source: 'Webhook', values: { '--requestheader-allowed-names': '' } });
  assert.equal(c!.flags.source, 'Unknown');
  assert.match(c!.flags.source === 'Unknown' ? c!.flags.why : '', /no mirror Pod of a kube-apiserver on node cp-3; .*HTTP 404/);
  assert.deepEqual(a!.handshake, { ok: true, dnsNames: ['10.0.0.1:6443'] });
  assert.equal(c!.handshake, undefined, 'no address, no handshake');
});

test('Pods not listable and no Describe: unknown with both reasons', async () => {
  const t = await observeTrust([peer('cp-1', '10.0.0.1:6443')], undefined, {
    list: async () => {
      throw new Error('HTTP 403');
    },
    noDescribe: 'the spec is outside the operator\'s policy: its driver is not called',
    handshake: async () => ({ ok: false, error: 'ECONNREFUSED' }),
  });
  const f = t.servers[0]!.flags;
  assert.equal(f.source, 'Unknown');
  assert.match(f.source === 'Unknown' ? f.why : '', /Pods not listed \(HTTP 403\); the spec is outside the operator's policy/);
});

async function tlsServer(name: string): Promise<{ address: string; close: () => void }> {
  const dir = join(import.meta.dirname, 'tls');
  const s = createServer({ cert: readFileSync(join(dir, `${name}.crt`)), key: readFileSync(join(dir, `${name}.key`)) }, (sock) => sock.end());
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { address: `127.0.0.1:${(s.address() as AddressInfo).port}`, close: () => s.close() };
}

test('peerHandshake: a real TLS server\'s DNS names and validity; a closed port is ok:false, never a throw', async () => {
  const s = await tlsServer('cp-1');
  const hs = await peerHandshake(s.address);
  s.close();
  assert.equal(hs.ok, true);
  if (hs.ok) {
    assert.ok(hs.dnsNames.includes('kubernetes.default.svc'), hs.dnsNames.join(','));
    assert.ok(hs.dnsNames.includes('cp-1'));
    assert.ok(hs.notAfter && Date.parse(hs.notAfter) > Date.now());
  }
  const down = await peerHandshake(s.address, 1000);
  assert.equal(down.ok, false);
  assert.match(down.ok ? '' : down.error, /ECONNREFUSED/);
});
