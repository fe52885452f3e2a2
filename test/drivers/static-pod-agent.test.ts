// Runs the static Pod agent's real script with sh against a kubeadm-shaped manifest in a temp folder.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { parse } from 'yaml';
import { agentJob, EMULATED_VERSION_ANNOTATION } from '../../src/drivers/static-pod.ts';
import type { DriverRequest } from '../../src/plan/actions.ts';

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

function request(action: DriverRequest['action'], version: string, gate?: boolean, emulatedVersion?: string): DriverRequest {
  return { idempotencyKey: `${action.toLowerCase()}-cp-1-0123456789abcdef`, action, upgrade: 'to-v1-36', batch: 1, server: { identity: 'apiserver-x', hostname: 'cp-1', address: '10.0.0.11:6443' }, targetVersion: version, ...(emulatedVersion ? { emulatedVersion } : {}), featureGates: gate === undefined ? {} : { UnknownVersionInteroperabilityProxy: gate } };
}

/** The agent container's command and env of a request's Job. */
function agentOf(job: Record<string, unknown>): { command: string[]; env: Record<string, string> } {
  const container = ((job.spec as { template: { spec: { containers: { command: string[]; env: { name: string; value: string }[] }[] } } }).template.spec.containers[0])!;
  return { command: container.command, env: Object.fromEntries(container.env.map((e) => [e.name, e.value])) };
}

function runAgent(dir: string, r: DriverRequest): { manifest: string; job: Record<string, unknown> } {
  const spec = { image: 'registry.k8s.io/kube-apiserver', manifestPath: join(dir, 'manifests', 'kube-apiserver.yaml'), backupDir: join(dir, 'backup'), peerCAFile: '/etc/kubernetes/pki/ca.crt', agentImage: 'busybox:1.36', namespace: 'kube-system' };
  const job = agentJob(spec, r, 'to-v1-36');
  const { command, env } = agentOf(job);
  execFileSync(command[0]!, command.slice(1), { env: { PATH: process.env.PATH, ...env } });
  return { manifest: readFileSync(spec.manifestPath, 'utf8'), job };
}

/** A temp folder with the manifest in place; removed after `body`. */
function withManifest(manifest: string, body: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'auo-agent-'));
  try {
    execFileSync('mkdir', ['-p', join(dir, 'manifests')]);
    writeFileSync(join(dir, 'manifests', 'kube-apiserver.yaml'), manifest);
    body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const emulationFlags = (manifest: string): string[] => args(manifest).filter((x) => x.startsWith('--emulated-version'));

function args(manifest: string): string[] {
  const pod = parse(manifest) as { spec: { containers: { command: string[]; image: string }[] } };
  return pod.spec.containers[0]!.command;
}

test('agent: EnableProxy turns the gate on, adds the --peer-* flags, keeps other gates and the image', () => {
  const dir = mkdtempSync(join(tmpdir(), 'auo-agent-'));
  try {
    execFileSync('mkdir', ['-p', join(dir, 'manifests')]);
    writeFileSync(join(dir, 'manifests', 'kube-apiserver.yaml'), KUBEADM_MANIFEST);
    const { manifest } = runAgent(dir, request('EnableProxy', 'v1.35.4', true));
    const a = args(manifest);
    assert.ok(a.includes('--feature-gates=UnknownVersionInteroperabilityProxy=true,SomeGate=true'), a.join(' '));
    assert.ok(a.includes('--peer-ca-file=/etc/kubernetes/pki/ca.crt'));
    assert.ok(a.includes('--peer-advertise-ip=10.0.0.11'));
    assert.ok(a.includes('--peer-advertise-port=6443'));
    assert.equal((parse(manifest) as { spec: { containers: { image: string }[] } }).spec.containers[0]!.image, 'registry.k8s.io/kube-apiserver:v1.35.4');
    assert.equal(a[0], 'kube-apiserver');
    // The original is kept for rollback, and no stray file is left in the kubelet's manifests folder.
    assert.equal(readFileSync(join(dir, 'backup', 'enableproxy-cp-1-0123456789abcdef.yaml'), 'utf8'), KUBEADM_MANIFEST);
    assert.deepEqual(readdirSync(join(dir, 'manifests')), ['kube-apiserver.yaml']);

    // Then the upgrade changes the tag only; running it twice changes nothing more.
    const up = request('Upgrade', 'v1.36.3', true);
    const once = runAgent(dir, up).manifest;
    const twice = runAgent(dir, up).manifest;
    assert.equal(once, twice);
    assert.equal((parse(once) as { spec: { containers: { image: string }[] } }).spec.containers[0]!.image, 'registry.k8s.io/kube-apiserver:v1.36.3');
    assert.equal(args(once).filter((x) => x.startsWith('--peer-ca-file')).length, 1);

    // RevertProxy turns the gate off and removes the --peer-* flags (startup fails with them and the gate off).
    const off = runAgent(dir, request('RevertProxy', 'v1.36.3', false)).manifest;
    assert.ok(args(off).includes('--feature-gates=UnknownVersionInteroperabilityProxy=false,SomeGate=true'));
    assert.equal(args(off).some((x) => x.startsWith('--peer-')), false);
    assert.ok(existsSync(join(dir, 'backup', 'upgrade-cp-1-0123456789abcdef.yaml')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('agent: a manifest without --feature-gates gets one after the command name', () => {
  const dir = mkdtempSync(join(tmpdir(), 'auo-agent-'));
  try {
    execFileSync('mkdir', ['-p', join(dir, 'manifests')]);
    writeFileSync(join(dir, 'manifests', 'kube-apiserver.yaml'), KUBEADM_MANIFEST.replace('    - --feature-gates=SomeGate=true\n', ''));
    const a = args(runAgent(dir, request('EnableProxy', 'v1.35.4', true)).manifest);
    assert.equal(a[0], 'kube-apiserver');
    assert.equal(a.filter((x) => x === '--feature-gates=UnknownVersionInteroperabilityProxy=true').length, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('agent Job: pinned to the node, named from the idempotency key, never retried by the Job controller', () => {
  const job = agentJob({ image: 'registry.k8s.io/kube-apiserver', manifestPath: '/etc/kubernetes/manifests/kube-apiserver.yaml', backupDir: '/var/lib/auo', peerCAFile: '/etc/kubernetes/pki/ca.crt', agentImage: 'busybox', namespace: 'kube-system' }, request('Upgrade', 'v1.36.3', true), 'to-v1-36') as { metadata: { name: string }; spec: { backoffLimit: number; template: { spec: { nodeName: string } } } };
  assert.match(job.metadata.name, /^auo-upgrade-cp-1-[0-9a-f]{16}$/);
  assert.equal(job.spec.backoffLimit, 0);
  assert.equal(job.spec.template.spec.nodeName, 'cp-1');
});

test('agent: emulatedVersion adds --emulated-version after the command name; a second run changes nothing', () => {
  withManifest(KUBEADM_MANIFEST, (dir) => {
    const r = request('Upgrade', 'v1.36.3', true, '1.35');
    const { manifest: once, job } = runAgent(dir, r);
    const a = args(once);
    assert.equal(a[0], 'kube-apiserver');
    assert.deepEqual(emulationFlags(once), ['--emulated-version=1.35']);
    assert.equal(a[1], '--emulated-version=1.35');
    assert.equal((parse(once) as { spec: { containers: { image: string }[] } }).spec.containers[0]!.image, 'registry.k8s.io/kube-apiserver:v1.36.3');
    assert.ok(a.includes('--peer-advertise-ip=10.0.0.11') && a.includes('--secure-port=6443') && a.includes('--advertise-address=10.0.0.11'), a.join(' '));
    assert.equal(runAgent(dir, r).manifest, once, 'idempotent');
    // Everything but the flag and the tag is as it was.
    const without = once.split('\n').filter((l) => !l.includes('--emulated-version') && !l.includes('--peer-')).join('\n');
    assert.equal(without.replace('kube-apiserver:v1.36.3', 'kube-apiserver:v1.35.4').replace('UnknownVersionInteroperabilityProxy=true,', ''), KUBEADM_MANIFEST);
    // The Job says what it sets.
    assert.equal(agentOf(job).env.EMULATED_VERSION, '1.35');
    assert.equal((job.metadata as { annotations: Record<string, string> }).annotations[EMULATED_VERSION_ANNOTATION], '1.35');
  });
});

test('agent: another emulatedVersion replaces the flag (one left); none removes it, cleanly and idempotently', () => {
  withManifest(KUBEADM_MANIFEST, (dir) => {
    runAgent(dir, request('Upgrade', 'v1.36.3', undefined, '1.35'));
    const replaced = runAgent(dir, request('Rollback', 'v1.36.3', undefined, '1.34')).manifest;
    assert.deepEqual(emulationFlags(replaced), ['--emulated-version=1.34']);

    // Phase two: the same binary without emulation.
    const lifted = request('Upgrade', 'v1.36.3');
    const { manifest: removed, job } = runAgent(dir, lifted);
    assert.deepEqual(emulationFlags(removed), []);
    assert.equal(removed, KUBEADM_MANIFEST.replace('kube-apiserver:v1.35.4', 'kube-apiserver:v1.36.3'), 'exactly the original manifest at the new tag');
    assert.equal(runAgent(dir, lifted).manifest, removed, 'idempotent');
    assert.equal(agentOf(job).env.EMULATED_VERSION, '', 'the Job carries the empty value: remove');
    assert.ok(!(EMULATED_VERSION_ANNOTATION in (job.metadata as { annotations: Record<string, string> }).annotations));
  });
});

test('agent: removes every form of an existing --emulated-version, quoted or with its value as the next entry', () => {
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
    withManifest(manifest, (dir) => {
      const removed = runAgent(dir, request('Upgrade', 'v1.35.4')).manifest;
      assert.equal(removed, KUBEADM_MANIFEST, `removed: ${JSON.stringify(form)}`);
    });
    withManifest(manifest, (dir) => {
      const set = runAgent(dir, request('Upgrade', 'v1.36.3', undefined, '1.35')).manifest;
      assert.deepEqual(emulationFlags(set), ['--emulated-version=1.35'], `replaced: ${JSON.stringify(form)}`);
      assert.ok(args(set).includes('--secure-port=6443'), 'the next flag stays');
    });
  }
});

test('agent: a malformed EMULATED_VERSION fails before the manifest is touched; the driver refuses it before any Job', () => {
  withManifest(KUBEADM_MANIFEST, (dir) => {
    const spec = { image: 'registry.k8s.io/kube-apiserver', manifestPath: join(dir, 'manifests', 'kube-apiserver.yaml'), backupDir: join(dir, 'backup'), peerCAFile: '/etc/kubernetes/pki/ca.crt', agentImage: 'busybox:1.36', namespace: 'kube-system' };
    const { command, env } = agentOf(agentJob(spec, request('Upgrade', 'v1.36.3', undefined, '1.35'), 'to-v1-36'));
    const run = spawnSync(command[0]!, command.slice(1), { env: { PATH: process.env.PATH, ...env, EMULATED_VERSION: '1.35#;d' }, encoding: 'utf8' });
    assert.equal(run.status, 2);
    assert.match(run.stderr, /EMULATED_VERSION must be major\.minor/);
    assert.equal(readFileSync(spec.manifestPath, 'utf8'), KUBEADM_MANIFEST);
    assert.equal(existsSync(join(dir, 'backup')), false);
    assert.throws(() => agentJob(spec, request('Upgrade', 'v1.36.3', undefined, 'v1.35'), 'to-v1-36'), /not major\.minor/);
  });
});
