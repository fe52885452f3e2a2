import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { deleteNetnsSync, releaseSubnet } from './netns.ts';
import { runSyncQuiet } from './exec.ts';

/**
 * Every cluster records what it owns in a state file, so that whatever kills the test process
 * (a failed assertion, Ctrl-C, SIGKILL of the runner) the next run — or `npm run cluster -- down` —
 * can remove the processes, the namespace and the temp files it left behind.
 */
export const STATE_ROOT = join(tmpdir(), 'auo-e2e');

export interface ClusterState {
  runId: string;
  ownerPid: number;
  dir: string;
  netns: string;
  hostVeth: string;
  /** Processes in the root namespace (haproxy); the namespace's own are found with `ip netns pids`. */
  rootPids: number[];
  /** The claimed 10.77.<n> prefix, once the namespace exists. */
  prefix?: string;
  /** Nodes mode: one network namespace per node (its kubelet, containerd, shims and containers live in it). */
  nodeNetns?: string[];
  /** Nodes mode: the bridge in the root namespace that joins the nodes. */
  bridge?: string;
  /** Nodes mode: empty mount points this cluster created on the host (/etc/kubernetes, /var/lib/kubelet). */
  createdHostDirs?: string[];
}

export function stateDir(runId: string): string {
  return join(STATE_ROOT, runId);
}

export function writeState(s: ClusterState): void {
  mkdirSync(s.dir, { recursive: true });
  writeFileSync(join(s.dir, 'state.json'), JSON.stringify(s, null, 2));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function killPid(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* gone */
  }
}

function nsPids(netns: string): number[] {
  try {
    return execFileSync('ip', ['netns', 'pids', netns], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Removes everything one cluster owns. Synchronous so it can run from an exit handler. */
export function destroySync(s: ClusterState): void {
  // Nodes first: every process of a node (kubelet, kube-proxy, containerd, shims, containers with hostNetwork) is in
  // its network namespace; a Pod's own containers are in the Pod's namespace, found by their cgroups. Once they are
  // all gone the node's private mount namespace goes, with every mount in it (the Pods' network namespaces pinned
  // in its /run/netns too, and with them their veths).
  if ((s.nodeNetns ?? []).length > 0) {
    for (let i = 0; i < 10; i++) {
      const pids = [...new Set([...(s.nodeNetns ?? []).flatMap(nsPids), ...nodeContainerPids(s.dir)])];
      if (pids.length === 0) break;
      pids.forEach(killPid);
      execFileSync('sleep', ['0.2']);
    }
  }
  if ((s.nodeNetns ?? []).length > 0) removeEmptyContainerCgroups();
  for (const ns of s.nodeNetns ?? []) runSyncQuiet('ip', ['netns', 'del', ns]);
  if (s.bridge) runSyncQuiet('ip', ['link', 'del', s.bridge]);
  for (let i = 0; i < 3; i++) {
    const pids = nsPids(s.netns);
    if (pids.length === 0) break;
    pids.forEach(killPid);
    execFileSync('sleep', ['0.2']);
  }
  for (const pid of s.rootPids) {
    // A recycled pid would belong to something else: only kill it if its command line names our dir.
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(s.dir)) killPid(pid);
    } catch {
      /* gone */
    }
  }
  deleteNetnsSync({ name: s.netns, hostVeth: s.hostVeth });
  rmSync(s.dir, { recursive: true, force: true });
  if (s.prefix) releaseSubnet(STATE_ROOT, s.prefix);
  // A mount point another live nodes-mode cluster uses stays (rmdir would detach its mounts); an empty one goes.
  const others = existsSync(STATE_ROOT) ? readdirSync(STATE_ROOT).filter((n) => !n.startsWith('.')).length : 0;
  if (others === 0) for (const d of s.createdHostDirs ?? []) runSyncQuiet('rmdir', [d]);
}

/**
 * Processes of the containers of this cluster's nodes: each node's containerd runs runc with its own root
 * (<node>/containerd/runc/k8s.io/<container id>), and runc's cgroupfs driver puts a container's processes in
 * /sys/fs/cgroup/<controller>/k8s.io/<id> (cgroup v1; /sys/fs/cgroup/k8s.io/<id> on v2).
 */
function nodeContainerPids(dir: string): number[] {
  const ids = subdirs(join(dir, 'nodes')).flatMap((node) => subdirs(join(dir, 'nodes', node, 'containerd', 'runc', 'k8s.io')));
  if (ids.length === 0) return [];
  const bases = ['/sys/fs/cgroup', ...subdirs('/sys/fs/cgroup').map((c) => join('/sys/fs/cgroup', c))];
  const pids = new Set<number>();
  for (const id of ids) {
    for (const b of bases) {
      let procs = '';
      try {
        procs = readFileSync(join(b, 'k8s.io', id, 'cgroup.procs'), 'utf8');
      } catch {
        continue;
      }
      for (const p of procs.split('\n').filter(Boolean)) pids.add(Number(p));
    }
  }
  return [...pids].filter((p) => Number.isInteger(p) && p > 1);
}

function subdirs(path: string): string[] {
  try {
    return readdirSync(path, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch {
    return [];
  }
}

/**
 * runc's cgroupfs driver leaves a container's cgroups at /sys/fs/cgroup/<controller>/k8s.io/<id> when its shim
 * was killed. rmdir removes only empty cgroups (no process left), so a live cluster's containers are never touched.
 */
function removeEmptyContainerCgroups(): void {
  let controllers: string[] = [];
  try {
    controllers = readdirSync('/sys/fs/cgroup');
  } catch {
    return;
  }
  for (const c of controllers) {
    const base = join('/sys/fs/cgroup', c, 'k8s.io');
    if (!existsSync(base)) continue;
    runSyncQuiet('find', [base, '-mindepth', '1', '-depth', '-type', 'd', '-exec', 'rmdir', '{}', ';']);
    runSyncQuiet('rmdir', [base]);
  }
}

/** Cleans up clusters whose owning process is gone (or all of them, for `down --all`). Returns how many. */
export function sweepStale(all = false): number {
  if (!existsSync(STATE_ROOT)) return 0;
  let n = 0;
  for (const runId of readdirSync(STATE_ROOT).filter((n) => !n.startsWith('.'))) {
    const file = join(STATE_ROOT, runId, 'state.json');
    let s: ClusterState;
    try {
      s = JSON.parse(readFileSync(file, 'utf8')) as ClusterState;
    } catch {
      rmSync(join(STATE_ROOT, runId), { recursive: true, force: true });
      continue;
    }
    if (all || !alive(s.ownerPid) || s.ownerPid === process.pid) {
      if (s.ownerPid === process.pid && !all) continue;
      destroySync(s);
      n++;
    }
  }
  return n;
}

const live = new Map<string, () => void>();
let handlersInstalled = false;

/** Registers a synchronous teardown to run if the process exits or is interrupted before the owner tears down. */
export function registerTeardown(runId: string, fn: () => void): void {
  live.set(runId, fn);
  if (handlersInstalled) return;
  handlersInstalled = true;
  const runAll = (): void => {
    for (const [id, f] of live) {
      live.delete(id);
      f();
    }
  };
  process.on('exit', runAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      runAll();
      process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1));
    });
  }
}

export function unregisterTeardown(runId: string): void {
  live.delete(runId);
}
