// Grammar tests over small synthetic pages written by hand (not captured from a server).
// Fixture-based tests over real captured pages go in prom-text-fixtures.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { grepCount } from './fixtures.ts';
import { countFamiliesAndSeries, histograms, parsePromNumber, parsePromNumberAt, parsePromStream, parsePromText, PromParseError, PromTextParser } from '../../src/observe/prom-text.ts';
import type { Labels, ParsedMetrics } from '../../src/observe/prom-text.ts';

const SYNTHETIC_PAGE = [
  '# HELP synthetic_requests_total Requests by code.',
  '# TYPE synthetic_requests_total counter',
  'synthetic_requests_total{code="200",verb="GET"} 10',
  'synthetic_requests_total{code="503",verb="GET"} 2 1700000000000',
  '',
  '# A free-form comment the parser must ignore',
  '# HELP synthetic_temp_celsius A gauge with help that has a \\\\ backslash and a \\n newline.',
  '# TYPE synthetic_temp_celsius gauge',
  'synthetic_temp_celsius NaN',
  'synthetic_temp_celsius{where="hi"} +Inf',
  'synthetic_temp_celsius{where="lo"} -Inf',
  'synthetic_untyped{a="x"} 1.5e3',
  '# TYPE synthetic_latency_seconds histogram',
  'synthetic_latency_seconds_bucket{verb="GET",le="0.1"} 3',
  'synthetic_latency_seconds_bucket{verb="GET",le="1"} 7',
  'synthetic_latency_seconds_bucket{verb="GET",le="+Inf"} 8',
  'synthetic_latency_seconds_sum{verb="GET"} 4.2',
  'synthetic_latency_seconds_count{verb="GET"} 8',
  'synthetic_latency_seconds_bucket{verb="LIST",le="0.1"} 0',
  'synthetic_latency_seconds_bucket{verb="LIST",le="1"} 1',
  'synthetic_latency_seconds_bucket{verb="LIST",le="+Inf"} 1',
  'synthetic_latency_seconds_sum{verb="LIST"} 0.5',
  'synthetic_latency_seconds_count{verb="LIST"} 1',
  '# TYPE synthetic_rpc_seconds summary',
  'synthetic_rpc_seconds{quantile="0.5"} 0.01',
  'synthetic_rpc_seconds{quantile="0.99"} 0.2',
  'synthetic_rpc_seconds_sum 12',
  'synthetic_rpc_seconds_count 300',
  'synthetic_escapes{path="C:\\\\dir",quote="say \\"hi\\"",nl="a\\nb"} 1',
].join('\n');

describe('parsePromText (synthetic)', () => {
  it('keeps only the requested families', () => {
    const got = parsePromText(SYNTHETIC_PAGE, new Set(['synthetic_requests_total']));
    assert.deepEqual([...got.keys()], ['synthetic_requests_total']);
    const fam = got.get('synthetic_requests_total');
    assert.equal(fam?.type, 'counter');
    assert.equal(fam?.help, 'Requests by code.');
    assert.deepEqual(fam?.samples, [
      { name: 'synthetic_requests_total', labels: { code: '200', verb: 'GET' }, value: 10 },
      { name: 'synthetic_requests_total', labels: { code: '503', verb: 'GET' }, value: 2, timestamp: 1700000000000 },
    ]);
  });

  it('reads NaN and infinities, HELP escapes, untyped samples', () => {
    const got = parsePromText(SYNTHETIC_PAGE, 'all');
    const temp = got.get('synthetic_temp_celsius');
    assert.equal(temp?.help, 'A gauge with help that has a \\ backslash and a \n newline.');
    assert.ok(Number.isNaN(temp?.samples[0]?.value));
    assert.equal(temp?.samples[1]?.value, Infinity);
    assert.equal(temp?.samples[2]?.value, -Infinity);
    const untyped = got.get('synthetic_untyped');
    assert.equal(untyped?.type, 'untyped');
    assert.equal(untyped?.samples[0]?.value, 1500);
  });

  it('unescapes label values', () => {
    const got = parsePromText(SYNTHETIC_PAGE, new Set(['synthetic_escapes']));
    assert.deepEqual(got.get('synthetic_escapes')?.samples[0]?.labels, { path: 'C:\\dir', quote: 'say "hi"', nl: 'a\nb' });
  });

  it('attributes histogram and summary suffixes to their family', () => {
    const got = parsePromText(SYNTHETIC_PAGE, new Set(['synthetic_latency_seconds', 'synthetic_rpc_seconds']));
    assert.equal(got.get('synthetic_latency_seconds')?.samples.length, 10);
    assert.equal(got.get('synthetic_rpc_seconds')?.samples.length, 4);
    assert.equal(got.get('synthetic_rpc_seconds')?.type, 'summary');
  });

  it('groups a labelled histogram into one series per label set', () => {
    const fam = parsePromText(SYNTHETIC_PAGE, new Set(['synthetic_latency_seconds'])).get('synthetic_latency_seconds');
    assert.ok(fam);
    assert.deepEqual(histograms(fam), [
      { labels: { verb: 'GET' }, buckets: [{ le: 0.1, count: 3 }, { le: 1, count: 7 }, { le: Infinity, count: 8 }], sum: 4.2, count: 8 },
      { labels: { verb: 'LIST' }, buckets: [{ le: 0.1, count: 0 }, { le: 1, count: 1 }, { le: Infinity, count: 1 }], sum: 0.5, count: 1 },
    ]);
  });

  it('tolerates CRLF, a missing trailing newline, blank lines and spaces in label sets', () => {
    const text = '# TYPE a counter\r\n\r\na{x="1" , y = "2",} 3\r\na 4';
    const fam = parsePromText(text, 'all').get('a');
    assert.deepEqual(fam?.samples, [
      { name: 'a', labels: { x: '1', y: '2' }, value: 3 },
      { name: 'a', labels: {}, value: 4 },
    ]);
  });

  it('drops OpenMetrics exemplars and stops at # EOF', () => {
    const text = [
      '# TYPE om_seconds histogram',
      'om_seconds_bucket{le="1"} 2 # {trace_id="abc"} 0.5 1700000000.1',
      'om_seconds_bucket{le="+Inf"} 3',
      'om_seconds_count 3',
      '# EOF',
      'this is not parsed',
    ].join('\n');
    const fam = parsePromText(text, 'all').get('om_seconds');
    assert.equal(fam?.samples.length, 3);
    assert.deepEqual(fam?.samples[0], { name: 'om_seconds_bucket', labels: { le: '1' }, value: 2 });
  });

  it('attributes OpenMetrics-style counter samples (_total) to the declared family', () => {
    const text = '# TYPE om_requests counter\nom_requests_total 5\nom_requests_created 1.7e9\n';
    const fam = parsePromText(text, new Set(['om_requests'])).get('om_requests');
    assert.deepEqual(fam?.samples.map((s) => s.name), ['om_requests_total', 'om_requests_created']);
  });

  it('falls back to +Inf for a histogram without _count', () => {
    const text = '# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\n';
    const fam = parsePromText(text, 'all').get('h');
    assert.ok(fam);
    assert.equal(histograms(fam)[0]?.count, 2);
    assert.ok(Number.isNaN(histograms(fam)[0]?.sum));
  });

  const malformed: [string, string, number, RegExp][] = [
    ['unterminated label value', '# TYPE a counter\na{x="1} 2', 2, /unterminated/],
    ['bad escape', 'a{x="\\t"} 1', 1, /invalid escape/],
    ['missing value', 'a{x="1"}', 1, /space before the value/],
    ['bad value', 'a 1,5', 1, /invalid value/],
    ['bad timestamp', 'a 1 soon', 1, /invalid timestamp/],
    ['trailing junk', 'a 1 2 3', 1, /unexpected text/],
    ['unknown type', '\n\n# TYPE a thing', 3, /unknown metric type/],
    ['second TYPE', '# TYPE a gauge\n# TYPE a gauge', 2, /second TYPE/],
    ['duplicate label', 'a{x="1",x="2"} 1', 1, /duplicate label/],
    ['not a name', '{x="1"} 1', 1, /expected a metric name/],
    ['label without =', 'a{x "1"} 1', 1, /expected "="/],
  ];
  for (const [what, text, line, message] of malformed) {
    it(`rejects ${what} with its line number`, () => {
      assert.throws(
        () => parsePromText(text, 'all'),
        (err: unknown) => err instanceof PromParseError && err.line === line && message.test(err.message) && err.message.includes(`line ${line}`),
      );
    });
  }

  it('does not validate lines of skipped families beyond their name', () => {
    assert.doesNotThrow(() => parsePromText('other{x="1} 2\nwanted 1\n', new Set(['wanted'])));
  });
});

describe('streaming input (synthetic)', () => {
  const text = `${SYNTHETIC_PAGE}\nsynthetic_utf8{name="Grüße ✓ 𝄞"} 1\n`;
  const expected = parsePromText(text, 'all');

  async function* chunks(bytes: Uint8Array, sizes: number[]): AsyncIterable<Uint8Array> {
    let at = 0;
    let k = 0;
    while (at < bytes.length) {
      const size = sizes[k++ % sizes.length] ?? 1;
      yield bytes.subarray(at, at + size);
      at += size;
    }
  }

  it('gives the same result for byte chunks of every small size (splits lines and UTF-8 sequences)', async () => {
    const bytes = new TextEncoder().encode(text);
    for (const sizes of [[1], [2], [3], [7], [1, 5, 2, 64], [4096]]) {
      const got = await parsePromStream(chunks(bytes, sizes), 'all');
      assert.deepEqual(got, expected, `chunk sizes ${sizes.join(',')}`);
    }
    const utf8 = (await parsePromStream(chunks(bytes, [1]), new Set(['synthetic_utf8']))).get('synthetic_utf8');
    assert.equal(utf8?.samples[0]?.labels.name, 'Grüße ✓ 𝄞');
  });

  it('accepts a web ReadableStream of strings', async () => {
    const parts = text.match(/[\s\S]{1,13}/g) ?? [];
    const stream = new ReadableStream<string>({
      start(controller) {
        for (const p of parts) controller.enqueue(p);
        controller.close();
      },
    });
    assert.deepEqual(await parsePromStream(stream, 'all'), expected);
  });

  it('accepts lines fed one by one', () => {
    const parser = new PromTextParser('all');
    for (const line of text.split('\n')) parser.line(line);
    assert.deepEqual(parser.end(), expected);
  });
});

describe('countFamiliesAndSeries (synthetic)', () => {
  it('agrees with a grep-style count on a fully typed page', () => {
    const typed = SYNTHETIC_PAGE.split('\n')
      .filter((l) => !l.startsWith('synthetic_untyped') && !l.startsWith('synthetic_escapes'))
      .join('\n');
    assert.deepEqual(countFamiliesAndSeries(typed), grepCount(typed));
  });
});

it('the fast paths (open family compared in place, label names reused by position, values without escapes) keep the results exact', () => {
  const text = [
    '# TYPE a counter',
    'a_total{x="1",y="2"} 1',
    'a_total{y="2",x="1"} 2',
    'a_total{xx="1",y=""} 3',
    'a_total{x="a\\"b\\\\c\\nd",y="e"} 4',
    'a_created{x="1"} 5',
    '# TYPE b histogram',
    'b_bucket{le="1"} 1',
    'b_sum 1',
    'b_count 1',
    'b_other{le="1"} 7',
    'bb 8',
  ].join('\n');
  for (const wanted of [new Set(['a', 'b_other', 'bb']), 'all' as const]) {
    const parser = new PromTextParser(wanted);
    parser.feed(text);
    const m = parser.end();
    assert.deepEqual(m.get('a')!.samples.map((s) => [s.name, s.labels, s.value]), [
      ['a_total', { x: '1', y: '2' }, 1],
      ['a_total', { y: '2', x: '1' }, 2],
      ['a_total', { xx: '1', y: '' }, 3],
      ['a_total', { x: 'a"b\\c\nd', y: 'e' }, 4],
      ['a_created', { x: '1' }, 5],
    ]);
    assert.deepEqual(m.get('b_other')!.samples.map((s) => [s.name, s.labels, s.value]), [['b_other', { le: '1' }, 7]], 'not a histogram suffix: a family of its own');
    assert.deepEqual(m.get('bb')!.samples.map((s) => s.value), [8], 'a longer name starting with the open family\'s is not its sample');
    assert.equal(m.has('b'), wanted === 'all');
    if (wanted === 'all') assert.deepEqual(m.get('b')!.samples.map((s) => s.name), ['b_bucket', 'b_sum', 'b_count']);
    assert.deepEqual([...parser.familyNamesSeen].sort(), ['a', 'b', 'b_other', 'bb']);
    assert.equal(parser.sampleLineCount, 10);
  }
  assert.throws(() => parsePromText('a{x="1} 1\n', 'all'), /unterminated value for label x/);
  assert.throws(() => parsePromText('# TYPE a gauge\na{x="1",x="2"} 1\n', new Set(['a'])), /duplicate label x/);
});

describe('fast paths: values read in place, names compared on the bytes of ASCII chunks', () => {
  it('parsePromNumberAt reads a token inside a line exactly as parsePromNumber reads it alone', () => {
    const tokens = [
      '0', '-0', '+0', '7', '+5', '-12', '007', '123456789012345', '-123456789012345', '1234567890123456', '9007199254740993',
      '1.5', '.5', '5.', '1e3', '1E-3', '-1.5e+2', '3.881000000000001e-06', '+Inf', '-Inf', 'Inf', 'inf', 'NaN', 'nan', '+NaN', '-NaN',
      '+Infinity', '-infinity', '0x1F', '-0x10', '0X1f', '1_000', '', '+', '-', '--1', '+-1', '1-', '12a', 'a12', '1 2', '١', '1e', 'e3',
    ];
    for (const token of tokens) {
      const line = `m{le="x"} ${token} 17`;
      const from = 'm{le="x"} '.length;
      assert.ok(Object.is(parsePromNumberAt(line, from, from + token.length), parsePromNumber(token)), `token ${JSON.stringify(token)}`);
    }
    // Known answers, so that a shared mistake of both cannot pass.
    const known: [string, number | undefined][] = [
      ['-0', -0], ['+5', 5], ['007', 7], ['123456789012345', 123456789012345], ['9007199254740993', 9007199254740992], ['1e3', 1000],
      ['0x1F', 31], ['-Inf', -Infinity], ['+Inf', Infinity], ['1_000', undefined], ['+', undefined], ['-', undefined], ['', undefined], ['12a', undefined],
    ];
    for (const [token, value] of known) assert.ok(Object.is(parsePromNumberAt(` ${token} `, 1, 1 + token.length), value), `token ${JSON.stringify(token)}`);
    assert.ok(Number.isNaN(parsePromNumberAt('NaN', 0, 3)));
  });

  it('reads values, timestamps and exemplars the same whichever path (integer, fraction, special, hex)', () => {
    const text = '# TYPE v gauge\nv{k="1"} -0 1700000000000\nv{k="2"} +7\nv{k="3"} 2.5e-3 -5\nv{k="4"} -Inf\nv{k="5"} 0x10 # {t="a"} 1\n';
    const got = parsePromText(text, 'all').get('v')?.samples.map((s) => [s.value, s.timestamp]);
    assert.deepEqual(got, [[-0, 1700000000000], [7, undefined], [0.0025, -5], [-Infinity, undefined], [16, undefined]]);
    assert.ok(Object.is(got?.[0]?.[0], -0));
  });

  // Names that differ only in their last bytes, shorter than a 4-byte word, or longer than the open family's.
  const NAMES_PAGE = [
    '# TYPE abcde counter',
    'abcde_total 1',
    'abcdf_total 2',
    'abcde_totals 3',
    'abcd 4',
    'abcde_total{a="1"} 5',
    '# TYPE ab gauge',
    'ab{a="1",abc="2"} 6',
    'ab{a="1",abd="3"} 7',
    'ab{ab="1",a="x\\"y"} 8',
    'ab{abd="4",a="1"} 9',
    'ac 10',
    '# TYPE h histogram',
    'h_bucket{le="1"} 1 1700000000000',
    'h_buckets{le="1"} 2',
    'h_bucke 3',
    'h_count 4',
    'h_bucket{le="+Inf",code="ü"} 5',
    '# TYPE abcdefghijklmnopqrstuvwxyz_0123456789 gauge',
    'abcdefghijklmnopqrstuvwxyz_0123456789 11',
    'abcdefghijklmnopqrstuvwxyz_0123456788 12',
    'abcdefghijklmnopqrstuvwxyz_012345678 13',
    'bcdefghijklmnopqrstuvwxyz_0123456789 14',
  ];
  const EXPECTED: Record<string, [string, Labels, number][]> = {
    abcde: [['abcde_total', {}, 1], ['abcde_total', { a: '1' }, 5]],
    abcdf_total: [['abcdf_total', {}, 2]],
    abcde_totals: [['abcde_totals', {}, 3]],
    abcd: [['abcd', {}, 4]],
    ab: [['ab', { a: '1', abc: '2' }, 6], ['ab', { a: '1', abd: '3' }, 7], ['ab', { ab: '1', a: 'x"y' }, 8], ['ab', { abd: '4', a: '1' }, 9]],
    ac: [['ac', {}, 10]],
    h: [['h_bucket', { le: '1' }, 1], ['h_count', {}, 4], ['h_bucket', { le: '+Inf', code: 'ü' }, 5]],
    h_buckets: [['h_buckets', { le: '1' }, 2]],
    h_bucke: [['h_bucke', {}, 3]],
    abcdefghijklmnopqrstuvwxyz_0123456789: [['abcdefghijklmnopqrstuvwxyz_0123456789', {}, 11]],
    abcdefghijklmnopqrstuvwxyz_0123456788: [['abcdefghijklmnopqrstuvwxyz_0123456788', {}, 12]],
    abcdefghijklmnopqrstuvwxyz_012345678: [['abcdefghijklmnopqrstuvwxyz_012345678', {}, 13]],
    bcdefghijklmnopqrstuvwxyz_0123456789: [['bcdefghijklmnopqrstuvwxyz_0123456789', {}, 14]],
  };
  const simplify = (m: ParsedMetrics) => Object.fromEntries([...m].map(([name, f]) => [name, f.samples.map((s) => [s.name, s.labels, s.value])]));

  for (const eol of ['\n', '\r\n']) {
    it(`tells such names apart on bytes as on text, in ASCII and non-ASCII chunks of every size (${JSON.stringify(eol)})`, () => {
      const text = NAMES_PAGE.join(eol) + eol;
      const bytes = Buffer.from(text, 'utf8');
      assert.deepEqual(simplify(parsePromText(text, 'all')), EXPECTED);
      for (const size of [1, 3, 4, 5, 17, 64, 200, bytes.length]) {
        for (const wanted of ['all' as const, new Set(['abcde', 'ab', 'h', 'abcd', 'abcdf_total'])]) {
          const parser = new PromTextParser(wanted);
          for (let at = 0; at < bytes.length; at += size) parser.feed(bytes.subarray(at, at + size));
          const got = simplify(parser.end());
          const expected = wanted === 'all' ? EXPECTED : Object.fromEntries(Object.entries(EXPECTED).filter(([name]) => wanted.has(name)));
          assert.deepEqual(got, expected, `chunks of ${size} bytes, ${wanted === 'all' ? 'all' : 'some'} families`);
          assert.equal(parser.sampleLineCount, 19);
          assert.equal(parser.familyNamesSeen.size, Object.keys(EXPECTED).length);
        }
      }
    });
  }

  it('strips a byte order mark only at the very start of a byte stream, however it is cut', () => {
    const bytes = Buffer.from('\uFEFF# TYPE a gauge\na{x="\uFEFF"} 1\n', 'utf8');
    for (const size of [1, 2, 3, 4, 20, bytes.length]) {
      const parser = new PromTextParser('all');
      for (let at = 0; at < bytes.length; at += size) parser.feed(bytes.subarray(at, at + size));
      const got = parser.end();
      assert.equal(got.get('a')?.type, 'gauge', `chunks of ${size}`);
      assert.equal(got.get('a')?.samples[0]?.labels.x, '\uFEFF');
      assert.throws(() => parsePromText('a 1\n\uFEFFb 2\n', 'all'), /expected a metric name/);
    }
  });

  it('gives columns within the line, and the right line number, from any chunk', () => {
    const text = `# TYPE a gauge\n${'a{x="1"} 1\n'.repeat(30)}a{x="1",9y="2"} 1\n`;
    const check = (err: unknown) => err instanceof PromParseError && err.line === 32 && /invalid label name at column 9\b/.test(err.message);
    assert.throws(() => parsePromText(text, 'all'), check);
    const bytes = Buffer.from(text);
    for (const size of [7, 100, bytes.length]) {
      assert.throws(() => {
        const parser = new PromTextParser('all');
        for (let at = 0; at < bytes.length; at += size) parser.feed(bytes.subarray(at, at + size));
        parser.end();
      }, check, `chunks of ${size}`);
    }
  });
});
