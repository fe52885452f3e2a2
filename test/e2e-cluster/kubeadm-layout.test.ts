import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { apiServerManifest, controllerManagerManifest, kubeletConfig, MANIFESTS_DIR, schedulerManifest } from '../../e2e/cluster/nodes/kubeadm-layout.ts';

const node = { name: 'cp-1', address: '10.77.9.11', version: 'v1.35.4', repository: 'registry.auo.test/k8s', etcdUrl: 'http://10.77.9.1:2379', featureGates: {} };
interface PodDoc { metadata: { name: string; namespace: string; labels: Record<string, string> }; spec: { hostNetwork: boolean; containers: { image: string; command: string[] }[] } }

test('kube-apiserver static Pod: kubeadm labels, the mirror image, one flag per line after a lone `- kube-apiserver` (what the node agent edits)', () => {
  const text = apiServerManifest(node);
  const pod = parse(text) as PodDoc;
  assert.equal(pod.metadata.name, 'kube-apiserver');
  assert.equal(pod.metadata.namespace, 'kube-system');
  assert.deepEqual(pod.metadata.labels, { component: 'kube-apiserver', tier: 'control-plane' });
  assert.equal(pod.spec.hostNetwork, true);
  assert.equal(pod.spec.containers[0]!.image, 'registry.auo.test/k8s/kube-apiserver:v1.35.4');
  assert.match(text, /^\s*image: registry\.auo\.test\/k8s\/kube-apiserver:v1\.35\.4$/m);
  assert.match(text, /^(\s*)- kube-apiserver\n\1- --/m);
  const cmd = pod.spec.containers[0]!.command;
  assert.ok(cmd.includes('--authorization-mode=Node,RBAC'), 'Node authorization: kubelets register Nodes and mirror Pods');
  assert.equal(cmd.filter((f) => f.startsWith('--authorization-mode')).length, 1, 'the default is overridden, not repeated');
  assert.ok(cmd.includes('--tls-cert-file=/etc/kubernetes/pki/apiserver.crt'), 'kubeadm PKI paths');
  assert.ok(!cmd.some((f) => f.startsWith('--peer-')), 'gate off on v1.35: no peer flags (startup would fail)');
});

test('with the gate on, the peer flags name the node address and kubeadm\'s CA', () => {
  const cmd = (parse(apiServerManifest({ ...node, featureGates: { UnknownVersionInteroperabilityProxy: true } })) as PodDoc).spec.containers[0]!.command;
  assert.ok(cmd.includes('--peer-ca-file=/etc/kubernetes/pki/ca.crt'));
  assert.ok(cmd.includes('--peer-advertise-ip=10.77.9.11'));
});

test('controller-manager and scheduler: kubeadm names, images from the same mirror', () => {
  for (const [text, name] of [[controllerManagerManifest(node), 'kube-controller-manager'], [schedulerManifest(node), 'kube-scheduler']] as const) {
    const pod = parse(text) as PodDoc;
    assert.equal(pod.metadata.name, name);
    assert.equal(pod.spec.containers[0]!.image, `registry.auo.test/k8s/${name}:v1.35.4`);
    assert.ok(pod.spec.containers[0]!.command.includes('--leader-elect=true'));
  }
});

test('kubelet config: cgroup v1 accepted, static Pods from kubeadm\'s folder, eviction and image GC off', () => {
  const c = parse(kubeletConfig({ containerdSocket: '/x/containerd.sock', address: '10.77.9.11' })) as Record<string, unknown>;
  assert.equal(c.failCgroupV1, false);
  assert.equal(c.staticPodPath, MANIFESTS_DIR);
  assert.equal(c.containerRuntimeEndpoint, 'unix:///x/containerd.sock');
  assert.equal(c.imageGCHighThresholdPercent, 100);
  assert.deepEqual(c.evictionHard, { 'memory.available': '0%', 'nodefs.available': '0%', 'imagefs.available': '0%', 'nodefs.inodesFree': '0%' });
});
