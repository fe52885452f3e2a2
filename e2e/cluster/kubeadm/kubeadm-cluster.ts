// A control plane made by real kubeadm (issue 22): `kubeadm init` on cp-1, `kubeadm join --control-plane` on cp-2
// and cp-3, stacked etcd as kubeadm makes it, behind haproxy as controlPlaneEndpoint. The nodes are the nodes
// mode's (nodes-cluster.ts: a network namespace, a private mount and UTS namespace, containerd, the CNI plugins and
// kube-proxy as a process), but every file of /etc/kubernetes and /var/lib/kubelet is kubeadm's: the harness only
// provides the cluster CA (kubeadm's "external CA files" path, so the harness's admin certificate is trusted), and
// runs the kubelet as kubeadm's systemd unit would (kubelet-service.ts). The kubeadm-shaped mode stays the fast one;
// this is the reference. Every image (kubeadm's registry.k8s.io/... and the test's own) is pushed to the harness
// registry (registry.ts) and pulled by each node's containerd through hosts.toml mirrors, under its upstream name:
// nothing is imported with ctr and no name is rewritten. What is skipped and why: docs/e2e-cluster.md "Real kubeadm".
import { chmod, copyFile, mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { createHash, randomBytes, X509Certificate } from 'node:crypto';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CNI_PLUGINS, CNI_PLUGINS_VERSION, ensureBinaries, ETCD_VERSION, OLD_VERSION, type BinarySpec } from '../binaries.ts';
import { createClientCert } from '../pki.ts';
import { ManagedProcess } from '../process.ts';
import { writeKubeconfig } from '../kubeconfig.ts';
import { writeHaproxyConfig } from '../haproxy.ts';
import { SECURE_PORT } from '../apiserver-flags.ts';
import { unregisterTeardown, destroySync, sweepStale, writeState, type ClusterState } from '../cleanup.ts';
import { waitFor } from '../exec.ts';
import { requireCommands } from '../requirements.ts';
import type { ImageTar } from '../images.ts';
import { CNI_STATE_DIR, cniConflist, containerdConfig, K8S_DIR, KUBELET_DIR, kubeletConfig, kubeProxyConfig, registryConfigPath } from '../nodes/kubeadm-layout.ts';
import { startRegistry, writeMirrorHosts, type Registry } from '../registry.ts';
import { FleetView, withFleet, type Fleet } from '../nodes/node-fleet.ts';
import { raiseInotifyLimits, startNodeContainerd, tail, type NodeInfo } from '../nodes/nodes-cluster.ts';
import { ETCD_DATA_DIR, initConfiguration, joinConfiguration, systemctlShim, type ClusterInput, type KubeadmNode } from './kubeadm-files.ts';
import { etcdImageTag, kubeadmImages, pauseImageName } from './kubeadm-images.ts';
import { KubeletService } from './kubelet-service.ts';

/** kubeadm's paths a node binds its own folders onto; /var/lib/etcd is the stacked etcd member's data. */
const BINDS = [K8S_DIR, KUBELET_DIR, '/var/log', '/run', CNI_STATE_DIR, ETCD_DATA_DIR] as const;
/** The kubelets stay at the old version: kubeadm upgrades the control plane; the kubelets are the runbook's step 4. */
const KUBELET_VERSION = OLD_VERSION;

export interface KubeadmClusterOptions {
  nodes?: number;
  /** The version `kubeadm init` installs (kubeadm of the same version runs it). */
  version?: string;
  /** kubeadm versions to build besides the init one (for `kubeadm upgrade`), and the control-plane images they need. */
  upgradeVersions?: string[];
  /** Further images pushed to the registry for the nodes to pull (the operator's). */
  images?: ImageTar[];
  /**
   * The registry the nodes pull through (registry.ts startRegistry); the cluster pushes its images there. Absent,
   * the cluster starts its own and stops it at teardown.
   */
  registry?: Registry;
  verbose?: boolean;
}

interface Slot {
  info: NodeInfo;
  containerd?: ManagedProcess;
  kubelet?: KubeletService;
  kubeProxy?: ManagedProcess;
}

export interface KubeadmRun {
  args: string[];
  seconds: number;
  output: string;
}

export class KubeadmCluster extends FleetView {
  readonly timings: Record<string, number> = {};
  /** Every kubeadm command run, in order, with its output (the tests print and check them). */
  readonly kubeadmRuns: KubeadmRun[] = [];
  /** The registry every node pulls through. */
  readonly registry: Registry;
  private readonly ownRegistry: boolean;
  private readonly slots: Slot[];
  private readonly state: ClusterState;
  private readonly bins: Map<string, string>;
  private readonly log: (m: string) => void;
  private haproxy?: ManagedProcess;
  private tornDown = false;

  private constructor(f: Fleet, bins: Map<string, string>, registry: { registry: Registry; own: boolean }, log: (m: string) => void) {
    super(f);
    this.registry = registry.registry;
    this.ownRegistry = registry.own;
    this.slots = f.nodes.map((info) => ({ info }));
    this.state = f.state;
    this.bins = bins;
    this.log = log;
  }

  static async start(opts: KubeadmClusterOptions = {}): Promise<KubeadmCluster> {
    const t0 = Date.now();
    const log = (m: string): void => {
      if (opts.verbose) process.stderr.write(`[kubeadm +${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}\n`);
    };
    if (process.getuid?.() !== 0) throw new Error('the real-kubeadm cluster must run as root: it creates network and mount namespaces and runs containerd, kubelets and kubeadm');
    requireCommands(['haproxy', 'openssl', 'ip', 'unshare', 'nsenter', 'containerd', 'ctr', 'runc', 'iptables', 'iptables-restore', 'losetup', 'mount', 'cp'], 'the real-kubeadm cluster');
    sweepStale();
    raiseInotifyLimits();
    const n = opts.nodes ?? 3;
    const version = opts.version ?? OLD_VERSION;
    const versions = [...new Set([version, ...(opts.upgradeVersions ?? [])])];
    const specs: BinarySpec[] = [
      { what: 'etcd', version: ETCD_VERSION },
      { what: 'kubelet', version: KUBELET_VERSION },
      { what: 'kube-proxy', version: KUBELET_VERSION },
      { what: 'cni-plugins', version: CNI_PLUGINS_VERSION },
      ...versions.flatMap((v) => (['kubeadm', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const).map((what) => ({ what, version: v }))),
    ];
    const paths = await ensureBinaries(specs);
    const bins = new Map(specs.map((s, i) => [`${s.what}@${s.version}`, paths[i]!]));
    const tImages = Date.now();
    const images = [...await kubeadmImages(versions), ...(opts.images ?? [])];
    const registry = opts.registry ?? await startRegistry({ verbose: opts.verbose ?? false });
    try {
      // One at a time: skopeo reads and hashes each tar, and CPU is what this machine lacks.
      for (const img of images) await registry.push(img.path, img.name);
    } catch (err) {
      if (opts.registry === undefined) await registry.stop();
      throw err;
    }
    const imagesSeconds = (Date.now() - tImages) / 1000;

    return withFleet(n, BINDS, async (f) => {
      const c = new KubeadmCluster(f, bins, { registry, own: opts.registry === undefined }, log);
      c.timings.images = imagesSeconds;
      try {
        return await c.bringUp(f, version, t0, n);
      } catch (err) {
        // Before withFleet tears the nodes down: the logs, and the kubelet services' timers.
        await c.keepLogs();
        await Promise.all(c.slots.map((s) => s.kubelet?.close()));
        if (c.ownRegistry) await registry.stop();
        throw err;
      }
    });
  }

  /** haproxy, every node prepared, kubeadm init on cp-1, join --control-plane on the others, kube-proxy. */
  private async bringUp(f: Fleet, version: string, t0: number, n: number): Promise<KubeadmCluster> {
    const { dir, state, hostAddress, pki, lbPort, lbUrl } = f;
    const slots = this.slots;
    const cfg = await writeHaproxyConfig(dir, `${hostAddress}:${lbPort}`, slots.map((s) => ({ name: s.info.name, address: s.info.address, port: SECURE_PORT })));
    this.haproxy = new ManagedProcess('haproxy', ['-db', '-f', cfg], join(dir, 'haproxy.log'));
    state.rootPids.push(this.haproxy.pid);
    writeState(state);

    const input: ClusterInput = {
      version,
      controlPlaneEndpoint: `${hostAddress}:${lbPort}`,
      etcdImageTag: etcdImageTag(),
      token: `${randomBytes(3).toString('hex')}.${randomBytes(8).toString('hex')}`,
      certificateKey: randomBytes(32).toString('hex'),
      kubelet: kubeletSettings(),
    };
    const tNodes = Date.now();
    await Promise.all(slots.map((s) => this.prepareNode(s, version)));
    this.timings.nodesPrepared = (Date.now() - tNodes) / 1000;
    const first = slots[0]!;
    await copyFile(pki.caCert, join(first.info.root, 'etc/kubernetes/pki/ca.crt'));
    await copyFile(pki.caKey, join(first.info.root, 'etc/kubernetes/pki/ca.key'));
    await writeFile(join(first.info.root, 'kubeadm', 'init.yaml'), initConfiguration(input, kubeadmNode(first)));
    const tInit = Date.now();
    await this.kubeadm(0, version, ['init', `--config=${join(first.info.root, 'kubeadm', 'init.yaml')}`, '--upload-certs', '--skip-phases=addon/coredns,addon/kube-proxy', '--v=1']);
    this.timings.init = (Date.now() - tInit) / 1000;
    const caHash = caCertHash(await readFile(pki.caCert, 'utf8'));
    // One join at a time: each adds an etcd member (a learner, then promoted), which kubeadm does against a healthy cluster.
    for (const s of slots.slice(1)) {
      await writeFile(join(s.info.root, 'kubeadm', 'join.yaml'), joinConfiguration(input, kubeadmNode(s), caHash));
      const tJoin = Date.now();
      await this.kubeadm(s.info.index, version, ['join', `--config=${join(s.info.root, 'kubeadm', 'join.yaml')}`, '--v=1']);
      this.timings[`join-${s.info.name}`] = (Date.now() - tJoin) / 1000;
    }
    const proxyCert = await createClientCert(pki, 'kube-proxy', 'system:kube-proxy');
    await Promise.all(slots.map((s) => this.startKubeProxy(s, proxyCert)));
    await this.waitReady();
    this.timings.ready = (Date.now() - t0) / 1000;
    this.log(`ready: ${n} kubeadm nodes behind ${lbUrl} (${JSON.stringify(this.timings)})`);
    return this;
  }

  /**
   * kubeadm of `version` and the control-plane images `kubeadm upgrade apply` to it pulls, built (or waited for) and
   * pushed to the registry: a test can start the cluster and the operator's part while these still build.
   */
  async prepareUpgrade(version: string): Promise<void> {
    // One build at a time, beside a running cluster: CPU is what this machine lacks.
    for (const what of ['kubeadm', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const) {
      const [path] = await ensureBinaries([{ what, version }]);
      this.bins.set(`${what}@${version}`, path!);
    }
    for (const img of await kubeadmImages([version])) await this.registry.push(img.path, img.name);
  }

  /** How often node i's kubelet was started by its service (kubeadm's restarts included). */
  kubeletStarts(i: number): number {
    return this.slots[i]?.kubelet?.starts ?? 0;
  }

  /**
   * Runs kubeadm of a version on node i, in the node's namespaces, as root on that node would: its PATH starts with
   * the node's bin folder (kubelet, the systemctl stand-in). Resolves with its output; throws with its tail.
   */
  async kubeadm(i: number, version: string, args: string[], timeoutMs = 20 * 60_000): Promise<string> {
    const s = this.slots[i];
    const bin = this.bins.get(`kubeadm@${version}`);
    if (!s?.containerd || bin === undefined) throw new Error(`kubeadm ${version} on node ${i}: no such node or kubeadm not built`);
    const logPath = join(this.dir, `${s.info.name}.kubeadm.log`);
    const out = createWriteStream(logPath, { flags: 'a' });
    out.write(`\n$ kubeadm ${args.join(' ')}\n`);
    this.log(`${s.info.name}: kubeadm ${version} ${args.join(' ')}`);
    const t0 = Date.now();
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn('nsenter', ['-t', String(s.containerd!.pid), '-m', '-u', '-n', '--', 'env', `PATH=${join(s.info.root, 'bin')}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`, bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      const take = (d: Buffer): void => {
        text += d.toString();
        out.write(d);
      };
      child.stdout.on('data', take);
      child.stderr.on('data', take);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('error', reject);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        if (code === 0) return resolve(text);
        reject(new Error(`kubeadm ${args.join(' ')} on ${s.info.name} failed (${code ?? signal}); full output in ${logPath}; tail:\n${text.split('\n').slice(-40).join('\n')}`));
      });
    });
    out.end();
    this.kubeadmRuns.push({ args, seconds: (Date.now() - t0) / 1000, output });
    return output;
  }

  /** Files, binaries, containerd (pulling through the registry's mirrors) and the kubelet service of one node; kubeadm comes next. */
  private async prepareNode(slot: Slot, version: string): Promise<void> {
    const { root, name } = slot.info;
    const bin = join(root, 'bin');
    const systemd = join(root, 'systemd');
    await Promise.all([join(root, 'etc/kubernetes/pki'), join(root, 'etc/kubernetes/manifests'), join(root, 'var/lib/kubelet'), join(root, 'var/log'), join(root, 'run'),
      join(root, 'var/lib/etcd'), join(root, 'containerd'), join(root, CNI_STATE_DIR.slice(1)), join(root, 'cni', 'bin'), join(root, 'cni', 'net.d'), join(root, 'kube-proxy'),
      join(root, 'kubeadm'), bin, join(systemd, 'requests')].map((d) => mkdir(d, { recursive: true })));
    const cniDir = this.bins.get(`cni-plugins@${CNI_PLUGINS_VERSION}`)!;
    const kubeletBin = this.bins.get(`kubelet@${KUBELET_VERSION}`)!;
    await Promise.all([
      ...CNI_PLUGINS.map((p) => copyFile(join(cniDir, p), join(root, 'cni', 'bin', p))),
      // kubeadm's preflight runs `kubelet --version` from PATH, as a node with the kubelet package installed has it.
      symlink(kubeletBin, join(bin, 'kubelet')),
      writeFile(join(bin, 'systemctl'), systemctlShim(join(systemd, 'requests'), join(systemd, 'kubelet.state'))).then(() => chmod(join(bin, 'systemctl'), 0o755)),
      writeFile(join(root, 'containerd.toml'), containerdConfig({ root, pauseImage: pauseImageName(version) })),
      writeFile(join(root, 'cni', 'net.d', '10-auo-pods.conflist'), cniConflist({ subnet: slot.info.podSubnet })),
      writeMirrorHosts(registryConfigPath(root), this.registry.address),
    ]);
    slot.containerd = await startNodeContainerd(slot.info, BINDS, join(this.dir, `${name}.containerd.log`));
    slot.kubelet = new KubeletService({ name, root, kubeletBin, nsPid: slot.containerd.pid, logPath: join(this.dir, `${name}.kubelet.log`), requestsDir: join(systemd, 'requests'), stateFile: join(systemd, 'kubelet.state') });
    slot.kubelet.begin();
  }

  /** kube-proxy as a process in the node's namespaces, as in the nodes mode (why not kubeadm's add-on: docs/e2e-cluster.md). */
  private async startKubeProxy(slot: Slot, cert: { cert: string; key: string }): Promise<void> {
    const dir = join(slot.info.root, 'kube-proxy');
    await writeKubeconfig(join(dir, 'kubeconfig.conf'), this.lbUrl, this.pki.caCert, cert.cert, cert.key);
    await writeFile(join(dir, 'config.yaml'), kubeProxyConfig({ name: slot.info.name, kubeconfig: join(dir, 'kubeconfig.conf') }));
    slot.kubeProxy = new ManagedProcess('nsenter', ['-t', String(slot.containerd!.pid), '-m', '-u', '-n', '--', this.bins.get(`kube-proxy@${KUBELET_VERSION}`)!,
      `--config=${join(dir, 'config.yaml')}`, '--v=1'], join(this.dir, `${slot.info.name}.kube-proxy.log`));
  }

  /** Every Node registered with its mirror Pods, every apiserver ready, the kubernetes Service proxied on every node. */
  private async waitReady(): Promise<void> {
    const want = this.slots.map((s) => s.info.address).sort();
    await waitFor('every kubeadm node registered, its apiserver ready and kube-proxy synced', 300_000, async () => {
      const pods = await this.json<{ items: { metadata: { name: string } }[] }>('/api/v1/namespaces/kube-system/pods?labelSelector=tier%3Dcontrol-plane');
      const names = new Set(pods.items.map((p) => p.metadata.name));
      for (const s of this.slots) {
        for (const comp of ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler']) {
          if (!names.has(`${comp}-${s.info.name}`)) throw new Error(`no mirror Pod ${comp}-${s.info.name} yet`);
        }
        const r = await this.request(s.info.index, '/readyz', { timeoutMs: 3000 });
        if (r.status !== 200) throw new Error(`${s.info.name}'s apiserver /readyz ${r.status}`);
        const p = s.kubeProxy;
        if (p?.exited) throw new Error(`${s.info.name}'s kube-proxy exited (${p.exitCode ?? p.signal}); log tail:\n${await tail(p.logPath)}`);
        const ok = await fetch(`http://${s.info.address}:10256/healthz`, { signal: AbortSignal.timeout(2000) }).then((x) => x.ok, () => false);
        if (!ok) throw new Error(`${s.info.name}'s kube-proxy has not synced yet`);
      }
      const slices = await this.json<{ items: { endpoints?: { addresses: string[] }[] }[] }>('/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes');
      const have = slices.items.flatMap((x) => (x.endpoints ?? []).flatMap((e) => e.addresses)).sort();
      if (JSON.stringify(have) !== JSON.stringify(want)) throw new Error(`the kubernetes Service's endpoints are ${have.join(', ') || 'none'}, not yet ${want.join(', ')}`);
      return true;
    }, 1000);
  }

  private async keepLogs(): Promise<void> {
    const artifacts = process.env.AUO_E2E_ARTIFACTS;
    if (!artifacts) return;
    const { cp } = await import('node:fs/promises');
    await mkdir(join(artifacts, this.runId), { recursive: true });
    for (const f of await readdir(this.dir)) if (f.endsWith('.log')) await cp(join(this.dir, f), join(artifacts, this.runId, f)).catch(() => undefined);
  }

  /** Stops everything (SIGKILL, as a power cut) and removes namespaces, bridge and files. */
  async teardown(): Promise<void> {
    if (this.tornDown) return;
    this.tornDown = true;
    await this.keepLogs();
    await Promise.all(this.slots.map((s) => s.kubelet?.close()));
    unregisterTeardown(this.runId);
    destroySync(this.state);
    await Promise.all([this.haproxy?.kill(), ...this.slots.flatMap((s) => [s.kubeProxy?.kill(), s.containerd?.kill()])]);
    if (this.ownRegistry) await this.registry.stop();
  }
}

function kubeadmNode(s: Slot): KubeadmNode {
  return { name: s.info.name, address: s.info.address, criSocket: `unix://${join(s.info.root, 'containerd', 'containerd.sock')}` };
}

/**
 * The kubelet settings of the measured recipe (kubeadm-layout.ts kubeletConfig), minus what kubeadm sets per node
 * or by its own defaults (the runtime endpoint from criSocket, authentication and authorization, the static Pod
 * path, the node address).
 */
function kubeletSettings(): Record<string, unknown> {
  const own = new Set(['apiVersion', 'kind', 'containerRuntimeEndpoint', 'imageServiceEndpoint', 'authentication', 'authorization', 'address', 'staticPodPath', 'healthzBindAddress', 'healthzPort', 'readOnlyPort', 'registerNode']);
  const all = parse(kubeletConfig({ containerdSocket: '/unused', address: '0.0.0.0' })) as Record<string, unknown>;
  // kubeadm drops an empty list on its way to the node's config.yaml, and the kubelet's default (["pods"]) needs QoS
  // cgroups: "none" says nothing is enforced (seen: the kubelet refused to start with the list left empty).
  return { ...Object.fromEntries(Object.entries(all).filter(([k]) => !own.has(k))), enforceNodeAllocatable: ['none'] };
}

/** kubeadm's --discovery-token-ca-cert-hash: sha256 of the CA certificate's DER SubjectPublicKeyInfo. */
export function caCertHash(pem: string): string {
  const spki = new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
  return `sha256:${createHash('sha256').update(spki).digest('hex')}`;
}
