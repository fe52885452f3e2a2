// What the plugin prints of strings from the cluster (Events anyone may create, status, names, API errors): no
// escape sequence, carriage return, bidirectional override or zero-width character reaches the terminal as itself,
// in the human views, -o jsonpath, -o json and -o yaml — and json and yaml still carry the values exactly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import { machine, terminalText } from '../../src/cli/format.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';
import { FakeApi, cli } from './fake-api.ts';
import { event, paused, upgrading } from './fixtures.ts';

/** What acts on a terminal or hides from a reader. Line feeds are the output's own (tested for separately). */
const UNPRINTABLE = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]|\p{Cs}/u;

const HOSTILE = [
  '\u001b[2J\u001b[H', '\u001b[31m', '\u001b]0;pwned\u0007', '\u001b]8;;https://evil.example\u001b\\', '\u001bP+q\u001b\\', '\u009b1A', '\u009d0;x\u009c',
  '\r', '\r\n', '\n', '\b', '\u0000', '\u007f', '\u0085', '\u2028', '\u2029', '\t',
  '\u202e', '\u202d', '\u2066', '\u2067', '\u2068', '\u2069', '\u061c', '\u200e', '\u200f',
  '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u180e', '\u3164', '\ufe0f', '\u{e0041}', '\u{e007f}', '\ud800', '\udfff',
];
const word = fc.constantFrom('Normal', 'Warning', 'Paused', 'cp-1', 'ok', ' ', 'é', '😀', 'a', '1', ':', '"', '\\', '-');
/** Text with terminal escapes, carriage returns, overrides and invisible characters among ordinary words. */
const hostile = fc.array(fc.oneof(word, fc.constantFrom(...HOSTILE)), { minLength: 1, maxLength: 20 }).map((a) => a.join(''));

function assertPrintable(out: string): void {
  const m = UNPRINTABLE.exec(out);
  assert.equal(m, null, m ? `U+${m[0].codePointAt(0)!.toString(16)} at ${m.index}: ${JSON.stringify(out.slice(Math.max(0, m.index - 30), m.index + 30))}` : '');
}

test('terminalText: nothing unprintable is left, each is shown by its escape or a space, printable text is kept', () => {
  fc.assert(fc.property(hostile, (s) => {
    const t = terminalText(s);
    assertPrintable(t);
    assert.ok(!t.includes('\n'));
  }), { numRuns: 2000 });
  fc.assert(fc.property(fc.string({ unit: 'grapheme' }), (s) => {
    if (!UNPRINTABLE.test(s) && !/[\n]/.test(s)) assert.equal(terminalText(s), s);
  }));
  assert.equal(terminalText('a\u001b[2Jb\rc\u202ed\u200be\u{e0041}'), 'a\\u001b[2Jb c\\u202ed\\u200be\\u{e0041}');
});

const wellFormed = (v: unknown): unknown =>
  typeof v === 'string' ? v.toWellFormed() : Array.isArray(v) ? v.map(wellFormed) : typeof v === 'object' && v !== null ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k.toWellFormed(), wellFormed(x)])) : v;

/** An upgrade whose status strings, and whose Events' type, reason and note, are `s`. */
function hostileUpgrade(s: string): { u: ApiServerUpgrade; api: FakeApi } {
  const u = paused('AnalysisBreach');
  const st = u.status!;
  st.pause!.message = s;
  st.peers = (st.peers ?? []).map((p) => ({ ...p, hostname: `${p.hostname}${s}`, message: s }));
  st.conditions = [...(st.conditions ?? []), { type: 'Progressing', status: 'True', reason: `Why${s}`, message: s, lastTransitionTime: '2026-03-01T11:59:00Z' }];
  st.driverCalls = [{ time: '2026-03-01T11:59:00Z', action: 'Upgrade', server: `cp-2${s}`, key: `k${s}`, result: 'Failed', message: s, batch: 2 }] as typeof st.driverCalls;
  const api = new FakeApi(u);
  api.eventList = [event('Started', s, 100, { type: `Normal${s}`, reason: `Started${s}` }), event('Paused', `note ${s} end`, 50)];
  return { u, api };
}

test('get, list -o wide, -o jsonpath and an error: no server string reaches the terminal unprintable', async () => {
  const baselineLines = (await cli(hostileUpgrade('x').api, ['get', 'to-v1-36'])).out.split('\n').length;
  await fc.assert(fc.asyncProperty(hostile, async (s) => {
    const { api } = hostileUpgrade(s);
    const get = await cli(api, ['get', 'to-v1-36']);
    assert.equal(get.code, 0, get.err);
    assertPrintable(get.out);
    // A line feed from the cluster starts no line of its own: as many lines as with a harmless string.
    assert.equal(get.out.split('\n').length, baselineLines);
    const wide = await cli(api, ['list', '-o', 'wide']);
    assertPrintable(wide.out);
    const jp = await cli(api, ['get', 'to-v1-36', '-o', 'jsonpath={.events[*].note}{.pause.message}{.servers[*].hostname}']);
    assert.equal(jp.code, 0, jp.err);
    assertPrintable(jp.out);
    assert.ok(!jp.out.includes('\n'));
    const err = await cli(() => { throw new Error(`cannot reach the cluster: ${s}`); }, ['list']);
    assert.equal(err.code, 1);
    assertPrintable(err.err);
    assert.equal(err.err.split('\n').length, 2);
  }), { numRuns: 300 });
});

test('-o json and -o yaml: the values exactly, but every unprintable character written as an escape', async () => {
  await fc.assert(fc.asyncProperty(hostile, async (s) => {
    const { api } = hostileUpgrade(s);
    const j = await cli(api, ['get', 'to-v1-36', '-o', 'json']);
    assertPrintable(j.out.replaceAll('\t', ''));
    const view = JSON.parse(j.out) as { pause: { message: string }; events: { note: string; type: string }[] };
    assert.equal(view.pause.message, s);
    assert.equal(view.events[0]!.type, `Normal${s}`);
    const y = await cli(api, ['get', 'to-v1-36', '-o', 'yaml']);
    assertPrintable(y.out.replaceAll('\t', ''));
    // YAML cannot hold a lone surrogate: it is U+FFFD there, everything else as in JSON.
    assert.deepEqual(parseYaml(y.out), wellFormed(view));
  }), { numRuns: 300 });
  // Keys too, and beyond the BMP.
  const odd = { 'k\u202e': ['\u{e0041}x\u009b', { '\u200b': 'a\u2028b' }] };
  assert.deepEqual(JSON.parse(machine(odd, 'json')), odd);
  assert.deepEqual(parseYaml(machine(odd, 'yaml')), odd);
  assertPrintable(machine(odd, 'json'));
  assertPrintable(machine(odd, 'yaml'));
});

test('ordinary output is unchanged: a status without anything unprintable prints as before', async () => {
  const api = new FakeApi(upgrading());
  api.eventList = [event('Started', 'upgrade to v1.36.3 started', 290)];
  const r = await cli(api, ['get', 'to-v1-36']);
  assert.match(r.out, /^ {2}\d+m\d*s? +Normal +Started +upgrade to v1\.36\.3 started$/m);
  assert.equal(machine({ a: 'b c', n: [1] }, 'yaml'), 'a: b c\nn:\n  - 1\n');
});

test('plan: server names, addresses and versions the fleet reports are printed printable', async () => {
  await fc.assert(fc.asyncProperty(hostile, async (s) => {
    const api = new FakeApi(upgrading());
    const observed = await api.observe();
    observed.observation.peers = observed.observation.peers.map((p) => ({ ...p, hostname: `${p.hostname}${s}`, version: `${p.version}${s}` }));
    api.observe = async () => observed;
    const r = await cli(api, ['plan', 'to-v1-36']);
    assertPrintable(r.out);
    assertPrintable(r.err);
  }), { numRuns: 100 });
});
