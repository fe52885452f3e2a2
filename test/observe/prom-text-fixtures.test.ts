// Parser tests over /metrics pages captured from real kube-apiservers (test/fixtures/<version>/metrics.txt).
// With no fixtures captured, the suite fails and names the command that captures them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { countFamiliesAndSeries, histograms, parsePromStream, parsePromText } from '../../src/observe/prom-text.ts';
import { computeSignals, isHealthProbe, SIGNAL_FAMILIES, windowDeltas } from '../../src/observe/signals.ts';
import { fixtureFiles, fixtureVersions, grepCount, readFixture } from './fixtures.ts';

const versions = fixtureVersions().filter((v) => fixtureFiles(v, /^metrics\.txt$/).length > 0);

describe('prom-text over captured /metrics pages', () => {
  it('captured metrics.txt fixtures exist', () => {
    assert.ok(versions.length > 0, 'no test/fixtures/<version>/metrics.txt: capture them with `npm run fixtures` (as root)');
  });
  for (const version of versions) {
    const text = readFixture(version, 'metrics.txt');

    it(`${version}: family and series counts agree with a grep-style count`, () => {
      assert.deepEqual(countFamiliesAndSeries(text), grepCount(text));
    });

    it(`${version}: parsing with 'all' keeps every family and every sample line`, () => {
      const parsed = parsePromText(text, 'all');
      const expected = grepCount(text);
      let series = 0;
      for (const family of parsed.values()) series += family.samples.length;
      assert.equal(parsed.size, expected.families);
      assert.equal(series, expected.series);
      // The same names as the TYPE lines, read with plain string operations.
      const typeNames = text.split('\n').filter((l) => l.startsWith('# TYPE ')).map((l) => l.split(' ')[2]);
      assert.deepEqual([...parsed.keys()].sort(), typeNames.sort());
    });

    it(`${version}: streaming in odd-sized chunks equals parsing the whole text`, async () => {
      const bytes = Buffer.from(text, 'utf8');
      const chunks: Buffer[] = [];
      for (let at = 0; at < bytes.length; at += 997) chunks.push(bytes.subarray(at, at + 997));
      assert.deepEqual(await parsePromStream(Readable.from(chunks), 'all'), parsePromText(text, 'all'));
    });

    it(`${version}: the signal families parse, and every request-duration series ends with +Inf`, () => {
      const families = parsePromText(text, SIGNAL_FAMILIES);
      const duration = families.get('apiserver_request_duration_seconds');
      assert.ok(duration, 'apiserver_request_duration_seconds present');
      for (const series of histograms(duration)) {
        assert.equal(series.buckets.at(-1)?.le, Infinity);
        assert.equal(series.buckets.at(-1)?.count, series.count);
      }
    });

    it(`${version}: the /readyz 500s a starting server answers its balancer are not errors`, () => {
      // The page was captured soon after start-up: the balancer's /readyz checks got 500 until the server was ready.
      const families = parsePromText(text, SIGNAL_FAMILIES);
      const requests = families.get('apiserver_request_total')?.samples ?? [];
      const probe500s = requests.filter((x) => isHealthProbe(x.labels) && x.labels.code === '500').reduce((a, x) => a + x.value, 0);
      const other5xx = requests.filter((x) => !isHealthProbe(x.labels) && /^5/.test(x.labels.code ?? '')).reduce((a, x) => a + x.value, 0);
      assert.ok(probe500s > 0, 'the capture holds start-up /readyz 500s');
      const s = computeSignals(windowDeltas(new Map(), families));
      assert.equal(s.errorRatio.kind, 'value');
      if (s.errorRatio.kind === 'value') assert.equal(s.errorRatio.value * s.errorRatio.samples, other5xx);
    });
  }
});
