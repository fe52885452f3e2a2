// What one control-plane node holds, laid out as kubeadm lays it out: the paths are the node's own view (its
// mount namespace binds <node root>/etc/kubernetes onto /etc/kubernetes), so manifests, kubeconfigs and the
// driver's defaults (staticPod.manifestPath, backupDir, peerCAFile) are kubeadm's literally. Pure: tested by
// test/e2e-cluster/kubeadm-layout.test.ts.
import { stringify } from 'yaml';
import { apiServerFlags, SECURE_PORT } from '../apiserver-flags.ts';
import type { Pki } from '../pki.ts';

export const K8S_DIR = '/etc/kubernetes';
export const PKI_DIR = `${K8S_DIR}/pki`;
export const MANIFESTS_DIR = `${K8S_DIR}/manifests`;
export const KUBELET_DIR = '/var/lib/kubelet';

/** The cluster PKI as every node sees it (kubeadm's file names). */
export const NODE_PKI: Pki = {
  dir: PKI_DIR,
  caCert: `${PKI_DIR}/ca.crt`,
  caKey: `${PKI_DIR}/ca.key`,
  frontProxyCaCert: `${PKI_DIR}/front-proxy-ca.crt`,
  proxyClientCert: `${PKI_DIR}/front-proxy-client.crt`,
  proxyClientKey: `${PKI_DIR}/front-proxy-client.key`,
  saKey: `${PKI_DIR}/sa.key`,
  saPub: `${PKI_DIR}/sa.pub`,
  adminCert: `${PKI_DIR}/admin.crt`,
  adminKey: `${PKI_DIR}/admin.key`,
};

export interface NodeLayoutInput {
  name: string;
  address: string;
  version: string;
  /** Repository of the control-plane images, e.g. registry.auo.test/k8s (a private mirror: the upgrade must keep it). */
  repository: string;
  etcdUrl: string;
  featureGates: Record<string, boolean>;
  extraFlags?: string[];
}

function hostPathVolume(name: string, path: string, type: string): Record<string, unknown> {
  return { name, hostPath: { path, type } };
}

function probe(path: string, address: string, port: number, failureThreshold: number): Record<string, unknown> {
  return { httpGet: { host: address, path, port, scheme: 'HTTPS' }, initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 15, failureThreshold };
}

function staticPod(component: string, image: string, command: string[], probes: Record<string, unknown>, volumes: { name: string; path: string; type: string; readOnly: boolean }[]): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: component, namespace: 'kube-system', labels: { component, tier: 'control-plane' } },
    spec: {
      hostNetwork: true,
      priority: 2000001000,
      priorityClassName: 'system-node-critical',
      securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
      containers: [{
        name: component,
        image,
        imagePullPolicy: 'IfNotPresent',
        command,
        ...probes,
        resources: { requests: { cpu: '100m' } },
        volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: v.path, readOnly: v.readOnly })),
      }],
      volumes: volumes.map((v) => hostPathVolume(v.name, v.path, v.type)),
    },
  });
}

/**
 * kube-apiserver's static Pod, as `kubeadm init` writes it: the command holds every flag (one per line, so the
 * agent's line edits apply), the image is `<repository>/kube-apiserver:<version>`, probes on the advertise address.
 * Node,RBAC authorization and NodeRestriction admission, as kubeadm: the kubelets register Nodes and mirror Pods.
 */
export function apiServerManifest(n: NodeLayoutInput): string {
  const flags = apiServerFlags({
    version: n.version, address: n.address, etcdUrl: n.etcdUrl, pki: NODE_PKI,
    serving: { cert: `${PKI_DIR}/apiserver.crt`, key: `${PKI_DIR}/apiserver.key` },
    featureGates: n.featureGates,
    extraFlags: [
      '--authorization-mode=Node,RBAC', '--enable-admission-plugins=NodeRestriction',
      // As kubeadm: the apiserver reaches a kubelet (kubectl logs/exec) by the Node's InternalIP with its own client
      // certificate; by hostname it would need DNS for the node names, which neither kubeadm nor this harness has.
      `--kubelet-client-certificate=${PKI_DIR}/apiserver-kubelet-client.crt`, `--kubelet-client-key=${PKI_DIR}/apiserver-kubelet-client.key`,
      '--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname',
      '--v=1', ...(n.extraFlags ?? [])],
  });
  return staticPod('kube-apiserver', `${n.repository}/kube-apiserver:${n.version}`, ['kube-apiserver', ...flags], {
    readinessProbe: { ...probe('/readyz', n.address, SECURE_PORT, 3), initialDelaySeconds: 0, periodSeconds: 1 },
    startupProbe: probe('/livez', n.address, SECURE_PORT, 24),
  }, [
    { name: 'k8s-certs', path: PKI_DIR, type: 'DirectoryOrCreate', readOnly: true },
    { name: 'ca-certs', path: '/etc/ssl/certs', type: 'DirectoryOrCreate', readOnly: true },
  ]);
}

/** kube-controller-manager's static Pod (kubeadm's flags; its kubeconfig names this node's own apiserver). */
export function controllerManagerManifest(n: Pick<NodeLayoutInput, 'repository'> & { version: string }): string {
  const conf = `${K8S_DIR}/controller-manager.conf`;
  return staticPod('kube-controller-manager', `${n.repository}/kube-controller-manager:${n.version}`, [
    'kube-controller-manager',
    `--authentication-kubeconfig=${conf}`,
    `--authorization-kubeconfig=${conf}`,
    '--bind-address=127.0.0.1',
    `--client-ca-file=${NODE_PKI.caCert}`,
    '--cluster-name=kubernetes',
    `--cluster-signing-cert-file=${NODE_PKI.caCert}`,
    `--cluster-signing-key-file=${NODE_PKI.caKey}`,
    '--controllers=*,bootstrapsigner,tokencleaner',
    `--kubeconfig=${conf}`,
    '--leader-elect=true',
    `--requestheader-client-ca-file=${NODE_PKI.frontProxyCaCert}`,
    `--root-ca-file=${NODE_PKI.caCert}`,
    `--service-account-private-key-file=${NODE_PKI.saKey}`,
    '--use-service-account-credentials=true',
    '--v=1',
  ], {}, [
    { name: 'k8s-certs', path: PKI_DIR, type: 'DirectoryOrCreate', readOnly: true },
    { name: 'kubeconfig', path: conf, type: 'FileOrCreate', readOnly: true },
  ]);
}

/** kube-scheduler's static Pod (kubeadm's flags). */
export function schedulerManifest(n: Pick<NodeLayoutInput, 'repository'> & { version: string }): string {
  const conf = `${K8S_DIR}/scheduler.conf`;
  return staticPod('kube-scheduler', `${n.repository}/kube-scheduler:${n.version}`, [
    'kube-scheduler',
    `--authentication-kubeconfig=${conf}`,
    `--authorization-kubeconfig=${conf}`,
    '--bind-address=127.0.0.1',
    `--kubeconfig=${conf}`,
    '--leader-elect=true',
    '--v=1',
  ], {}, [
    // kubeadm embeds the client certificate in scheduler.conf; ours names it by path under pki/, so the Pod mounts
    // it (without it the scheduler crash-looped and nothing but node-pinned Pods ever ran).
    { name: 'k8s-certs', path: PKI_DIR, type: 'DirectoryOrCreate', readOnly: true },
    { name: 'kubeconfig', path: conf, type: 'FileOrCreate', readOnly: true },
  ]);
}

/**
 * The kubelet's config, from the measured recipe (shared/kubelet-notes): cgroup v1 accepted (failCgroupV1: false),
 * cgroupfs, no QoS cgroups or allocatable enforcement, eviction and image GC off (a test node must never evict its
 * control plane or delete its imported images), manifests re-read every second.
 */
export function kubeletConfig(o: { containerdSocket: string; address: string }): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    staticPodPath: MANIFESTS_DIR,
    fileCheckFrequency: '1s',
    syncFrequency: '10s',
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    cgroupsPerQOS: false,
    enforceNodeAllocatable: [],
    failSwapOn: false,
    containerRuntimeEndpoint: `unix://${o.containerdSocket}`,
    imageServiceEndpoint: `unix://${o.containerdSocket}`,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: false }, x509: { clientCAFile: NODE_PKI.caCert } },
    authorization: { mode: 'AlwaysAllow' },
    address: o.address,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    evictionHard: { 'memory.available': '0%', 'nodefs.available': '0%', 'imagefs.available': '0%', 'nodefs.inodesFree': '0%' },
    resolvConf: '',
    localStorageCapacityIsolation: false,
    volumePluginDir: `${KUBELET_DIR}/volume-plugins`,
    registerNode: true,
    nodeStatusReportFrequency: '10s',
  });
}

/** containerd 1.6's config for one node: its own root, state, socket and runc root under the node's folder. */
/**
 * A node's containerd config. The CRI plugin's registry config_path is the node's certs.d folder (hosts.toml per
 * registry, containerd >= 1.5): empty, pulls go where the names say; with the harness registry's mirrors written
 * there (registry.ts writeMirrorHosts), ghcr.io, registry.k8s.io, ... are pulled from it.
 */
export function containerdConfig(o: { root: string; pauseImage: string }): string {
  return [
    'version = 2',
    `root = "${o.root}/containerd/root"`,
    `state = "${o.root}/containerd/state"`,
    '[grpc]',
    `  address = "${o.root}/containerd/containerd.sock"`,
    '[ttrpc]',
    `  address = "${o.root}/containerd/containerd.sock.ttrpc"`,
    '[metrics]',
    '  address = ""',
    '[plugins]',
    '  [plugins."io.containerd.grpc.v1.cri"]',
    `    sandbox_image = "${o.pauseImage}"`,
    '    disable_apparmor = true',
    '    restrict_oom_score_adj = true',
    '    enable_selinux = false',
    '    [plugins."io.containerd.grpc.v1.cri".containerd]',
    '      snapshotter = "overlayfs"',
    '      default_runtime_name = "runc"',
    '      discard_unpacked_layers = false',
    '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]',
    '        runtime_type = "io.containerd.runc.v2"',
    '        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]',
    '          SystemdCgroup = false',
    '          BinaryName = "/usr/sbin/runc"',
    `          Root = "${o.root}/containerd/runc"`,
    '    [plugins."io.containerd.grpc.v1.cri".registry]',
    `      config_path = "${registryConfigPath(o.root)}"`,
    '    [plugins."io.containerd.grpc.v1.cri".cni]',
    `      bin_dir = "${o.root}/cni/bin"`,
    `      conf_dir = "${o.root}/cni/net.d"`,
    '',
  ].join('\n');
}

/** The node's containerd registry config folder (certs.d: <registry host>/hosts.toml). */
export function registryConfigPath(root: string): string {
  return `${root}/containerd/certs.d`;
}

// ---------------------------------------------------------------------------------------------------------
// Pod network: the reference CNI plugins and kube-proxy, as a kubeadm cluster with a simple CNI has them.

/** The cluster's Pod CIDR (kubeadm's `networking.podSubnet` as flannel's manifests use it); apart from the harness's 10.77.x and the Service range. */
export const POD_CIDR = '10.244.0.0/16';
/** Node i's Pod subnet (host-local IPAM hands out its addresses): 10.244.<i>.0/24, as --allocate-node-cidrs would give node i. */
export function podSubnet(index: number): string {
  if (!Number.isInteger(index) || index < 0 || index > 255) throw new Error(`no Pod subnet for node index ${index}`);
  return `10.244.${index}.0/24`;
}

/** Where the CNI plugins' state goes inside a node (the node's folder is bound there): host-local's leases, libcni's cache. */
export const CNI_STATE_DIR = '/var/lib/cni';

/**
 * The node's CNI network (containerd reads `<node>/cni/net.d`): a `cni0` bridge in the node's network namespace
 * that is the Pods' gateway, host-local addresses from the node's subnet, and masquerade of what leaves the subnet
 * (ipMasq), so a Pod reaches other nodes' addresses (the apiservers behind the `kubernetes` Service) as the node.
 * portmap serves hostPort, as kubeadm's usual CNIs do.
 */
export function cniConflist(o: { subnet: string }): string {
  return `${JSON.stringify({
    cniVersion: '1.0.0',
    name: 'auo-pods',
    plugins: [
      {
        type: 'bridge',
        bridge: 'cni0',
        isGateway: true,
        ipMasq: true,
        hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: o.subnet }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: `${CNI_STATE_DIR}/networks` },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  }, null, 2)}\n`;
}

/**
 * kube-proxy's config (kubeadm's KubeProxyConfiguration, iptables mode). The conntrack settings are the ones kind
 * uses in containers: 0 = leave the kernel's value, because nf_conntrack_max is not per network namespace and a
 * node's kube-proxy may not write it (maxPerCore would make it try, and fail). clusterCIDR tells Pod traffic
 * (not masqueraded) from the rest (masqueraded) to a Service.
 */
export function kubeProxyConfig(o: { name: string; kubeconfig: string }): string {
  return stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'iptables',
    hostnameOverride: o.name,
    clusterCIDR: POD_CIDR,
    clientConnection: { kubeconfig: o.kubeconfig },
    // Per node network namespace: the same ports on every node do not collide.
    healthzBindAddress: '0.0.0.0:10256',
    metricsBindAddress: '127.0.0.1:10249',
    // NodePorts on the node's address only (kube-proxy warns about all local IPs otherwise).
    nodePortAddresses: ['primary'],
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
  });
}
