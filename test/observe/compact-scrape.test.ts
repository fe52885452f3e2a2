// The compact per-server state the observer keeps between analysis windows (src/observe/compact-scrape.ts)
// gives the same deltas, and so the same signals and verdicts, as differencing the two full parsed pages.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parsePromText } from '../../src/observe/prom-text.ts';
import { compactScrape, compactWindowDeltas, SeriesPool } from '../../src/observe/compact-scrape.ts';
import { computeSignals, SIGNAL_FAMILIES, windowDeltas, type WindowDeltas } from '../../src/observe/signals.ts';
import { summarizeAnalysis } from '../../src/observe/analysis-summary.ts';
import { fixtureVersions, readFixture } from './fixtures.ts';

const parse = (text: string) => parsePromText(text, SIGNAL_FAMILIES);

/** Every sample line of the signal families rewritten by `f(value, line index)`; `undefined` drops the line. */
function perturb(text: string, f: (value: number, i: number) => number | undefined): string {
  let i = 0;
  return text
    .split('\n')
    .flatMap((line) => {
      const name = /^([a-z_]+)/.exec(line)?.[1];
      if (!name || ![...SIGNAL_FAMILIES].some((fam) => name.startsWith(fam))) return [line];
      const at = line.lastIndexOf(' ');
      const value = Number(line.slice(at + 1));
      const next = f(value, i++);
      return next === undefined ? [] : [`${line.slice(0, at)} ${next}`];
    })
    .join('\n');
}

function same(prevText: string, currText: string, what: string): WindowDeltas {
  const [prev, curr] = [parse(prevText), parse(currText)];
  const expected = windowDeltas(prev, curr);
  const pool = new SeriesPool();
  const actual = compactWindowDeltas(compactScrape(prev, pool), compactScrape(curr, pool));
  assert.deepEqual(actual, expected, what);
  assert.deepEqual(computeSignals(actual), computeSignals(expected), `${what}: signals`);
  return actual;
}

const versions = fixtureVersions();

describe('compact scrapes vs full pages (captured fixtures)', () => {
  it('has captured pages to compare', () => assert.ok(versions.length >= 2, `captured versions: ${versions.join(', ')}`));

  for (const v of versions) {
    const page = readFixture(v, 'metrics.txt');
    it(`${v}: traffic in the window (every counter and bucket grew)`, () => {
      const w = same(page, perturb(page, (x, i) => x * 2 + (i % 7)), `${v} grown`);
      assert.ok(w.requests && w.requests.length > 0 && w.requestDuration && w.requestDuration.length > 0, 'the families are there');
      assert.equal(w.restarted, false);
      assert.equal(computeSignals(w).latencyP99Seconds.kind, 'value');
    });
    it(`${v}: a quiet window (the same page twice)`, () => {
      same(page, page, `${v} unchanged`);
    });
    it(`${v}: a restart (every value went down)`, () => {
      assert.equal(same(page, perturb(page, (x) => Math.floor(x / 3)), `${v} reset`).restarted, true);
    });
    it(`${v}: only some series reset, some vanished, some are new`, () => {
      const prev = perturb(page, (x, i) => (i % 11 === 0 ? undefined : x));
      const curr = perturb(page, (x, i) => (i % 13 === 0 ? undefined : i % 5 === 0 ? Math.floor(x / 2) : x + i));
      assert.equal(same(prev, curr, `${v} partial`).restarted, true);
    });
  }
  if (versions.length >= 2) {
    const [a, b] = [readFixture(versions[0]!, 'metrics.txt'), readFixture(versions[1]!, 'metrics.txt')];
    it(`across versions (other label sets and bucket layouts): ${versions[0]} -> ${versions[1]} and back`, () => {
      same(a, b, 'upgrade');
      same(b, a, 'downgrade');
    });
    it('gives the same verdict as the full pages for a fleet', () => {
      const thresholds = { proxyErrorRatio: 0.01, errorRatio: 0.01, latencyP99Seconds: 0.5 };
      const pairs: [string, string, string][] = [['s1', a, perturb(a, (x, i) => x + (i % 3))], ['s2', b, perturb(b, (x, i) => x * 3 + (i % 4))]];
      const full = new Map(pairs.map(([s, p, c]) => [s, windowDeltas(parse(p), parse(c))]));
      const pool = new SeriesPool();
      const compact = new Map(pairs.map(([s, p, c]) => [s, compactWindowDeltas(compactScrape(parse(p), pool), compactScrape(parse(c), pool))]));
      const versionOf = new Map([['s1', versions[0]!], ['s2', versions[1]!]]);
      assert.deepEqual(summarizeAnalysis(compact, versionOf, thresholds, 0), summarizeAnalysis(full, versionOf, thresholds, 0));
    });
  }
});

describe('compact scrapes (synthetic)', () => {
  const page = (lines: string[]) => parse(lines.join('\n'));
  const requests = (ok: number, failed: number) =>
    page(['# TYPE apiserver_request_total counter', `apiserver_request_total{code="200",verb="GET"} ${ok}`, `apiserver_request_total{code="500",verb="GET"} ${failed}`]);

  it('shares label sets between servers and keeps numbers only', () => {
    const pool = new SeriesPool();
    const [x, y] = [compactScrape(requests(10, 1), pool), compactScrape(requests(20, 2), pool)];
    assert.equal(x.counters.requests!.series[0], y.counters.requests!.series[0], 'one label set object for both servers');
    assert.ok(x.counters.requests!.values instanceof Float64Array);
    assert.deepEqual([...y.counters.requests!.values], [20, 2]);
    assert.equal(pool.size, 2);
    pool.rotate();
    const z = compactScrape(requests(30, 3), pool);
    assert.equal(z.counters.requests!.series[1], x.counters.requests!.series[1], 'kept across one rotation');
  });

  it('an absent family stays absent, a present one without samples is empty', () => {
    const [prev, curr] = [requests(1, 0), page(['# TYPE apiserver_rerouted_request_total counter', 'apiserver_request_total{code="200"} 5'])];
    const w = compactWindowDeltas(compactScrape(prev), compactScrape(curr));
    assert.deepEqual(w, windowDeltas(prev, curr));
    assert.deepEqual(w.rerouted, [], 'its TYPE line alone: present, no samples');
    assert.equal(w.peerProxyErrors, undefined);
    assert.deepEqual(w.requests, [{ labels: { code: '200' }, delta: 5, reset: false }]);
    assert.equal(w.requestDuration, undefined);
    assert.equal(w.apiServices, undefined);
  });

  it('a histogram whose _count went down while its buckets did not is reset', () => {
    const hist = (count: number) => page(['# TYPE apiserver_request_duration_seconds histogram', 'apiserver_request_duration_seconds_bucket{verb="GET",le="1"} 4', 'apiserver_request_duration_seconds_bucket{verb="GET",le="+Inf"} 4', 'apiserver_request_duration_seconds_sum{verb="GET"} 2', `apiserver_request_duration_seconds_count{verb="GET"} ${count}`]);
    const w = compactWindowDeltas(compactScrape(hist(10)), compactScrape(hist(5)));
    assert.deepEqual(w, windowDeltas(hist(10), hist(5)));
    assert.equal(w.restarted, true);
  });

  it('throws where windowDeltas throws: a histogram bucket without a valid le', () => {
    const bad = page(['# TYPE apiserver_request_duration_seconds histogram', 'apiserver_request_duration_seconds_bucket{verb="GET",le="x"} 1']);
    const good = page(['# TYPE apiserver_request_duration_seconds histogram', 'apiserver_request_duration_seconds_bucket{verb="GET",le="+Inf"} 1']);
    assert.throws(() => windowDeltas(good, bad), /valid "le"/);
    assert.throws(() => compactWindowDeltas(compactScrape(good), compactScrape(bad)), /valid "le"/);
    assert.throws(() => windowDeltas(bad, good), /valid "le"/);
    assert.throws(() => compactWindowDeltas(compactScrape(bad), compactScrape(good)), /valid "le"/);
    const none = page(['# TYPE apiserver_request_total counter']);
    assert.doesNotThrow(() => windowDeltas(bad, none));
    assert.doesNotThrow(() => compactWindowDeltas(compactScrape(bad), compactScrape(none)));
  });
});
