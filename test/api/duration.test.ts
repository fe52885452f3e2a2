import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DurationError, formatDuration, isDuration, parseDuration, tryParseDuration } from '../../src/api/duration.ts';
import { DURATION_PATTERN, compile } from '../../src/api/patterns.ts';
import { specSchema } from '../../src/api/schema.ts';

test('parses Go duration strings into milliseconds', () => {
  const cases: [string, number][] = [
    ['0s', 0],
    ['10s', 10_000],
    ['2m', 120_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['500ms', 500],
    ['1m30.5s', 90_500],
    ['250us', 0.25],
    ['1000000ns', 1],
    ['2h45m10s', 9_910_000],
    ['1s1s', 2000], // Go sums repeated units too
  ];
  for (const [s, ms] of cases) assert.equal(parseDuration(s), ms, s);
});

test('rejects what the CRD rejects', () => {
  for (const s of ['', '0', '10', '10x', '-10s', '+1s', 's', '1.s', '.5s', '1 s', '1h 30m', '1µs', '10S', 'PT10S', '1d']) {
    assert.equal(tryParseDuration(s), undefined, s);
    assert.equal(isDuration(s), false, s);
    assert.throws(() => parseDuration(s), DurationError, s);
  }
});

test('rejects a duration longer than Go can represent', () => {
  assert.equal(tryParseDuration('3000000h'), undefined);
  assert.equal(typeof tryParseDuration('2000000h'), 'number');
});

test('the parser accepts exactly the strings the CRD pattern accepts', () => {
  const re = compile(DURATION_PATTERN);
  const corpus = ['1h', '1h1', 'h1', '1.0m', '01s', '1ms2us3ns', '1.5.5s', '1hm', '5m0s', '9999h', 'mss', '1sm', '3h-1m', '1e3s'];
  for (const s of corpus) assert.equal(isDuration(s), re.test(s), s);
});

test('the CRD rule uses the same pattern as the parser', () => {
  const rules = specSchema.properties?.strategy?.properties?.soakDuration?.['x-kubernetes-validations'] ?? [];
  assert.ok(rules.some((r) => r.rule.includes(`r'${DURATION_PATTERN}'`)));
});

test('formats like Go Duration.String()', () => {
  const cases: [number, string][] = [
    [0, '0s'],
    [250, '250ms'],
    [1500, '1.5s'],
    [120_000, '2m0s'],
    [5_400_000, '1h30m0s'],
    [3_723_000, '1h2m3s'],
  ];
  for (const [ms, s] of cases) {
    assert.equal(formatDuration(ms), s);
    assert.equal(parseDuration(s), ms, `round trip ${s}`);
  }
  assert.throws(() => formatDuration(-1), DurationError);
});
