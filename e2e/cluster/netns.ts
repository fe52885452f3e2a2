import { run, runSyncQuiet } from './exec.ts';

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

async function usedPrefixes(): Promise<Set<string>> {
  const out = await run('ip', ['-4', '-o', 'addr', 'show']);
  const used = new Set<string>();
  for (const m of out.matchAll(/inet (10\.77\.\d+)\.\d+/g)) used.add(m[1]!);
  return used;
}

export async function createNetns(runId: string): Promise<Netns> {
  if (process.getuid?.() !== 0) throw new Error('the e2e cluster needs root: it creates a network namespace and sets hostnames (ip netns, unshare --uts)');
  const used = await usedPrefixes();
  let third = 1;
  while (used.has(`10.77.${third}`) && third < 250) third++;
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
