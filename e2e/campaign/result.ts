// What one campaign upgrade yields, in both modes, and the parts of a run that do not depend on the mode: waiting
// until the upgrade rests, the output line.
import { sleep } from '../cluster/index.ts';
import type { History, Verdict } from './history-check.ts';
import type { StatusRecorder } from './status-recorder.ts';
import { describeFault, describeSpec, type Schedule } from './schedule.ts';

export const TERMINAL = new Set(['Succeeded', 'RolledBack', 'Failed']);

export interface UpgradeResult {
  schedule: Schedule;
  /** The last phase (and pause reason) seen. */
  outcome: string;
  durationMs: number;
  /** When the upgrade object was created (epoch ms): the history's times are absolute, the output's relative to this. */
  createdAt: number;
  verdict: Verdict;
  history: History;
  /** Faults that could not be injected as drawn (e.g. every server busy in a replacement), and why. */
  skipped: string[];
  /** Leader SIGKILL -> another replica leading, ms (only where a standby was running). */
  takeoverMs: number[];
  /** The harness failed (not the operator): the run proves nothing. */
  harnessError?: string;
}

/**
 * Until the faults healed and the upgrade rests (a terminal phase, or paused 20 s with no replacement in flight), or
 * the window ends. A loaded machine slows every replacement: while the driver still made progress in the last
 * minute, the window stretches (up to twice its length) rather than calling a slow upgrade stuck (seed 7 #8: 30 s
 * per replacement).
 */
export async function awaitRest(o: { createdAt: number; windowMs: number; healedAt: () => number; status: StatusRecorder; lastDriverActivity: () => number; inFlight: () => boolean }): Promise<void> {
  const end = (): number => o.createdAt + (o.lastDriverActivity() > Date.now() - 60_000 ? 2 : 1) * o.windowMs;
  while (Date.now() < end()) {
    await sleep(1000);
    const healedAt = o.healedAt();
    if (healedAt === 0) continue;
    const p = o.status.last;
    if (p && TERMINAL.has(p.phase) && Date.now() - p.t > 3000) break;
    if (p?.phase === 'Paused' && Date.now() - Math.max(p.t, healedAt) > 20_000 && !o.inFlight()) break;
  }
}

/** The outcome word of a history: the last phase, with the pause reason. */
export function outcome(h: History): string {
  const last = h.statuses.at(-1);
  return last ? `${last.phase}${last.pauseReason ? `(${last.pauseReason})` : ''}` : 'none';
}

/** One line per upgrade: seed, mode, spec, faults, outcome, verdict. */
export function line(r: UpgradeResult): string {
  const s = r.schedule;
  // The checker speaks in epoch ms: shown as seconds after the upgrade was created.
  const rel = (m: string): string => m.replace(/\b1\d{12}\b/g, (x) => `+${((Number(x) - r.createdAt) / 1000).toFixed(1)}s`);
  const verdict = r.harnessError ? `HARNESS-ERROR ${r.harnessError}` : r.verdict.violations.length === 0 ? 'ok' : `VIOLATION ${r.verdict.violations.map((v) => `${v.rule}: ${rel(v.message)}`).join('; ')}`;
  const skipped = r.skipped.length ? ` notes=[${r.skipped.join('; ')}]` : '';
  return `#${s.index} seed=${s.seed} mode=${s.mode ?? 'process'} ${describeSpec(s.spec)} faults=[${s.faults.map(describeFault).join(', ')}] outcome=${r.outcome} ${(r.durationMs / 1000).toFixed(0)}s${skipped} verdict=${verdict}`;
}
