// What the kubeadm preflight reads of each server's mirror Pod (src/observe/kubeadm.ts): its node and the image of its
// kube-apiserver container — the repository the static Pod driver keeps when the spec names none, which preflight
// judges against the operator's policy (src/plan/kubeadm-preflight.ts apiserverImageFindings).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { apiserverImageOf, observeKubeadm, NODES_PATH } from '../../src/observe/kubeadm.ts';
import { MIRROR_ANNOTATION } from '../../src/observe/trust-flags.ts';
import type { ObservedPeer } from '../../src/plan/observation.ts';

function pod(node: string, containers: { name?: string; image?: string }[]): V1Pod {
  return { metadata: { name: `kube-apiserver-${node}`, namespace: 'kube-system', annotations: { [MIRROR_ANNOTATION]: 'x' } }, spec: { nodeName: node, containers: containers as V1Container[] } };
}

test('apiserverImageOf: the kube-apiserver container\'s image, or the only container\'s; none otherwise', () => {
  assert.equal(apiserverImageOf(pod('cp-1', [{ name: 'sidecar', image: 'x:1' }, { name: 'kube-apiserver', image: ' registry.k8s.io/kube-apiserver:v1.35.4 ' }])), 'registry.k8s.io/kube-apiserver:v1.35.4');
  assert.equal(apiserverImageOf(pod('cp-1', [{ name: 'apiserver', image: 'mirror.example/k8s/kube-apiserver:v1.35.4' }])), 'mirror.example/k8s/kube-apiserver:v1.35.4');
  assert.equal(apiserverImageOf(pod('cp-1', [{ name: 'a', image: 'x:1' }, { name: 'b', image: 'y:1' }])), undefined, 'two containers, none named kube-apiserver: which one is unknown');
  assert.equal(apiserverImageOf(pod('cp-1', [{ name: 'kube-apiserver', image: '  ' }])), undefined);
  assert.equal(apiserverImageOf(pod('cp-1', [])), undefined);
});

test('observeKubeadm: each server\'s mirror Pod with the image it runs', async () => {
  const peers = [{ hostname: 'cp-1', address: '10.0.0.1:6443' }, { hostname: 'cp-2', address: '10.0.0.2:6443' }] as ObservedPeer[];
  const pods = [pod('cp-1', [{ name: 'kube-apiserver', image: 'registry.example.internal/k8s/kube-apiserver:v1.35.4' }]), pod('cp-2', [{ name: 'a', image: 'x:1' }, { name: 'b', image: 'y:1' }])];
  const observed = await observeKubeadm(peers, {
    get: async <T>(): Promise<T> => ({}) as T,
    list: async <T>(path: string): Promise<T[]> => (path === NODES_PATH ? [] : pods) as T[],
    serverGet: async () => ({ status: 200, body: 'ok' }),
    serverMetrics: async () => new Map(),
    handshake: async () => ({ ok: true, dnsNames: [] }),
    always: true,
  });
  assert.deepEqual(observed.servers?.map((s) => s.mirrorPod), [
    { name: 'kube-apiserver-cp-1', nodeName: 'cp-1', image: 'registry.example.internal/k8s/kube-apiserver:v1.35.4' },
    { name: 'kube-apiserver-cp-2', nodeName: 'cp-2' },
  ]);
});
