// The static Pod driver's node agent as a node runs it: the Job's command and environment (agentJob), the agent
// (`node src/agent/main.ts`) in a child process, kubeadm-shaped manifests in temp folders, and a loopback HTTPS
// server playing the node's kube-apiserver and its kubelet.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { AGENT_COMMAND, agentJob, EMULATED_VERSION_ANNOTATION, targetImage } from '../../src/drivers/static-pod.ts';
import type { ResolvedStaticPod } from '../../src/api/defaults.ts';
import type { DriverRequest } from '../../src/plan/actions.ts';
import { createTestPki, type TestPki } from './support/tls.ts';
import { closedPort, fakeServer, makeNode, removeRoot, runAgentProcess, tempRoot, type AgentRun, type FakeServer, type Mode, type Node } from './support/agent-rig.ts';

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
const KEY_HASH = '0123456789abcdef';

let root = '';
let pki: TestPki;

before(() => {
  root = tempRoot('auo-agent-');
  pki = createTestPki();
});

after(() => {
  removeRoot(root);
  pki.cleanup();
});

function request(action: DriverRequest['action'], version: string, port: number, gate?: boolean, emulatedVersion?: string): DriverRequest {
  return { idempotencyKey: `${action.toLowerCase()}-cp-1-${KEY_HASH}`, action, upgrade: 'to-v1-36', batch: 1, server: { identity: 'apiserver-x', hostname: 'cp-1', address: `127.0.0.1:${port}` }, targetVersion: version, ...(emulatedVersion ? { emulatedVersion } : {}), featureGates: gate === undefined ? {} : { UnknownVersionInteroperabilityProxy: gate } };
}

function spec(n: Node, image = '', readyTimeoutMs = 20_000): ResolvedStaticPod {
  return { image, manifestPath: n.manifest, backupDir: n.backup, peerCAFile: '/etc/kubernetes/pki/ca.crt', agentImage: 'ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:0.1.0', namespace: 'kube-system', readyTimeout: `${readyTimeoutMs / 1000}s`, readyTimeoutMs };
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

interface Run extends AgentRun { job: Record<string, unknown> }

/** Runs the Job's agent as the node would: its command is the agent, its environment is all it gets. */
async function runAgent(n: Node, r: DriverRequest, opts: { specImage?: string; readyTimeoutMs?: number; env?: Record<string, string>; onStart?: (pid: number) => void } = {}): Promise<Run> {
  const job = agentJob(spec(n, opts.specImage ?? '', opts.readyTimeoutMs), r, 'to-v1-36', imageFor(n, opts.specImage ?? '', r.targetVersion));
  const { command, env } = agentOf(job);
  assert.deepEqual(command, [...AGENT_COMMAND]);
  const run = await runAgentProcess(n, { ...env, ...opts.env }, opts.onStart ? { onStart: opts.onStart } : {});
  return { ...run, job };
}

async function withNode(manifest: string, body: (n: Node) => Promise<void>): Promise<void> {
  const n = makeNode(root, manifest);
  try {
    await body(n);
  } finally {
    removeRoot(n.dir);
  }
}

async function withServer(n: Node, mode: Mode, body: (s: FakeServer) => Promise<void>, downMs?: number): Promise<void> {
  const s = await fakeServer(pki.serving, n.manifest, mode, downMs);
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
function assertAtomic(n: Node, run: AgentRun, key: string): void {
  const temp = `.kube-apiserver.yaml.auo-${key}`;
  const shown = JSON.stringify(run.events);
  assert.deepEqual([...new Set(run.events.map((e) => e.name))].sort(), [temp, 'kube-apiserver.yaml'].sort(), shown);
  assert.ok(run.events.some((e) => e.name === 'kube-apiserver.yaml' && e.type === 'rename'), shown);
  assert.ok(!run.events.some((e) => e.name === 'kube-apiserver.yaml' && e.type === 'change'), `the manifest itself is never written: ${shown}`);
  assert.deepEqual(readdirSync(n.manifests), ['kube-apiserver.yaml'], 'no temp file left in the manifests folder');
  assert.deepEqual(readdirSync(n.backup).filter((f) => f.startsWith('.')), [], 'no temp file left in the backup folder');
}

test('agent: EnableProxy, Upgrade, RevertProxy on a kubeadm manifest: edits in place, atomic renames, a backup per key, waits for the restarted server', async () => {
  await withNode(KUBEADM_MANIFEST, (n) => withServer(n, 'kubelet', async (s) => {
    const inode0 = statSync(n.manifest).ino;
    const on = await runAgent(n, request('EnableProxy', 'v1.35.4', s.port, true));
    assert.equal(on.code, 0, on.stderr);
    // The gate merged into the existing --feature-gates; the peer flags appended after the last flag, where kubeadm
    // renders extraArgs (the peer address 127.0.0.1 is not the advertise address: --peer-advertise-* written).
    assert.deepEqual(args(on.manifest), ['kube-apiserver', '--advertise-address=10.0.0.11', '--feature-gates=SomeGate=true,UnknownVersionInteroperabilityProxy=true',
      '--secure-port=6443', '--peer-ca-file=/etc/kubernetes/pki/ca.crt', '--peer-advertise-ip=127.0.0.1', `--peer-advertise-port=${s.port}`]);
    assert.equal(imageOf(on.manifest), 'registry.k8s.io/kube-apiserver:v1.35.4');
    assert.notEqual(statSync(n.manifest).ino, inode0, 'a new file was renamed into place');
    assertAtomic(n, on, `enableproxy-cp-1-${KEY_HASH}`);
    assert.equal(readFileSync(join(n.backup, `enableproxy-cp-1-${KEY_HASH}.yaml`), 'utf8'), KUBEADM_MANIFEST);
    // The server was seen down after the rename before the agent called it ready.
    assert.ok(s.answers.includes(503), s.answers.join(','));
    assert.match(on.stdout, /ready: https:\/\/127\.0\.0\.1:\d+\/readyz answered 200 after \d+s/);

    // Then the upgrade changes the tag only; running it again changes nothing more and keeps the first backup.
    const up = request('Upgrade', 'v1.36.3', s.port, true);
    const once = await runAgent(n, up);
    assert.equal(once.code, 0, once.stderr);
    assert.equal(once.manifest, on.manifest.replace('kube-apiserver:v1.35.4', 'kube-apiserver:v1.36.3'), 'only the tag changed: the peer flags stay where they are');
    const backup = readFileSync(join(n.backup, `upgrade-cp-1-${KEY_HASH}.yaml`), 'utf8');
    assert.equal(backup, on.manifest, 'the manifest as the upgrade found it');
    const inode = statSync(n.manifest).ino;
    const twice = await runAgent(n, up);
    assert.equal(twice.code, 0, twice.stderr);
    assert.equal(twice.manifest, once.manifest);
    assert.match(twice.stdout, /already as asked/);
    assert.equal(statSync(n.manifest).ino, inode, 'nothing renamed when nothing changes (no restart)');
    assert.equal(readFileSync(join(n.backup, `upgrade-cp-1-${KEY_HASH}.yaml`), 'utf8'), backup, 'backup written once per key');

    // RevertProxy turns the gate off and removes the --peer-* flags (startup fails with them and the gate off).
    const off = await runAgent(n, request('RevertProxy', 'v1.36.3', s.port, false));
    assert.equal(off.code, 0, off.stderr);
    assert.ok(args(off.manifest).includes('--feature-gates=SomeGate=true,UnknownVersionInteroperabilityProxy=false'));
    assert.equal(args(off.manifest).some((x) => x.startsWith('--peer-')), false);
    assertAtomic(n, off, `revertproxy-cp-1-${KEY_HASH}`);
    assert.deepEqual(readdirSync(n.backup).sort(), [`enableproxy-cp-1-${KEY_HASH}.yaml`, `revertproxy-cp-1-${KEY_HASH}.yaml`, `upgrade-cp-1-${KEY_HASH}.yaml`]);
  }));
});

test('agent: without spec.image the registry and path of the running image are kept; with it, the spec\'s repository is used', async () => {
  await withNode(MIRROR_MANIFEST, (n) => withServer(n, 'kubelet', async (s) => {
    const up = await runAgent(n, request('Upgrade', 'v1.36.3', s.port));
    assert.equal(up.code, 0, up.stderr);
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

test('agent: a manifest without a kube-apiserver image fails before anything is replaced (exit 2), and says so', async () => {
  const other = KUBEADM_MANIFEST.replace('registry.k8s.io/kube-apiserver:v1.35.4', 'registry.k8s.io/etcd:3.6.0');
  await withNode(other, (n) => withServer(n, 'kubelet', async (s) => {
    const run = await runAgent(n, request('Upgrade', 'v1.36.3', s.port), { specImage: 'registry.k8s.io/kube-apiserver' });
    assert.equal(run.code, 2);
    assert.equal(run.manifest, other);
    assert.match(run.termination, /^the kube-apiserver container's image "registry\.k8s\.io\/etcd:3\.6\.0" is neither .*; the manifest was not replaced\n$/);
    assert.deepEqual(readdirSync(n.manifests), ['kube-apiserver.yaml']);
  }));
});

test('agent: a server that never answers /readyz after the rename: the backup is restored atomically, exit 3 with the termination message', async () => {
  await withNode(MIRROR_MANIFEST, async (n) => {
    const port = await closedPort();
    const inode0 = statSync(n.manifest).ino;
    const started = Date.now();
    const run = await runAgent(n, request('Upgrade', 'v1.36.3', port), { readyTimeoutMs: 10_000 });
    assert.equal(run.code, 3, run.stderr);
    assert.ok(Date.now() - started >= 10_000, 'waited its ready timeout');
    assert.equal(run.manifest, MIRROR_MANIFEST, 'the manifest is the original again');
    assert.notEqual(statSync(n.manifest).ino, inode0);
    const backup = join(n.backup, `upgrade-cp-1-${KEY_HASH}.yaml`);
    assert.match(run.termination, new RegExp(`^reverted: the new kube-apiserver static Pod was not ready within 10s \\(https://127\\.0\\.0\\.1:${port}/readyz, last: .*connection refused.*\\); restored ${backup.replace(/[.]/g, '\\.')}\\n$`));
    // Two replacements (the new manifest, then the backup), each a write to a dot name and a rename.
    assertAtomic(n, run, `upgrade-cp-1-${KEY_HASH}`);
    assert.equal(run.events.filter((e) => e.name === 'kube-apiserver.yaml').length, 2, JSON.stringify(run.events));
    assert.equal(readFileSync(backup, 'utf8'), MIRROR_MANIFEST);
  });
});

test('agent: an old server that keeps answering 200 (never restarted) is not taken for the new one: reverted', async () => {
  await withNode(KUBEADM_MANIFEST, (n) => withServer(n, 'stuck', async (s) => {
    const run = await runAgent(n, request('EnableProxy', 'v1.35.4', s.port, true), { readyTimeoutMs: 10_000 });
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

test('agent: a server the agent cannot talk TLS to stops it before any write (exit 2)', async () => {
  await withNode(KUBEADM_MANIFEST, (n) => withServer(n, 'tlsfail', async (s) => {
    const run = await runAgent(n, request('Upgrade', 'v1.36.3', s.port));
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.termination, /^the agent cannot check the server: https:\/\/127\.0\.0\.1:\d+\/readyz: .*\(the TLS handshake failed\); the manifest was not replaced\n$/);
    assert.equal(run.manifest, KUBEADM_MANIFEST);
    assert.equal(existsSync(n.backup), false, 'nothing written, not even the backup');
    assert.deepEqual(run.events, []);
  }));
});

test('agent: SIGTERM while waiting (the Job\'s deadline) restores the backup before it exits 143', async () => {
  await withNode(KUBEADM_MANIFEST, async (n) => {
    const port = await closedPort();
    const inode0 = statSync(n.manifest).ino;
    let pid = 0;
    const running = runAgent(n, request('Upgrade', 'v1.36.3', port), { readyTimeoutMs: 60_000, onStart: (p) => (pid = p) });
    const deadline = Date.now() + 20_000;
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

test('agent: SIGTERM before anything was replaced exits 143 and says the manifest was not replaced', async () => {
  await withNode(KUBEADM_MANIFEST, async (n) => {
    // A server that accepts the connection and never answers: the agent sits in its first /readyz probe.
    const { createServer } = await import('node:net');
    let connected: () => void = () => undefined;
    const inProbe = new Promise<void>((resolve) => (connected = resolve));
    const silent = createServer(() => connected());
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      let pid = 0;
      const running = runAgent(n, request('Upgrade', 'v1.36.3', port), { onStart: (p) => (pid = p) });
      await inProbe;
      process.kill(pid, 'SIGTERM');
      const run = await running;
      assert.equal(run.code, 143, run.stderr);
      assert.match(run.termination, /^stopped \(SIGTERM\) while checking that the agent can read https:\/\/127\.0\.0\.1:\d+\/readyz; the manifest was not replaced\n$/);
      assert.equal(run.manifest, KUBEADM_MANIFEST);
    } finally {
      silent.close();
    }
  });
});

test('agent: a step that fails writes what it was doing to the termination log; the manifest is untouched', async () => {
  await withNode(KUBEADM_MANIFEST, (n) => withServer(n, 'kubelet', async (s) => {
    writeFileSync(n.backup, 'a file where the backup folder should be');
    const run = await runAgent(n, request('Upgrade', 'v1.36.3', s.port));
    assert.equal(run.code, 1);
    assert.match(run.termination, /^failed \(exit 1\) while keeping the manifest as .*; the manifest was not replaced\n$/);
    assert.equal(run.manifest, KUBEADM_MANIFEST);
    assert.deepEqual(readdirSync(n.manifests), ['kube-apiserver.yaml']);
  }));
});

test('agent: a re-run on a server that does not get ready reverts nothing (exit 4)', async () => {
  await withNode(KUBEADM_MANIFEST, async (n) => {
    const port = await closedPort();
    const run = await runAgent(n, request('Upgrade', 'v1.35.4', port), { readyTimeoutMs: 10_000 });
    assert.equal(run.code, 4, run.stderr);
    assert.match(run.termination, /^not ready: https:\/\/127\.0\.0\.1:\d+\/readyz did not answer 200 within 10s \(last: connection refused.*\); the manifest was already as asked, nothing to revert\n$/);
    assert.equal(run.manifest, KUBEADM_MANIFEST);
  });
});

test('agent: emulatedVersion adds --emulated-version after the last flag; a second run changes nothing; none removes it', async () => {
  await withNode(KUBEADM_MANIFEST, (n) => withServer(n, 'kubelet', async (s) => {
    const r = request('Upgrade', 'v1.36.3', s.port, undefined, '1.35');
    const { manifest: once, job, code } = await runAgent(n, r);
    assert.equal(code, 0);
    assert.deepEqual(args(once), ['kube-apiserver', '--advertise-address=10.0.0.11', '--feature-gates=SomeGate=true', '--secure-port=6443', '--emulated-version=1.35']);
    assert.equal(imageOf(once), 'registry.k8s.io/kube-apiserver:v1.36.3');
    assert.equal((await runAgent(n, r)).manifest, once, 'idempotent');
    assert.equal(agentOf(job).env.EMULATED_VERSION, '1.35');
    assert.equal((job.metadata as { annotations: Record<string, string> }).annotations[EMULATED_VERSION_ANNOTATION], '1.35');
    const replaced = (await runAgent(n, request('Rollback', 'v1.36.3', s.port, undefined, '1.34'))).manifest;
    assert.deepEqual(emulationFlags(replaced), ['--emulated-version=1.34']);
    // Phase two: the same binary without emulation gives the original manifest at the new tag.
    const lifted = { ...request('Upgrade', 'v1.36.3', s.port), idempotencyKey: 'upgrade-cp-1-feedfacefeedface' };
    const removed = await runAgent(n, lifted);
    assert.equal(removed.manifest, KUBEADM_MANIFEST.replace('kube-apiserver:v1.35.4', 'kube-apiserver:v1.36.3'));
    assert.equal(agentOf(removed.job).env.EMULATED_VERSION, '', 'the Job carries the empty value: remove');
    // And the Rollback to the old binary gives the manifest back byte for byte.
    const back = await runAgent(n, { ...request('Rollback', 'v1.35.4', s.port), idempotencyKey: 'rollback-cp-1-feedfacefeedface' });
    assert.equal(back.code, 0, back.stderr);
    assert.equal(back.manifest, KUBEADM_MANIFEST);
  }));
});

test('agent: a value that must not reach the manifest stops the agent before it reads anything (exit 2); the driver refuses it before any Job', async () => {
  await withNode(KUBEADM_MANIFEST, async (n) => {
    const port = await closedPort();
    const cases: [Record<string, string>, RegExp][] = [
      [{ EMULATED_VERSION: '1.35#;d' }, /EMULATED_VERSION must be major\.minor/],
      [{ IMAGE: 'x#y' }, /IMAGE must be an image reference/],
      [{ PEER_CA: '/etc/kubernetes/pki/ca.crt\n    - --authorization-mode=AlwaysAllow', GATE: 'true' }, /PEER_CA must be an absolute path/],
      [{ PEER_IP: '127.0.0.1\n    - --anonymous-auth=true' }, /PEER_IP must be an IPv4 or IPv6 address/],
    ];
    for (const [env, message] of cases) {
      const run = await runAgent(n, request('Upgrade', 'v1.36.3', port, undefined, '1.35'), { env });
      assert.equal(run.code, 2, JSON.stringify(env));
      assert.match(run.stderr, message);
      assert.match(run.termination, message);
      assert.equal(run.manifest, KUBEADM_MANIFEST);
      assert.equal(existsSync(n.backup), false);
    }
    assert.throws(() => agentJob(spec(n), request('Upgrade', 'v1.36.3', port, undefined, 'v1.35'), 'to-v1-36', 'registry.k8s.io/kube-apiserver:v1.36.3'), /the call's emulatedVersion "v1\.35" is not major\.minor/);
    assert.throws(() => agentJob({ ...spec(n), peerCAFile: '/ca.crt\n- --x' }, request('Upgrade', 'v1.36.3', port), 'to-v1-36', 'registry.k8s.io/kube-apiserver:v1.36.3'), /^AgentInputError: spec\.driver\.staticPod\.peerCAFile "\/ca\.crt\\n- --x" must be an absolute path/);
    assert.deepEqual(targetImage('registry.k8s.io/kube-apiserver', undefined, 'v1.36.3#'), { error: 'the target image "registry.k8s.io/kube-apiserver:v1.36.3#" is not an image reference: the target image: "registry.k8s.io/kube-apiserver:v1.36.3#" has an invalid tag' });
  });
});
