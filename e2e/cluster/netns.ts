import { mkdirSync, existsSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { run, runSyncQuiet } from './exec.ts';

/**
 * Claims a 10.77.<n>.0/24 for one run. Two clusters starting at once (parallel test files) must not pick
 * the same subnet: mkdir is atomic, so the lock folder decides; a lock whose run folder is gone is stale.
 */
export function claimSubnet(lockRoot: string, runId: string, used: Set<string>): number {
  mkdirSync(lockRoot, { recursive: true });
  for (let third = 1; third < 250; third++) {
    if (used.has(`10.77.${third}`)) continue;
    const lock = join(lockRoot, `.subnet-${third}`);
    try {
      mkdirSync(lock);
    } catch {
      const owner = existsSync(join(lock, 'owner')) ? readFileSync(join(lock, 'owner'), 'utf8') : '';
      if (owner && existsSync(join(lockRoot, owner))) continue;
      rmSync(lock, { recursive: true, force: true });
      try {
        mkdirSync(lock);
      } catch {
        continue;
      }
    }
    writeFileSync(join(lock, 'owner'), runId);
    return third;
  }
  throw new Error('no free 10.77.x.0/24 subnet for the e2e cluster');
}

export function releaseSubnet(lockRoot: string, prefix: string): void {
  const third = prefix.split('.')[2];
  if (third) rmSync(join(lockRoot, `.subnet-${third}`), { recursive: true, force: true });
}

/**
 * A network namespace for the cluster's hosts, joined to the root namespace by a veth pair.
 * The servers' addresses live on the namespace side, so they are real, non-loopback addresses
 * (the `kubernetes` Endpoints validation refuses 127/8) that tests in the root namespace reach
 * through the connected route, without entering the namespace.
 */
export interface Netns {
  name: string;
  hostVeth: string;
  nsVeth: string;
  /** Address of the root-namespace end, e.g. 10.77.3.1 */
  hostAddress: string;
  /** The first three octets, e.g. "10.77.3" */
  prefix: string;
}

export async function usedPrefixes(): Promise<Set<string>> {
  const out = await run('ip', ['-4', '-o', 'addr', 'show']);
  const used = new Set<string>();
  for (const m of out.matchAll(/inet (10\.77\.\d+)\.\d+/g)) used.add(m[1]!);
  return used;
}

export async function createNetns(runId: string, lockRoot: string): Promise<Netns> {
  if (process.getuid?.() !== 0) throw new Error('the e2e cluster needs root: it creates a network namespace and sets hostnames (ip netns, unshare --uts)');
  const third = claimSubnet(lockRoot, runId, await usedPrefixes());
  const prefix = `10.77.${third}`;
  const n: Netns = { name: `auo-${runId}`, hostVeth: `auo${runId}h`, nsVeth: `auo${runId}n`, hostAddress: `${prefix}.1`, prefix };
  await run('ip', ['netns', 'add', n.name]);
  try {
    await run('ip', ['-n', n.name, 'link', 'set', 'lo', 'up']);
    await run('ip', ['link', 'add', n.hostVeth, 'type', 'veth', 'peer', 'name', n.nsVeth, 'netns', n.name]);
    await run('ip', ['addr', 'add', `${n.hostAddress}/24`, 'dev', n.hostVeth]);
    await run('ip', ['link', 'set', n.hostVeth, 'up']);
    await run('ip', ['-n', n.name, 'addr', 'add', `${prefix}.2/24`, 'dev', n.nsVeth]);
    await run('ip', ['-n', n.name, 'link', 'set', n.nsVeth, 'up']);
    await run('ip', ['-n', n.name, 'route', 'add', 'default', 'via', n.hostAddress]);
  } catch (err) {
    deleteNetnsSync(n);
    throw err;
  }
  return n;
}

/** Adds one host's address inside the namespace. */
export async function addHostAddress(n: Netns, address: string): Promise<void> {
  await run('ip', ['-n', n.name, 'addr', 'add', `${address}/24`, 'dev', n.nsVeth]);
}

/** Deleting the namespace takes its end of the veth pair, and with it the host end. */
export function deleteNetnsSync(n: Pick<Netns, 'name' | 'hostVeth'>): void {
  runSyncQuiet('ip', ['netns', 'del', n.name]);
  runSyncQuiet('ip', ['link', 'del', n.hostVeth]);
}
