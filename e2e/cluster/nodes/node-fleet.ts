// What a node cluster is made of and read through, for the real-kubeadm cluster (kubeadm/kubeadm-cluster.ts); the
// kubeadm-shaped nodes mode (nodes-cluster.ts) still does the same inline and can move onto it: the nodes' networks (a bridge, a network namespace per node, Pod routes), the
// mount points on the host, the state record that lets a dead run be swept, the harness PKI and the admin
// kubeconfig through the balancer; and the read side every test uses (nodes, manifests, requests).
import { existsSync, mkdirSync } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { freePort } from '../cluster.ts';
import { createPki, type Pki } from '../pki.ts';
import { claimSubnet, usedPrefixes } from '../netns.ts';
import { writeKubeconfig } from '../kubeconfig.ts';
import { SECURE_PORT } from '../apiserver-flags.ts';
import { registerTeardown, unregisterTeardown, destroySync, stateDir, writeState, STATE_ROOT, type ClusterState } from '../cleanup.ts';
import { adminRequest, type HttpResult } from '../http.ts';
import { run } from '../exec.ts';
import { podSubnet } from './kubeadm-layout.ts';
import { addNodeNetwork, type NodeInfo } from './nodes-cluster.ts';


export interface Fleet {
  runId: string;
  dir: string;
  state: ClusterState;
  prefix: string;
  /** The root namespace's address on the bridge (10.77.<n>.1): the balancer listens there. */
  hostAddress: string;
  pki: Pki;
  lbPort: number;
  lbUrl: string;
  /** Admin kubeconfig through the balancer. */
  kubeconfig: string;
  nodes: NodeInfo[];
}

/**
 * The network, state and PKI of n nodes cp-1..cp-n at 10.77.<n>.11+i, with `binds` created on the host where
 * absent (recorded, so the last cluster removes them). Registered for teardown at once; `build` runs with it and
 * anything it throws tears it all down.
 */
export async function withFleet<T>(n: number, binds: readonly string[], build: (f: Fleet) => Promise<T>): Promise<T> {
  const runId = randomBytes(3).toString('hex');
  const dir = stateDir(runId);
  await mkdir(dir, { recursive: true });
  const nodeNetns = Array.from({ length: n }, (_, i) => `auo-${runId}-n${i + 1}`);
  const state: ClusterState = { runId, ownerPid: process.pid, dir, netns: `auo-${runId}`, hostVeth: `auo${runId}h`, rootPids: [], nodeNetns, bridge: `auo${runId}b` };
  writeState(state);
  registerTeardown(runId, () => destroySync(state));
  try {
    const prefix = `10.77.${claimSubnet(STATE_ROOT, runId, await usedPrefixes())}`;
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
    const nodes: NodeInfo[] = [];
    for (let i = 0; i < n; i++) {
      const name = `cp-${i + 1}`;
      const address = `${prefix}.${11 + i}`;
      await addNodeNetwork(nodeNetns[i]!, `auo${runId}v${i + 1}`, state.bridge!, address, hostAddress);
      nodes.push({ index: i, name, hostname: name, address, url: `https://${address}:${SECURE_PORT}`, root: join(dir, 'nodes', name), netns: nodeNetns[i]!, podSubnet: podSubnet(i) });
    }
    // Pod to Pod across nodes: each node routes the others' Pod subnets to them over the bridge.
    await Promise.all(nodes.map((s) => Promise.all(nodes.filter((o) => o !== s).map((o) => run('ip', ['-n', s.netns, 'route', 'add', o.podSubnet, 'via', o.address])))));
    for (const p of binds) {
      if (existsSync(p)) continue;
      mkdirSync(p, { recursive: true });
      (state.createdHostDirs ??= []).push(p);
    }
    writeState(state);
    return await build({ runId, dir, state, prefix, hostAddress, pki, lbPort, lbUrl, kubeconfig, nodes });
  } catch (err) {
    unregisterTeardown(runId);
    destroySync(state);
    throw err;
  }
}

/** The read side of a node cluster: its nodes, their files, requests as the admin. */
export abstract class FleetView {
  readonly runId: string;
  readonly dir: string;
  readonly pki: Pki;
  /** Admin kubeconfig through haproxy. */
  readonly kubeconfig: string;
  readonly lbUrl: string;
  readonly prefix: string;
  protected readonly infos: NodeInfo[];

  protected constructor(f: Fleet) {
    this.runId = f.runId;
    this.dir = f.dir;
    this.pki = f.pki;
    this.kubeconfig = f.kubeconfig;
    this.lbUrl = f.lbUrl;
    this.prefix = f.prefix;
    this.infos = f.nodes;
  }

  get nodes(): NodeInfo[] {
    return this.infos.map((s) => ({ ...s }));
  }

  /** The nodes as the process mode names its servers (index, url), for helpers that take either cluster. */
  get servers(): NodeInfo[] {
    return this.nodes;
  }

  node(i: number): NodeInfo {
    const s = this.infos[i];
    if (!s) throw new Error(`no node ${i}; the cluster has ${this.infos.length}`);
    return { ...s };
  }

  /** A static Pod manifest of node i as the kubelet reads it (kube-apiserver unless told). */
  manifest(i: number, component = 'kube-apiserver'): Promise<string> {
    return readFile(join(this.node(i).root, 'etc/kubernetes/manifests', `${component}.yaml`), 'utf8');
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

  /** containerd's socket of node i, for ctr. */
  containerdSocket(i: number): string {
    return join(this.node(i).root, 'containerd', 'containerd.sock');
  }
}
