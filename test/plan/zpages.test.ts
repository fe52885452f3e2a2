// The /flagz and /statusz parsers on pages captured from real kube-apiservers (scripts/capture-zpages.ts), and on
// hostile bodies: anything but the documented shape throws, and no value outside its pattern is kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { emulatedVersionIn, parseFlagz, parseStatusz, proxyGateIn, ZPAGE_MAX_BYTES } from '../../src/plan/zpages.ts';
import { observeRunning, type PageGet } from '../../src/observe/running.ts';
import type { ObservedPeer } from '../../src/plan/observation.ts';

const DIR = join(import.meta.dirname, '..', 'fixtures', 'zpages');
const fixture = (name: string): string => readFileSync(join(DIR, name), 'utf8');

test('the structured pages of v1.35.4 (gates on: v1alpha1), v1.36.3 and v1.37.2 (v1beta1) parse to what each server was started with', () => {
  assert.deepEqual(parseFlagz(fixture('v1.35.4-gates.flagz.json-either.200.txt')), { proxyGate: true, emulatedVersion: undefined });
  assert.deepEqual(parseStatusz(fixture('v1.35.4-gates.statusz.json-either.200.txt')), { binaryVersion: '1.35.4', emulationVersion: '1.35' });
  // v1.36.3 with its defaults: no --feature-gates at all (the gate runs its default), no --emulated-version.
  assert.deepEqual(parseFlagz(fixture('v1.36.3-default.flagz.json-either.200.txt')), { proxyGate: undefined, emulatedVersion: undefined });
  assert.deepEqual(parseStatusz(fixture('v1.36.3-default.statusz.json-either.200.txt')), { binaryVersion: '1.36.3', emulationVersion: '1.36' });
  // v1.36.3 emulating 1.35 serves the pages only with their gates turned on (alpha at 1.35).
  assert.deepEqual(parseFlagz(fixture('v1.36.3-emulated-gates.flagz.json-either.200.txt')), { proxyGate: true, emulatedVersion: '1.35' });
  assert.deepEqual(parseStatusz(fixture('v1.36.3-emulated-gates.statusz.json-either.200.txt')), { binaryVersion: '1.36.3', emulationVersion: '1.35' });
  assert.deepEqual(parseStatusz(fixture('v1.37.2-default.statusz.json-v1beta1.200.txt')), { binaryVersion: '1.37.2', emulationVersion: '1.37' });
  assert.deepEqual(parseFlagz(fixture('v1.37.2-default.flagz.json-v1alpha1.200.txt')), { proxyGate: undefined, emulatedVersion: undefined });
});

test('every captured answer that is not the structured page throws: the text page, a 406 Status, a 404 body', () => {
  const others = readdirSync(DIR).filter((f) => f.endsWith('.txt') && !/\.json-(either|v1beta1|v1alpha1)\.200\.txt$/.test(f));
  assert.ok(others.length >= 10, others.join(' '));
  for (const f of others) {
    const parse = f.includes('.flagz.') ? parseFlagz : parseStatusz;
    assert.throws(() => parse(fixture(f)), Error, f);
  }
  // A Flagz is not a Statusz, and the other way round.
  assert.throws(() => parseStatusz(fixture('v1.36.3-default.flagz.json-either.200.txt')), /not a Statusz/);
  assert.throws(() => parseFlagz(fixture('v1.36.3-default.statusz.json-either.200.txt')), /not a Flagz/);
});

test('--feature-gates and --emulated-version as /flagz prints them', () => {
  assert.equal(proxyGateIn(':UnknownVersionInteroperabilityProxy=true,:ComponentFlagz=true'), true);
  assert.equal(proxyGateIn('UnknownVersionInteroperabilityProxy=false'), false);
  assert.equal(proxyGateIn('kube:UnknownVersionInteroperabilityProxy=false,kube:UnknownVersionInteroperabilityProxy=true'), true, 'the last one wins');
  assert.equal(proxyGateIn('wardle:UnknownVersionInteroperabilityProxy=true'), undefined, 'another component\'s gate');
  assert.equal(proxyGateIn(''), undefined);
  assert.throws(() => proxyGateIn(':UnknownVersionInteroperabilityProxy=yes'), /neither true nor false/);
  assert.throws(() => proxyGateIn(':Gate$(id)=true'), /not \[component:\]Gate=value/);
  assert.equal(emulatedVersionIn('[]'), undefined);
  assert.equal(emulatedVersionIn('[1.35]'), '1.35');
  assert.equal(emulatedVersionIn('[kube=1.35, wardle=1.2]'), '1.35');
  assert.throws(() => emulatedVersionIn('1.35'), /not a \[\.\.\] list/);
  assert.throws(() => emulatedVersionIn('[1.35; rm -rf /]'), /not \[component=\]major\.minor/);
});

const envelope = (kind: string, rest: Record<string, unknown>): string => JSON.stringify({ kind, apiVersion: 'config.k8s.io/v1beta1', metadata: { name: 'apiserver' }, ...rest });

test('property: hostile bodies never parse into a value outside its pattern, and only ever throw Errors', () => {
  const hostile = fc.oneof(fc.string(), fc.constantFrom('$(reboot)', '`id`', '; rm -rf /', '\u001b[2J', '\n', '../../', '%00', '{{.}}', '.*', '\u202e'));
  fc.assert(fc.property(hostile, hostile, hostile, (a, b, c) => {
    for (const body of [a, envelope('Flagz', { flags: { 'feature-gates': a, 'emulated-version': b, [c]: a } }), envelope('Statusz', { binaryVersion: a, emulationVersion: b })]) {
      for (const parse of [parseFlagz, parseStatusz] as const) {
        let out: unknown;
        try {
          out = parse(body);
        } catch (err) {
          assert.ok(err instanceof Error);
          continue;
        }
        const v = out as { proxyGate?: unknown; emulatedVersion?: unknown; binaryVersion?: unknown; emulationVersion?: unknown };
        if ('proxyGate' in v) {
          assert.ok(v.proxyGate === undefined || typeof v.proxyGate === 'boolean');
          assert.ok(v.emulatedVersion === undefined || /^\d{1,4}\.\d{1,4}$/.test(String(v.emulatedVersion)));
        } else {
          assert.match(String(v.binaryVersion), /^\d{1,4}\.\d{1,4}\.\d{1,6}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/);
          assert.ok(v.emulationVersion === undefined || /^\d{1,4}\.\d{1,4}$/.test(String(v.emulationVersion)));
        }
      }
    }
  }), { numRuns: 500 });
});

test('size caps: a body over ZPAGE_MAX_BYTES, more than 1024 flags, or an oversized value throws', () => {
  const big = envelope('Statusz', { binaryVersion: '1.36.3', emulationVersion: '1.36', paths: ['x'.repeat(ZPAGE_MAX_BYTES)] });
  assert.throws(() => parseStatusz(big), /larger than 65536 bytes/);
  const many = Object.fromEntries(Array.from({ length: 1025 }, (_, i) => [`flag-${i}`, '']));
  assert.throws(() => parseFlagz(envelope('Flagz', { flags: { ...many, 'feature-gates': '', 'emulated-version': '[]' } })), /more than 1024 flags/);
  assert.throws(() => parseFlagz(envelope('Flagz', { flags: { 'feature-gates': '', 'emulated-version': '[]', other: 'x'.repeat(16_385) } })), /not a string of its size/);
  assert.throws(() => parseFlagz(envelope('Flagz', { flags: { 'feature-gates': 1, 'emulated-version': '[]' } })), /not a string/);
  assert.throws(() => parseFlagz(JSON.stringify({ kind: 'Flagz', apiVersion: 'config.k8s.io/v2', flags: {} })), /v1beta1 or v1alpha1/);
  // Deep nesting is a body that does not parse as a page, not a crash.
  assert.throws(() => parseFlagz('['.repeat(60_000)), Error);
});

test('observeRunning: 404 is not served, another status is failed without its body, a server not up is not asked', async () => {
  const asked: string[] = [];
  const get: PageGet = (address, path, accept, max) => {
    asked.push(`${address}${path}`);
    assert.equal(max, ZPAGE_MAX_BYTES);
    assert.match(accept, /^application\/json;as=(Flagz|Statusz);v=v1beta1;g=config\.k8s\.io, application\/json;as=\1;v=v1alpha1;g=config\.k8s\.io$/);
    if (address === '10.0.0.1:6443') return Promise.resolve({ status: 404, body: '404 page not found' });
    if (address === '10.0.0.2:6443') return Promise.resolve({ status: 403, body: 'forbidden: $(secret text)' });
    if (address === '10.0.0.3:6443') return Promise.reject(new Error('GET https://10.0.0.3:6443/flagz: no answer within 10000ms'));
    return Promise.resolve({ status: 200, body: path === '/flagz' ? fixture('v1.36.3-default.flagz.json-either.200.txt') : 'not json' });
  };
  const peer = (i: number, over: Partial<ObservedPeer> = {}): ObservedPeer => ({ identity: `apiserver-cp-${i}`, hostname: `cp-${i}`, address: `10.0.0.${i}:6443`, version: 'v1.36.3', ready: true, proxyGate: 'on', stale: false, ...over });
  const peers = [peer(1), peer(2), peer(3), peer(4), peer(5, { ready: false }), peer(6, { stale: true })];
  const r = await observeRunning(peers, ['cp-1', 'cp-2', 'cp-3', 'cp-4', 'cp-5', 'cp-6', 'cp-7'], get);
  assert.deepEqual(Object.keys(r).sort(), ['cp-1', 'cp-2', 'cp-3', 'cp-4']);
  assert.deepEqual(r['cp-1'], { flagz: { kind: 'notServed' }, statusz: { kind: 'notServed' } });
  assert.deepEqual(r['cp-2'], { flagz: { kind: 'failed', message: 'HTTP 403' }, statusz: { kind: 'failed', message: 'HTTP 403' } });
  assert.equal(r['cp-3']?.flagz.kind, 'failed');
  assert.deepEqual(r['cp-4']?.flagz, { kind: 'read', value: { proxyGate: undefined, emulatedVersion: undefined } });
  assert.deepEqual(r['cp-4']?.statusz, { kind: 'failed', message: 'the page does not parse: not JSON' });
  assert.ok(!asked.some((a) => a.startsWith('10.0.0.5') || a.startsWith('10.0.0.6')), asked.join(' '));
});
