import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { shownValue } from '../../src/api/shown.ts';

test('a shown value is one line: every line terminator and invisible control is escaped, JSON still reads it back', () => {
  fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (v) => {
    const s = shownValue(v);
    // eslint-disable-next-line no-control-regex -- the point: no control character may be left
    assert.doesNotMatch(s, /[\n\r\u0085\u2028\u2029\u0000-\u001f\u007f]/);
    assert.equal(JSON.parse(s), v);
  }), { numRuns: 2000 });
  assert.equal(shownValue('a\u2028b'), '"a\\u2028b"');
});
