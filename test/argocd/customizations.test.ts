// Argo CD's own tests of resource_customizations (argo-cd util/lua/health_test.go, custom_actions_test.go), run
// against argocd/resource_customizations/ in the real lua5.1 (Argo CD's dialect) and lua5.4: every case of
// health_test.yaml and actions/action_test.yaml, with the input and expected objects read from testdata YAML.
// Both interpreters are required: `npm test` installs them (scripts/setup.ts); a missing one fails every case
// with the command that installs it, never a skip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import { PAUSE_REASONS, PHASES } from '../../src/api/vocabulary.ts';
import { DIR, INTERPRETERS, type Interpreter, action, discovery, health, missing, normalizeAction, type HealthStatus, type ResourceAction } from './lua.ts';

interface HealthTests {
  tests: { inputPath: string; healthStatus: Partial<HealthStatus> & { status: string } }[];
}
interface ActionTests {
  discoveryTests: { inputPath: string; result: (Partial<ResourceAction> & { name: string })[] }[];
  actionTests: { action: string; inputPath: string; expectedOutputPath: string }[];
}

const ACTIONS = join(DIR, 'actions');
const readYaml = <T>(path: string): T => parse(readFileSync(path, 'utf8')) as T;
const healthTests = readYaml<HealthTests>(join(DIR, 'health_test.yaml'));
const actionTests = readYaml<ActionTests>(join(ACTIONS, 'action_test.yaml'));
/** Fails with the install command when `lua` is missing: never a skip. */
function need(lua: Interpreter): void {
  const why = missing(lua);
  if (why) assert.fail(why);
}
const object = (dir: string, path: string): Record<string, unknown> => readYaml<Record<string, unknown>>(join(dir, path));

for (const lua of INTERPRETERS) {
  test(`${lua} is installed`, () => need(lua));

  for (const t of healthTests.tests) {
    test(`${lua}: health ${t.inputPath} -> ${t.healthStatus.status}`, () => {
      need(lua);
      const got = health(lua, join(DIR, 'health.lua'), object(DIR, t.inputPath));
      assert.deepEqual(got, { status: t.healthStatus.status, message: t.healthStatus.message ?? '' });
    });
  }

  for (const t of actionTests.discoveryTests) {
    test(`${lua}: discovery ${t.inputPath}`, () => {
      need(lua);
      const got = discovery(lua, join(ACTIONS, 'discovery.lua'), object(ACTIONS, t.inputPath));
      const want = t.result.map(normalizeAction).sort((a, b) => a.name.localeCompare(b.name));
      assert.deepEqual(got, want);
    });
  }

  for (const t of actionTests.actionTests) {
    test(`${lua}: action ${t.action} ${t.inputPath} -> ${t.expectedOutputPath}`, () => {
      need(lua);
      const got = action(lua, join(ACTIONS, t.action, 'action.lua'), object(ACTIONS, t.inputPath));
      assert.deepEqual(got, object(ACTIONS, t.expectedOutputPath));
    });
  }
}

const files = (dir: string): string[] => readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? files(join(dir, f)) : [join(dir, f)]));

test('every action discovery.lua offers has an action.lua and an action test, and nothing else is there', () => {
  const offered = new Set(actionTests.discoveryTests.flatMap((t) => t.result.map((a) => a.name)));
  const scripts = new Set(readdirSync(ACTIONS).filter((d) => existsSync(join(ACTIONS, d, 'action.lua'))));
  assert.deepEqual([...scripts].sort(), [...offered].sort());
  assert.deepEqual([...new Set(actionTests.actionTests.map((t) => t.action))].sort(), [...offered].sort());
  for (const t of actionTests.discoveryTests) {
    assert.deepEqual(t.result.map((a) => a.name).sort(), [...offered].sort(), `${t.inputPath} must list every action`);
  }
});

test('every testdata file is the input or the expected output of some case', () => {
  const used = new Set([
    ...healthTests.tests.map((t) => join(DIR, t.inputPath)),
    ...actionTests.discoveryTests.map((t) => join(ACTIONS, t.inputPath)),
    ...actionTests.actionTests.flatMap((t) => [join(ACTIONS, t.inputPath), join(ACTIONS, t.expectedOutputPath)]),
  ]);
  const testdata = files(DIR).filter((f) => f.includes('/testdata/'));
  assert.deepEqual(testdata.filter((f) => !used.has(f)).map((f) => relative(DIR, f)), []);
  for (const f of used) assert.ok(existsSync(f), `${relative(DIR, f)} is named by a test but does not exist`);
});

const statusOf = (dir: string, path: string): { phase?: string; pause?: { reason?: string } } => (object(dir, path).status ?? {}) as { phase?: string; pause?: { reason?: string } };

test('the health cases cover every phase and every pause reason of src/api/vocabulary.ts, and no status', () => {
  const statuses = healthTests.tests.map((t) => ({ ...statusOf(DIR, t.inputPath), health: t.healthStatus.status }));
  for (const p of PHASES) assert.ok(statuses.some((s) => s.phase === p), `no health case in phase ${p}`);
  for (const r of PAUSE_REASONS) {
    const c = statuses.filter((s) => s.phase === 'Paused' && s.pause?.reason === r);
    assert.ok(c.length > 0, `no health case paused with reason ${r}`);
    for (const s of c) assert.equal(s.health, 'Suspended', `paused with reason ${r}`);
  }
  assert.ok(statuses.some((s) => s.phase === undefined), 'no health case without a phase');
});

test('the discovery cases cover every phase of src/api/vocabulary.ts, and no status', () => {
  const phases = actionTests.discoveryTests.map((t) => statusOf(ACTIONS, t.inputPath).phase);
  for (const p of [...PHASES, undefined]) assert.ok(phases.includes(p), `no discovery case in phase ${p ?? '(none)'}`);
});
