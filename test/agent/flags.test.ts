// The node agent's flag edits on a command list: in place, new flags appended as kubeadm appends extraArgs, removal,
// the gate merged, the peer advertise flags left out where --advertise-address and --secure-port imply them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { arrayFlags, editFlags, flagName, removeFlag, setFlag, setGate, withGate, type FlagEdit } from '../../src/agent/flags.ts';

const cmd = (...flags: string[]): string[] => ['kube-apiserver', ...flags];
const edit = (list: string[], e: Partial<FlagEdit>): string[] => {
  const copy = [...list];
  editFlags(arrayFlags(copy), { gate: undefined, peerCA: '/ca.crt', peerIP: '10.0.0.11', peerPort: 6443, emulatedVersion: undefined, ...e });
  return copy;
};

test('flagName: --name of --name=value and --name, nothing for the command or a value', () => {
  assert.equal(flagName('--a=b=c'), '--a');
  assert.equal(flagName('--a'), '--a');
  assert.equal(flagName('kube-apiserver'), undefined);
  assert.equal(flagName('1.35'), undefined);
  assert.equal(flagName('--'), undefined);
  assert.equal(flagName('-v=2'), undefined);
});

test('setFlag: a flag that is there is set in place; a new one goes after the last flag (where kubeadm puts an extraArg)', () => {
  const base = cmd('--advertise-address=1', '--enable-admission-plugins=NodeRestriction', '--secure-port=6443', '--tls-cert-file=x');
  let a = [...base];
  setFlag(arrayFlags(a), '--secure-port', '7443');
  assert.deepEqual(a, cmd('--advertise-address=1', '--enable-admission-plugins=NodeRestriction', '--secure-port=7443', '--tls-cert-file=x'));
  a = [...base];
  setFlag(arrayFlags(a), '--emulated-version', '1.35');
  assert.deepEqual(a, cmd('--advertise-address=1', '--enable-admission-plugins=NodeRestriction', '--secure-port=6443', '--tls-cert-file=x', '--emulated-version=1.35'));
  a = cmd('--a=1', '--b', 'v');
  setFlag(arrayFlags(a), '--c', '2');
  assert.deepEqual(a, cmd('--a=1', '--b', 'v', '--c=2'), 'after the value entry of a last flag written as two entries');
  a = [...base];
  setFlag(arrayFlags(a), '--zzz', 'last');
  assert.deepEqual(a.at(-1), '--zzz=last', 'after the last flag');
  a = ['kube-apiserver'];
  setFlag(arrayFlags(a), '--x', '1');
  assert.deepEqual(a, ['kube-apiserver', '--x=1'], 'right after the command when there is no flag');
});

test('setFlag: the two-entry form keeps its form; repeats go, the first stays where it is', () => {
  const a = cmd('--a=1', '--emulated-version', '1.34', '--b=2', '--emulated-version=1.33');
  setFlag(arrayFlags(a), '--emulated-version', '1.35');
  assert.deepEqual(a, cmd('--a=1', '--emulated-version', '1.35', '--b=2'));
  const lone = cmd('--a=1', '--emulated-version', '--b=2');
  setFlag(arrayFlags(lone), '--emulated-version', '1.35');
  assert.deepEqual(lone, cmd('--a=1', '--emulated-version=1.35', '--b=2'), 'a flag without its value gets it in the entry');
});

test('removeFlag: every occurrence, with its separate value entry', () => {
  const a = cmd('--emulated-version=1.35', '--a=1', '--emulated-version', '1.34', '--b=2', '--emulated-version=kube=1.33');
  removeFlag(arrayFlags(a), '--emulated-version');
  assert.deepEqual(a, cmd('--a=1', '--b=2'));
});

test('withGate: set in place, else appended (as the kubeadm-config edit merges it)', () => {
  assert.equal(withGate('', 'G', true), 'G=true');
  assert.equal(withGate('A=true,Z=false', 'G', true), 'A=true,Z=false,G=true');
  assert.equal(withGate('Z=false,A=true', 'G', false), 'Z=false,A=true,G=false');
  assert.equal(withGate('A=true, G=false ,B=false', 'G', true), 'A=true,G=true,B=false', 'whitespace around a name');
  assert.equal(withGate('A=true,G=false,Z=false', 'G', true), 'A=true,G=true,Z=false');
  assert.equal(withGate('A=true,G=true', 'G', true), 'A=true,G=true');
});

test('setGate: merged into each --feature-gates that lists it, else into the last one, else a new flag', () => {
  const G = 'UnknownVersionInteroperabilityProxy';
  let a = cmd('--feature-gates=A=true', '--x=1', `--feature-gates=${G}=false,B=true`);
  setGate(arrayFlags(a), true);
  assert.deepEqual(a, cmd('--feature-gates=A=true', '--x=1', `--feature-gates=${G}=true,B=true`));
  a = cmd('--feature-gates=A=true', '--x=1', '--feature-gates=B=true');
  setGate(arrayFlags(a), true);
  assert.deepEqual(a, cmd('--feature-gates=A=true', '--x=1', `--feature-gates=B=true,${G}=true`));
  a = cmd('--etcd-servers=x', '--kubelet-client-key=y');
  setGate(arrayFlags(a), false);
  assert.deepEqual(a, cmd('--etcd-servers=x', '--kubelet-client-key=y', `--feature-gates=${G}=false`));
  a = cmd('--feature-gates', 'A=true');
  setGate(arrayFlags(a), true);
  assert.deepEqual(a, cmd('--feature-gates', `A=true,${G}=true`));
});

test('editFlags: gate on appends the gate and --peer-ca-file, gate off removes the peer flags, no gate leaves all of them alone', () => {
  const base = cmd('--advertise-address=10.0.0.11', '--kubelet-preferred-address-types=InternalIP', '--proxy-client-cert-file=p', '--secure-port=6443');
  const on = edit(base, { gate: true });
  // The peer address is the advertise address and the secure port: kube-apiserver advertises it without the flags.
  assert.deepEqual(on, [...base, '--feature-gates=UnknownVersionInteroperabilityProxy=true', '--peer-ca-file=/ca.crt']);
  assert.deepEqual(edit(on, { gate: true }), on, 'idempotent');
  const off = edit(on, { gate: false });
  assert.deepEqual(off, [...base, '--feature-gates=UnknownVersionInteroperabilityProxy=false']);
  assert.deepEqual(edit(on, {}), on, 'no gate: the gate and the peer flags stay as they are');
  // Another peer address, or port: the flags are written, after the gate and --peer-ca-file.
  assert.deepEqual(edit(base, { gate: true, peerIP: '10.0.0.99' }), [...base, '--feature-gates=UnknownVersionInteroperabilityProxy=true', '--peer-ca-file=/ca.crt', '--peer-advertise-ip=10.0.0.99', '--peer-advertise-port=6443']);
  assert.deepEqual(edit(base, { gate: true, peerPort: 7443 }), [...base, '--feature-gates=UnknownVersionInteroperabilityProxy=true', '--peer-ca-file=/ca.crt', '--peer-advertise-ip=10.0.0.11', '--peer-advertise-port=7443']);
  // Peer flags already there (kubeadm extraArgs, a hand edit, an earlier run): set where they are, or removed when implied.
  const extra = cmd('--advertise-address=10.0.0.11', '--secure-port=6443', '--peer-ca-file=/old', '--peer-advertise-ip=10.9.9.9', '--peer-advertise-port=1');
  assert.deepEqual(edit(extra, { gate: true, peerIP: '10.9.9.8' }), cmd('--advertise-address=10.0.0.11', '--secure-port=6443', '--peer-ca-file=/ca.crt', '--peer-advertise-ip=10.9.9.8', '--peer-advertise-port=6443', '--feature-gates=UnknownVersionInteroperabilityProxy=true'));
  assert.deepEqual(edit(extra, { gate: true }), cmd('--advertise-address=10.0.0.11', '--secure-port=6443', '--peer-ca-file=/ca.crt', '--feature-gates=UnknownVersionInteroperabilityProxy=true'));
  // No --advertise-address: kube-apiserver picks one itself, not known here, so the flags are written.
  assert.deepEqual(edit(cmd('--secure-port=6443'), { gate: true }), cmd('--secure-port=6443', '--feature-gates=UnknownVersionInteroperabilityProxy=true', '--peer-ca-file=/ca.crt', '--peer-advertise-ip=10.0.0.11', '--peer-advertise-port=6443'));
});

test('editFlags: --emulated-version set, replaced in place, removed', () => {
  const base = cmd('--advertise-address=1', '--enable-admission-plugins=N', '--secure-port=6443');
  const set = edit(base, { emulatedVersion: '1.35' });
  assert.deepEqual(set, cmd('--advertise-address=1', '--enable-admission-plugins=N', '--secure-port=6443', '--emulated-version=1.35'));
  assert.deepEqual(edit(set, { emulatedVersion: '1.34' }), cmd('--advertise-address=1', '--enable-admission-plugins=N', '--secure-port=6443', '--emulated-version=1.34'));
  assert.deepEqual(edit(set, {}), base);
});
