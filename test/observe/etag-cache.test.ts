import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EtagCache } from '../../src/observe/etag-cache.ts';

describe('EtagCache', () => {
  it('returns what was stored and evicts the least recently used entry', () => {
    const cache = new EtagCache(2);
    cache.set('a', '"1"', 'A');
    cache.set('b', '"2"', 'B');
    assert.deepEqual(cache.get('a'), { etag: '"1"', body: 'A' }); // a is now the most recent
    cache.set('c', '"3"', 'C');
    assert.equal(cache.get('b'), undefined);
    assert.equal(cache.get('a')?.body, 'A');
    assert.equal(cache.size, 2);
    cache.delete('a');
    assert.equal(cache.get('a'), undefined);
  });
});
