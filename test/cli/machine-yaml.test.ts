// -o yaml carries every string exactly: one whose lines start with spaces or tabs, which a block scalar (`|`) would
// read back changed (` \n` as `\n`) or not at all, is double-quoted instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { machine } from '../../src/cli/format.ts';

test('machine yaml: every string of spaces, tabs, line breaks and text up to 5 characters reads back exactly', () => {
  const alphabet = [' ', '\t', '\n', 'a', '-', '#', ':'];
  const wrong: string[] = [];
  const walk = (s: string, left: number): void => {
    if (s !== '') {
      let back: unknown;
      try {
        back = parse(machine({ k: s, l: [s] }, 'yaml'));
      } catch {
        back = undefined;
      }
      if (JSON.stringify(back) !== JSON.stringify({ k: s, l: [s] })) wrong.push(s);
    }
    if (left > 0) for (const c of alphabet) walk(s + c, left - 1);
  };
  walk('', 5);
  assert.deepEqual(wrong.slice(0, 10), []);
  assert.match(machine({ m: ' \n' }, 'yaml'), /^m: "/, 'double-quoted');
  assert.equal(machine({ m: 'line one\nline two\n' }, 'yaml'), 'm: |\n  line one\n  line two\n', 'other text keeps its block scalar');
});
