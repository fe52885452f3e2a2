// Totals over saved campaign histories (`npm run campaign -- --tally DIR...`): each history judged again with the
// checker's current rules, grouped by the operator it ran (operator-identity.ts), so upgrades run on several days
// count towards one operator's total only when the operator did not change between them.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
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

/** Every history-*.json under the folders (not those of --shrink runs, which repeat one upgrade). */
export function historyFiles(dirs: readonly string[]): string[] {
  return dirs.flatMap((d) => readdirSync(d).filter((f) => /^history-\d+-\d+\.json$/.test(f)).map((f) => join(d, f))).sort();
}

export function readTallied(file: string): Tallied | string {
  const size = statSync(file).size;
  if (size > MAX_HISTORY_BYTES) return `${file}: ${size} bytes, over ${MAX_HISTORY_BYTES}: not read`;
  try {
    return tallyOne(file, JSON.parse(readFileSync(file, 'utf8')) as UpgradeResult & { operator?: string });
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
