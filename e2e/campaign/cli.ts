// npm run campaign -- --seed S --upgrades N [--mode process|nodes|both] [--driver webhook|staticPod] [--only hold|component|rollout] [--resume-after-heal] [--replay FILE | --shrink FILE] [--out DIR]
// npm run campaign -- --tally DIR [DIR...] [--archive DEST]: every saved history judged again, totals per operator (tally.ts);
//   --archive keeps each history, compressed, under DEST/<operator digest>/
// Runs N upgrades under randomized faults drawn from the seed, checks each history, prints one line per upgrade and a
// summary table; on a violation it writes the schedule as a replay file. The process mode runs the webhook driver,
// the nodes mode (real kubelets and containerd) the static Pod driver; `both` alternates them, upgrade by upgrade.
// --shrink runs a replay file's upgrade once, then once per fault left out (e2e/campaign/shrink.ts), and writes the
// smallest schedule that still broke a rule it broke.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { percentiles } from './history-check.ts';
import { operatorIdentity } from './operator-identity.ts';
import { archiveHistory, historyFiles, readHistory, tallyTable, type Tallied } from './tally.ts';
import { runUpgrade } from './run-upgrade.ts';
import { runNodesUpgrade } from './run-nodes-upgrade.ts';
import { line, type UpgradeResult } from './result.ts';
import { budgetMs, describeFault, drawUpgrade, parseSchedule, type Mode, type Schedule } from './schedule.ts';
import { sameFailure, shrink } from './shrink.ts';
import { FEATURES, pickUpgrades, type Feature } from './late-draws.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    tally: { type: 'boolean', default: false },
    archive: { type: 'string' },
    seed: { type: 'string' },
    upgrades: { type: 'string', default: '1' },
    mode: { type: 'string', default: 'process' },
    driver: { type: 'string' },
    replay: { type: 'string' },
    shrink: { type: 'string' },
    out: { type: 'string', default: 'campaign-out' },
    'stop-by': { type: 'string' },
    // Liveness: resume a pause that rests after the heal, as the paged human would; it must then end (ResumeCompletes).
    'resume-after-heal': { type: 'boolean', default: false },
    // Only upgrades of the seed that draw this (late-draws.ts): hold, component or rollout.
    only: { type: 'string' },
  },
});

if (values.tally) {
  if (positionals.length === 0) {
    process.stderr.write('--tally takes the folders of saved histories: npm run campaign -- --tally DIR [DIR...]\n');
    process.exit(2);
  }
  const read = historyFiles(positionals).map(readHistory);
  for (const e of read.filter((x): x is string => typeof x === 'string')) process.stderr.write(`not judged: ${e}\n`);
  const rows: Tallied[] = read.flatMap((x) => (typeof x === 'string' ? [] : [x.tallied]));
  const dest = values.archive;
  if (dest !== undefined) {
    const errors = rows.map((r) => archiveHistory(r.file, r.operator, dest)).filter((e) => e !== undefined);
    for (const e of errors) process.stderr.write(`not kept: ${e}\n`);
    process.stderr.write(`kept ${rows.length - errors.length} of ${rows.length} histories under ${dest}\n`);
    if (errors.length > 0) process.exit(1);
  }
  for (const r of rows.filter((x) => x.rules.length > 0)) process.stdout.write(`VIOLATION ${r.file}: ${r.rules.join(', ')}\n`);
  process.stdout.write(`${tallyTable(rows)}\n`);
  process.exit(rows.some((r) => r.rules.length > 0) ? 1 : 0);
}
if (values.archive !== undefined) {
  process.stderr.write('--archive keeps what --tally reads: npm run campaign -- --tally DIR [DIR...] --archive DEST\n');
  process.exit(2);
}
if (positionals.length > 0) {
  process.stderr.write(`unexpected argument ${JSON.stringify(positionals[0])}: only --tally takes folders\n`);
  process.exit(2);
}

// Each mode has its driver: the webhook's hook is a process of this run; the static Pod agent needs real kubelets.
const DRIVER: Record<Mode, string> = { process: 'webhook', nodes: 'staticPod' };
const modes: Mode[] | undefined = values.mode === 'both' ? ['process', 'nodes'] : values.mode === 'process' || values.mode === 'nodes' ? [values.mode] : undefined;
if (!modes) {
  process.stderr.write(`--mode takes process, nodes or both; got ${JSON.stringify(values.mode)}\n`);
  process.exit(2);
}
if (values.driver !== undefined && !(modes.length === 1 && DRIVER[modes[0]!] === values.driver)) {
  process.stderr.write(`--driver ${values.driver} with --mode ${values.mode}: the process mode runs the webhook driver, the nodes mode the staticPod driver (--mode nodes --driver staticPod)\n`);
  process.exit(2);
}
const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
if (!Number.isInteger(seed) || seed < 0) {
  process.stderr.write('--seed must be a non-negative integer\n');
  process.exit(2);
}
if (values.only !== undefined && !(FEATURES as readonly string[]).includes(values.only)) {
  process.stderr.write(`--only takes ${FEATURES.join(', ')}; got ${JSON.stringify(values.only)}\n`);
  process.exit(2);
}
const count = Number(values.upgrades);
if (!Number.isInteger(count) || count < 1 || count > 500) {
  process.stderr.write('--upgrades must be an integer from 1 to 500\n');
  process.exit(2);
}
// Do not start an upgrade whose window would end after this time (ISO or HH:MM UTC).
const stopBy = values['stop-by'] ? (values['stop-by'].includes('T') ? Date.parse(values['stop-by']) : Date.parse(`${new Date().toISOString().slice(0, 10)}T${values['stop-by']}:00Z`)) : Infinity;
/** Whether an upgrade started now ends, at the latest, a minute before --stop-by. */
const fits = (s: Schedule): boolean => Date.now() + budgetMs(s) + 60_000 <= stopBy;
const out = resolve(values.out);
/** The operator this checkout builds: each history records it, so totals never mix operators. */
const OPERATOR = operatorIdentity(resolve(import.meta.dirname, '..', '..'));
mkdirSync(out, { recursive: true });

/** Runs one upgrade, printing its line and writing its history (and, on a violation, its replay file). */
async function runOne(s: Schedule, tag = ''): Promise<UpgradeResult> {
  const run = (s.mode ?? 'process') === 'nodes' ? runNodesUpgrade : runUpgrade;
  const r = { ...(await run(s, (m) => process.stderr.write(`${m}\n`))), operator: OPERATOR };
  process.stdout.write(`${line(r)}\n`);
  writeFileSync(join(out, `history-${s.seed}-${s.index}${tag}.json`), JSON.stringify(r, null, 1));
  if (r.verdict.violations.length > 0) {
    const file = join(out, `replay-${s.seed}-${s.index}${tag}.json`);
    writeFileSync(file, JSON.stringify(s, null, 2));
    process.stdout.write(`  replay: npm run campaign -- --replay ${file}\n`);
  }
  return r;
}

const rulesOf = (r: UpgradeResult): string[] => [...new Set(r.verdict.violations.map((v) => v.rule))];

if (values.shrink) {
  const original = parseSchedule(readFileSync(values.shrink, 'utf8'));
  process.stdout.write(`campaign: shrinking ${values.shrink} (${original.faults.length} fault(s): ${original.faults.map(describeFault).join(', ') || 'none'})\n`);
  const first = await runOne(original, '-shrink-0');
  const rules = rulesOf(first);
  if (rules.length === 0) {
    process.stdout.write('the upgrade broke no rule when run again: nothing to shrink (a timing-dependent failure; run --replay a few times)\n');
    process.exit(1);
  }
  let n = 0;
  const result = await shrink(original, async (candidate) => {
    if (!fits(candidate)) return false;
    const r = await runOne(candidate, `-shrink-${++n}`);
    return sameFailure(rules, rulesOf(r));
  });
  const file = join(out, `shrunk-${original.seed}-${original.index}.json`);
  writeFileSync(file, JSON.stringify(result.schedule, null, 2));
  process.stdout.write(`shrunk: ${original.faults.length} -> ${result.schedule.faults.length} fault(s) (${result.schedule.faults.map(describeFault).join(', ') || 'none'}), still breaking ${rules.join(', ')}; ${result.tried.length + 1} run(s)\n  replay: npm run campaign -- --replay ${file}\n`);
  process.exit(1);
}

const drawn: Schedule[] = values.only
  ? pickUpgrades((i, m) => drawUpgrade(seed, i, m), count, modes, values.only as Feature)
  : Array.from({ length: count }, (_, i) => drawUpgrade(seed, i, modes[i % modes.length]!));
const schedules: Schedule[] = values.replay ? [parseSchedule(readFileSync(values.replay, 'utf8'))] : drawn.map((s) => ({ ...s, ...(values['resume-after-heal'] ? { resumeAfterHeal: true } : {}) }));
process.stdout.write(values.replay ? `campaign: replaying ${values.replay}\n` : `campaign: seed ${seed}, ${count} upgrade(s), mode ${values.mode} (${modes.map((m) => `${m}: ${DRIVER[m]} driver`).join(', ')})${values['resume-after-heal'] ? ', resuming resting pauses after the heal' : ''}; output in ${out}\n`);


const results: UpgradeResult[] = [];
const t0 = Date.now();
for (const s of schedules) {
  if (!fits(s)) {
    process.stdout.write(`#${s.index}: not started (its window${s.resumeAfterHeal ? ', and one per resume,' : ''} would end after --stop-by)\n`);
    break;
  }
  results.push(await runOne(s));
}

// The summary table.
const byOutcome = new Map<string, number>();
for (const r of results) byOutcome.set(`${r.schedule.mode ?? 'process'} ${r.outcome}`, (byOutcome.get(`${r.schedule.mode ?? 'process'} ${r.outcome}`) ?? 0) + 1);
const byRule = new Map<string, number>();
for (const r of results) for (const v of r.verdict.violations) byRule.set(v.rule, (byRule.get(v.rule) ?? 0) + 1);
const reactions = percentiles(results.flatMap((r) => r.verdict.breachReactionMs));
const takeover = percentiles(results.flatMap((r) => r.takeoverMs));
const faults = new Map<string, number>();
for (const r of results) for (const f of r.schedule.faults) faults.set(f.kind, (faults.get(f.kind) ?? 0) + 1);
const fmt = (p: ReturnType<typeof percentiles>): string => (p ? `p50 ${(p.p50 / 1000).toFixed(1)} s, p95 ${(p.p95 / 1000).toFixed(1)} s, max ${(p.max / 1000).toFixed(1)} s` : 'none measured');
const rows: [string, string][] = [
  ['seed', values.replay ? `replay of ${values.replay}` : String(seed)],
  ['upgrades run', String(results.length)],
  ['time', `${((Date.now() - t0) / 60_000).toFixed(1)} min`],
  ['outcomes', [...byOutcome].map(([k, v]) => `${k} ${v}`).join(', ')],
  ['faults injected', [...faults].map(([k, v]) => `${k} ${v}`).join(', ')],
  ['upgrades with a violation', String(results.filter((r) => r.verdict.violations.length > 0).length)],
  ['violations by rule', byRule.size ? [...byRule].map(([k, v]) => `${k} ${v}`).join(', ') : 'none'],
  ['harness errors', String(results.filter((r) => r.harnessError).length)],
  ['breach -> pause/rollback', fmt(reactions)],
  ['leader SIGKILL -> standby leading', fmt(takeover)],
  ['hold deadline -> acted on', fmt(percentiles(results.flatMap((r) => r.verdict.deadlineReactionMs ?? [])))],
];
process.stdout.write(`\n| | |\n| --- | --- |\n${rows.map(([k, v]) => `| ${k} | ${v} |`).join('\n')}\n`);
process.exitCode = results.some((r) => r.verdict.violations.length > 0) ? 1 : 0;
