// kubeadm's layout rules: the gate merge both writers use, and when kube-apiserver's own peer address fallback
// makes --peer-advertise-ip/--peer-advertise-port redundant.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalIP, mergeGate, peerAdvertiseImplied } from '../../src/plan/kubeadm-layout.ts';
import { mergeFeatureGates } from '../../src/plan/kubeadm-config.ts';
import { withGate } from '../../src/agent/flags.ts';

const G = 'UnknownVersionInteroperabilityProxy';

test('mergeGate: replaced where named, else appended; every other item kept as written', () => {
  assert.equal(mergeGate('', G, true), `${G}=true`);
  assert.equal(mergeGate('B=true,A=false', G, true), `B=true,A=false,${G}=true`);
  assert.equal(mergeGate(`A=true, ${G}=false ,B=false`, G, true), `A=true,${G}=true,B=false`);
  assert.equal(mergeGate(`${G}=false,A=1,${G}=false`, G, true), `${G}=true,A=1,${G}=true`);
  assert.equal(mergeGate(' A = x ,,', G, false), ` A = x ,,,${G}=false`);
});

test('property: the agent\'s gate merge and the kubeadm-config edit\'s give the same value for any list', () => {
  const item = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom(`${G}=false`, ` ${G} =true`, 'A=true', ''));
  fc.assert(fc.property(fc.array(item, { maxLength: 6 }).map((xs) => xs.join(',')), fc.boolean(), (v, on) => {
    assert.equal(withGate(v, G, on), mergeFeatureGates(v, { [G]: on }));
    assert.equal(mergeGate(mergeGate(v, G, on), G, on), mergeGate(v, G, on), 'idempotent');
  }), { numRuns: 500 });
});

test('canonicalIP: one spelling per address, undefined for anything else', () => {
  assert.equal(canonicalIP('10.0.0.11'), '10.0.0.11');
  assert.equal(canonicalIP('010.0.0.11'), undefined);
  assert.equal(canonicalIP('256.0.0.1'), undefined);
  assert.equal(canonicalIP('fd00::1'), canonicalIP('FD00:0:0:0:0:0:0:0001'));
  assert.equal(canonicalIP('::'), '0:0:0:0:0:0:0:0');
  assert.equal(canonicalIP('1::2::3'), undefined);
  assert.equal(canonicalIP('1:2:3:4:5:6:7:8:9'), undefined);
  assert.equal(canonicalIP('::ffff:10.0.0.1'), undefined, 'a mapped IPv4 is not compared: the flags are written');
  assert.equal(canonicalIP('10.0.0.11 '), undefined);
});

test('peerAdvertiseImplied: the advertise address and the serving port (6443 unless --secure-port) are the peer address', () => {
  const cmd = (...f: string[]): string[] => ['kube-apiserver', ...f];
  assert.ok(peerAdvertiseImplied(cmd('--advertise-address=10.0.0.11', '--secure-port=6443'), '10.0.0.11', 6443));
  assert.ok(peerAdvertiseImplied(cmd('--advertise-address=10.0.0.11'), '10.0.0.11', 6443), 'the default port');
  assert.ok(!peerAdvertiseImplied(cmd('--advertise-address=10.0.0.11'), '10.0.0.11', 7443));
  assert.ok(!peerAdvertiseImplied(cmd('--advertise-address=10.0.0.11', '--secure-port=7443'), '10.0.0.11', 6443));
  assert.ok(!peerAdvertiseImplied(cmd('--advertise-address=10.0.0.12', '--secure-port=6443'), '10.0.0.11', 6443));
  assert.ok(peerAdvertiseImplied(cmd('--advertise-address=fd00::b', '--secure-port=6443'), 'fd00:0::B', 6443));
  assert.ok(!peerAdvertiseImplied(cmd('--secure-port=6443'), '10.0.0.11', 6443), 'no --advertise-address: kube-apiserver picks one, unknown here');
  assert.ok(!peerAdvertiseImplied(cmd('--advertise-address', '10.0.0.11'), '10.0.0.11', 6443), 'the two-entry form is not read');
  assert.ok(!peerAdvertiseImplied(cmd('--advertise-address=10.0.0.11', '--secure-port=06443'), '10.0.0.11', 6443), 'a port spelled otherwise is not compared');
  assert.ok(peerAdvertiseImplied(cmd('--advertise-address=10.0.0.9', '--advertise-address=10.0.0.11'), '10.0.0.11', 6443), 'the last one counts, as kube-apiserver reads it');
});
