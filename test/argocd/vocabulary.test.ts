// The Argo CD scripts name the operator's phases, pause reasons and annotations as string literals (Lua cannot
// import src/api/vocabulary.ts). This test reads the literals out of the scripts and holds them to the vocabulary,
// so a word is still defined once: a phase or reason added, renamed or removed there fails here until the Lua
// follows. It also checks the scripts name no library Argo CD does not open for them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ABORT_ANNOTATION, PAUSE_REASONS, PHASES, RESUME_ANNOTATION, RETRY_ANNOTATION, SELF_RESUMING } from '../../src/api/vocabulary.ts';
import { CONDITION_TYPES } from '../../src/api/conditions.ts';
import { DIR, HEALTH_STATUSES } from './lua.ts';
import { globalNames, stringLiterals, tableKeys } from './lua-source.ts';

const ACTIONS = join(DIR, 'actions');
const HEALTH = join(DIR, 'health.lua');
const DISCOVERY = join(ACTIONS, 'discovery.lua');
const actionScripts = readdirSync(ACTIONS).map((d) => join(ACTIONS, d, 'action.lua')).filter((f) => existsSync(f));
const SCRIPTS = [HEALTH, DISCOVERY, ...actionScripts];
const read = (f: string): string => readFileSync(f, 'utf8');
const sorted = (xs: Iterable<string>): string[] => [...new Set(xs)].sort();

const PHASE_SET = new Set<string>(PHASES);
const REASON_SET = new Set<string>(PAUSE_REASONS);
/** CamelCase words the scripts may name besides phases and pause reasons. */
const OTHER_WORDS = new Set<string>([...HEALTH_STATUSES, ...CONDITION_TYPES, 'True', 'False', 'InvalidSpec']);
const ANNOTATIONS = [RESUME_ANNOTATION, ABORT_ANNOTATION, RETRY_ANNOTATION];

/** The literals that look like a phase or reason (one CamelCase word). */
const words = (f: string): string[] => sorted(stringLiterals(read(f)).filter((s) => /^[A-Z][a-z]+(?:[A-Z][a-z]*)*$/.test(s)));

test('every CamelCase word in the scripts is a phase, a pause reason, a health status or a condition of the API', () => {
  for (const f of SCRIPTS) {
    const unknown = words(f).filter((w) => !PHASE_SET.has(w) && !REASON_SET.has(w) && !OTHER_WORDS.has(w));
    assert.deepEqual(unknown, [], `${relative(DIR, f)} names words src/api/vocabulary.ts does not define (renamed or removed there?)`);
  }
});

test('health.lua handles exactly the phases of src/api/vocabulary.ts', () => {
  assert.deepEqual(words(HEALTH).filter((w) => PHASE_SET.has(w)), sorted(PHASES));
});

test('health.lua handles exactly the pause reasons: the automatic ones are those that do not resume by themselves', () => {
  assert.deepEqual(words(HEALTH).filter((w) => REASON_SET.has(w)), sorted(PAUSE_REASONS));
  assert.deepEqual(sorted(tableKeys(read(HEALTH), 'AUTOMATIC_PAUSE')), sorted(PAUSE_REASONS.filter((r) => !SELF_RESUMING.has(r))));
  for (const r of SELF_RESUMING) assert.ok(stringLiterals(read(HEALTH)).includes(r), `health.lua does not handle ${r}`);
});

test('discovery.lua decides the actions for exactly the phases of src/api/vocabulary.ts', () => {
  assert.deepEqual(tableKeys(read(DISCOVERY), 'OFFERED'), [...PHASES]);
});

test('the actions set the annotations of src/api/vocabulary.ts, each its own', () => {
  const byAction: Record<string, string[]> = {};
  for (const f of SCRIPTS) {
    const named = stringLiterals(read(f)).filter((s) => s.startsWith('upgrade.apiserver.dev/'));
    assert.deepEqual(named.filter((s) => !ANNOTATIONS.includes(s)), [], `${relative(DIR, f)} names an annotation the operator does not read`);
    byAction[relative(ACTIONS, f)] = sorted(named);
  }
  assert.deepEqual(byAction['resume/action.lua'], [RESUME_ANNOTATION]);
  assert.deepEqual(byAction['abort/action.lua'], [ABORT_ANNOTATION]);
  assert.deepEqual(byAction['retry/action.lua'], [RETRY_ANNOTATION]);
  assert.deepEqual(byAction['pause/action.lua'], []);
});

test('the scripts use no library Argo CD does not open for argocd-cm customizations (only base, table, os.time/date)', () => {
  const forbidden = ['string', 'math', 'io', 'debug', 'coroutine', 'utf8', 'package', 'dofile', 'loadfile', 'loadstring', 'load', 'print'];
  for (const f of SCRIPTS) {
    const used = [...globalNames(read(f))].filter((n) => forbidden.includes(n));
    assert.deepEqual(used, [], `${relative(DIR, f)}`);
  }
});
