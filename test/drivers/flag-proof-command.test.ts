// The command line a flag proof runs (src/drivers/flag-proof-command.ts): the manifest's command under the agent's
// own flag edit, the signing key substituted only when asked and present, the sentinel last and never taken as a
// value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parse, stringify } from 'yaml';
import { callFlagEdit, proofCommand, SIGNING_KEY_FLAG } from '../../src/drivers/flag-proof-command.ts';
import { agentJob } from '../../src/drivers/static-pod.ts';
import { editManifest } from '../../src/agent/manifest-edit.ts';
import { agentInputs } from '../support/agent-job-attack.ts';
import { arrayFlags, editFlags, type FlagEdit } from '../../src/agent/flags.ts';
import { PROOF_SENTINEL } from '../../src/plan/flag-proof.ts';

const KUBEADM = [
  'kube-apiserver',
  '--advertise-address=10.0.0.11',
  '--enable-admission-plugins=NodeRestriction',
  '--service-account-key-file=/etc/kubernetes/pki/sa.pub',
  '--service-account-signing-key-file=/etc/kubernetes/pki/sa.key',
  '--tls-private-key-file=/etc/kubernetes/pki/apiserver.key',
];
const UPGRADE: FlagEdit = { gate: true, peerCA: '/etc/kubernetes/pki/ca.crt', peerIP: '10.0.0.11', peerPort: 6443, emulatedVersion: '1.35' };

test('the kubeadm command under an Upgrade: the agent\'s edit, then the sentinel last', () => {
  const got = proofCommand(KUBEADM, UPGRADE);
  assert.ok('args' in got);
  // The peer address is the advertise address on the default secure port: no --peer-advertise-* flags.
  assert.deepEqual(got.args, [
    '--advertise-address=10.0.0.11',
    '--enable-admission-plugins=NodeRestriction',
    '--service-account-key-file=/etc/kubernetes/pki/sa.pub',
    '--service-account-signing-key-file=/etc/kubernetes/pki/sa.key',
    '--tls-private-key-file=/etc/kubernetes/pki/apiserver.key',
    '--feature-gates=UnknownVersionInteroperabilityProxy=true',
    '--peer-ca-file=/etc/kubernetes/pki/ca.crt',
    '--emulated-version=1.35',
    PROOF_SENTINEL,
  ]);
  assert.deepEqual(got.substituted, []);
});

test('the signing key is substituted in place when asked and present, never added', () => {
  const got = proofCommand(KUBEADM, undefined, { signingKeyPath: '/var/run/auo-flag-proof/sa.key' });
  assert.ok('args' in got);
  assert.equal(got.args[3], `${SIGNING_KEY_FLAG}=/var/run/auo-flag-proof/sa.key`);
  assert.deepEqual(got.substituted, [SIGNING_KEY_FLAG]);
  const without = proofCommand(['kube-apiserver', '--v=2'], undefined, { signingKeyPath: '/x' });
  assert.deepEqual(without, { args: ['--v=2', PROOF_SENTINEL], substituted: [] });
});

test('refused: not a kube-apiserver command, or a last flag without a value (it would take the sentinel)', () => {
  assert.ok('error' in proofCommand([], undefined));
  assert.ok('error' in proofCommand(['sh', '-c', 'x'], undefined));
  assert.match((proofCommand(['kube-apiserver', '--etcd-servers'], undefined) as { error: string }).error, /ends in "--etcd-servers" without a value/);
  assert.ok('error' in proofCommand(['kube-apiserver', '-v'], undefined));
  assert.ok('args' in proofCommand(['/usr/local/bin/kube-apiserver', '--profiling', '--v=2'], undefined));
});

test('property: the flags are the agent\'s edit of the command, the sentinel is last and the entry before it is never a lone flag', () => {
  const entry = fc.oneof(
    fc.constantFrom('--feature-gates=A=true', '--emulated-version=1.34', '--peer-ca-file=/x', '--profiling', '--v=2', 'value', '--etcd-servers', '--max-requests-inflight=400'),
    fc.string({ maxLength: 12 }),
  );
  const edit = fc.option(fc.record({
    gate: fc.option(fc.boolean(), { nil: undefined }),
    peerCA: fc.constant('/etc/kubernetes/pki/ca.crt'),
    peerIP: fc.constant('10.0.0.1'),
    peerPort: fc.constant(6443),
    emulatedVersion: fc.option(fc.constantFrom('1.35', '1.36'), { nil: undefined }),
  }), { nil: undefined });
  fc.assert(fc.property(fc.array(entry, { maxLength: 8 }), edit, (rest, e) => {
    const command = ['kube-apiserver', ...rest];
    const got = proofCommand(command, e);
    const edited = [...command];
    if (e !== undefined) editFlags(arrayFlags(edited), e);
    if ('error' in got) {
      const last = edited[edited.length - 1]!;
      assert.ok(edited.length > 1 && last.startsWith('-') && !last.includes('='));
      return;
    }
    assert.deepEqual(got.args, [...edited.slice(1), PROOF_SENTINEL]);
    const before = got.args[got.args.length - 2];
    assert.ok(before === undefined || !before.startsWith('-') || before.includes('='));
  }), { numRuns: 1000 });
});

test('property: the proven command line is the command of the manifest the agent writes for the call (editManifest), from the Job agentJob() renders', () => {
  const allows = { agentImages: ['ghcr.io/x/operator:1'], apiserverRepositories: ['registry.k8s.io/kube-apiserver'], manifestPaths: ['/etc/kubernetes/manifests/kube-apiserver.yaml'], backupDirPrefixes: ['/etc/kubernetes/apiserver-upgrade-backup'], peerCAFiles: ['/etc/kubernetes/pki/ca.crt'] };
  const extra = fc.array(fc.constantFrom('--feature-gates=ServiceTrafficDistribution=true', '--emulated-version=1.34', '--peer-advertise-ip=10.9.9.9', '--profiling', '--v=2', '--enable-admission-plugins=NodeRestriction'), { maxLength: 4 });
  fc.assert(fc.property(agentInputs(allows), extra, (i, flags) => {
    const command = ['kube-apiserver', '--advertise-address=10.0.0.11', ...flags, '--service-account-signing-key-file=/etc/kubernetes/pki/sa.key'];
    const edit = callFlagEdit(i.spec, i.request);
    assert.ok(edit);
    // What the agent reads from its Job's environment is this edit.
    const env = new Map(((agentJob(i.spec, i.request, i.upgradeName, i.image) as { spec: { template: { spec: { containers: { env: { name: string; value: string }[] }[] } } } }).spec.template.spec.containers[0]!.env).map((e) => [e.name, e.value]));
    assert.deepEqual([env.get('GATE'), env.get('PEER_IP'), env.get('PEER_PORT'), env.get('PEER_CA'), env.get('EMULATED_VERSION')], [edit.gate === undefined ? '' : String(edit.gate), edit.peerIP, String(edit.peerPort), edit.peerCA, edit.emulatedVersion ?? '']);
    const manifest = stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'kube-apiserver', namespace: 'kube-system' }, spec: { containers: [{ name: 'kube-apiserver', image: 'registry.k8s.io/kube-apiserver:v1.35.4', command }] } });
    const written = editManifest(manifest, { ...edit, image: i.image });
    assert.ok(written.ok, written.ok ? '' : written.message);
    const wrote = (parse(written.text) as { spec: { containers: { command: string[] }[] } }).spec.containers[0]!.command;
    const proven = proofCommand(command, edit);
    assert.ok('args' in proven);
    assert.deepEqual(['kube-apiserver', ...proven.args.slice(0, -1)], wrote);
  }), { numRuns: 300 });
});
