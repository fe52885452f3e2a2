// Deltas over synthetic, hand-written scrapes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { counterDeltas, histogramDeltas } from '../../src/observe/deltas.ts';
import { parsePromText } from '../../src/observe/prom-text.ts';

const family = (text: string, name: string) => parsePromText(text, new Set([name])).get(name);

describe('counterDeltas (synthetic)', () => {
  const prev = family('# TYPE c counter\nc{code="200"} 10\nc{code="500"} 4\nc{code="404"} 1\n', 'c');

  it('differences each label set; new series count from zero; vanished series are dropped', () => {
    const curr = family('# TYPE c counter\nc{code="500"} 5\nc{code="200"} 15\nc{code="503"} 2\n', 'c');
    assert.deepEqual(counterDeltas(prev, curr), [
      { labels: { code: '500' }, delta: 1, reset: false },
      { labels: { code: '200' }, delta: 5, reset: false },
      { labels: { code: '503' }, delta: 2, reset: false },
    ]);
  });

  it('treats a decrease as a restart: the delta is the new value', () => {
    const curr = family('# TYPE c counter\nc{code="200"} 3\nc{code="500"} 4\n', 'c');
    assert.deepEqual(counterDeltas(prev, curr), [
      { labels: { code: '200' }, delta: 3, reset: true },
      { labels: { code: '500' }, delta: 0, reset: false },
    ]);
  });

  it('is empty when the family is absent now, and whole values when it was absent before', () => {
    assert.deepEqual(counterDeltas(prev, undefined), []);
    assert.deepEqual(counterDeltas(undefined, prev).map((d) => d.delta), [10, 4, 1]);
  });

  it('matches label sets regardless of label order', () => {
    const a = family('c{x="1",y="2"} 1\n', 'c');
    const b = family('c{y="2",x="1"} 4\n', 'c');
    assert.deepEqual(counterDeltas(a, b), [{ labels: { y: '2', x: '1' }, delta: 3, reset: false }]);
  });
});

describe('histogramDeltas (synthetic)', () => {
  const page = (get: number[], list: number[]) =>
    family(
      [
        '# TYPE h histogram',
        `h_bucket{verb="GET",le="0.1"} ${get[0]}`,
        `h_bucket{verb="GET",le="1"} ${get[1]}`,
        `h_bucket{verb="GET",le="+Inf"} ${get[2]}`,
        `h_sum{verb="GET"} ${get[3]}`,
        `h_count{verb="GET"} ${get[2]}`,
        `h_bucket{verb="LIST",le="0.1"} ${list[0]}`,
        `h_bucket{verb="LIST",le="1"} ${list[1]}`,
        `h_bucket{verb="LIST",le="+Inf"} ${list[2]}`,
        `h_sum{verb="LIST"} ${list[3]}`,
        `h_count{verb="LIST"} ${list[2]}`,
      ].join('\n'),
      'h',
    );

  it('differences buckets, sum and count per label set', () => {
    const d = histogramDeltas(page([1, 2, 3, 1], [0, 0, 0, 0]), page([2, 5, 7, 3], [1, 1, 1, 0.05]));
    assert.deepEqual(d, [
      { labels: { verb: 'GET' }, buckets: [{ le: 0.1, count: 1 }, { le: 1, count: 3 }, { le: Infinity, count: 4 }], sum: 2, count: 4, reset: false },
      { labels: { verb: 'LIST' }, buckets: [{ le: 0.1, count: 1 }, { le: 1, count: 1 }, { le: Infinity, count: 1 }], sum: 0.05, count: 1, reset: false },
    ]);
  });

  it('resets a series whose count went down, and only that series', () => {
    const d = histogramDeltas(page([5, 6, 9, 4], [1, 1, 1, 0.1]), page([1, 1, 2, 0.3], [1, 2, 2, 0.2]));
    assert.equal(d[0]?.reset, true);
    assert.equal(d[0]?.count, 2);
    assert.deepEqual(d[0]?.buckets.map((b) => b.count), [1, 1, 2]);
    assert.equal(d[1]?.reset, false);
    assert.equal(d[1]?.count, 1);
  });

  it('differences only the bounds both scrapes share when the layout changed', () => {
    const a = family('# TYPE h histogram\nh_bucket{le="0.5"} 1\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 2\nh_count 2\n', 'h');
    const b = family('# TYPE h histogram\nh_bucket{le="0.25"} 1\nh_bucket{le="1"} 4\nh_bucket{le="+Inf"} 5\nh_count 5\n', 'h');
    assert.deepEqual(histogramDeltas(a, b)[0]?.buckets, [{ le: 1, count: 2 }, { le: Infinity, count: 3 }]);
  });
});
