// What `kubeadm upgrade` compares, without a cluster: the kube-apiserver manifest kubeadm renders for a node
// (`kubeadm init phase control-plane apiserver --dry-run`, the same getAPIServerCommand as `kubeadm upgrade`) and the
// one the operator leaves on that node. Pure: the configurations of the cases, the operator's two calls (the gate
// pass, then the version) on kubeadm's old manifest, and its kubeadm-config edit. e2e/extended/kubeadm-render.e2e.ts
// runs real kubeadm on them; test/agent/kubeadm-equal.test.ts checks the captured renders (test/fixtures/kubeadm-render/).
import { stringify } from 'yaml';
import { editManifest } from '../../src/agent/manifest-edit.ts';
import { editClusterConfiguration, type KubeadmIntent } from '../../src/plan/kubeadm-config.ts';

export const RENDER_NODE = { name: 'cp-1', address: '10.0.0.11', port: 6443 } as const;
export const PEER_CA = '/etc/kubernetes/pki/ca.crt';
const GATE = 'UnknownVersionInteroperabilityProxy';

export interface RenderCase {
  name: string;
  /** ClusterConfiguration's apiServer.extraArgs before the upgrade (v1beta4, in order). */
  extraArgs: { name: string; value: string }[];
  /** The peer address the static Pod driver advertises for the node (the server's address in the fleet). */
  peer: { ip: string; port: number };
}

export const RENDER_CASES: readonly RenderCase[] = [
  // The harness's kubeadm cluster: no extraArgs, the peer address the advertise address.
  { name: 'plain', extraArgs: [], peer: { ip: RENDER_NODE.address, port: RENDER_NODE.port } },
  // extraArgs before the upgrade, feature-gates among them (the gate merged into it on both sides).
  { name: 'extra-args', extraArgs: [{ name: 'feature-gates', value: 'ZGate=true,AGate=false' }, { name: 'audit-log-maxage', value: '7' }, { name: 'profiling', value: 'false' }], peer: { ip: RENDER_NODE.address, port: RENDER_NODE.port } },
  // Peers reach the node at another address: --peer-advertise-* stay, and a per-node kubeadm patch renders them.
  { name: 'peer-patch', extraArgs: [], peer: { ip: '10.0.1.11', port: 16443 } },
];

/** The kubeadm configuration (InitConfiguration + the ClusterConfiguration text) kubeadm renders the node from. */
export function initConfiguration(clusterConfiguration: string, patchesDir?: string): string {
  const init = {
    apiVersion: 'kubeadm.k8s.io/v1beta4',
    kind: 'InitConfiguration',
    localAPIEndpoint: { advertiseAddress: RENDER_NODE.address, bindPort: RENDER_NODE.port },
    nodeRegistration: { name: RENDER_NODE.name, criSocket: 'unix:///run/containerd/containerd.sock' },
    ...(patchesDir === undefined ? {} : { patches: { directory: patchesDir } }),
  };
  return `${stringify(init)}---\n${clusterConfiguration}`;
}

/** ClusterConfiguration as kubeadm-config holds it before the upgrade (the harness's, with the case's extraArgs). */
export function clusterConfiguration(c: RenderCase, version: string): string {
  return stringify({
    apiVersion: 'kubeadm.k8s.io/v1beta4',
    kind: 'ClusterConfiguration',
    kubernetesVersion: version,
    controlPlaneEndpoint: '10.0.0.1:6443',
    imageRepository: 'registry.k8s.io',
    apiServer: c.extraArgs.length > 0 ? { extraArgs: c.extraArgs } : {},
    networking: { serviceSubnet: '10.96.0.0/12', dnsDomain: 'cluster.local' },
    dns: { disabled: true },
    proxy: { disabled: true },
  });
}

/** kubeadm-config as the operator leaves it once the upgrade Succeeded with the gate on (kubeadmIntent's result). */
export function operatorClusterConfiguration(text: string, target: string): string {
  const intent: KubeadmIntent = { phase: 'Succeeded', kubernetesVersion: target, featureGates: { [GATE]: true }, extraArgs: { 'peer-ca-file': PEER_CA }, notes: [] };
  const e = editClusterConfiguration(text, intent);
  if (e.kind !== 'updated') throw new Error(`the kubeadm-config edit did not update: ${JSON.stringify(e)}`);
  return e.text;
}

/** The manifest the static Pod driver's agent leaves: the gate pass on the old image, then the version call. */
export function operatorManifest(old: string, c: RenderCase, target: string): string {
  const image = (/^\s*image:\s*(\S+)\s*$/m.exec(old) ?? [])[1];
  if (image === undefined) throw new Error('no image in the manifest');
  const base = { peerCA: PEER_CA, peerIP: c.peer.ip, peerPort: c.peer.port, emulatedVersion: undefined };
  const gated = editManifest(old, { ...base, image, gate: true });
  if (!gated.ok) throw new Error(gated.message);
  const up = editManifest(gated.text, { ...base, image: image.replace(/:[^:/]+$/, `:${target}`), gate: undefined });
  if (!up.ok) throw new Error(up.message);
  return up.text;
}

/**
 * A kubeadm patch (`kube-apiserver+json.json` in the patches folder) that appends the node's peer advertise flags
 * after the extraArgs, where the agent writes them.
 */
export function peerPatch(c: RenderCase): string {
  return JSON.stringify([
    { op: 'add', path: '/spec/containers/0/command/-', value: `--peer-advertise-ip=${c.peer.ip}` },
    { op: 'add', path: '/spec/containers/0/command/-', value: `--peer-advertise-port=${c.peer.port}` },
  ]);
}
