import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { Cluster } from '../cluster/index.ts';

/** What these helpers use of a cluster: both the process-mode Cluster and the nodes mode's NodesCluster have it. */
export type ClusterLike = Pick<Cluster, 'request' | 'dir' | 'kubeconfig'> & { servers: { index: number }[] };
import { waitFor } from '../cluster/index.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';
import { withRetry } from '../../src/runtime/retry.ts';
import { isTerminal } from '../../src/api/vocabulary.ts';

const root = join(import.meta.dirname, '..', '..');
export const CRD_PATH = join(root, 'crds', 'apiserverupgrades.upgrade.apiserver.dev.yaml');
const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';

/** Installs the CRD through the balancer and waits until the API serves it. */
export async function installCrd(cluster: ClusterLike): Promise<void> {
  const crd = parse(readFileSync(CRD_PATH, 'utf8')) as { metadata: { name: string } };
  // Set-up, not a fault under test: at load a CRD create took longer than 10 s (campaign seed 73 #2 and the CI
  // campaign's nodes seed beside the e2e suite), so it waits 30 s and is sent again when the answer was lost (a 409
  // then says the first one landed).
  const r = await withRetry(
    () => cluster.request('lb', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(crd), timeoutMs: 30_000 }),
    { attempts: 3, retryable: () => true },
  );
  if (r.status !== 201 && r.status !== 409) throw new Error(`CRD install: HTTP ${r.status}: ${r.body}`);
  // Every server must serve it: the operator's requests land on any of them.
  await waitFor('every server to serve the CRD', 60_000, async () => {
    for (const s of cluster.servers) if ((await cluster.request(s.index, UPGRADES)).status !== 200) return undefined;
    return true;
  });
}

export async function createUpgrade(cluster: ClusterLike, obj: Record<string, unknown>): Promise<void> {
  const r = await cluster.request('lb', UPGRADES, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(obj) });
  if (r.status !== 201) throw new Error(`create ApiServerUpgrade: HTTP ${r.status}: ${r.body}`);
}

export async function getUpgrade(cluster: ClusterLike, name: string): Promise<ApiServerUpgrade | undefined> {
  try {
    const r = await cluster.request('lb', `${UPGRADES}/${name}`, { timeoutMs: 5000 });
    return r.status === 200 ? (JSON.parse(r.body) as ApiServerUpgrade) : undefined;
  } catch {
    return undefined; // the balancer may be between servers
  }
}

/**
 * The upgrade once it rests — a terminal phase or Paused — for the test to read which. Each new phase, progress or
 * pause message goes to stderr, so a test that times out shows where the upgrade stood.
 */
export async function upgradeAtRest(cluster: ClusterLike, name: string, what: string, withinMs: number): Promise<ApiServerUpgrade> {
  let last = '';
  return waitFor(what, withinMs, async () => {
    const u = await getUpgrade(cluster, name);
    const p = u?.status?.phase;
    const line = `${p} ${u?.status?.batch?.progress ?? ''} ${u?.status?.pause?.message ?? ''}`;
    if (line !== last) process.stderr.write(`[${name}] ${(last = line)}\n`);
    return isTerminal(p) || p === 'Paused' ? u : undefined;
  }, 500);
}

export interface OperatorProcess {
  child: ChildProcess;
  logPath: string;
  healthPort: number;
  /** Exits seen; an operator that rides through replacements has none. */
  exits: { code: number | null; signal: NodeJS.Signals | null }[];
  logLines(): Record<string, unknown>[];
  stop(): Promise<void>;
}

/** Runs the operator as its own process, connected through the balancer like a Deployment in the cluster. */
export async function startOperator(cluster: ClusterLike, opts: { healthPort: number; extraArgs?: string[]; env?: Record<string, string> }): Promise<OperatorProcess> {
  const logPath = join(cluster.dir, `operator-${Date.now()}.log`);
  const fd = openSync(logPath, 'a');
  const child = spawn(process.execPath, [join(root, 'src', 'main.ts'), '--kubeconfig', cluster.kubeconfig, '--health-port', String(opts.healthPort), '--health-host', '127.0.0.1', '--log-level', 'debug', ...(opts.extraArgs ?? [])], { stdio: ['ignore', fd, fd], env: { ...process.env, ...opts.env } });
  closeSync(fd);
  const exits: OperatorProcess['exits'] = [];
  child.on('exit', (code, signal) => exits.push({ code, signal }));
  const op: OperatorProcess = {
    child, logPath, healthPort: opts.healthPort, exits,
    logLines: () => readFileSync(logPath, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await done;
      clearTimeout(t);
    },
  };
  await waitFor('the operator to be ready', 60_000, async () => {
    if (exits.length > 0) throw new Error(`operator exited: ${JSON.stringify(exits)}\n${readFileSync(logPath, 'utf8').slice(-3000)}`);
    const r = await fetch(`http://127.0.0.1:${opts.healthPort}/readyz`).catch(() => undefined);
    return r?.status === 200 ? true : undefined;
  });
  return op;
}
