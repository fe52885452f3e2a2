// The kubeadm preflight keeps of each Node only what it reads (src/observe/kubeadm.ts trimNode).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Node } from '@kubernetes/client-node';
import { HOSTNAME_LABEL, trimNode } from '../../src/observe/kubeadm.ts';

test('trimNode keeps the name, resourceVersion, hostname label and kubelet version, and nothing else', () => {
  const full = {
    metadata: { name: 'cp-1', resourceVersion: '42', uid: 'u', labels: { [HOSTNAME_LABEL]: 'cp-1.example', 'node-role.kubernetes.io/control-plane': '' }, annotations: { big: 'x'.repeat(5000) } },
    spec: { podCIDR: '10.0.0.0/24' },
    status: { nodeInfo: { kubeletVersion: 'v1.35.4', kubeProxyVersion: 'v1.35.4', osImage: 'Debian' }, images: [{ names: ['a'], sizeBytes: 1 }] },
  } as unknown as V1Node;
  assert.deepEqual(trimNode(full), { metadata: { name: 'cp-1', resourceVersion: '42', labels: { [HOSTNAME_LABEL]: 'cp-1.example' } }, status: { nodeInfo: { kubeletVersion: 'v1.35.4' } } });
  assert.deepEqual(trimNode({ metadata: { name: 'bare' } }), { metadata: { name: 'bare' } }, 'a Node without the label or a kubelet version: neither is made up');
});
