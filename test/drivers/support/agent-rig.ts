// The node agent on this machine, as a node would run it: the agent's sources (as the image runs their compiled
// form) in a child process with the Job's environment, against a kubeadm-shaped manifest in a temp folder, with a
// loopback HTTPS server playing the node's kube-apiserver and its kubelet. By default through agent-entry.ts
// (src/agent/run.ts with the termination message in a temp file and a short poll), or src/agent/main.ts itself.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, watch, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { KeyPair } from './tls.ts';
import { AGENT_RUN_ALLOWANCE_SECONDS } from '../../../src/api/constants.ts';

export const AGENT_MAIN = fileURLToPath(new URL('../../../src/agent/main.ts', import.meta.url));
/** The agent with its fixed values as arguments (tests only). */
export const AGENT_TEST_ENTRY = fileURLToPath(new URL('./agent-entry.ts', import.meta.url));

/**
 * How the fake server behaves. `kubelet`: like a node's apiserver under its kubelet: when the manifest file is
 * replaced (its inode changes), the server is down (503) for `downMs` (at least one answer), then serves the
 * manifest's image tag as its version. `stuck`: the old server answers 200 forever (a kubelet that never restarts
 * it). `switch`: restarts with no visible gap (the version changes at once). `tlsfail`: every TLS handshake fails
 * (a client certificate is required, TLS 1.2 so the refusal comes in the handshake).
 */
export type Mode = 'kubelet' | 'stuck' | 'switch' | 'tlsfail';

export interface FakeServer { port: number; answers: number[]; close(): Promise<void> }

/** The tag of the kube-apiserver container's image in a manifest (a plain read, for the fake server only). */
export function versionIn(manifest: string): string {
  return /image:\s*["']?\S*?:(v[0-9][^\s@"']*)/.exec(manifest)?.[1] ?? 'v0.0.0';
}

export async function fakeServer(tls: KeyPair & { ca?: string }, manifestPath: string, mode: Mode, downMs = 400): Promise<FakeServer> {
  let inode = statSync(manifestPath).ino;
  let version = versionIn(readFileSync(manifestPath, 'utf8'));
  let downUntil = 0;
  let downOnce = false;
  const answers: number[] = [];
  const server: Server = createServer({ cert: tls.cert, key: tls.key, ...(mode === 'tlsfail' ? { maxVersion: 'TLSv1.2', requestCert: true, rejectUnauthorized: true, ca: tls.cert } : {}) }, (req, res) => {
    const now = Date.now();
    const ino = existsSync(manifestPath) ? statSync(manifestPath).ino : inode;
    if (ino !== inode && mode !== 'stuck') {
      inode = ino;
      version = versionIn(readFileSync(manifestPath, 'utf8'));
      downUntil = mode === 'switch' ? 0 : now + downMs;
      downOnce = mode !== 'switch';
    }
    const status = now < downUntil || downOnce ? 503 : 200;
    downOnce = false;
    answers.push(status);
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(req.url === '/version' ? `{\n  "major": "1",\n  "gitVersion": "${version}",\n  "platform": "linux/amd64"\n}` : status === 200 ? 'ok' : '[-]shutdown failed');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    answers,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** A loopback port nothing listens on. */
export async function closedPort(): Promise<number> {
  const s = (await import('node:net')).createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** A node's folders: the manifest in /etc/kubernetes/manifests, the backup folder next to it, a termination log. */
export interface Node { dir: string; manifests: string; manifest: string; backup: string; termination: string }

export function makeNode(root: string, manifest: string): Node {
  const dir = mkdtempSync(join(root, 'node-'));
  const manifests = join(dir, 'etc', 'kubernetes', 'manifests');
  mkdirSync(manifests, { recursive: true });
  const n: Node = { dir, manifests, manifest: join(manifests, 'kube-apiserver.yaml'), backup: join(dir, 'etc', 'kubernetes', 'apiserver-upgrade-backup'), termination: join(dir, 'termination-log') };
  writeFileSync(n.manifest, manifest);
  return n;
}

export function tempRoot(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function removeRoot(root: string): void {
  rmSync(root, { recursive: true, force: true });
}

/** What happened in the manifests folder, as the kubelet's inotify watch sees it (fs.watch is inotify here). */
export interface FolderEvent { type: string; name: string }

export interface AgentRun { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; manifest: string; termination: string; events: FolderEvent[] }

export interface RunOptions {
  onStart?: (pid: number) => void;
  watchFolder?: boolean;
  /** Between two probes of /readyz; default 200 ms. */
  pollMs?: number;
  /** The agent's own deadline beyond READY_TIMEOUT; default main.ts's. */
  runAllowanceMs?: number;
  /**
   * `main`: src/agent/main.ts exactly as the Job's command runs it (its termination message goes to
   * /dev/termination-log, which is not there outside a Pod: `termination` stays empty).
   */
  entry?: 'test' | 'main';
}

/**
 * Runs the agent with `env` (and nothing else of this process's environment but PATH), watching the manifests
 * folder. Its termination message file is `n.termination`, made empty first, as the kubelet makes it.
 */
export async function runAgentProcess(n: Node, env: Record<string, string>, opts: RunOptions = {}): Promise<AgentRun> {
  writeFileSync(n.termination, '');
  const events: FolderEvent[] = [];
  const watcher = opts.watchFolder === false ? undefined : watch(n.manifests, (type, name) => events.push({ type, name: String(name) }));
  const args = opts.entry === 'main' ? [AGENT_MAIN] : [AGENT_TEST_ENTRY, n.termination, String(opts.pollMs ?? 200), String(opts.runAllowanceMs ?? AGENT_RUN_ALLOWANCE_SECONDS * 1000)];
  const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } });
  opts.onStart?.(child.pid!);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])));
  if (watcher) {
    // Let the last inotify events arrive.
    await new Promise((r) => setTimeout(r, 50));
    watcher.close();
  }
  return {
    code, signal, stdout, stderr,
    manifest: readFileSync(n.manifest, 'utf8'),
    termination: readFileSync(n.termination, 'utf8'),
    events,
  };
}
