// The node agent's flag edits on a command list: in place, sorted insertion, removal, the gate merged.
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

test('setFlag: a flag that is there is set in place; a new one goes in kubeadm\'s sorted position', () => {
  const base = cmd('--advertise-address=1', '--enable-admission-plugins=NodeRestriction', '--secure-port=6443', '--tls-cert-file=x');
  let a = [...base];
  setFlag(arrayFlags(a), '--secure-port', '7443');
  assert.deepEqual(a, cmd('--advertise-address=1', '--enable-admission-plugins=NodeRestriction', '--secure-port=7443', '--tls-cert-file=x'));
  a = [...base];
  setFlag(arrayFlags(a), '--emulated-version', '1.35');
  assert.deepEqual(a, cmd('--advertise-address=1', '--emulated-version=1.35', '--enable-admission-plugins=NodeRestriction', '--secure-port=6443', '--tls-cert-file=x'));
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

test('withGate: set in place, else inserted in sorted position', () => {
  assert.equal(withGate('', 'G', true), 'G=true');
  assert.equal(withGate('A=true,Z=false', 'G', true), 'A=true,G=true,Z=false');
  assert.equal(withGate('Z=false,A=true', 'G', false), 'G=false,Z=false,A=true', 'before the first that sorts after it');
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
  assert.deepEqual(a, cmd('--etcd-servers=x', `--feature-gates=${G}=false`, '--kubelet-client-key=y'));
  a = cmd('--feature-gates', 'A=true');
  setGate(arrayFlags(a), true);
  assert.deepEqual(a, cmd('--feature-gates', `A=true,${G}=true`));
});

test('editFlags: gate on sets the peer flags in sorted position, gate off removes them, no gate leaves all of them alone', () => {
  const base = cmd('--advertise-address=10.0.0.11', '--kubelet-preferred-address-types=InternalIP', '--proxy-client-cert-file=p', '--secure-port=6443');
  const on = edit(base, { gate: true });
  assert.deepEqual(on, cmd('--advertise-address=10.0.0.11', '--feature-gates=UnknownVersionInteroperabilityProxy=true', '--kubelet-preferred-address-types=InternalIP',
    '--peer-advertise-ip=10.0.0.11', '--peer-advertise-port=6443', '--peer-ca-file=/ca.crt', '--proxy-client-cert-file=p', '--secure-port=6443'));
  assert.deepEqual(edit(on, { gate: true }), on, 'idempotent');
  const off = edit(on, { gate: false });
  assert.deepEqual(off, cmd('--advertise-address=10.0.0.11', '--feature-gates=UnknownVersionInteroperabilityProxy=false', '--kubelet-preferred-address-types=InternalIP', '--proxy-client-cert-file=p', '--secure-port=6443'));
  assert.deepEqual(edit(on, {}), on, 'no gate: the gate and the peer flags stay as they are');
  // Peer flags set by hand elsewhere (kubeadm extraArgs, appended after the sorted base) are set where they are.
  const extra = cmd('--secure-port=6443', '--peer-ca-file=/old', '--peer-advertise-ip=10.9.9.9', '--peer-advertise-port=1');
  assert.deepEqual(edit(extra, { gate: true }), cmd('--feature-gates=UnknownVersionInteroperabilityProxy=true', '--secure-port=6443', '--peer-ca-file=/ca.crt', '--peer-advertise-ip=10.0.0.11', '--peer-advertise-port=6443'));
});

test('editFlags: --emulated-version set, replaced in place, removed', () => {
  const base = cmd('--advertise-address=1', '--enable-admission-plugins=N', '--secure-port=6443');
  const set = edit(base, { emulatedVersion: '1.35' });
  assert.deepEqual(set, cmd('--advertise-address=1', '--emulated-version=1.35', '--enable-admission-plugins=N', '--secure-port=6443'));
  assert.deepEqual(edit(set, { emulatedVersion: '1.34' }), cmd('--advertise-address=1', '--emulated-version=1.34', '--enable-admission-plugins=N', '--secure-port=6443'));
  assert.deepEqual(edit(set, {}), base);
});
