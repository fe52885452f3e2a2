// Network rules inside the cluster's namespace that treat servers differently. Every kube-apiserver of the
// harness shares one network namespace and, dialling out, one source address (the namespace's primary
// address on its veth): a rule on source addresses cannot tell them apart. The socket's owner can: servers of a
// version started as their own uid (`Cluster.start({ runAs })`) are matched by policy routing (`ip rule
// uidrange`, iproute2 only — no iptables/nft on the machine), and `prohibit` fails their connect() at once
// (EACCES) while root's servers reach the same address as before.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Cluster } from '../cluster/index.ts';

const exec = promisify(execFile);

async function ip(cluster: Cluster, args: string[]): Promise<string> {
  const { stdout } = await exec('ip', ['-n', cluster.netns.name, ...args]);
  return stdout;
}

/** Connections from sockets of `uid` to address:port (TCP) are refused from now on; nothing else changes. */
export async function blockFromUid(cluster: Cluster, rule: { uid: number; address: string; port: number }): Promise<void> {
  await ip(cluster, ['rule', 'add', 'priority', '100', 'uidrange', `${rule.uid}-${rule.uid}`, 'to', `${rule.address}/32`, 'ipproto', 'tcp', 'dport', String(rule.port), 'prohibit']);
}

/** The namespace's policy routing rules, for messages. */
export function rules(cluster: Cluster): Promise<string> {
  return ip(cluster, ['rule', 'show']);
}
