// Issue 21: a /metrics page cannot exhaust the operator. Its bytes, its lines (counted while unfinished, so a
// line split over many chunks is refused before it is joined), and the samples kept of the wanted families are
// capped; reassembling a split line is linear; any chunking of a page within its caps parses as the whole page.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parsePromStream, PromTextParser, type PromLimits } from '../../src/observe/prom-text.ts';
import { BodyCapExceeded, type BodyCap } from '../../src/runtime/body-limits.ts';
import { readFixture } from './fixtures.ts';
import { SIGNAL_FAMILIES } from '../../src/observe/signals.ts';

function* chunks(buf: Uint8Array, size: number): Generator<Uint8Array> {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

async function parse(buf: Uint8Array, size: number, limits: PromLimits): Promise<unknown> {
  return parsePromStream((async function* () { yield* chunks(buf, size); })(), SIGNAL_FAMILIES, limits);
}

const refuses = (cap: BodyCap) => (err: unknown) => err instanceof BodyCapExceeded && err.cap === cap;

describe('/metrics caps', () => {
  const page = Buffer.from(readFixture('v1.35.4', 'metrics.txt'));

  it('a real page passes the operator\'s caps, however it is cut', async () => {
    const whole = await parse(page, page.length, {});
    for (const size of [7, 4096, 65536]) {
      assert.deepEqual(await parse(page, size, { maxBytes: 32 << 20, maxLineBytes: 64 << 10, maxKeptSamples: 50_000, maxKeptBytes: 8 << 20 }), whole);
    }
  });

  it('any chunking of random lines parses the same, and a line over the cap is refused whatever the chunking', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 20 }), fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 10 }), (lengths, cuts) => {
      const text = lengths.map((n, i) => `# HELP f${i} ${'h'.repeat(n)}\n# TYPE f${i} gauge\nf${i} ${n}\n`).join('');
      const buf = Buffer.from(text);
      const feed = (limits: PromLimits) => {
        const p = new PromTextParser('all', limits);
        let at = 0;
        for (let k = 0; at < buf.length; k++) {
          const n = cuts[k % cuts.length]!;
          p.feed(buf.subarray(at, at + n));
          at += n;
        }
        return p.end();
      };
      const longest = Math.max(...text.split('\n').map((l) => l.length));
      assert.deepEqual(feed({ maxLineBytes: longest }), feed({}));
      assert.throws(() => feed({ maxLineBytes: longest - 1 }), refuses('lineBytes'));
    }), { numRuns: 200 });
  });

  it('a 64 MiB line in 64 KiB chunks is refused at the line cap, in linear time', async () => {
    const chunk = new Uint8Array(65536).fill(97);
    const started = performance.now();
    const p = new PromTextParser(SIGNAL_FAMILIES, { maxLineBytes: 64 << 20 });
    // Just under the cap: every chunk is kept, none is copied again (the old concatenation made this quadratic:
    // 1024 chunks x 32 MiB on average, 32 GiB copied: minutes).
    for (let i = 0; i < 1023; i++) p.feed(chunk);
    assert.throws(() => { p.feed(chunk); p.feed(chunk); }, refuses('lineBytes'));
    assert.ok(performance.now() - started < 10_000, `${Math.round(performance.now() - started)} ms`);
  });

  it('a page over its byte cap is refused', async () => {
    await assert.rejects(parse(page, 65536, { maxBytes: page.length - 1 }), refuses('bytes'));
  });

  it('millions of series of a wanted family stop at the kept-samples cap', async () => {
    const lines = (function* () {
      yield Buffer.from('# TYPE apiserver_request_total counter\n');
      for (let i = 0; i < 2_000_000; i += 1000) {
        let s = '';
        for (let j = i; j < i + 1000; j++) s += `apiserver_request_total{code="200",resource="r${j}",verb="GET"} 1\n`;
        yield Buffer.from(s);
      }
    })();
    await assert.rejects(parsePromStream((async function* () { yield* lines; })(), SIGNAL_FAMILIES, { maxKeptSamples: 50_000 }), refuses('keptSamples'));
  });

  it('long label values of a wanted family stop at the kept-bytes cap', async () => {
    const value = 'v'.repeat(60_000);
    let text = '# TYPE apiserver_request_total counter\n';
    for (let j = 0; j < 200; j++) text += `apiserver_request_total{code="200",resource="${value}${j}"} 1\n`;
    await assert.rejects(parse(Buffer.from(text), 65536, { maxKeptBytes: 8 << 20, maxLineBytes: 64 << 10 }), refuses('keptBytes'));
  });
});
