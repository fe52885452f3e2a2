import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { deleteNetnsSync, releaseSubnet } from './netns.ts';

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
    return execFileSync('ip', ['netns', 'pids', netns], { encoding: 'utf8' }).split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Removes everything one cluster owns. Synchronous so it can run from an exit handler. */
export function destroySync(s: ClusterState): void {
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
