// src/plan/version-facts.ts against what scripts/version-facts.ts read from each release's sources
// (test/fixtures/version-facts.json): the gate's default and the emulation range per minor, and nothing beyond.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EMULATION_RULE, FACTS_READ_FROM, NEWEST_KNOWN_MINOR, PROXY_GATE_SPEC, emulationRange, proxyGateFact } from '../../src/plan/version-facts.ts';
import { gateAt, type VersionFacts } from '../../scripts/version-facts.ts';
import { FIXTURES_DIR } from '../observe/fixtures.ts';

const facts = (JSON.parse(readFileSync(join(FIXTURES_DIR, 'version-facts.json'), 'utf8')) as { facts: VersionFacts[] }).facts;
const minorOf = (v: string): string => v.replace(/^v1\.(\d+)\..*$/, '1.$1');

test('the table holds the newest sources read, and covers exactly up to their minor', () => {
  const newest = facts.at(-1)!;
  assert.equal(FACTS_READ_FROM, newest.version);
  assert.equal(`1.${NEWEST_KNOWN_MINOR}`, minorOf(newest.version));
  assert.deepEqual(PROXY_GATE_SPEC.map((s) => ({ version: `1.${s.minor}`, default: s.default, preRelease: s.preRelease, lockToDefault: s.lockToDefault })), newest.gate);
  assert.deepEqual({ minorsBack: EMULATION_RULE.minorsBack, minimum: `1.${EMULATION_RULE.minimumMinor}` }, { minorsBack: newest.emulationMinorsBack, minimum: newest.emulationMinimum });
});

test('per version read: the gate at its own minor and the emulation floor are what its own sources say', () => {
  for (const f of facts) {
    const own = gateAt(f.gate, minorOf(f.version))!;
    const fact = proxyGateFact(f.version);
    assert.ok(fact.known, f.version);
    assert.deepEqual([fact.preRelease, fact.default], [own.preRelease, own.default], f.version);
    const range = emulationRange(f.version);
    assert.deepEqual(range, { known: true, floor: f.emulationFloor, ceiling: minorOf(f.version) }, f.version);
  }
});

test('a minor newer than the facts is unknown, with a reason; one older than the gate has no gate', () => {
  for (const v of ['v1.38.0', 'v1.38.0-rc.1', 'v2.0.0']) {
    const g = proxyGateFact(v);
    assert.equal(g.known, false, v);
    assert.match((g as { message: string }).message, /knows Kubernetes up to 1\.37 \(facts read from v1\.37\.2\)/);
    assert.equal(emulationRange(v).known, false, v);
  }
  assert.deepEqual(proxyGateFact('v1.27.9'), { known: true, present: false, default: false, lockToDefault: false });
  assert.deepEqual(emulationRange('v1.34.4'), { known: true, floor: '1.31', ceiling: '1.34' });
  assert.deepEqual(emulationRange('v1.33.0'), { known: true, floor: '1.31', ceiling: '1.33' });
  assert.equal(proxyGateFact('not-a-version').known, false);
});
