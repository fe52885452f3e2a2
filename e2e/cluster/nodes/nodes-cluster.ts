// The nodes mode of the e2e cluster: a kubeadm-shaped control plane on real kubelets and containerd. Each node is
// a network namespace (its own address on a bridge) with a private mount and UTS namespace, in which containerd
// and a kubelet registered with the cluster run kube-apiserver, kube-controller-manager and kube-scheduler as
// static Pods from /etc/kubernetes/manifests (the node's folder bound there), so mirror Pods appear in kube-system
// and Jobs run. etcd is one host process (why: docs/e2e-cluster.md#nodes-mode). haproxy balances the apiservers.
// Pod network as kubeadm clusters have it: the reference CNI plugins (a cni0 bridge per node, host-local addresses
// from the node's 10.244.<i>.0/24, masquerade) and kube-proxy in iptables mode, a process in each node's namespaces,
// so any Pod reaches the API through the `kubernetes` Service (10.96.0.1:443) as in-cluster config does.
import { copyFile, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { freePort } from '../cluster.ts';
import { CNI_PLUGINS, CNI_PLUGINS_VERSION, ensureBinaries, ETCD_VERSION, NEW_VERSION, OLD_VERSION, type BinarySpec } from '../binaries.ts';
import { createClientCert, createPki, createServingCert, type Pki } from '../pki.ts';
import { claimSubnet, usedPrefixes } from '../netns.ts';
import { ManagedProcess } from '../process.ts';
import { writeKubeconfig } from '../kubeconfig.ts';
import { writeHaproxyConfig } from '../haproxy.ts';
import { SECURE_PORT, SERVICE_IP } from '../apiserver-flags.ts';
import { registerTeardown, unregisterTeardown, destroySync, sweepStale, stateDir, writeState, STATE_ROOT, type ClusterState } from '../cleanup.ts';
import { adminRequest, type HttpResult } from '../http.ts';
import { run, waitFor } from '../exec.ts';
import { requireCommands } from '../requirements.ts';
import { componentImage, importImages, pauseImage, PAUSE_IMAGE, toolboxImage, type ImageTar } from '../images.ts';
import { operatorImage } from '../operator-image.ts';
import { apiServerManifest, CNI_STATE_DIR, cniConflist, containerdConfig, controllerManagerManifest, K8S_DIR, KUBELET_DIR, kubeletConfig, kubeProxyConfig, PKI_DIR, podSubnet, registryConfigPath, schedulerManifest } from './kubeadm-layout.ts';
import { pushOciTar, writeMirrorHosts } from '../registry.ts';

/** A private mirror, as air-gapped kubeadm clusters have: an upgrade must keep it (issue 9). */
export const MIRROR_REPOSITORY = 'registry.auo.test/k8s';
/** The kubelets stay on the old version: the operator upgrades apiservers only (kubelet skew policy allows it). */
const KUBELET_VERSION = OLD_VERSION;
/**
 * Mount points a node binds its own folders onto (created on the host when absent, removed when we made them).
 * /run holds the Pods' network namespaces (containerd pins them in /var/run/netns) and the xtables lock;
 * /var/lib/cni host-local's address leases and libcni's cache (containerd 1.6 cannot move the latter).
 */
export const NODE_BINDS = [K8S_DIR, KUBELET_DIR, '/var/log', '/run', CNI_STATE_DIR] as const;

export interface NodesClusterOptions {
  nodes?: number;
  version?: string;
  featureGates?: Record<string, boolean>;
  verbose?: boolean;
  /**
   * The harness registry's address (registry.ts startRegistry().address). Given, the cluster's images are pushed
   * to it and every node's containerd pulls them (and any ghcr.io or registry.k8s.io image) through hosts.toml
   * mirrors; absent, they are imported into each node's containerd with `ctr images import`.
   */
  registry?: string;
}

export interface NodeInfo {
  index: number;
  name: string;
  hostname: string;
  address: string;
  url: string;
  /** The node's root folder on this machine: <root>/etc/kubernetes is the node's /etc/kubernetes. */
  root: string;
  netns: string;
  /** The node's Pod subnet (10.244.<index>.0/24): its Pods' addresses. */
  podSubnet: string;
}

interface NodeSlot {
  info: NodeInfo;
  containerd?: ManagedProcess;
  kubelet?: ManagedProcess;
  kubeProxy?: ManagedProcess;
}

export class NodesCluster {
  readonly runId: string;
  readonly dir: string;
  readonly pki: Pki;
  /** Admin kubeconfig through haproxy. */
  readonly kubeconfig: string;
  readonly lbUrl: string;
  readonly prefix: string;
  readonly images: ImageTar[];
  /** The registry the nodes pull through, when the cluster was started with one. */
  readonly registry?: string;
  private readonly slots: NodeSlot[];
  private readonly state: ClusterState;
  private readonly log: (m: string) => void;
  private etcd?: ManagedProcess;
  private haproxy?: ManagedProcess;
  private tornDown = false;
  /** The tail of the chain of certificate signings (see writeNodeFiles). */
  private signing: Promise<unknown> = Promise.resolve();
  /** Seconds each phase of start took, for the docs' measurements. */
  readonly timings: Record<string, number> = {};

  private constructor(init: { runId: string; dir: string; pki: Pki; kubeconfig: string; lbUrl: string; prefix: string; slots: NodeSlot[]; state: ClusterState; images: ImageTar[]; registry?: string; log: (m: string) => void }) {
    this.runId = init.runId;
    this.dir = init.dir;
    this.pki = init.pki;
    this.kubeconfig = init.kubeconfig;
    this.lbUrl = init.lbUrl;
    this.prefix = init.prefix;
    this.slots = init.slots;
    this.state = init.state;
    this.images = init.images;
    if (init.registry !== undefined) this.registry = init.registry;
    this.log = init.log;
  }

  static async start(opts: NodesClusterOptions = {}): Promise<NodesCluster> {
    const t0 = Date.now();
    const log = (m: string): void => {
      if (opts.verbose) process.stderr.write(`[nodes +${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}\n`);
    };
    if (process.getuid?.() !== 0) throw new Error('the nodes mode must run as root: it creates network and mount namespaces and runs containerd and kubelets');
    requireCommands(['haproxy', 'openssl', 'ip', 'unshare', 'nsenter', 'containerd', 'ctr', 'runc', 'iptables', 'iptables-restore'], 'the nodes mode of the e2e cluster');
    sweepStale();
    raiseInotifyLimits();
    const n = opts.nodes ?? 3;
    const version = opts.version ?? OLD_VERSION;
    const specs: BinarySpec[] = [
      { what: 'etcd', version: ETCD_VERSION },
      { what: 'kubelet', version: KUBELET_VERSION },
      { what: 'kube-proxy', version: KUBELET_VERSION },
      { what: 'cni-plugins', version: CNI_PLUGINS_VERSION },
      { what: 'kube-controller-manager', version },
      { what: 'kube-scheduler', version },
      ...[...new Set([version, NEW_VERSION])].map((v) => ({ what: 'kube-apiserver' as const, version: v })),
    ];
    const [etcdBin, kubeletBin, kubeProxyBin, cniDir] = await ensureBinaries(specs);
    const tImages = Date.now();
    const images = await Promise.all([
      // The operator's image runs the static Pod driver's node agent (node dist/agent/main.js); the toolbox, test Pods.
      pauseImage(), toolboxImage(), operatorImage(),
      componentImage('kube-controller-manager', version, MIRROR_REPOSITORY), componentImage('kube-scheduler', version, MIRROR_REPOSITORY),
      ...[...new Set([version, NEW_VERSION])].map((v) => componentImage('kube-apiserver', v, MIRROR_REPOSITORY)),
    ]);
    if (opts.registry !== undefined) {
      // One at a time: skopeo reads and hashes each tar, and CPU is what this machine lacks.
      for (const img of images) await pushOciTar(img.path, opts.registry, img.name);
    }
    const timings: Record<string, number> = { images: (Date.now() - tImages) / 1000 };

    const runId = randomBytes(3).toString('hex');
    const dir = stateDir(runId);
    await mkdir(dir, { recursive: true });
    const nodeNetns = Array.from({ length: n }, (_, i) => `auo-${runId}-n${i + 1}`);
    const state: ClusterState = { runId, ownerPid: process.pid, dir, netns: `auo-${runId}`, hostVeth: `auo${runId}h`, rootPids: [], nodeNetns, bridge: `auo${runId}b` };
    writeState(state);
    registerTeardown(runId, () => destroySync(state));
    try {
      const third = claimSubnet(STATE_ROOT, runId, await usedPrefixes());
      const prefix = `10.77.${third}`;
      state.prefix = prefix;
      writeState(state);
      const hostAddress = `${prefix}.1`;
      await run('ip', ['link', 'add', state.bridge!, 'type', 'bridge']);
      await run('ip', ['addr', 'add', `${hostAddress}/24`, 'dev', state.bridge!]);
      await run('ip', ['link', 'set', state.bridge!, 'up']);
      const pki = await createPki(join(dir, 'pki'));
      const lbPort = await freePort();
      const lbUrl = `https://${hostAddress}:${lbPort}`;
      const kubeconfig = await writeKubeconfig(join(dir, 'admin.kubeconfig'), lbUrl, pki.caCert, pki.adminCert, pki.adminKey);
      const slots: NodeSlot[] = [];
      for (let i = 0; i < n; i++) {
        const name = `cp-${i + 1}`;
        const address = `${prefix}.${11 + i}`;
        const root = join(dir, 'nodes', name);
        await addNodeNetwork(nodeNetns[i]!, `auo${runId}v${i + 1}`, state.bridge!, address, hostAddress);
        slots.push({ info: { index: i, name, hostname: name, address, url: `https://${address}:${SECURE_PORT}`, root, netns: nodeNetns[i]!, podSubnet: podSubnet(i) } });
      }
      // Pod to Pod across nodes: each node routes the others' Pod subnets to them over the bridge.
      await Promise.all(slots.map((s) => Promise.all(slots.filter((o) => o !== s).map((o) => run('ip', ['-n', s.info.netns, 'route', 'add', o.info.podSubnet, 'via', o.info.address])))));
      for (const p of NODE_BINDS) {
        if (existsSync(p)) continue;
        mkdirSync(p, { recursive: true });
        (state.createdHostDirs ??= []).push(p);
      }
      writeState(state);
      const c = new NodesCluster({ runId, dir, pki, kubeconfig, lbUrl, prefix, slots, state, images, ...(opts.registry !== undefined ? { registry: opts.registry } : {}), log });
      Object.assign(c.timings, timings);
      const tStart = Date.now();
      const peerPort = await freePort();
      c.etcd = new ManagedProcess(etcdBin!, ['--name=etcd0', `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=http://${hostAddress}:2379`, `--advertise-client-urls=http://${hostAddress}:2379`,
        `--listen-peer-urls=http://127.0.0.1:${peerPort}`, `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-cluster=etcd0=http://127.0.0.1:${peerPort}`, '--unsafe-no-fsync=true', '--log-level=warn'], join(dir, 'etcd.log'));
      state.rootPids.push(c.etcd.pid);
      const cfg = await writeHaproxyConfig(dir, `${hostAddress}:${lbPort}`, slots.map((s) => ({ name: s.info.name, address: s.info.address, port: SECURE_PORT })));
      c.haproxy = new ManagedProcess('haproxy', ['-db', '-f', cfg], join(dir, 'haproxy.log'));
      state.rootPids.push(c.haproxy.pid);
      writeState(state);
      // kube-proxy's client certificate (user system:kube-proxy, bound to system:node-proxier by default RBAC), one for every node.
      const proxyCert = await c.issue(() => createClientCert(pki, 'kube-proxy', 'system:kube-proxy'));
      await Promise.all(slots.map((s) => c.startNode(s, { version, featureGates: opts.featureGates ?? {}, etcdUrl: `http://${hostAddress}:2379`, lbUrl, kubeletBin: kubeletBin!, kubeProxyBin: kubeProxyBin!, cniDir: cniDir!, proxyCert })));
      c.timings.nodes = (Date.now() - tStart) / 1000;
      await c.waitRegistered();
      c.timings.registered = (Date.now() - tStart) / 1000;
      await c.waitServiceProxied();
      c.timings.serviceProxied = (Date.now() - tStart) / 1000;
      log(`ready: ${n} nodes behind ${lbUrl} (${JSON.stringify(c.timings)})`);
      return c;
    } catch (err) {
      // The caller never gets the cluster, so teardown cannot keep the logs: keep them here (a node that never got ready).
      await keepLogs(dir, runId);
      unregisterTeardown(runId);
      destroySync(state);
      throw err;
    }
  }

  get nodes(): NodeInfo[] {
    return this.slots.map((s) => ({ ...s.info }));
  }

  /** The nodes as the process mode names its servers (index, url), for helpers that take either cluster. */
  get servers(): NodeInfo[] {
    return this.nodes;
  }

  node(i: number): NodeInfo {
    const s = this.slots[i];
    if (!s) throw new Error(`no node ${i}; the cluster has ${this.slots.length}`);
    return { ...s.info };
  }

  /** The node's kube-apiserver manifest as the kubelet reads it. */
  manifest(i: number): Promise<string> {
    return readFile(join(this.node(i).root, 'etc/kubernetes/manifests/kube-apiserver.yaml'), 'utf8');
  }

  /** Files in the node's backup folder (the static Pod driver's default backupDir). */
  async backups(i: number): Promise<string[]> {
    return readdir(join(this.node(i).root, 'etc/kubernetes/apiserver-upgrade-backup')).catch(() => []);
  }

  /** Every file in the node's manifests folder (a stray temp file would show here). */
  manifestFiles(i: number): Promise<string[]> {
    return readdir(join(this.node(i).root, 'etc/kubernetes/manifests'));
  }

  request(i: number | 'lb', path: string, opts: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number; newConnection?: boolean } = {}): Promise<HttpResult> {
    const base = i === 'lb' ? this.lbUrl : this.node(i).url;
    return adminRequest(this.pki, base + path, opts);
  }

  async json<T>(path: string): Promise<T> {
    const r = await this.request('lb', path);
    if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${r.body.slice(0, 300)}`);
    return JSON.parse(r.body) as T;
  }

  /**
   * Signals node i's kubelet or containerd itself (not its children: containers and shims run on), e.g. SIGSTOP and
   * SIGCONT for a hung component. The process is the component's own: nsenter, unshare and sh exec into it.
   */
  signalComponent(i: number, component: 'kubelet' | 'containerd', sig: NodeJS.Signals): void {
    const p = this.slots[i]?.[component];
    if (!p || p.exited) throw new Error(`node ${i}'s ${component} is not running`);
    process.kill(p.pid, sig);
  }

  /** containerd's socket of node i, for ctr. */
  containerdSocket(i: number): string {
    return join(this.node(i).root, 'containerd', 'containerd.sock');
  }

  /**
   * Signs one at a time across the cluster: `openssl x509 -CAcreateserial` rewrites the CA's serial file, and two
   * signings at once collide on it (seen: a failed signing of a node's scheduler certificate).
   */
  private issue<T>(f: () => Promise<T>): Promise<T> {
    const next = this.signing.then(f);
    this.signing = next.catch(() => undefined);
    return next;
  }

  private async startNode(slot: NodeSlot, o: NodeStart): Promise<void> {
    const { root, name, address } = slot.info;
    const t0 = Date.now();
    await this.writeNodeFiles(slot.info, o);
    slot.containerd = await startNodeContainerd(slot.info, NODE_BINDS, join(this.dir, `${name}.containerd.log`));
    const socket = this.containerdSocket(slot.info.index);
    const containerd = slot.containerd;
    // With a registry, the kubelet pulls each image through the mirrors when a Pod needs it; but the sandbox image is
    // pulled once first, through the same mirror, by containerd's own resolver: containerd 1.6's CRI left one of
    // three concurrent first pulls of it (one per static Pod sandbox) hanging for minutes (a node whose
    // kube-apiserver sandbox never started, twice, on cp-2).
    if (this.registry === undefined) await importImages(socket, this.images);
    else await run('ip', ['netns', 'exec', slot.info.netns, 'ctr', '-a', socket, '-n', 'k8s.io', 'images', 'pull', '--hosts-dir', registryConfigPath(root), PAUSE_IMAGE]);
    slot.kubelet = new ManagedProcess('nsenter', ['-t', String(containerd.pid), '-m', '-u', '-n', '--', o.kubeletBin,
      `--config=${KUBELET_DIR}/config.yaml`, `--kubeconfig=${K8S_DIR}/kubelet.conf`, `--hostname-override=${name}`, `--node-ip=${address}`,
      `--root-dir=${KUBELET_DIR}`, `--cert-dir=${KUBELET_DIR}/pki`, '--v=1'], join(this.dir, `${name}.kubelet.log`));
    const kubelet = slot.kubelet;
    // kube-proxy as a process in the node's namespaces, as the kubelet (why not kubeadm's DaemonSet: docs/e2e-cluster.md
    // "Pod network"); it programs the node's own iptables, which go with its network namespace.
    slot.kubeProxy = new ManagedProcess('nsenter', ['-t', String(containerd.pid), '-m', '-u', '-n', '--', o.kubeProxyBin,
      `--config=${join(root, 'kube-proxy', 'config.yaml')}`, '--v=1'], join(this.dir, `${name}.kube-proxy.log`));
    await waitFor(`${name}'s kube-apiserver static Pod /readyz`, 180_000, async () => {
      if (kubelet.exited) throw new Error(`${name}'s kubelet exited (${kubelet.exitCode ?? kubelet.signal}); log tail:\n${await tail(kubelet.logPath)}`);
      const r = await adminRequest(this.pki, `${slot.info.url}/readyz`, { timeoutMs: 2000 });
      return r.status === 200 ? true : undefined;
    }, 500);
    this.log(`${name} ready (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }

  private async writeNodeFiles(info: NodeInfo, o: NodeStart): Promise<void> {
    const { root, name, address } = info;
    const pkiDir = join(root, 'etc/kubernetes/pki');
    const cniBin = join(root, 'cni', 'bin');
    const proxyDir = join(root, 'kube-proxy');
    await Promise.all([pkiDir, join(root, 'etc/kubernetes/manifests'), join(root, 'var/lib/kubelet'), join(root, 'var/log'), join(root, 'run'), join(root, 'containerd'),
      join(root, CNI_STATE_DIR.slice(1)), cniBin, join(root, 'cni', 'net.d'), proxyDir].map((d) => mkdir(d, { recursive: true })));
    // The plugins are copied, not linked: a node keeps working if the cache is rebuilt meanwhile.
    await Promise.all(CNI_PLUGINS.map((p) => copyFile(join(o.cniDir, p), join(cniBin, p))));
    const p = this.pki;
    const copies: [string, string][] = [
      [p.caCert, 'ca.crt'], [p.caKey, 'ca.key'], [p.frontProxyCaCert, 'front-proxy-ca.crt'], [p.proxyClientCert, 'front-proxy-client.crt'],
      [p.proxyClientKey, 'front-proxy-client.key'], [p.saKey, 'sa.key'], [p.saPub, 'sa.pub'], [p.adminCert, 'admin.crt'], [p.adminKey, 'admin.key'],
    ];
    const hostAddress = `${this.prefix}.1`;
    const issue = <T>(f: () => Promise<T>): Promise<T> => this.issue(f);
    const serving = await issue(() => createServingCert(p, name, [address, hostAddress, '127.0.0.1', SERVICE_IP], [name]));
    const kubelet = await issue(() => createClientCert(p, `kubelet-${name}`, `system:node:${name}`, ['system:nodes']));
    const kcm = await issue(() => createClientCert(p, `kcm-${name}`, 'system:kube-controller-manager'));
    const sched = await issue(() => createClientCert(p, `scheduler-${name}`, 'system:kube-scheduler'));
    // kubeadm's apiserver-kubelet-client: the apiserver's identity towards the kubelets (logs, exec, port-forward).
    const toKubelet = await issue(() => createClientCert(p, `apiserver-kubelet-client-${name}`, 'kube-apiserver-kubelet-client', ['kubeadm:cluster-admins']));
    copies.push([toKubelet.cert, 'apiserver-kubelet-client.crt'], [toKubelet.key, 'apiserver-kubelet-client.key'],
      [serving.cert, 'apiserver.crt'], [serving.key, 'apiserver.key'], [kubelet.cert, 'kubelet-client.crt'], [kubelet.key, 'kubelet-client.key'],
      [kcm.cert, 'controller-manager.crt'], [kcm.key, 'controller-manager.key'], [sched.cert, 'scheduler.crt'], [sched.key, 'scheduler.key']);
    await Promise.all(copies.map(([from, to]) => copyFile(from, join(pkiDir, to))));
    const etc = join(root, 'etc/kubernetes');
    const local = `https://${address}:${SECURE_PORT}`;
    // kubeadm: the kubelet reaches the control-plane endpoint (the balancer); controller-manager and scheduler
    // their own node's apiserver.
    await Promise.all([
      writeKubeconfig(join(etc, 'kubelet.conf'), o.lbUrl, `${PKI_DIR}/ca.crt`, `${PKI_DIR}/kubelet-client.crt`, `${PKI_DIR}/kubelet-client.key`),
      writeKubeconfig(join(etc, 'controller-manager.conf'), local, `${PKI_DIR}/ca.crt`, `${PKI_DIR}/controller-manager.crt`, `${PKI_DIR}/controller-manager.key`),
      writeKubeconfig(join(etc, 'scheduler.conf'), local, `${PKI_DIR}/ca.crt`, `${PKI_DIR}/scheduler.crt`, `${PKI_DIR}/scheduler.key`),
      writeKubeconfig(join(etc, 'admin.conf'), o.lbUrl, `${PKI_DIR}/ca.crt`, `${PKI_DIR}/admin.crt`, `${PKI_DIR}/admin.key`),
      writeFile(join(root, 'var/lib/kubelet/config.yaml'), kubeletConfig({ containerdSocket: join(root, 'containerd', 'containerd.sock'), address })),
      writeFile(join(root, 'containerd.toml'), containerdConfig({ root, pauseImage: PAUSE_IMAGE })),
      ...(this.registry !== undefined ? [writeMirrorHosts(registryConfigPath(root), this.registry)] : []),
      writeFile(join(root, 'cni', 'net.d', '10-auo-pods.conflist'), cniConflist({ subnet: info.podSubnet })),
      // kube-proxy reaches the control-plane endpoint (the balancer), as kubeadm's kube-proxy does.
      writeKubeconfig(join(proxyDir, 'kubeconfig.conf'), o.lbUrl, p.caCert, o.proxyCert.cert, o.proxyCert.key),
      writeFile(join(proxyDir, 'config.yaml'), kubeProxyConfig({ name, kubeconfig: join(proxyDir, 'kubeconfig.conf') })),
    ]);
    const layout = { name, address, version: o.version, repository: MIRROR_REPOSITORY, etcdUrl: o.etcdUrl, featureGates: o.featureGates };
    const manifests = join(root, 'etc/kubernetes/manifests');
    await Promise.all([
      writeFile(join(manifests, 'kube-apiserver.yaml'), apiServerManifest(layout)),
      writeFile(join(manifests, 'kube-controller-manager.yaml'), controllerManagerManifest(layout)),
      writeFile(join(manifests, 'kube-scheduler.yaml'), schedulerManifest(layout)),
    ]);
  }

  /** Every node registered (a Node named after its hostname) and its kube-apiserver mirror Pod in kube-system. */
  private async waitRegistered(): Promise<void> {
    const names = this.slots.map((s) => s.info.name);
    await waitFor('every Node and kube-apiserver mirror Pod', 120_000, async () => {
      const nodes = await this.json<{ items: { metadata: { name: string } }[] }>('/api/v1/nodes');
      const pods = await this.json<{ items: { metadata: { name: string } }[] }>('/api/v1/namespaces/kube-system/pods?labelSelector=component%3Dkube-apiserver');
      const have = new Set(nodes.items.map((x) => x.metadata.name));
      const mirrors = new Set(pods.items.map((x) => x.metadata.name));
      const missing = names.filter((nm) => !have.has(nm) || !mirrors.has(`kube-apiserver-${nm}`));
      if (missing.length > 0) throw new Error(`not yet registered with a mirror Pod: ${missing.join(', ')}`);
      return true;
    }, 1000);
  }

  /**
   * kube-proxy on every node has synced (its /healthz answers 200 only after a first full sync of the rules) and the
   * `kubernetes` Service's EndpointSlice lists every apiserver: a Pod on any node reaches the API through 10.96.0.1.
   */
  private async waitServiceProxied(): Promise<void> {
    const want = this.slots.map((s) => s.info.address).sort();
    await waitFor('kube-proxy synced on every node and the kubernetes Service backed by every apiserver', 120_000, async () => {
      for (const s of this.slots) {
        const p = s.kubeProxy;
        if (p?.exited) throw new Error(`${s.info.name}'s kube-proxy exited (${p.exitCode ?? p.signal}); log tail:\n${await tail(p.logPath)}`);
        const ok = await fetch(`http://${s.info.address}:10256/healthz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
        if (!ok) throw new Error(`${s.info.name}'s kube-proxy has not synced yet`);
      }
      const slices = await this.json<{ items: { endpoints?: { addresses: string[] }[] }[] }>('/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes');
      const have = slices.items.flatMap((x) => (x.endpoints ?? []).flatMap((e) => e.addresses)).sort();
      if (JSON.stringify(have) !== JSON.stringify(want)) throw new Error(`the kubernetes Service's endpoints are ${have.join(', ') || 'none'}, not yet ${want.join(', ')}`);
      return true;
    }, 500);
  }

  /** Stops everything: every node's processes (SIGKILL, as a power cut), etcd, haproxy; removes namespaces, bridge, files. */
  async teardown(): Promise<void> {
    if (this.tornDown) return;
    this.tornDown = true;
    await keepLogs(this.dir, this.runId);
    unregisterTeardown(this.runId);
    destroySync(this.state);
    await Promise.all([this.etcd?.kill(), this.haproxy?.kill(), ...this.slots.flatMap((s) => [s.kubeProxy?.kill(), s.kubelet?.kill(), s.containerd?.kill()])]);
  }
}

/** Copies a cluster's logs to $AUO_E2E_ARTIFACTS/<runId>/ when that is set (CI keeps them). */
async function keepLogs(dir: string, runId: string): Promise<void> {
  const artifacts = process.env.AUO_E2E_ARTIFACTS;
  if (!artifacts) return;
  const { cp } = await import('node:fs/promises');
  await mkdir(join(artifacts, runId), { recursive: true });
  for (const f of await readdir(dir).catch(() => [])) if (f.endsWith('.log')) await cp(join(dir, f), join(artifacts, runId, f)).catch(() => undefined);
}

/**
 * Each kubelet and containerd takes inotify instances (cAdvisor, the manifest watch, CRI log watches); with the
 * kernel's default 128 per user, a third cluster's kubelet died at start with "inotify_init: too many open
 * files" (seen). Raised machine-wide, only upwards, as guides for several kubelets on one host do.
 */
export function raiseInotifyLimits(): void {
  for (const [file, want] of [['/proc/sys/fs/inotify/max_user_instances', 8192], ['/proc/sys/fs/inotify/max_user_watches', 524288]] as const) {
    try {
      if (Number(readFileSync(file, 'utf8')) < want) writeFileSync(file, String(want));
    } catch (err) {
      throw new Error(`the nodes mode needs more inotify instances than the kernel's default: could not raise ${file} to ${want} (${(err as Error).message})`, { cause: err });
    }
  }
}

interface NodeStart {
  version: string;
  featureGates: Record<string, boolean>;
  etcdUrl: string;
  lbUrl: string;
  kubeletBin: string;
  kubeProxyBin: string;
  /** The folder of the CNI plugins (bridge, host-local, loopback, portmap). */
  cniDir: string;
  proxyCert: { cert: string; key: string };
}

export async function addNodeNetwork(netns: string, hostVeth: string, bridge: string, address: string, gateway: string): Promise<void> {
  await run('ip', ['netns', 'add', netns]);
  // A node forwards: its Pods' traffic to other nodes and the host (the bridge plugin turns it on too, per Pod).
  await run('ip', ['netns', 'exec', netns, 'sh', '-c', 'echo 1 > /proc/sys/net/ipv4/ip_forward']);
  await run('ip', ['-n', netns, 'link', 'set', 'lo', 'up']);
  await run('ip', ['link', 'add', hostVeth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
  await run('ip', ['link', 'set', hostVeth, 'master', bridge, 'up']);
  await run('ip', ['-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0']);
  await run('ip', ['-n', netns, 'link', 'set', 'eth0', 'up']);
  await run('ip', ['-n', netns, 'route', 'add', 'default', 'via', gateway]);
}

export async function tail(path: string, lines = 25): Promise<string> {
  return (await readFile(path, 'utf8').catch(() => '')).split('\n').slice(-lines).join('\n');
}

/**
 * Starts a node's containerd, which holds the node's namespaces: nsenter joins the node's network, unshare makes its
 * mount and UTS namespaces (private: nothing mounted in the node shows on the host), the shell binds the node's
 * folders onto the paths they stand for (`binds`) and names the host, then becomes containerd. The kubelet joins the
 * same namespaces later, so hostPath volumes, the kubelet's /var/lib/kubelet and containerd's view of them agree.
 * Resolves once its socket (<root>/containerd/containerd.sock) exists.
 */
export async function startNodeContainerd(info: NodeInfo, binds: readonly string[], logPath: string): Promise<ManagedProcess> {
  const { name, root, netns } = info;
  const script = [
    'set -e', 'hostname "$1"',
    ...binds.map((p) => `mount --bind "$2${p}" ${p}`),
    'exec containerd --config "$2/containerd.toml"',
  ].join('\n');
  const containerd = new ManagedProcess('nsenter', [`--net=/run/netns/${netns}`, 'unshare', '--mount', '--uts', '--propagation', 'private', '--', 'sh', '-c', script, 'node', name, root], logPath);
  const socket = join(root, 'containerd', 'containerd.sock');
  await waitFor(`${name}'s containerd socket`, 30_000, async () => {
    if (containerd.exited) throw new Error(`${name}'s containerd exited (${containerd.exitCode ?? containerd.signal}); see ${containerd.logPath}`);
    return existsSync(socket) ? true : undefined;
  }, 200);
  return containerd;
}
