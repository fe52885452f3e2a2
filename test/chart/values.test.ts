// The chart's values are documented and typed: every key of values.yaml has a comment and a type in
// values.schema.json, and the README's values table is the one scripts/chart-readme.ts generates from them.
// (That helm refuses a value of the wrong type is tested with helm itself in e2e/chart.e2e.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { documentedValues, readChart, renderReadme, schemaAt, untypedValues, valuesTable } from '../../scripts/chart-readme.ts';

test('the chart README is the generated one (run node scripts/chart-readme.ts after changing values.yaml)', () => {
  const c = readChart();
  assert.equal(c.readme, renderReadme(c.readme, c.values, c.schema));
});

test('every value of values.yaml has a type in values.schema.json', () => {
  const c = readChart();
  assert.deepEqual(untypedValues(c.values, c.schema), []);
  assert.equal((c.schema as { additionalProperties?: boolean }).additionalProperties, false, 'an unknown top-level key (a typo) is refused');
});

test('every value of values.yaml is documented by the comment above it', () => {
  const undocumented = documentedValues(readChart().values).filter((d) => !d.section && d.comment === '').map((d) => d.key);
  assert.deepEqual(undocumented, []);
});

test('the generator: comments, sections, list items, types from the schema or the default', () => {
  const values = [
    '# header, not a key\n',
    '',
    '# A section.',
    'a:',
    '  # The b.',
    '  b: 1',
    '  # A list; its items are its default.',
    '  c:',
    '    - x: 1',
    '      y: 2',
    '  # After the list.',
    '  d: "s|t"',
    '# A map documented as one value.',
    'e:',
    '  f: 1',
    '#  commented: example',
    '',
    '# g.',
    'g: {}',
  ].join('\n');
  const schema = { type: 'object', properties: { a: { type: 'object', properties: { b: { $ref: '#/definitions/n' } } }, e: { type: 'object' } }, definitions: { n: { type: ['integer', 'string'] } } };
  assert.deepEqual(documentedValues(values).map((d) => [d.key, d.comment, d.section]), [
    ['a', 'A section.', true], ['a.b', 'The b.', false], ['a.c', 'A list; its items are its default.', false], ['a.d', 'After the list.', false],
    ['e', 'A map documented as one value.', false], ['g', 'g.', false],
  ]);
  assert.equal(valuesTable(values, schema), [
    '| Key | Type | Default | Description |',
    '| --- | --- | --- | --- |',
    '| `a` | object |  | A section. |',
    '| `a.b` | integer or string | `1` | The b. |',
    '| `a.c` | list | `[{"x":1,"y":2}]` | A list; its items are its default. |',
    '| `a.d` | string | `"s\\|t"` | After the list. |',
    '| `e` | object | `{"f":1}` | A map documented as one value. |',
    '| `g` | object | `{}` | g. |',
  ].join('\n'));
  assert.deepEqual(untypedValues(values, schema), ['a.c', 'a.d', 'g']);
  assert.equal(schemaAt(schema, ['e', 'anything']), 'open');
});
