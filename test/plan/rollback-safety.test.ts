// Rollback safety over synthetic hash maps (the hashes are made-up strings).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rollbackSafety } from '../../src/plan/rollback-safety.ts';

const hashes = (entries: Record<string, string>) => new Map(Object.entries(entries));

describe('rollbackSafety (synthetic)', () => {
  const old = [
    { server: 'a', hashes: hashes({ '/v1/pods': 'P1', 'apps/v1/deployments': 'D1', 'example.dev/v1beta1/widgets': 'W1' }) },
    { server: 'b', hashes: hashes({ '/v1/pods': 'P1', 'apps/v1/deployments': 'D1', 'example.dev/v1beta1/widgets': 'W1' }) },
  ];

  it('is safe when the new servers store everything the old ones store the same way', () => {
    const got = rollbackSafety(old, [{ server: 'c', hashes: hashes({ '/v1/pods': 'P1', 'apps/v1/deployments': 'D1', 'example.dev/v1/widgets': 'W1' }) }]);
    assert.equal(got.verdict, 'safe');
    assert.equal(got.safe, true);
    assert.deepEqual(got.blocking, []);
    assert.deepEqual(got.warnings, []);
  });

  it('blocks on a resource whose storage version moved, naming both hashes and versions', () => {
    const got = rollbackSafety(old, [{ server: 'c', hashes: hashes({ '/v1/pods': 'P1', 'apps/v1/deployments': 'D1', 'example.dev/v1/widgets': 'W2', 'example.dev/v1beta1/widgets': 'W2' }) }]);
    assert.equal(got.safe, false);
    assert.equal(got.verdict, 'unsafe');
    assert.equal(got.blocking.length, 1);
    const [b] = got.blocking;
    assert.equal(b?.resource, 'example.dev/widgets');
    assert.equal(b?.oldHash, 'W1');
    assert.equal(b?.newHash, 'W2');
    assert.deepEqual(b?.oldVersions, ['v1beta1']);
    assert.deepEqual(b?.newVersions, ['v1', 'v1beta1']);
    assert.match(b?.reason ?? '', /different version/);
    assert.match(got.reason, /example\.dev\/widgets/);
  });

  it('warns about resources only the new servers serve, without blocking', () => {
    const got = rollbackSafety(old, [{ server: 'c', hashes: hashes({ '/v1/pods': 'P1', 'apps/v1/deployments': 'D1', 'newgroup.dev/v1/things': 'T1' }) }]);
    assert.equal(got.safe, true);
    assert.deepEqual(got.warnings.map((w) => [w.kind, w.resource]), [['orphaned', 'newgroup.dev/things']]);
  });

  it('warns when servers of one side disagree', () => {
    const got = rollbackSafety([...old, { server: 'x', hashes: hashes({ '/v1/pods': 'P0' }) }], [{ server: 'c', hashes: hashes({ '/v1/pods': 'P1' }) }]);
    assert.equal(got.safe, true);
    assert.deepEqual(got.warnings.map((w) => w.kind), ['inconsistentOld']);
  });

  it('is unknown, not safe, with nothing to compare', () => {
    const got = rollbackSafety([], [{ server: 'c', hashes: hashes({ '/v1/pods': 'P1' }) }]);
    assert.equal(got.verdict, 'unknown');
    assert.equal(got.safe, false);
  });
});
