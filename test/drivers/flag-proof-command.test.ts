// The command line a flag proof runs (src/drivers/flag-proof-command.ts): the manifest's command under the agent's
// own flag edit, the signing key substituted only when asked and present, the sentinel last and never taken as a
// value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { proofCommand, SIGNING_KEY_FLAG } from '../../src/drivers/flag-proof-command.ts';
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
  assert.deepEqual(got.args, [
    '--advertise-address=10.0.0.11',
    '--emulated-version=1.35',
    '--enable-admission-plugins=NodeRestriction',
    '--feature-gates=UnknownVersionInteroperabilityProxy=true',
    '--peer-advertise-ip=10.0.0.11',
    '--peer-advertise-port=6443',
    '--peer-ca-file=/etc/kubernetes/pki/ca.crt',
    '--service-account-key-file=/etc/kubernetes/pki/sa.pub',
    '--service-account-signing-key-file=/etc/kubernetes/pki/sa.key',
    '--tls-private-key-file=/etc/kubernetes/pki/apiserver.key',
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
