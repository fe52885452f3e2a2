// Totals over saved campaign histories (`npm run campaign -- --tally DIR...`): each history judged again with the
// checker's current rules, grouped by the operator it ran (operator-identity.ts), so upgrades run on several days
// count towards one operator's total only when the operator did not change between them.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { checkHistory } from './history-check.ts';
import type { UpgradeResult } from './result.ts';

/** A history file is the harness's own output; past this size it is reported, not read. */
export const MAX_HISTORY_BYTES = 64 * 1024 * 1024;

export interface Tallied {
  file: string;
  operator: string;
  mode: string;
  seed: number;
  index: number;
  outcome: string;
  /** The rules the history breaks when judged now. */
  rules: string[];
  harnessError: boolean;
  /** What the upgrade drew: spec features and fault kinds. */
  draws: string[];
}

/** The spec features an upgrade drew, as words: known ones by meaning, any other truthy field by its name. */
export function specDraws(spec: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(spec)) {
    if (k === 'batchSize') out.push(`batch ${String(v)}`);
    else if (k === 'onBreach') out.push(`onBreach ${String(v)}`);
    else if (k === 'gate') out.push(v ? 'gate on' : 'gate off');
    else if (k === 'twoPhase') out.push(v ? 'TwoPhase' : 'OnePhase');
    else if (['soakSeconds', 'failureLimit', 'intervalSeconds'].includes(k)) continue;
    else if (v !== undefined && v !== false && v !== null) out.push(k);
  }
  return out;
}

export function tallyOne(file: string, r: UpgradeResult & { operator?: string }): Tallied {
  const v = checkHistory(r.history);
  return {
    file, operator: r.operator ?? 'unrecorded', mode: r.schedule.mode ?? 'process', seed: r.schedule.seed, index: r.schedule.index,
    outcome: r.outcome, rules: [...new Set(v.violations.map((x) => x.rule))], harnessError: r.harnessError !== undefined,
    draws: [...specDraws(r.schedule.spec as unknown as Record<string, unknown>), ...r.schedule.faults.map((f) => f.kind)],
  };
}

const HISTORY_FILE = /^history-\d+-\d+\.json(\.gz)?$/;

/**
 * Every history-*.json under the folders, and every history-*.json.gz (the kept records, --archive), not those of
 * --shrink runs, which repeat one upgrade.
 */
export function historyFiles(dirs: readonly string[]): string[] {
  return dirs.flatMap((d) => readdirSync(d).filter((f) => HISTORY_FILE.test(f)).map((f) => join(d, f))).sort();
}

/** The history's text; a compressed one is inflated no further than the cap, so a small file cannot fill the heap. */
function historyText(file: string): string {
  const size = statSync(file).size;
  if (size > MAX_HISTORY_BYTES) throw new Error(`${size} bytes, over ${MAX_HISTORY_BYTES}: not read`);
  const raw = readFileSync(file);
  if (!file.endsWith('.gz')) return raw.toString('utf8');
  try {
    return gunzipSync(raw, { maxOutputLength: MAX_HISTORY_BYTES }).toString('utf8');
  } catch (err) {
    if (err instanceof RangeError) throw new Error(`inflates past ${MAX_HISTORY_BYTES} bytes: not read`, { cause: err });
    throw err;
  }
}

/** The parsed history and its tally, or why it was not judged. */
export function readHistory(file: string): { result: UpgradeResult & { operator?: string }; tallied: Tallied } | string {
  try {
    const result = JSON.parse(historyText(file)) as UpgradeResult & { operator?: string };
    return { result, tallied: tallyOne(file, result) };
  } catch (err) {
    return `${file}: ${(err as Error).message.split('\n')[0]}`;
  }
}

export function readTallied(file: string): Tallied | string {
  const read = readHistory(file);
  return typeof read === 'string' ? read : read.tallied;
}

/**
 * Keeps a history as a record: compressed, under DEST/<operator digest>/, named as the campaign named it. A record of
 * that name with other content is never overwritten (the same seed and index run twice are two upgrades): that is
 * returned as an error, and nothing is written.
 */
export function archiveHistory(file: string, operator: string, dest: string): string | undefined {
  if (!/^[0-9a-z-]{1,64}$/.test(operator)) return `${file}: operator ${JSON.stringify(operator)} is not a digest: not kept`;
  const dir = join(dest, operator);
  const target = join(dir, `${basename(file).replace(/\.gz$/, '')}.gz`);
  try {
    const text = historyText(file);
    if (existsSync(target)) return historyText(target) === text ? undefined : `${target} exists with another history: not overwritten`;
    mkdirSync(dir, { recursive: true });
    const tmp = `${target}.${process.pid}.tmp`;
    writeFileSync(tmp, gzipSync(text, { level: 9 }));
    renameSync(tmp, target);
    return undefined;
  } catch (err) {
    return `${file}: ${(err as Error).message.split('\n')[0]}`;
  }
}

const count = (xs: readonly string[]): string => {
  const m = new Map<string, number>();
  for (const x of xs) m.set(x, (m.get(x) ?? 0) + 1);
  return [...m].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(', ');
};

/** Markdown: per operator, per mode: upgrades, outcomes, violations; then the seeds and what was drawn. */
export function tallyTable(rows: readonly Tallied[]): string {
  const out: string[] = [];
  for (const op of [...new Set(rows.map((r) => r.operator))]) {
    const mine = rows.filter((r) => r.operator === op);
    out.push(`operator ${op}: ${mine.length} upgrade(s), ${mine.filter((r) => r.rules.length > 0).length} with a violation, ${mine.filter((r) => r.harnessError).length} harness error(s)`, '');
    out.push('| Mode | Upgrades | Outcomes | Violations |', '| --- | --- | --- | --- |');
    for (const mode of [...new Set(mine.map((r) => r.mode))]) {
      const m = mine.filter((r) => r.mode === mode);
      out.push(`| ${mode} | ${m.length} | ${count(m.map((r) => r.outcome))} | ${count(m.flatMap((r) => r.rules)) || 'none'} |`);
    }
    const seeds = new Map<number, number>();
    for (const r of mine) seeds.set(r.seed, (seeds.get(r.seed) ?? 0) + 1);
    out.push('', `Seeds (upgrades): ${[...seeds].map(([s, n]) => `${s} (${n})`).join(', ')}`, `Drawn: ${count(mine.flatMap((r) => r.draws))}`, '');
  }
  return out.join('\n');
}
