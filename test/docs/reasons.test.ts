// docs/troubleshooting.md must have an entry for every condition reason the operator can set, so the page a
// paged human opens stays complete as reasons are added. The reasons are read from the sources themselves:
// every `reason: '…'` and `pause(ctx, '…'` / `onBreach(ctx, '…'` in src/plan and src/controller, the
// PAUSE_REASONS list, and the phases the Progressing condition carries as its reason (`reason: phase`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PAUSE_REASONS, PHASES, isTerminal } from '../../src/api/vocabulary.ts';
import { CONDITION_TYPES } from '../../src/api/conditions.ts';
import { FLAG_PROOF_REASONS } from '../../src/plan/flag-proof.ts';
import { FLAG_PROOF_PENDING } from '../../src/plan/flag-proof-gate.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PAGE = 'docs/troubleshooting.md';
const SOURCE_DIRS = ['src/plan', 'src/controller'];

function tsFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

const CAMEL = '[A-Z][A-Za-z0-9]*';
const REASON_LITERAL = new RegExp(`\\breason:\\s*(['"])(${CAMEL})\\1`, 'g');
const PAUSE_CALL = new RegExp(`\\b(?:pause|onBreach)\\(\\s*ctx\\s*,\\s*(['"])(${CAMEL})\\1`, 'g');
/** `{ type: 'Paused', status: 'False', reason: 'NotPaused'` — a condition written with literals. */
const CONDITION_LITERAL = new RegExp(`\\{\\s*type:\\s*'(${CAMEL})',\\s*status:\\s*'(True|False|Unknown)',\\s*reason:\\s*'(${CAMEL})'`, 'g');

interface Use {
  reason: string;
  where: string;
}

function sourceUses(): { uses: Use[]; pairs: { type: string; status: string; reason: string; where: string }[] } {
  const uses: Use[] = [];
  const pairs: { type: string; status: string; reason: string; where: string }[] = [];
  for (const file of SOURCE_DIRS.flatMap(tsFiles)) {
    const text = readFileSync(file, 'utf8');
    const where = relative(root, file);
    for (const re of [REASON_LITERAL, PAUSE_CALL]) {
      for (const m of text.matchAll(re)) uses.push({ reason: m[2]!, where });
    }
    for (const m of text.matchAll(CONDITION_LITERAL)) pairs.push({ type: m[1]!, status: m[2]!, reason: m[3]!, where });
  }
  for (const r of PAUSE_REASONS) uses.push({ reason: r, where: 'PAUSE_REASONS in src/api/vocabulary.ts' });
  // The flag proof's blocking reasons (PreflightPassed, FlagProofPassed) are defined once, as constants.
  for (const r of [FLAG_PROOF_REASONS.refused, FLAG_PROOF_REASONS.inconclusive, FLAG_PROOF_REASONS.notRun, FLAG_PROOF_PENDING]) uses.push({ reason: r, where: 'src/plan/flag-proof.ts, flag-proof-gate.ts' });
  // Progressing carries the active phase as its reason (done() in src/plan/planner.ts).
  for (const p of PHASES.filter((p) => !isTerminal(p) && p !== 'Pending' && p !== 'Paused')) uses.push({ reason: p, where: 'Progressing: reason = the active phase' });
  return { uses, pairs };
}

const page = readFileSync(join(root, PAGE), 'utf8');
const lines = page.split('\n');

/** Every `Backticked` CamelCase word of a level-3 heading: the page's reason entries. */
const headingReasons = new Set(
  lines.filter((l) => /^###\s/.test(l)).flatMap((l) => [...l.matchAll(new RegExp(`\`(${CAMEL})\``, 'g'))].map((m) => m[1]!)),
);

/** Rows of the index table: condition type, status, and each `Backticked` reason of the third cell. */
function indexRows(): { type: string; status: string; reasons: string[] }[] {
  const start = lines.findIndex((l) => /^##\s+Index\b/.test(l));
  assert.ok(start >= 0, `${PAGE} has no "## Index" section`);
  const rows: { type: string; status: string; reasons: string[] }[] = [];
  for (const l of lines.slice(start + 1)) {
    if (/^##\s/.test(l)) break;
    const cells = l.split('|').slice(1, -1).map((c) => c.trim());
    if (cells.length < 4 || !(CONDITION_TYPES as readonly string[]).includes(cells[0]!)) continue;
    rows.push({ type: cells[0]!, status: cells[1]!, reasons: [...cells[2]!.matchAll(new RegExp(`\`(${CAMEL})\``, 'g'))].map((m) => m[1]!) });
  }
  return rows;
}

const { uses, pairs } = sourceUses();
const known = new Set(uses.map((u) => u.reason));

test('the reasons are found in the sources (the extraction itself works)', () => {
  for (const r of ['NoServers', 'UnhealthyFleet', 'SkipsMinor', 'StorageVersionsUnknown', 'AnotherUpgradeActive', 'InvalidSpec', 'Passed', 'Resumed', 'Upgrading']) {
    assert.ok(known.has(r), `expected reason ${r} among those read from ${SOURCE_DIRS.join(', ')}; found: ${[...known].sort().join(', ')}`);
  }
  assert.ok(pairs.length >= 10, `expected condition literals in the sources, found ${pairs.length}`);
});

test(`every reason the operator sets has an entry (a ### heading naming it in backticks) in ${PAGE}`, () => {
  const missing = [...known].filter((r) => !headingReasons.has(r)).sort();
  const detail = missing.map((r) => `${r} (${[...new Set(uses.filter((u) => u.reason === r).map((u) => u.where))].join(', ')})`);
  assert.deepEqual(detail, [], `add an entry to ${PAGE} for: ${detail.join('; ')}`);
});

test(`every condition written with a literal reason has its row in the index of ${PAGE}`, () => {
  const rows = indexRows();
  const missing = pairs
    .filter((p) => !rows.some((r) => r.type === p.type && r.status === p.status && r.reasons.includes(p.reason)))
    .map((p) => `| ${p.type} | ${p.status} | \`${p.reason}\` | (${p.where})`);
  assert.deepEqual([...new Set(missing)], [], `add these rows to the index of ${PAGE}`);
});

test(`every pause reason has a Paused=True row in the index of ${PAGE}`, () => {
  const rows = indexRows().filter((r) => r.type === 'Paused' && r.status === 'True');
  const missing = PAUSE_REASONS.filter((p) => !rows.some((r) => r.reasons.includes(p)));
  assert.deepEqual(missing, [], `add Paused rows to the index of ${PAGE}`);
});

test(`${PAGE} names no reason the operator no longer sets`, () => {
  const documented = new Set([...headingReasons, ...indexRows().flatMap((r) => r.reasons)]);
  const stale = [...documented].filter((r) => !known.has(r)).sort();
  assert.deepEqual(stale, [], `${PAGE} documents reasons that no source sets any more: remove or rename their entries`);
});
