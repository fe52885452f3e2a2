// Flag parsing from the command shapes kube-apiservers are really started with: kubeadm's static Pod (every
// flag in `command` as --name=value), `args` with --name value, and the webhook's Describe answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod, V1PodList } from '@kubernetes/client-node';
import { flagsFromDescribe, flagsFromPod, mirrorPodFor, parseCommandFlags, MIRROR_ANNOTATION } from '../../src/observe/trust-flags.ts';

/** A kubeadm v1.35 control-plane node's kube-apiserver mirror Pod, as `kubectl get pod -o yaml` shows it (trimmed). */
const KUBEADM_COMMAND = [
  'kube-apiserver',
  '--advertise-address=10.0.0.11',
  '--allow-privileged=true',
  '--authorization-mode=Node,RBAC',
  '--client-ca-file=/etc/kubernetes/pki/ca.crt',
  '--enable-admission-plugins=NodeRestriction',
  '--enable-bootstrap-token-auth=true',
  '--etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt',
  '--etcd-servers=https://127.0.0.1:2379',
  '--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname',
  '--proxy-client-cert-file=/etc/kubernetes/pki/front-proxy-client.crt',
  '--proxy-client-key-file=/etc/kubernetes/pki/front-proxy-client.key',
  '--requestheader-allowed-names=front-proxy-client',
  '--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt',
  '--requestheader-extra-headers-prefix=X-Remote-Extra-',
  '--requestheader-group-headers=X-Remote-Group',
  '--requestheader-username-headers=X-Remote-User',
  '--secure-port=6443',
  '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
  '--service-cluster-ip-range=10.96.0.0/12',
  '--tls-cert-file=/etc/kubernetes/pki/apiserver.crt',
  '--tls-private-key-file=/etc/kubernetes/pki/apiserver.key',
];

function mirrorPod(node: string, command: string[], args?: string[], mirror = true): V1Pod {
  return {
    metadata: { name: `kube-apiserver-${node}`, namespace: 'kube-system', labels: { component: 'kube-apiserver', tier: 'control-plane' }, annotations: mirror ? { [MIRROR_ANNOTATION]: 'a1b2c3', 'kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint': '10.0.0.11:6443' } : {} },
    spec: { nodeName: node, containers: [{ name: 'kube-apiserver', image: 'registry.k8s.io/kube-apiserver:v1.35.4', command, ...(args ? { args } : {}) }] },
  };
}

test("kubeadm's --name=value command: every flag, the binary ignored, values with '=' and ',' kept whole", () => {
  const f = parseCommandFlags(KUBEADM_COMMAND);
  assert.equal(f['--requestheader-allowed-names'], 'front-proxy-client');
  assert.equal(f['--proxy-client-cert-file'], '/etc/kubernetes/pki/front-proxy-client.crt');
  assert.equal(f['--kubelet-preferred-address-types'], 'InternalIP,ExternalIP,Hostname');
  assert.equal(f['--service-account-issuer'], 'https://kubernetes.default.svc.cluster.local');
  assert.equal(Object.keys(f).length, KUBEADM_COMMAND.length - 1);
  assert.equal(f['kube-apiserver'], undefined);
  assert.equal(parseCommandFlags(['--feature-gates=UnknownVersionInteroperabilityProxy=true'])['--feature-gates'], 'UnknownVersionInteroperabilityProxy=true');
});

test('--name value, booleans, single-dash long flags and the empty value', () => {
  const f = parseCommandFlags(['/usr/local/bin/kube-apiserver', '--peer-ca-file', '/pki/ca.crt', '--profiling', '--v', '2', '-secure-port=6443', '--requestheader-allowed-names=']);
  assert.deepEqual(f, { '--peer-ca-file': '/pki/ca.crt', '--profiling': 'true', '--v': '2', '--secure-port': '6443', '--requestheader-allowed-names': '' });
  assert.deepEqual(parseCommandFlags(['--anonymous-auth']), { '--anonymous-auth': 'true' });
});

test('a repeated slice flag appends as pflag does; any other flag keeps its last value', () => {
  const f = parseCommandFlags(['--requestheader-allowed-names=front-proxy-client', '--requestheader-allowed-names=', '--requestheader-allowed-names=aggregator', '--v=2', '--v=4']);
  assert.equal(f['--requestheader-allowed-names'], 'front-proxy-client,aggregator');
  assert.equal(f['--v'], '4');
  // Emptied only when never set to a name: pflag's first Set replaces the default, later ones append.
  assert.equal(parseCommandFlags(['--requestheader-allowed-names=', '--requestheader-allowed-names='])['--requestheader-allowed-names'], '');
});

test('mirror Pod: command and args together; matched by node name or by name; only mirror Pods; ambiguity is no match', () => {
  const pod = mirrorPod('cp-1', ['kube-apiserver', '--advertise-address=10.0.0.11'], ['--peer-ca-file', '/etc/kubernetes/pki/ca.crt']);
  assert.deepEqual(flagsFromPod(pod), { '--advertise-address': '10.0.0.11', '--peer-ca-file': '/etc/kubernetes/pki/ca.crt' });
  const list: V1PodList = { items: [pod, mirrorPod('cp-2', KUBEADM_COMMAND), mirrorPod('cp-3', KUBEADM_COMMAND, undefined, false)] };
  assert.equal(mirrorPodFor(list, 'cp-1')?.metadata?.name, 'kube-apiserver-cp-1');
  assert.equal(mirrorPodFor(list, 'CP-2')?.metadata?.name, 'kube-apiserver-cp-2', 'node names are lowercased hostnames');
  assert.equal(mirrorPodFor(list, 'cp-3'), undefined, 'a Pod without the mirror annotation is not what the kubelet runs');
  assert.equal(mirrorPodFor({ items: [pod, pod] }, 'cp-1'), undefined);
  assert.equal(flagsFromPod({ spec: { containers: [{ name: 'a' }, { name: 'b' }] } }), undefined);
});

test('Describe answers: flags of strings, dashes normalized; anything else is undefined (unknown)', () => {
  assert.deepEqual(flagsFromDescribe({ flags: { '--peer-ca-file': '/ca.crt', 'requestheader-allowed-names': '' } }), { '--peer-ca-file': '/ca.crt', '--requestheader-allowed-names': '' });
  for (const bad of [null, 'x', {}, { flags: [] }, { flags: { '--v': 2 } }, { flags: { '--': 'x' } }]) assert.equal(flagsFromDescribe(bad), undefined, JSON.stringify(bad));
});
