import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { operatorIdentity } from '../../e2e/campaign/operator-identity.ts';
import { archiveHistory, historyFiles, MAX_HISTORY_BYTES, readTallied, specDraws, tallyTable } from '../../e2e/campaign/tally.ts';

function checkout(): string {
  const root = mkdtempSync(join(tmpdir(), 'auo-identity-'));
  for (const d of ['src/plan', 'crds', 'charts/x', 'docs']) mkdirSync(join(root, d), { recursive: true });
  writeFileSync(join(root, 'src/plan/a.ts'), 'export const a = 1;\n');
  writeFileSync(join(root, 'crds/c.yaml'), 'kind: CustomResourceDefinition\n');
  writeFileSync(join(root, 'charts/x/values.yaml'), 'replicas: 2\n');
  writeFileSync(join(root, 'package.json'), '{}\n');
  writeFileSync(join(root, 'docs/p.md'), '# page\n');
  return root;
}

test('the operator identity changes with its code, CRDs, chart or dependencies, and not with the docs', () => {
  const root = checkout();
  const first = operatorIdentity(root);
  assert.match(first, /^[0-9a-f]{16}$/);
  writeFileSync(join(root, 'docs/p.md'), '# another page\n');
  assert.equal(operatorIdentity(root), first);
  for (const [file, text] of [['src/plan/a.ts', 'export const a = 2;\n'], ['crds/c.yaml', 'kind: Other\n'], ['charts/x/values.yaml', 'replicas: 3\n'], ['package-lock.json', '{"lockfileVersion":3}\n']] as const) {
    const before = operatorIdentity(root);
    writeFileSync(join(root, file), text);
    assert.notEqual(operatorIdentity(root), before, file);
  }
  // A renamed file with the same content is another operator too.
  const before = operatorIdentity(root);
  writeFileSync(join(root, 'src/plan/b.ts'), 'export const a = 2;\n');
  assert.notEqual(operatorIdentity(root), before);
});

test('spec draws name the features, any new field by its name', () => {
  assert.deepEqual(specDraws({ batchSize: 2, soakSeconds: 3, failureLimit: 2, intervalSeconds: 2, onBreach: 'Rollback', twoPhase: false, gate: false, standby: true, prometheus: undefined, window: { closesAtMs: 1 } }),
    ['batch 2', 'onBreach Rollback', 'OnePhase', 'gate off', 'standby', 'window']);
});

test('a tally judges each history again, counts it under its operator and names the rule it breaks', () => {
  const dir = mkdtempSync(join(tmpdir(), 'auo-tally-'));
  const spec = { fromVersion: 'v1.35.4', targetVersion: 'v1.36.3', batchSize: 1, failureLimit: 2, intervalMs: 2000, targetOnlyResources: [] };
  const schedule = { seed: 5, index: 0, spec: { batchSize: 1, soakSeconds: 2, failureLimit: 2, intervalSeconds: 2, onBreach: 'Pause', twoPhase: false, gate: true }, faults: [{ kind: 'apiserver-kill', atMs: 1000, durationMs: 3000, server: 0 }], windowMs: 60_000 };
  // The same key carried out twice: OncePerKey, whatever the verdict saved with it said.
  const op = { key: 'k1', server: 'cp-1', action: 'Upgrade', start: 1000, end: 2000, landed: true };
  const history = { spec, ops: [op, { ...op, start: 3000, end: 4000 }], servers: [], statuses: [], breaches: [], healedAt: 0, endedAt: 5000, client: [] };
  writeFileSync(join(dir, 'history-5-0.json'), JSON.stringify({ schedule, outcome: 'Succeeded', history, verdict: { violations: [] }, operator: 'abc' }));
  writeFileSync(join(dir, 'history-5-0-shrink-1.json'), '{}');
  writeFileSync(join(dir, 'history-5-1.json'), 'not json');
  const files = historyFiles([dir]);
  assert.deepEqual(files.map((f) => f.slice(dir.length + 1)), ['history-5-0.json', 'history-5-1.json']);
  const [good, bad] = files.map(readTallied);
  assert.equal(typeof bad, 'string');
  assert.ok(good && typeof good !== 'string');
  assert.ok(good.rules.includes('OncePerKey'), good.rules.join(', '));
  assert.equal(good.operator, 'abc');
  assert.deepEqual(good.draws, ['batch 1', 'onBreach Pause', 'OnePhase', 'gate on', 'apiserver-kill']);
  const table = tallyTable([good]);
  assert.match(table, /operator abc: 1 upgrade\(s\), 1 with a violation/);
  assert.match(table, /\| process \| 1 \| Succeeded 1 \| [^|]*OncePerKey 1/);
});

test('a kept record is the history compressed under its operator, judged as the plain file is, and never overwritten', () => {
  const dir = mkdtempSync(join(tmpdir(), 'auo-tally-'));
  const dest = join(dir, 'records');
  const schedule = { seed: 7, index: 2, spec: { batchSize: 1, onBreach: 'Pause', twoPhase: false, gate: true }, faults: [], windowMs: 60_000 };
  const spec = { fromVersion: 'v1.35.4', targetVersion: 'v1.36.3', batchSize: 1, failureLimit: 2, intervalMs: 2000, targetOnlyResources: [] };
  const op = { key: 'k1', server: 'cp-1', action: 'Upgrade', start: 1000, end: 2000, landed: true };
  const history = { spec, ops: [op, { ...op, start: 3000, end: 4000 }], servers: [], statuses: [], breaches: [], healedAt: 0, endedAt: 5000, client: [] };
  const plain = join(dir, 'history-7-2.json');
  writeFileSync(plain, JSON.stringify({ schedule, outcome: 'Succeeded', history, verdict: { violations: [] }, operator: 'abc123' }));
  assert.equal(archiveHistory(plain, 'abc123', dest), undefined);
  const kept = join(dest, 'abc123', 'history-7-2.json.gz');
  assert.deepEqual(historyFiles([join(dest, 'abc123')]), [kept]);
  const fromPlain = readTallied(plain);
  const fromKept = readTallied(kept);
  assert.ok(typeof fromPlain !== 'string' && typeof fromKept !== 'string');
  assert.deepEqual({ ...fromKept, file: '' }, { ...fromPlain, file: '' });
  assert.ok(fromKept.rules.includes('OncePerKey'));
  // Keeping it again is a no-op; another history under the same name is refused and the record stays.
  assert.equal(archiveHistory(plain, 'abc123', dest), undefined);
  const before = readFileSync(kept);
  writeFileSync(plain, JSON.stringify({ schedule, outcome: 'RolledBack', history, verdict: { violations: [] }, operator: 'abc123' }));
  assert.match(archiveHistory(plain, 'abc123', dest) ?? '', /exists with another history: not overwritten/);
  assert.deepEqual(readFileSync(kept), before);
  // The operator named in a history never becomes a path of its own choosing.
  for (const operator of ['../x', 'a/b', '', 'x'.repeat(65), '..', 'A B']) {
    assert.match(archiveHistory(plain, operator, dest) ?? '', /is not a digest: not kept/, operator);
  }
  assert.deepEqual(readdirSync(dest), ['abc123']);
});

test('a compressed history that inflates past the cap is reported, not read', () => {
  const dir = mkdtempSync(join(tmpdir(), 'auo-tally-'));
  const bomb = join(dir, 'history-1-0.json.gz');
  writeFileSync(bomb, gzipSync(Buffer.alloc(MAX_HISTORY_BYTES + 1, 0x20)));
  assert.ok(statSync(bomb).size < 1024 * 1024);
  assert.match(String(readTallied(bomb)), /inflates past \d+ bytes: not read/);
  writeFileSync(join(dir, 'history-1-1.json.gz'), 'not gzip');
  assert.equal(typeof readTallied(join(dir, 'history-1-1.json.gz')), 'string');
});
