// The nodes mode's Pod network configs (e2e/cluster/nodes/kubeadm-layout.ts): pure, checked here; the network
// itself end to end in e2e/pod-network.e2e.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { cniConflist, kubeProxyConfig, POD_CIDR, podSubnet } from '../../e2e/cluster/nodes/kubeadm-layout.ts';
import { SERVICE_CIDR } from '../../e2e/cluster/apiserver-flags.ts';

function range(cidr: string): [number, number] {
  const [net, bits] = cidr.split('/');
  const n = net!.split('.').reduce((x, o) => x * 256 + Number(o), 0);
  const size = 2 ** (32 - Number(bits));
  return [n - (n % size), n - (n % size) + size - 1];
}
const overlap = (a: string, b: string): boolean => {
  const [a0, a1] = range(a);
  const [b0, b1] = range(b);
  return a0 <= b1 && b0 <= a1;
};

test('Pod subnets: one /24 per node inside the Pod CIDR, apart from the harness\'s 10.77.x bridges and the Service range', () => {
  assert.equal(podSubnet(0), '10.244.0.0/24');
  assert.equal(podSubnet(2), '10.244.2.0/24');
  assert.throws(() => podSubnet(256));
  for (const i of [0, 1, 2, 255]) assert.ok(overlap(podSubnet(i), POD_CIDR) && range(podSubnet(i))[0] >= range(POD_CIDR)[0]);
  assert.ok(!overlap(podSubnet(0), podSubnet(1)));
  assert.ok(!overlap(POD_CIDR, '10.77.0.0/16'), 'not the nodes\' addresses');
  assert.ok(!overlap(POD_CIDR, SERVICE_CIDR), 'not the Service range');
});

test('CNI conflist: a gateway bridge with masquerade and host-local addresses from the node\'s subnet, state under /var/lib/cni', () => {
  const c = JSON.parse(cniConflist({ subnet: podSubnet(1) })) as { cniVersion: string; plugins: { type: string; isGateway?: boolean; ipMasq?: boolean; ipam?: { type: string; ranges: { subnet: string }[][]; dataDir: string } }[] };
  assert.equal(c.cniVersion, '1.0.0', 'what containerd 1.6\'s libcni speaks');
  const bridge = c.plugins.find((p) => p.type === 'bridge')!;
  assert.equal(bridge.isGateway, true);
  assert.equal(bridge.ipMasq, true, 'Pods reach other nodes\' addresses (the apiservers) as their node');
  assert.equal(bridge.ipam?.type, 'host-local');
  assert.deepEqual(bridge.ipam?.ranges, [[{ subnet: '10.244.1.0/24' }]]);
  assert.equal(bridge.ipam?.dataDir, '/var/lib/cni/networks');
});

test('kube-proxy config: iptables mode, the Pod CIDR, conntrack left alone (nf_conntrack_max is not per network namespace)', () => {
  const k = parse(kubeProxyConfig({ name: 'cp-2', kubeconfig: '/x/kubeconfig.conf' })) as Record<string, unknown> & { conntrack: Record<string, unknown>; clientConnection: { kubeconfig: string } };
  assert.equal(k.kind, 'KubeProxyConfiguration');
  assert.equal(k.mode, 'iptables');
  assert.equal(k.clusterCIDR, POD_CIDR);
  assert.equal(k.hostnameOverride, 'cp-2');
  assert.equal(k.clientConnection.kubeconfig, '/x/kubeconfig.conf');
  assert.equal(k.conntrack.maxPerCore, 0);
  assert.equal(k.conntrack.tcpEstablishedTimeout, '0s');
  assert.equal(k.conntrack.tcpCloseWaitTimeout, '0s');
});
