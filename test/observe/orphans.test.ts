// Which servers speak for the target and the from-version when looking for orphaned objects, and the list
// paths and names (synthetic; the listing itself is in fleet-emulation.test.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkedList, listPath, minorOf, objectName, orphanCandidates } from '../../src/observe/orphans.ts';
import type { ObservedOwnDiscovery } from '../../src/plan/observation.ts';

const OLD_SET = ['/v1/pods', 'apps/v1/deployments'];
const NEW_SET = [...OLD_SET, 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies'];
const OF = { fromVersion: 'v1.35.4', targetVersion: 'v1.36.3' };
const own = (server: string, version: string, emulation: string | undefined, resources: string[]): ObservedOwnDiscovery => ({ server, version, ...(emulation ? { emulation } : {}), resources });

describe('orphanCandidates (synthetic)', () => {
  it('target servers minus a from-version server', () => {
    assert.deepEqual(orphanCandidates([own('cp-1', 'v1.35.4', '1.35', OLD_SET), own('cp-2', 'v1.36.3', '1.36', NEW_SET)], OF), {
      known: true,
      resources: ['admissionregistration.k8s.io/v1/mutatingadmissionpolicies'],
      targetServers: ['cp-2'],
      fromServers: ['cp-1'],
    });
  });

  it('servers reporting no emulation count by their binary (before 1.31 there is none)', () => {
    const got = orphanCandidates([own('cp-1', 'v1.35.4', undefined, OLD_SET), own('cp-2', 'v1.36.3', undefined, NEW_SET)], OF);
    assert.deepEqual(got.known && [got.targetServers, got.fromServers], [['cp-2'], ['cp-1']]);
  });

  it('an emulating target server speaks for the from-version only when no from binary is up; it never speaks for the target', () => {
    const emulating = own('cp-2', 'v1.36.3', '1.35', OLD_SET);
    const got = orphanCandidates([emulating, own('cp-3', 'v1.36.3', '1.36', NEW_SET)], OF);
    assert.deepEqual(got.known && [got.resources, got.targetServers, got.fromServers], [['admissionregistration.k8s.io/v1/mutatingadmissionpolicies'], ['cp-3'], ['cp-2']]);
    // With a from binary up, it is the reference (what a rollback returns to), even if the emulator differed.
    const odd = own('cp-2', 'v1.36.3', '1.35', NEW_SET);
    const withOld = orphanCandidates([own('cp-1', 'v1.35.4', '1.35', OLD_SET), odd, own('cp-3', 'v1.36.3', '1.36', NEW_SET)], OF);
    assert.deepEqual(withOld.known && withOld.fromServers, ['cp-1']);
    assert.deepEqual(withOld.known && withOld.resources, ['admissionregistration.k8s.io/v1/mutatingadmissionpolicies']);
    // Only emulating servers: no target side.
    const noTarget = orphanCandidates([emulating], OF);
    assert.equal(noTarget.known, false);
  });

  it('no from server up: the from-version\'s stored resources recorded at preflight speak for it, counting only what the target stores', () => {
    // Phase two once every server lifted the emulation (campaign process seed 101 #15: paused RollbackSafetyUnknown for good).
    const NEW_WITH_VIRTUAL = [...NEW_SET, '/v1/componentstatuses'];
    const targetStored = new Set([...NEW_SET]);
    const got = orphanCandidates([own('cp-2', 'v1.36.3', undefined, NEW_WITH_VIRTUAL), own('cp-3', 'v1.36.3', '1.36', NEW_WITH_VIRTUAL)], { ...OF, fromStored: OLD_SET }, targetStored);
    assert.deepEqual(got, { known: true, resources: ['admissionregistration.k8s.io/v1/mutatingadmissionpolicies'], targetServers: ['cp-2', 'cp-3'], fromServers: [], fromRecorded: true });
    // A server that speaks for the from-version still comes first.
    const withOld = orphanCandidates([own('cp-1', 'v1.35.4', undefined, [...OLD_SET, '/v1/componentstatuses']), own('cp-3', 'v1.36.3', undefined, NEW_WITH_VIRTUAL)], { ...OF, fromStored: OLD_SET }, targetStored);
    assert.deepEqual(withOld.known && [withOld.fromServers, withOld.fromRecorded], [['cp-1'], undefined]);
    // Either record missing: unknown, as before.
    assert.equal(orphanCandidates([own('cp-3', 'v1.36.3', undefined, NEW_SET)], { ...OF, fromStored: OLD_SET }).known, false, 'the target\'s stored resources not read');
    assert.equal(orphanCandidates([own('cp-3', 'v1.36.3', undefined, NEW_SET)], { ...OF, fromStored: [] }, targetStored).known, false, 'nothing recorded at preflight');
  });

  it('no from side: unknown, with the reason', () => {
    const got = orphanCandidates([own('cp-3', 'v1.36.3', '1.36', NEW_SET)], OF);
    assert.deepEqual(got, { known: false, reason: 'no up server of v1.35.4, nor of v1.36.3 with --emulated-version=1.35, whose own discovery was read: the from-version\'s resources are unknown' });
  });

  it('a from binary emulating something else, or a server of a third version, speaks for neither side', () => {
    const got = orphanCandidates([own('cp-1', 'v1.35.4', '1.34', OLD_SET), own('cp-2', 'v1.34.9', '1.34', OLD_SET), own('cp-3', 'v1.36.3', '1.36', NEW_SET)], OF);
    assert.equal(got.known, false);
  });

  it('the union of the target servers, minus the union of the from servers; build metadata and vendor suffixes ignored', () => {
    const got = orphanCandidates([
      own('cp-1', 'v1.35.4+rke2r1', '1.35', OLD_SET),
      own('cp-2', 'v1.36.3+rke2r1', '1.36', [...NEW_SET, 'x.dev/v1/a']),
      own('cp-3', 'v1.36.3', '1.36', [...NEW_SET, 'x.dev/v1/b']),
    ], OF);
    assert.deepEqual(got.known && got.resources, ['admissionregistration.k8s.io/v1/mutatingadmissionpolicies', 'x.dev/v1/a', 'x.dev/v1/b']);
  });

  it('not versions: unknown', () => {
    assert.equal(orphanCandidates([], { fromVersion: '1.35', targetVersion: 'v1.36.3' }).known, false);
  });
});

describe('orphan listing helpers (synthetic)', () => {
  it('minorOf', () => {
    assert.equal(minorOf('v1.36.3'), '1.36');
    assert.equal(minorOf('v1.36.0-rc.1'), '1.36');
    assert.equal(minorOf('v1.30.4-eks-a737599'), '1.30');
    assert.equal(minorOf('1.36'), undefined);
  });

  it('listPath: the core group under /api, others under /apis, with the query', () => {
    assert.equal(listPath('/v1/configmaps', { limit: '20' }), '/api/v1/configmaps?limit=20');
    assert.equal(listPath('admissionregistration.k8s.io/v1/mutatingadmissionpolicies', { limit: '20' }), '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies?limit=20');
    assert.equal(listPath('apps/v1/deployments', { limit: '500', continue: 'a+b/c==' }), '/apis/apps/v1/deployments?limit=500&continue=a%2Bb%2Fc%3D%3D');
    assert.equal(listPath('apps/v1/deployments'), '/apis/apps/v1/deployments');
    assert.throws(() => listPath('deployments'), /not a group\/version\/resource/);
  });

  it('objectName: namespace/name for namespaced objects', () => {
    assert.equal(objectName({ metadata: { name: 'p', namespace: 'ns' } }), 'ns/p');
    assert.equal(objectName({ metadata: { name: 'p' } }), 'p');
  });

  it('checkedList: a list has items', () => {
    assert.doesNotThrow(() => checkedList('/x', { items: [] }));
    assert.throws(() => checkedList('/x', { kind: 'Status' } as never), /expected a list with items/);
    assert.throws(() => checkedList('/x', null as never), /expected a list with items/);
  });
});
