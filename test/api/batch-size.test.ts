import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BatchSizeError, batchCount, resolveBatchSize } from '../../src/api/batch-size.ts';

test('a count is used as is, capped by the fleet', () => {
  assert.equal(resolveBatchSize(1, 3), 1);
  assert.equal(resolveBatchSize(2, 3), 2);
  assert.equal(resolveBatchSize(5, 3), 3);
});

test('a percentage rounds down but never below one server', () => {
  assert.equal(resolveBatchSize('50%', 3), 1);
  assert.equal(resolveBatchSize('50%', 4), 2);
  assert.equal(resolveBatchSize('1%', 3), 1);
  assert.equal(resolveBatchSize('100%', 5), 5);
  assert.equal(resolveBatchSize('34%', 3), 1);
  assert.equal(resolveBatchSize('67%', 3), 2);
});

test('rejects what the CRD rejects', () => {
  for (const b of [0, -1, 1.5, '0%', '101%', '50', 'half', '50 %']) {
    assert.throws(() => resolveBatchSize(b, 3), BatchSizeError, String(b));
  }
});

test('batchCount', () => {
  assert.equal(batchCount(3, 1), 3);
  assert.equal(batchCount(3, 2), 2);
  assert.equal(batchCount(0, 1), 0);
});
