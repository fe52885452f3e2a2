// Runs the static Pod agent's real script under busybox sh (only busybox applets on PATH, and the agent's own
// wget in place of busybox's, as in the agent image: e2e/cluster/images.ts agentImage) against kubeadm-shaped
// manifests in temp folders, with a local HTTPS server playing the node's kube-apiserver and its kubelet.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync, existsSync, readdirSync, readlinkSync, rmSync, statSync, symlinkSync, watch } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { parse } from 'yaml';
import { agentJob, EMULATED_VERSION_ANNOTATION, targetImage } from '../../src/drivers/static-pod.ts';
import type { ResolvedStaticPod } from '../../src/api/defaults.ts';
import type { DriverRequest } from '../../src/plan/actions.ts';
import { agentWgetBinary } from '../../e2e/cluster/images.ts';

const BUSYBOX = '/bin/busybox';

const KUBEADM_MANIFEST = `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - command:
    - kube-apiserver
    - --advertise-address=10.0.0.11
    - --feature-gates=SomeGate=true
    - --secure-port=6443
    image: registry.k8s.io/kube-apiserver:v1.35.4
    name: kube-apiserver
  hostNetwork: true
`;

const MIRROR_MANIFEST = KUBEADM_MANIFEST.replace('registry.k8s.io/kube-apiserver:v1.35.4', 'registry.example.internal/k8s/kube-apiserver:v1.35.4');
const SHA = 'sha256:' + 'ab'.repeat(32);

let root = '';
/** A folder with one symlink per busybox applet but wget, which is the agent image's Go wget: the image's PATH. */
let bin = '';
let tls: { key: string; cert: string } = { key: '', cert: '' };

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'auo-agent-'));
  bin = join(root, 'bin');
  execFileSync('mkdir', ['-p', bin]);
  const applets = execFileSync(BUSYBOX, ['--list'], { encoding: 'utf8' }).split('\n').filter((x) => x !== '' && x !== 'wget');
  for (const a of applets) symlinkSync(BUSYBOX, join(bin, a));
  // The binary the agent image ships as /bin/wget (built into the image cache, or found there).
  const wget = await agentWgetBinary();
  symlinkSync(wget, join(bin, 'wget'));
  assert.equal(readlinkSync(join(bin, 'wget')), wget);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(root, 'tls.key'), '-out', join(root, 'tls.crt'), '-subj', '/CN=127.0.0.1', '-days', '1'], { stdio: 'ignore' });
  tls = { key: readFileSync(join(root, 'tls.key'), 'utf8'), cert: readFileSync(join(root, 'tls.crt'), 'utf8') };
});

after(() => {
  rmSync(root, { recursive: true, force: true });
});

/**
 * How the fake server behaves. `kubelet`: like a node's apiserver under its kubelet: when the manifest file
 * is replaced (its inode changes), the server is down (503) for `downMs`, then serves the manifest's image
 * tag as its version. `stuck`: the old server answers 200 forever (a kubelet that never restarts it).
 * `switch`: restarts with no visible gap (the version changes at once). `tlsfail`: every TLS handshake fails
 * (a client certificate is required, TLS 1.2 so the refusal comes in the handshake): an agent that cannot talk
 * to the server must stop before touching anything.
 */
type Mode = 'kubelet' | 'stuck' | 'switch' | 'tlsfail';

interface FakeServer { port: number; answers: number[]; close(): Promise<void> }

function versionIn(manifest: string): string {
  return /image:\s*\S*?:(v[0-9][^\s@"']*)/.exec(manifest)?.[1] ?? 'v0.0.0';
}

async function fakeServer(manifestPath: string, mode: Mode, downMs = 400): Promise<FakeServer> {
  let inode = statSync(manifestPath).ino;
  let version = versionIn(readFileSync(manifestPath, 'utf8'));
  let downUntil = 0;
  const answers: number[] = [];
  // Node's TLS defaults: the agent's Go wget needs no weakened server (busybox 1.35's was given SECLEVEL=0).
  const server: Server = createServer({ ...tls, ...(mode === 'tlsfail' ? { maxVersion: 'TLSv1.2', requestCert: true, rejectUnauthorized: true, ca: tls.cert } : {}) }, (req, res) => {
    const now = Date.now();
    const ino = existsSync(manifestPath) ? statSync(manifestPath).ino : inode;
    if (ino !== inode && mode !== 'stuck') {
      inode = ino;
      version = versionIn(readFileSync(manifestPath, 'utf8'));
      downUntil = mode === 'switch' ? 0 : now + downMs;
    }
    const status = now < downUntil ? 503 : 200;
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
async function closedPort(): Promise<number> {
  const s = createServer(tls);
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

function request(action: DriverRequest['action'], version: string, port: number, gate?: boolean, emulatedVersion?: string): DriverRequest {
  return { idempotencyKey: `${action.toLowerCase()}-cp-1-0123456789abcdef`, action, upgrade: 'to-v1-36', batch: 1, server: { identity: 'apiserver-x', hostname: 'cp-1', address: `127.0.0.1:${port}` }, targetVersion: version, ...(emulatedVersion ? { emulatedVersion } : {}), featureGates: gate === undefined ? {} : { UnknownVersionInteroperabilityProxy: gate } };
}

interface Node { dir: string; manifests: string; manifest: string; backup: string; termination: string }

function spec(n: Node, image = '', readyTimeoutMs = 20_000): ResolvedStaticPod {
  return { image, manifestPath: n.manifest, backupDir: n.backup, peerCAFile: '/etc/kubernetes/pki/ca.crt', agentImage: 'busybox:1.36', namespace: 'kube-system', readyTimeout: `${readyTimeoutMs / 1000}s`, readyTimeoutMs };
}

/** The agent container's command and env of a Job. */
function agentOf(job: Record<string, unknown>): { command: string[]; env: Record<string, string> } {
  const container = ((job.spec as { template: { spec: { containers: { command: string[]; env: { name: string; value: string }[] }[] } } }).template.spec.containers[0])!;
  return { command: container.command, env: Object.fromEntries(container.env.map((e) => [e.name, e.value])) };
}

/** The image a driver call would choose: from the spec, or the manifest's repository (the mirror Pod's). */
function imageFor(n: Node, specImage: string, version: string): string {
  const running = /image:\s*["']?([^\s"']+)/.exec(readFileSync(n.manifest, 'utf8'))?.[1];
  const t = targetImage(specImage, running, version);
  if ('error' in t) throw new Error(t.error);
  return t.image;
}

/** What happened in the manifests folder, as the kubelet's inotify watch sees it (fs.watch is inotify here). */
interface FolderEvent { type: string; name: string }

interface Run { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; manifest: string; termination: string; job: Record<string, unknown>; events: FolderEvent[] }

/** Runs the Job's agent command under busybox sh, as the node would (PATH: the image's /bin, see `bin`). */
async function runAgent(n: Node, r: DriverRequest, opts: { specImage?: string; readyTimeoutMs?: number; env?: Record<string, string>; onStart?: (pid: number) => void } = {}): Promise<Run> {
  const job = agentJob(spec(n, opts.specImage ?? '', opts.readyTimeoutMs), r, 'to-v1-36', imageFor(n, opts.specImage ?? '', r.targetVersion));
  const { command, env } = agentOf(job);
  assert.deepEqual(command.slice(0, 2), ['/bin/sh', '-c']);
  rmSync(n.termination, { force: true });
  const events: FolderEvent[] = [];
  const watcher = watch(n.manifests, (type, name) => events.push({ type, name: String(name) }));
  const child = spawn(join(bin, 'sh'), command.slice(1), {
    env: { PATH: bin, ...env, POLL_INTERVAL: '0.2', TERMINATION_LOG: n.termination, ...opts.env },
  });
  opts.onStart?.(child.pid!);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (c, s) => resolve([c, s])));
  // Let the last inotify events arrive.
  await new Promise((r) => setTimeout(r, 50));
  watcher.close();
  return {
    code, signal, stdout, stderr, job,
    manifest: readFileSync(n.manifest, 'utf8'),
    termination: existsSync(n.termination) ? readFileSync(n.termination, 'utf8') : '',
    events,
  };
}

/** A node folder with the manifest in place (removed after `body`). */
async function withNode(manifest: string, body: (n: Node) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(root, 'node-'));
  const manifests = join(dir, 'etc', 'kubernetes', 'manifests');
  execFileSync('mkdir', ['-p', manifests]);
  const n: Node = { dir, manifests, manifest: join(manifests, 'kube-apiserver.yaml'), backup: join(dir, 'etc', 'kubernetes', 'apiserver-upgrade-backup'), termination: join(dir, 'termination-log') };
  writeFileSync(n.manifest, manifest);
  try {
    await body(n);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** With a fake server for the node's manifest. */
async function withServer(n: Node, mode: Mode, body: (s: FakeServer) => Promise<void>, downMs?: number): Promise<void> {
  const s = await fakeServer(n.manifest, mode, downMs);
  try {
    await body(s);
  } finally {
    await s.close();
  }
}

const pod = (manifest: string): { spec: { containers: { command: string[]; image: string }[] } } => parse(manifest) as { spec: { containers: { command: string[]; image: string }[] } };
const args = (manifest: string): string[] => pod(manifest).spec.containers[0]!.command;
const imageOf = (manifest: string): string => pod(manifest).spec.containers[0]!.image;
const emulationFlags = (manifest: string): string[] => args(manifest).filter((x) => x.startsWith('--emulated-version'));

/**
 * What a run did in the kubelet's folder: only the manifest and one dot-named temp file (which the kubelet
 * skips) ever appear; the manifest is never written in place (no inotify "change" on it), only renamed onto
 * (the temp file was made in this folder, so that is a rename within it); nothing is left but the manifest.
 */
function assertAtomic(n: Node, run: Run, key: string): void {
  const temp = `.kube-apiserver.yaml.auo-${key}`;
  const shown = JSON.stringify(run.events);
  assert.deepEqual([...new Set(run.events.map((e) => e.name))].sort(), [temp, 'kube-apiserver.yaml'].sort(), shown);
  assert.ok(run.events.some((e) => e.name === 'kube-apiserver.yaml' && e.type === 'rename'), shown);
  assert.ok(!run.events.some((e) => e.name === 'kube-apiserver.yaml' && e.type === 'change'), `the manifest itself is never written: ${shown}`);
  assert.deepEqual(readdirSync(n.manifests), ['kube-apiserver.yaml'], 'no temp file left in the manifests folder');
  assert.deepEqual(readdirSync(n.backup).filter((f) => f.startsWith('.')), [], 'no temp file left in the backup folder');
}

test('agent: EnableProxy, Upgrade, RevertProxy on a kubeadm manifest: edits, atomic renames, a backup per key, waits for the restarted server', async () => {
  await withNode(KUBEADM_MANIFEST, (n) => withServer(n, 'kubelet', async (s) => {
    const inode0 = statSync(n.manifest).ino;
    const on = await runAgent(n, request('EnableProxy', 'v1.35.4', s.port, true));
    assert.equal(on.code, 0, on.stderr);
    const a = args(on.manifest);
    assert.ok(a.includes('--feature-gates=UnknownVersionInteroperabilityProxy=true,SomeGate=true'), a.join(' '));
    assert.ok(a.includes('--peer-ca-file=/etc/kubernetes/pki/ca.crt'));
    assert.ok(a.includes('--peer-advertise-ip=127.0.0.1'));
    assert.ok(a.includes(`--peer-advertise-port=${s.port}`));
    assert.equal(imageOf(on.manifest), 'registry.k8s.io/kube-apiserver:v1.35.4');
    assert.equal(a[0], 'kube-apiserver');
    assert.notEqual(statSync(n.manifest).ino, inode0, 'a new file was renamed into place');
    assertAtomic(n, on, 'enableproxy-cp-1-0123456789abcdef');
    assert.equal(readFileSync(join(n.backup, 'enableproxy-cp-1-0123456789abcdef.yaml'), 'utf8'), KUBEADM_MANIFEST);
    // The server was seen down after the rename before the agent called it ready.
    assert.ok(s.answers.includes(503), s.answers.join(','));
    assert.match(on.stdout, /ready: https:\/\/127\.0\.0\.1:\d+\/readyz answered 200 after \d+s/);

    // Then the upgrade changes the tag only; running it again changes nothing more and keeps the first backup.
    const up = request('Upgrade', 'v1.36.3', s.port, true);
    const once = await runAgent(n, up);
    assert.equal(once.code, 0, once.stderr);
    assert.equal(imageOf(once.manifest), 'registry.k8s.io/kube-apiserver:v1.36.3');
    assert.equal(args(once.manifest).filter((x) => x.startsWith('--peer-ca-file')).length, 1);
    const backup = readFileSync(join(n.backup, 'upgrade-cp-1-0123456789abcdef.yaml'), 'utf8');
    assert.equal(backup, on.manifest, 'the manifest as the upgrade found it');
    const inode = statSync(n.manifest).ino;
    const twice = await runAgent(n, up);
    assert.equal(twice.code, 0, twice.stderr);
    assert.equal(twice.manifest, once.manifest);
    assert.match(twice.stdout, /already as asked/);
    assert.equal(statSync(n.manifest).ino, inode, 'nothing renamed when nothing changes (no restart)');
    assert.equal(readFileSync(join(n.backup, 'upgrade-cp-1-0123456789abcdef.yaml'), 'utf8'), backup, 'backup written once per key');

    // RevertProxy turns the gate off and removes the --peer-* flags (startup fails with them and the gate off).
    const off = await runAgent(n, request('RevertProxy', 'v1.36.3', s.port, false));
    assert.equal(off.code, 0, off.stderr);
    assert.ok(args(off.manifest).includes('--feature-gates=UnknownVersionInteroperabilityProxy=false,SomeGate=true'));
    assert.equal(args(off.manifest).some((x) => x.startsWith('--peer-')), false);
    assertAtomic(n, off, 'revertproxy-cp-1-0123456789abcdef');
    assert.deepEqual(readdirSync(n.backup).sort(), ['enableproxy-cp-1-0123456789abcdef.yaml', 'revertproxy-cp-1-0123456789abcdef.yaml', 'upgrade-cp-1-0123456789abcdef.yaml']);
  }));
});

test('agent: without spec.image the registry and path of the running image are kept; with it, the spec\'s repository is used', async () => {
  await withNode(MIRROR_MANIFEST, (n) => withServer(n, 'kubelet', async (s) => {
    const up = await runAgent(n, request('Upgrade', 'v1.36.3', s.port));
    assert.equal(up.code, 0, up.stderr);
    assert.equal(imageOf(up.manifest), 'registry.example.internal/k8s/kube-apiserver:v1.36.3');
    assert.equal(agentOf(up.job).env.IMAGE, 'registry.example.internal/k8s/kube-apiserver:v1.36.3');
    assert.equal(up.manifest, MIRROR_MANIFEST.replace(':v1.35.4', ':v1.36.3'), 'only the tag changed');
  }));
  await withNode(KUBEADM_MANIFEST, (n) => withServer(n, 'kubelet', async (s) => {
    const up = await runAgent(n, request('Upgrade', 'v1.36.3', s.port), { specImage: 'mirror.example.com/k8s/kube-apiserver' });
    assert.equal(up.code, 0, up.stderr);
    assert.equal(imageOf(up.manifest), 'mirror.example.com/k8s/kube-apiserver:v1.36.3');
  }));
});

test('agent: a digest-pinned, quoted or renamed mirror image is replaced by the target tag of the same repository', async () => {
  const cases: [string, string][] = [
    [`registry.example.internal/k8s/kube-apiserver@${SHA}`, 'registry.example.internal/k8s/kube-apiserver:v1.36.3'],
    [`registry.example.internal/k8s/kube-apiserver:v1.35.4@${SHA}`, 'registry.example.internal/k8s/kube-apiserver:v1.36.3'],
    ['"registry.example.internal:5000/kube-apiserver:v1.35.4"', 'registry.example.internal:5000/kube-apiserver:v1.36.3'],
    // A mirror that renamed the image: matched as the repository the driver read from the mirror Pod.
    ['mirror.example.com/k8s/apiserver:v1.35.4', 'mirror.example.com/k8s/apiserver:v1.36.3'],
  ];
  for (const [running, want] of cases) {
    await withNode(KUBEADM_MANIFEST.replace('registry.k8s.io/kube-apiserver:v1.35.4', running), (n) => withServer(n, 'kubelet', async (s) => {
      const up = await runAgent(n, request('Upgrade', 'v1.36.3', s.port));
      assert.equal(up.code, 0, `${running}: ${up.stderr}`);
      assert.equal(imageOf(up.manifest), want, running);
    }));
  }
});

test('agent: a manifest without a kube-apiserver image line fails before anything is replaced, and says so', async () => {
  const other = KUBEADM_MANIFEST.replace('registry.k8s.io/kube-apiserver:v1.35.4', 'registry.k8s.io/etcd:3.6.0');
  await withNode(other, (n) => withServer(n, 'kubelet', async (s) => {
    const run = await runAgent(n, request('Upgrade', 'v1.36.3', s.port), { specImage: 'registry.k8s.io/kube-apiserver' });
    assert.equal(run.code, 2);
    assert.equal(run.manifest, other);
    assert.match(run.termination, /no kube-apiserver image line in .*; the manifest was not replaced/);
    assert.deepEqual(readdirSync(n.manifests), ['kube-apiserver.yaml']);
  }));
});

test('agent: a server that never answers /readyz after the rename: the backup is restored atomically, exit 3 with the termination message', async () => {
  await withNode(MIRROR_MANIFEST, async (n) => {
    const port = await closedPort();
    const inode0 = statSync(n.manifest).ino;
    const started = Date.now();
    const run = await runAgent(n, request('Upgrade', 'v1.36.3', port), { readyTimeoutMs: 2000 });
    assert.equal(run.code, 3, run.stderr);
    // `date +%s` has whole seconds: the wait is READY_TIMEOUT - 1 s at least.
    assert.ok(Date.now() - started >= 1000, 'waited its ready timeout');
    assert.equal(run.manifest, MIRROR_MANIFEST, 'the manifest is the original again');
    assert.notEqual(statSync(n.manifest).ino, inode0);
    const backup = join(n.backup, 'upgrade-cp-1-0123456789abcdef.yaml');
    assert.match(run.termination, new RegExp(`^reverted: the new kube-apiserver static Pod was not ready within 2s \\(https://127\\.0\\.0\\.1:${port}/readyz, last: .*connection refused.*\\); restored ${backup.replace(/[.]/g, '\\.')}\\n$`));
    // Two replacements (the new manifest, then the backup), each a copy to a dot name and a rename.
    assertAtomic(n, run, 'upgrade-cp-1-0123456789abcdef');
    assert.equal(run.events.filter((e) => e.name === 'kube-apiserver.yaml').length, 2, JSON.stringify(run.events));
    assert.equal(readFileSync(backup, 'utf8'), MIRROR_MANIFEST);
  });
});

test('agent: an old server that keeps answering 200 (never restarted) is not taken for the new one: reverted', async () => {
  await withNode(KUBEADM_MANIFEST, (n) => withServer(n, 'stuck', async (s) => {
    const run = await runAgent(n, request('EnableProxy', 'v1.35.4', s.port, true), { readyTimeoutMs: 1500 });
    assert.equal(run.code, 3, run.stderr);
    assert.ok(s.answers.length >= 3 && s.answers.every((x) => x === 200));
    assert.match(run.termination, /^reverted: .*last: 200, but from the server that ran before: it was never seen stopping\); restored /);
    assert.equal(run.manifest, KUBEADM_MANIFEST);
  }));
});

test('agent: a restart too quick to see is recognised by /version reporting the target', async () => {
  await withNode(KUBEADM_MANIFEST, (n) => withServer(n, 'switch', async (s) => {
    const run = await runAgent(n, request('Upgrade', 'v1.36.3', s.port), { readyTimeoutMs: 10_000 });
    assert.equal(run.code, 0, run.stderr);
    assert.ok(s.answers.every((x) => x === 200));
    assert.equal(imageOf(run.manifest), 'registry.k8s.io/kube-apiserver:v1.36.3');
  }));
});

test('agent: a server the agent cannot talk TLS to stops it before any write (exit 2), naming the agent image as the cause', async () => {
  await withNode(KUBEADM_MANIFEST, (n) => withServer(n, 'tlsfail', async (s) => {
    const run = await runAgent(n, request('Upgrade', 'v1.36.3', s.port));
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.termination, /^the agent cannot check the server: https:\/\/127\.0\.0\.1:\d+\/readyz: .*(TLS|handshake).*use an agentImage whose first wget on PATH can, like the project.s node agent image\); the manifest was not replaced/);
    assert.equal(run.manifest, KUBEADM_MANIFEST);
    assert.equal(existsSync(n.backup), false, 'nothing written, not even the backup');
    assert.deepEqual(run.events, []);
  }));
});

test('agent: SIGTERM while waiting (the Job\'s deadline) restores the backup before it exits', async () => {
  await withNode(KUBEADM_MANIFEST, async (n) => {
    const port = await closedPort();
    const inode0 = statSync(n.manifest).ino;
    let pid = 0;
    const running = runAgent(n, request('Upgrade', 'v1.36.3', port), { readyTimeoutMs: 60_000, onStart: (p) => (pid = p) });
    const deadline = Date.now() + 10_000;
    while (statSync(n.manifest).ino === inode0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.notEqual(statSync(n.manifest).ino, inode0, 'the manifest was replaced');
    process.kill(pid, 'SIGTERM');
    const run = await running;
    assert.equal(run.code, 143, run.stderr);
    assert.equal(run.manifest, KUBEADM_MANIFEST);
    assert.match(run.termination, /^reverted: the agent was stopped \(SIGTERM/);
    assert.deepEqual(readdirSync(n.manifests), ['kube-apiserver.yaml']);
  });
});

test('agent: a step that fails writes what it was doing to the termination log; the manifest is untouched', async () => {
  await withNode(KUBEADM_MANIFEST, (n) => withServer(n, 'kubelet', async (s) => {
    writeFileSync(n.backup, 'a file where the backup folder should be');
    const run = await runAgent(n, request('Upgrade', 'v1.36.3', s.port));
    assert.notEqual(run.code, 0);
    assert.match(run.termination, /^failed \(exit \d+\) while keeping the manifest as .*; the manifest was not replaced\n$/);
    assert.equal(run.manifest, KUBEADM_MANIFEST);
    assert.deepEqual(readdirSync(n.manifests), ['kube-apiserver.yaml']);
  }));
});

test('agent: a manifest without --feature-gates gets one after the command name', async () => {
  await withNode(KUBEADM_MANIFEST.replace('    - --feature-gates=SomeGate=true\n', ''), (n) => withServer(n, 'kubelet', async (s) => {
    const run = await runAgent(n, request('EnableProxy', 'v1.35.4', s.port, true));
    assert.equal(run.code, 0, run.stderr);
    const a = args(run.manifest);
    assert.equal(a[0], 'kube-apiserver');
    assert.equal(a.filter((x) => x === '--feature-gates=UnknownVersionInteroperabilityProxy=true').length, 1);
  }));
});

test('agent: emulatedVersion adds --emulated-version after the command name; a second run changes nothing', async () => {
  await withNode(KUBEADM_MANIFEST, (n) => withServer(n, 'kubelet', async (s) => {
    const r = request('Upgrade', 'v1.36.3', s.port, true, '1.35');
    const { manifest: once, job, code } = await runAgent(n, r);
    assert.equal(code, 0);
    const a = args(once);
    assert.equal(a[0], 'kube-apiserver');
    assert.deepEqual(emulationFlags(once), ['--emulated-version=1.35']);
    assert.equal(a[1], '--emulated-version=1.35');
    assert.equal(imageOf(once), 'registry.k8s.io/kube-apiserver:v1.36.3');
    assert.ok(a.includes('--peer-advertise-ip=127.0.0.1') && a.includes('--secure-port=6443') && a.includes('--advertise-address=10.0.0.11'), a.join(' '));
    assert.equal((await runAgent(n, r)).manifest, once, 'idempotent');
    // Everything but the flag and the tag is as it was.
    const without = once.split('\n').filter((l) => !l.includes('--emulated-version') && !l.includes('--peer-')).join('\n');
    assert.equal(without.replace('kube-apiserver:v1.36.3', 'kube-apiserver:v1.35.4').replace('UnknownVersionInteroperabilityProxy=true,', ''), KUBEADM_MANIFEST);
    // The Job says what it sets.
    assert.equal(agentOf(job).env.EMULATED_VERSION, '1.35');
    assert.equal((job.metadata as { annotations: Record<string, string> }).annotations[EMULATED_VERSION_ANNOTATION], '1.35');
  }));
});

test('agent: another emulatedVersion replaces the flag (one left); none removes it, cleanly and idempotently', async () => {
  await withNode(KUBEADM_MANIFEST, (n) => withServer(n, 'kubelet', async (s) => {
    await runAgent(n, request('Upgrade', 'v1.36.3', s.port, undefined, '1.35'));
    const replaced = (await runAgent(n, request('Rollback', 'v1.36.3', s.port, undefined, '1.34'))).manifest;
    assert.deepEqual(emulationFlags(replaced), ['--emulated-version=1.34']);

    // Phase two: the same binary without emulation.
    const lifted = { ...request('Upgrade', 'v1.36.3', s.port), idempotencyKey: 'upgrade-cp-1-phase-two' };
    const { manifest: removed, job } = await runAgent(n, lifted);
    assert.deepEqual(emulationFlags(removed), []);
    assert.equal(removed, KUBEADM_MANIFEST.replace('kube-apiserver:v1.35.4', 'kube-apiserver:v1.36.3'), 'exactly the original manifest at the new tag');
    assert.equal((await runAgent(n, lifted)).manifest, removed, 'idempotent');
    assert.equal(agentOf(job).env.EMULATED_VERSION, '', 'the Job carries the empty value: remove');
    assert.ok(!(EMULATED_VERSION_ANNOTATION in (job.metadata as { annotations: Record<string, string> }).annotations));
  }));
});

test('agent: removes every form of an existing --emulated-version, quoted or with its value as the next entry', async () => {
  const forms = [
    '    - --emulated-version=1.35\n',
    '    - "--emulated-version=1.35"\n',
    "    - '--emulated-version=kube=1.35'\n",
    '    - --emulated-version\n    - "1.35"\n',
    '    - --emulated-version=1.34\n    - --emulated-version=1.35\n',
  ];
  for (const form of forms) {
    const manifest = KUBEADM_MANIFEST.replace('    - --secure-port=6443\n', `${form}    - --secure-port=6443\n`);
    assert.ok(args(manifest).some((x) => x.startsWith('--emulated-version')), form);
    await withNode(manifest, (n) => withServer(n, 'kubelet', async (s) => {
      const removed = await runAgent(n, request('Upgrade', 'v1.35.4', s.port));
      assert.equal(removed.code, 0, removed.stderr);
      assert.equal(removed.manifest, KUBEADM_MANIFEST, `removed: ${JSON.stringify(form)}`);
    }));
    await withNode(manifest, (n) => withServer(n, 'kubelet', async (s) => {
      const set = (await runAgent(n, request('Upgrade', 'v1.36.3', s.port, undefined, '1.35'))).manifest;
      assert.deepEqual(emulationFlags(set), ['--emulated-version=1.35'], `replaced: ${JSON.stringify(form)}`);
      assert.ok(args(set).includes('--secure-port=6443'), 'the next flag stays');
    }));
  }
});

test('agent: a malformed EMULATED_VERSION or IMAGE fails before the manifest is touched; the driver refuses them before any Job', async () => {
  await withNode(KUBEADM_MANIFEST, async (n) => {
    const port = await closedPort();
    for (const [env, message] of [[{ EMULATED_VERSION: '1.35#;d' }, /EMULATED_VERSION must be major\.minor/], [{ IMAGE: 'x#y' }, /IMAGE must be an image reference/]] as const) {
      const run = await runAgent(n, request('Upgrade', 'v1.36.3', port, undefined, '1.35'), { env });
      assert.equal(run.code, 2);
      assert.match(run.stderr, message);
      assert.match(run.termination, message);
      assert.equal(run.manifest, KUBEADM_MANIFEST);
      assert.equal(existsSync(n.backup), false);
    }
    assert.throws(() => agentJob(spec(n), request('Upgrade', 'v1.36.3', port, undefined, 'v1.35'), 'to-v1-36', 'registry.k8s.io/kube-apiserver:v1.36.3'), /not major\.minor/);
    assert.deepEqual(targetImage('registry.k8s.io/kube-apiserver', undefined, 'v1.36.3#'), { error: 'the target image "registry.k8s.io/kube-apiserver:v1.36.3#" is not an image reference: the target image: "registry.k8s.io/kube-apiserver:v1.36.3#" has an invalid tag' });
  });
});
