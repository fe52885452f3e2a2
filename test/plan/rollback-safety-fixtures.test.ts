// Rollback safety on legacy discovery captured from the real v1.35.4 and v1.36.3 servers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtureFiles, readFixture } from '../observe/fixtures.ts';
import { storageVersionHashes, resourceKinds, mergeHashes, storageVersionHash, type APIResourceList } from '../../src/observe/discovery.ts';
import { rollbackSafety, type ServerStorageHashes } from '../../src/plan/rollback-safety.ts';

function server(version: string): ServerStorageHashes {
  const lists = fixtureFiles(version, /^legacy-.*\.json$/).map((f) => JSON.parse(readFixture(version, f)) as APIResourceList);
  return { server: version, hashes: mergeHashes(lists.map(storageVersionHashes)), kinds: mergeHashes(lists.map(resourceKinds)) };
}

test('storageVersionHash reproduces the hashes the real servers publish', () => {
  const core = JSON.parse(readFixture('v1.35.4', 'legacy-v1.json')) as APIResourceList;
  const pods = core.resources?.find((r) => r.name === 'pods');
  assert.equal(pods?.storageVersionHash, storageVersionHash('', 'v1', 'Pod'));
  const deployments = (JSON.parse(readFixture('v1.35.4', 'legacy-apps_v1.json')) as APIResourceList).resources?.find((r) => r.name === 'deployments');
  assert.equal(deployments?.storageVersionHash, storageVersionHash('apps', 'v1', 'Deployment'));
});

test('v1.36.3 -> v1.35.4: VolumeAttributesClass moved its storage version to v1, which v1.35.4 serves, so rollback stays safe', () => {
  const old = server('v1.35.4');
  const neu = server('v1.36.3');
  const vacOld = old.hashes.get('storage.k8s.io/v1/volumeattributesclasses');
  const vacNew = neu.hashes.get('storage.k8s.io/v1/volumeattributesclasses');
  // The real servers differ here: 1.35 stores v1beta1, 1.36 stores v1.
  assert.equal(vacOld, storageVersionHash('storage.k8s.io', 'v1beta1', 'VolumeAttributesClass'));
  assert.equal(vacNew, storageVersionHash('storage.k8s.io', 'v1', 'VolumeAttributesClass'));
  const r = rollbackSafety([old], [neu]);
  assert.equal(r.safe, true, r.reason);
  assert.ok(r.warnings.some((w) => w.kind === 'storageMoved' && w.resource === 'storage.k8s.io/volumeattributesclasses'));
  assert.ok(r.warnings.some((w) => w.kind === 'orphaned' && w.resource === 'admissionregistration.k8s.io/mutatingadmissionpolicies'));
});

test('a storage version the old servers do not serve, or cannot be decoded, blocks rollback', () => {
  const old = server('v1.35.4');
  const neu = server('v1.36.3');
  // Pretend the new servers store Deployments as apps/v2, which the old ones do not serve.
  const v2 = new Map(neu.hashes);
  v2.set('apps/v1/deployments', storageVersionHash('apps', 'v2', 'Deployment'));
  const kinds = new Map(neu.kinds);
  kinds.set('apps/v2/deployments', 'Deployment');
  v2.set('apps/v2/deployments', storageVersionHash('apps', 'v2', 'Deployment'));
  const r = rollbackSafety([old], [{ server: 'new', hashes: v2, kinds }]);
  assert.equal(r.safe, false);
  assert.deepEqual(r.blocking.map((b) => b.resource), ['apps/deployments']);
  // Without kinds nothing can be decoded: a changed hash blocks.
  const r2 = rollbackSafety([{ server: 'old', hashes: old.hashes }], [{ server: 'new', hashes: neu.hashes }]);
  assert.equal(r2.safe, false);
  assert.ok(r2.blocking.some((b) => b.resource === 'storage.k8s.io/volumeattributesclasses'));
});
