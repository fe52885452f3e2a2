// What the real-kubeadm cluster hands to kubeadm and what it reads back from it: the InitConfiguration and
// JoinConfiguration (kubeadm.k8s.io/v1beta4) of each node, the kubelet command line kubeadm's systemd drop-in
// would run, and the `systemctl` stand-in through which kubeadm starts, stops and restarts that kubelet on a
// machine without an init system. Pure: tested by test/e2e-cluster/kubeadm-files.test.ts.
import { stringify } from 'yaml';

/** kubeadm's default: where the node's etcd member keeps its data (a node binds its own folder there). */
export const ETCD_DATA_DIR = '/var/lib/etcd';
/** kubeadm's kubelet flags file, sourced by its systemd drop-in (10-kubeadm.conf) as KUBELET_KUBEADM_ARGS. */
export const KUBELET_FLAGS_ENV = '/var/lib/kubelet/kubeadm-flags.env';
export const KUBELET_CONFIG = '/var/lib/kubelet/config.yaml';

/**
 * The preflight checks that cannot pass in a node of this harness, by kubeadm's exact names, and why. Everything
 * else kubeadm checks (ports, files, the container runtime, ip_forward, the kubelet's version, images, ...) runs.
 */
export const IGNORED_PREFLIGHT: Readonly<Record<string, string>> = {
  // Reads the host kernel's config and cgroups: this host is cgroup v1 (kubelet 1.35+ runs there only with
  // failCgroupV1: false), which the validator reports as an error.
  SystemVerification: 'cgroup v1 host: the system validator refuses cgroups v1 (the kubelets run with failCgroupV1: false)',
};

/**
 * What `kubeadm upgrade plan|apply|node` cannot pass here besides IGNORED_PREFLIGHT: kubeadm v1.36 checks the CoreDNS
 * migration even where kubeadm-config says `dns.disabled: true`, and with no CoreDNS installed (addon/coredns is
 * skipped at init: no image of it in the harness) it finds the start version '' unsupported.
 */
export const IGNORED_UPGRADE_PREFLIGHT: Readonly<Record<string, string>> = {
  ...IGNORED_PREFLIGHT,
  CoreDNSUnsupportedPlugins: 'no CoreDNS installed (the add-on is skipped): its start version is empty',
  CoreDNSMigration: 'no CoreDNS installed (the add-on is skipped): nothing to migrate',
};

export interface KubeadmNode {
  name: string;
  address: string;
  /** unix://… of the node's own containerd. */
  criSocket: string;
}

export interface ClusterInput {
  version: string;
  /** host:port of the balancer (kubeadm's controlPlaneEndpoint). */
  controlPlaneEndpoint: string;
  /** etcd's image tag: the harness builds etcd at its own version (kubeadm's own default is another). */
  etcdImageTag: string;
  /** `abcdef.0123456789abcdef` */
  token: string;
  /** 64 hex characters: the key of the uploaded certificates (`kubeadm init --upload-certs`). */
  certificateKey: string;
  /** The kubelet settings the measured recipe needs on this host (shared/kubelet-notes). */
  kubelet: Record<string, unknown>;
}

const TOKEN = /^[a-z0-9]{6}\.[a-z0-9]{16}$/;
const CERT_KEY = /^[a-f0-9]{64}$/;
const CA_HASH = /^sha256:[a-f0-9]{64}$/;

function check(input: ClusterInput): void {
  if (!TOKEN.test(input.token)) throw new Error('a bootstrap token is [a-z0-9]{6}.[a-z0-9]{16}');
  if (!CERT_KEY.test(input.certificateKey)) throw new Error('the certificate key is 64 hex characters');
}

/**
 * The stacked etcd members' tuning for a shared 2-core machine, as the rest of the harness runs etcd: seen at load
 * 35-40, a joining member's leader "failed to send out heartbeat on time ... overloaded likely from slow disk", the
 * members lost their leader ("etcdserver: no leader") and the joining node's apiserver and kubelet TLS bootstrap
 * waited minutes. No fsync (test data only: every other etcd of the harness runs so) and etcd's slow-network
 * timings (heartbeat 500 ms, election 5 s, etcd's tuning guide) instead of 100 ms / 1 s.
 */
export const ETCD_EXTRA_ARGS: readonly { name: string; value: string }[] = [
  { name: 'unsafe-no-fsync', value: 'true' },
  { name: 'heartbeat-interval', value: '500' },
  { name: 'election-timeout', value: '5000' },
];

/** Generous: every component starts on 2 shared cores, with three etcd members and apiservers. */
const TIMEOUTS = { controlPlaneComponentHealthCheck: '10m0s', kubeletHealthCheck: '10m0s', kubernetesAPICall: '2m0s', etcdAPICall: '5m0s', tlsBootstrap: '10m0s', discovery: '10m0s' };

function nodeRegistration(n: KubeadmNode): Record<string, unknown> {
  return {
    name: n.name,
    criSocket: n.criSocket,
    // The node's address on the harness's bridge, not the first address kubeadm would pick.
    kubeletExtraArgs: [{ name: 'node-ip', value: n.address }],
    ignorePreflightErrors: Object.keys(IGNORED_PREFLIGHT),
    imagePullPolicy: 'IfNotPresent',
  };
}

/**
 * `kubeadm init --config` of the first control-plane node: its InitConfiguration, the cluster's ClusterConfiguration
 * (stacked etcd, the balancer as controlPlaneEndpoint, the DNS and proxy add-ons off; no extraArgs: the apiserver runs with kubeadm's own flags) and
 * the KubeletConfiguration every node gets from the kubelet-config ConfigMap.
 */
export function initConfiguration(input: ClusterInput, first: KubeadmNode): string {
  check(input);
  const docs = [
    {
      apiVersion: 'kubeadm.k8s.io/v1beta4',
      kind: 'InitConfiguration',
      bootstrapTokens: [{ token: input.token, ttl: '2h0m0s', groups: ['system:bootstrappers:kubeadm:default-node-token'], usages: ['signing', 'authentication'] }],
      certificateKey: input.certificateKey,
      localAPIEndpoint: { advertiseAddress: first.address, bindPort: 6443 },
      nodeRegistration: nodeRegistration(first),
      timeouts: TIMEOUTS,
    },
    {
      apiVersion: 'kubeadm.k8s.io/v1beta4',
      kind: 'ClusterConfiguration',
      kubernetesVersion: input.version,
      controlPlaneEndpoint: input.controlPlaneEndpoint,
      imageRepository: 'registry.k8s.io',
      etcd: { local: { dataDir: ETCD_DATA_DIR, imageTag: input.etcdImageTag, extraArgs: ETCD_EXTRA_ARGS } },
      networking: { serviceSubnet: '10.96.0.0/12', dnsDomain: 'cluster.local' },
      // No CoreDNS (no image of it here; clients use the env variables) and kube-proxy as a process, not kubeadm's
      // DaemonSet (docs/e2e-cluster.md "Real kubeadm"): what `--skip-phases=addon/coredns,addon/kube-proxy` records,
      // so `kubeadm config images list` leaves both out and `kubeadm upgrade` skips both add-ons.
      dns: { disabled: true },
      proxy: { disabled: true },
    },
    { apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', ...input.kubelet },
  ];
  return docs.map((d) => stringify(d)).join('---\n');
}

/** `kubeadm join --config` of another control-plane node: bootstrap-token discovery through the balancer, pinned to the CA. */
export function joinConfiguration(input: ClusterInput, node: KubeadmNode, caCertHash: string): string {
  check(input);
  if (!CA_HASH.test(caCertHash)) throw new Error('the CA hash is sha256:<64 hex>');
  return stringify({
    apiVersion: 'kubeadm.k8s.io/v1beta4',
    kind: 'JoinConfiguration',
    discovery: { bootstrapToken: { apiServerEndpoint: input.controlPlaneEndpoint, token: input.token, caCertHashes: [caCertHash] } },
    controlPlane: { localAPIEndpoint: { advertiseAddress: node.address, bindPort: 6443 }, certificateKey: input.certificateKey },
    nodeRegistration: nodeRegistration(node),
    timeouts: TIMEOUTS,
  });
}

/**
 * `kubeadm upgrade apply|node --config` of every control-plane node: the same timeouts as init and join. kubeadm
 * renders each control-plane component's startupProbe failureThreshold from the active
 * timeouts.controlPlaneComponentHealthCheck (util/staticpod StartupProbe: ceil(timeout / 10 s)), and `kubeadm upgrade`
 * reads it from this file alone: without it kubeadm's default (4 min: 24) differs from init's (10 min: 60) and every
 * manifest differs from the running one.
 */
export function upgradeConfiguration(): string {
  return stringify({ apiVersion: 'kubeadm.k8s.io/v1beta4', kind: 'UpgradeConfiguration', timeouts: TIMEOUTS });
}

const FLAG = /^--[a-z0-9][a-z0-9-]*=[A-Za-z0-9_.:/,=@+-]*$/;

/**
 * The flags of kubeadm-flags.env (`KUBELET_KUBEADM_ARGS="--a=b --c=d"`), which kubeadm's systemd drop-in passes to
 * the kubelet. Parsed, not sourced: each flag must be `--name=value` with a plain value, anything else is refused.
 */
export function parseKubeletFlagsEnv(text: string): string[] {
  const m = /^KUBELET_KUBEADM_ARGS="([^"\n]*)"\s*$/.exec(text.trim());
  if (!m) throw new Error(`kubeadm-flags.env is not one KUBELET_KUBEADM_ARGS="..." line: ${JSON.stringify(text.slice(0, 200))}`);
  const flags = m[1]!.split(' ').filter(Boolean);
  const bad = flags.filter((f) => !FLAG.test(f));
  if (bad.length > 0) throw new Error(`kubeadm-flags.env holds flags this harness does not pass on: ${bad.join(' ')}`);
  return flags;
}

/** The kubelet's command line as kubeadm's systemd drop-in (10-kubeadm.conf) builds it. */
export function kubeletServiceArgs(flagsEnv: string): string[] {
  return ['--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf', '--kubeconfig=/etc/kubernetes/kubelet.conf', `--config=${KUBELET_CONFIG}`, ...parseKubeletFlagsEnv(flagsEnv)];
}

/**
 * The `systemctl` kubeadm finds first on its PATH inside a node. kubeadm drives the kubelet through systemctl
 * (daemon-reload, start, stop, restart, is-active, is-enabled, status); this one answers for the unit `kubelet`
 * only, by dropping a request file in `requests` that the harness's kubelet service (kubelet-service.ts) carries
 * out and removes, and waits for that. Its arguments are compared, never evaluated.
 */
export function systemctlShim(requests: string, stateFile: string): string {
  for (const p of [requests, stateFile]) if (!/^\/[A-Za-z0-9_./-]+$/.test(p)) throw new Error(`not a plain absolute path: ${JSON.stringify(p)}`);
  return `#!/bin/sh
# kubeadm's systemctl inside a harness node: the harness runs the kubelet as a service (see kubeadm-files.ts).
set -u
verb="\${1:-}"; unit="\${2:-}"
case "$verb" in
  daemon-reload) exit 0 ;;
esac
case "$unit" in
  kubelet|kubelet.service) ;;
  *) echo "systemctl (harness): only the kubelet unit is known here" >&2; exit 5 ;;
esac
case "$verb" in
  is-enabled) echo enabled; exit 0 ;;
  is-active) if [ "$(cat '${stateFile}' 2>/dev/null)" = active ]; then echo active; exit 0; else echo inactive; exit 3; fi ;;
  status) echo "* kubelet.service - kubelet (run by the e2e harness)"; echo "   Loaded: loaded"; echo "   Active: $(cat '${stateFile}' 2>/dev/null || echo inactive)"; exit 0 ;;
  enable) exit 0 ;;
  start|stop|restart)
    req='${requests}'/$verb.$$
    : > "$req.tmp" && mv "$req.tmp" "$req"
    i=0
    while [ -e "$req" ]; do
      i=$((i + 1)); [ $i -gt 600 ] && { echo "systemctl (harness): the harness did not $verb the kubelet within 60 s" >&2; exit 1; }
      sleep 0.1
    done
    exit 0 ;;
  *) echo "systemctl (harness): $verb is not supported" >&2; exit 1 ;;
esac
`;
}
