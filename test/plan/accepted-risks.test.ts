// Accepted risks (spec.acceptRisks, src/plan/preflight.ts): a blocking finding that is not a hard rule, accepted by
// name, lets the upgrade start, recorded in status (finding, value, generation) and an Event; anything not named
// still blocks, and a hard rule named anyway (an object stored before the CRD refused it) counts for nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OLD, Sim, peer, spec, storage } from './fleet.ts';
import type { ObservedKubeadm, ObservedKubeadmServer } from '../../src/plan/kubeadm-preflight.ts';
import { ACCEPTABLE_RISKS, HARD_RULES } from '../../src/api/vocabulary.ts';
import { acceptRisksSchema } from '../../src/api/schema-gates.ts';

const NOW_PLUS_YEAR = new Date('2027-11-29T10:00:00Z').toISOString();
function server(hostname: string, over: Partial<ObservedKubeadmServer> = {}): ObservedKubeadmServer {
  return { hostname, etcd: { status: 200, body: 'ok' }, certificate: { ok: true, dnsNames: ['kubernetes.default.svc'], notAfter: NOW_PLUS_YEAR }, deprecated: [], mirrorPod: { name: `kube-apiserver-${hostname}`, nodeName: hostname }, ...over };
}
// flowcontrol v1beta3 was removed in v1.32: requested, it blocks an upgrade to v1.36.
const removed = { group: 'flowcontrol.apiserver.k8s.io', version: 'v1beta3', resource: 'flowschemas', subresource: '', removedRelease: '1.32' };
const kubeadm = (over: Partial<ObservedKubeadm> = {}): ObservedKubeadm => ({ configMap: 'present', nodes: [{ name: 'cp-1', kubeletVersion: OLD, hostnameLabel: 'cp-1' }, { name: 'cp-2', kubeletVersion: OLD, hostnameLabel: 'cp-2' }], servers: [server('cp-1', { deprecated: [removed] }), server('cp-2')], ...over });

test('without acceptRisks a deprecated API removed by the target blocks preflight: nothing called', () => {
  const s = new Sim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on')], spec());
  s.extra = { ...s.extra, storage: [storage(OLD)], kubeadm: kubeadm() };
  s.step();
  s.step();
  assert.equal(s.status?.phase, 'Preflight');
  assert.equal(s.condition('PreflightPassed')?.reason, 'KubeadmPreflightFailed');
  assert.equal(s.status?.waiting?.reason, 'KubeadmPreflightFailed', 'preflight waits: said in status.waiting (it pages after a while)');
  assert.equal(s.calls().length, 0);
  assert.equal(s.status?.acceptedRisks, undefined);
});

test('accepted by name, it lets the upgrade start, recorded in status (finding, value, generation) and a Warning Event, once', () => {
  const s = new Sim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on')], spec({ acceptRisks: ['DeprecatedAPIRemovedByTarget'] }));
  s.upgrade = { ...s.upgrade, generation: 4 };
  s.extra = { ...s.extra, storage: [storage(OLD)], kubeadm: kubeadm() };
  const p = s.step();
  assert.equal(s.condition('PreflightPassed')?.status, 'True');
  assert.match(s.condition('PreflightPassed')?.message ?? '', /accepted risks: DeprecatedAPIRemovedByTarget/);
  assert.equal(s.status?.acceptedRisks?.length, 1);
  const r = s.status!.acceptedRisks![0]!;
  assert.deepEqual([r.name, r.generation, r.time], ['DeprecatedAPIRemovedByTarget', 4, s.now.toISOString()]);
  assert.match(r.object ?? '', /flowcontrol\.apiserver\.k8s\.io\/v1beta3\/flowschemas/);
  assert.match(r.value ?? '', /1\.32/);
  const events = p.actions.filter((a) => a.kind === 'event' && a.reason === 'RiskAccepted');
  assert.equal(events.length, 1);
  assert.equal(events[0]?.kind === 'event' ? events[0].type : '', 'Warning');
  s.step();
  assert.deepEqual(s.calls(), ['Upgrade:cp-1']);
});

test('a finding not named still blocks; so does a hard rule named anyway', () => {
  const withSkew = kubeadm({ nodes: [{ name: 'cp-1', kubeletVersion: 'v1.31.0', hostnameLabel: 'cp-1' }, { name: 'cp-2', kubeletVersion: OLD, hostnameLabel: 'cp-2' }] });
  const s = new Sim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on')], spec({ acceptRisks: ['DeprecatedAPIRemovedByTarget', 'KubeletTooOld'] }));
  s.extra = { ...s.extra, storage: [storage(OLD)], kubeadm: withSkew };
  s.step();
  assert.equal(s.status?.phase, 'Preflight');
  assert.match(s.condition('PreflightPassed')?.message ?? '', /KubeletTooOld|kubelet v1\.31\.0/);
  assert.match(s.condition('PreflightPassed')?.message ?? '', /accepted: DeprecatedAPIRemovedByTarget/);
  assert.equal(s.status?.acceptedRisks, undefined);
});

test('the API: one rule per hard rule, naming it; the acceptable names and the hard rules do not overlap', () => {
  const rules = acceptRisksSchema['x-kubernetes-validations'] ?? [];
  for (const name of Object.keys(HARD_RULES)) {
    assert.ok(rules.some((r) => r.rule === `!self.exists(r, r == '${name}')` && r.message.startsWith(`${name} is a hard safety rule`)), name);
  }
  for (const name of ACCEPTABLE_RISKS) assert.equal(HARD_RULES[name], undefined, name);
  assert.ok(Object.keys(HARD_RULES).includes('SkipsMinor') && Object.keys(HARD_RULES).includes('RollbackUnsafe') && Object.keys(HARD_RULES).includes('FrozenPlan'));
});
