// Discovery tests over documents captured from real kube-apiservers
// (test/fixtures/<version>/discovery-*.json). With none captured, the suite fails and names the command that captures them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { APIGroupDiscoveryList, APIResourceList } from '../../src/observe/discovery.ts';
import { resourceSet, storageVersionHashes } from '../../src/observe/discovery.ts';
import { fixtureFiles, fixtureVersions, readFixture } from './fixtures.ts';

const captured = fixtureVersions().flatMap((version) => fixtureFiles(version, /^discovery-.*\.json$/).map((file) => ({ version, file })));

describe('discovery over captured documents', () => {
  it('captured discovery-*.json fixtures exist', () => {
    assert.ok(captured.length > 0, 'no test/fixtures/<version>/discovery-*.json: capture them with `npm run fixtures` (as root)');
  });
  for (const { version, file } of captured) {
    it(`${version}/${file}: yields well-formed resource keys or storage hashes`, () => {
      const doc = JSON.parse(readFixture(version, file)) as { kind?: string };
      if (doc.kind === 'APIGroupDiscoveryList') {
        const set = resourceSet(doc as APIGroupDiscoveryList);
        assert.ok(set.size > 0, 'some resources');
        for (const key of set) assert.match(key, /^[a-z0-9.-]*\/v[0-9a-z]+\/[a-z0-9]+$/);
      } else if (doc.kind === 'APIResourceList') {
        for (const key of storageVersionHashes(doc as APIResourceList).keys()) assert.equal(key.split('/').length, 3);
      } else {
        assert.fail(`unexpected kind ${doc.kind}`);
      }
    });
  }
});
