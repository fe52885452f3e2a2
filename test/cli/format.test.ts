import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import { age, bar, machine, shortDuration, table, truncate, when } from '../../src/cli/format.ts';

test('ages read like kubectl', () => {
  const now = new Date('2026-03-01T12:00:00Z');
  assert.equal(age('2026-03-01T11:59:15Z', now), '45s');
  assert.equal(age('2026-03-01T11:56:48Z', now), '3m12s');
  assert.equal(age('2026-03-01T11:30:00Z', now), '30m');
  assert.equal(age('2026-03-01T09:55:00Z', now), '2h5m');
  assert.equal(age('2026-02-26T08:00:00Z', now), '3d4h');
  assert.equal(age(undefined, now), undefined);
  assert.equal(shortDuration(400 * 86_400_000), '400d');
  assert.equal(when('2026-03-01T12:00:40Z', now), '2026-03-01T12:00:40Z (in 40s)');
});

test('the progress bar: done full, the batch in progress shaded, the rest light, always the same width', () => {
  assert.equal(bar(1, 1, 3, 9), '[███▒▒▒░░░]');
  assert.equal(bar(0, 0, 3, 9), '[░░░░░░░░░]');
  assert.equal(bar(3, 0, 3, 9), '[█████████]');
  for (let done = 0; done <= 7; done++) assert.equal([...bar(done, done < 7 ? 1 : 0, 7)].length, 32);
});

test('tables align on code points, show - for empty cells and keep each row on one line', () => {
  assert.equal(table(['A', 'BB'], [['✔ x', undefined], ['long value', 'two\nlines']]), 'A            BB\n✔ x          -\nlong value   two lines\n');
  assert.equal(truncate('x'.repeat(10), 5), 'xxxx…');
});

test('machine output is JSON or YAML of the same value', () => {
  assert.deepEqual(JSON.parse(machine({ a: [1] }, 'json')), { a: [1] });
  assert.equal(machine({ a: [1] }, 'yaml'), 'a:\n  - 1\n');
});

test('-o yaml reads back as the same strings, whatever lines, spaces, escapes and length they have', () => {
  // The case the yaml package folds wrong on its own: a line of one space between two line breaks, in a long string.
  const folded = '\n \n\u001b]8;;https://evil.example\u001b\\';
  assert.deepEqual(parseYaml(machine({ a: folded }, 'yaml')), { a: folded });
  const piece = fc.constantFrom('\n', ' ', '\t', '\\', '"', "'", ':', '#', '-', '\u001b', '\u2028', '\u0085', 'é', '😀', 'x', 'long text '.repeat(5));
  const text = fc.array(piece, { maxLength: 24 }).map((a) => a.join(''));
  fc.assert(fc.property(fc.dictionary(fc.constantFrom('a', 'b', 'k: v'), text), (value) => {
    assert.deepEqual(parseYaml(machine(value, 'yaml')), { ...value });
  }), { numRuns: 2000 });
});
