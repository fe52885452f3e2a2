// The campaign's draws of a held phase two, of a control plane component that changes version mid-run and of an
// operator rollout (helm upgrade of the Deployment). Drawn after every other draw of drawUpgrade (schedule.ts), so a
// seed's earlier draws stay as they were: an upgrade that gets these is the same upgrade plus them.
import type { Fault, FaultKind, Mode, UpgradeSpecDraw } from './schedule.ts';

/** spec.strategy.phaseTwo of a held TwoPhase upgrade (docs/two-phase.md "Holding phase two"). */
export interface HoldDraw {
  start: 'Approval';
  /** phaseTwo.deadline, seconds (10-40); absent: only an approval (or an abort) ends the hold. */
  deadlineSeconds?: number;
  onDeadline?: 'Proceed' | 'Rollback';
}

/** The kinds drawn here, apart from the weights: each mode's share. */
export const LATE_FAULTS: Record<Mode, readonly FaultKind[]> = {
  process: ['approve', 'component-newer', 'operator-rollout'],
  nodes: ['approve', 'operator-rollout'],
};

/** The phase soak of the campaign's TwoPhase upgrades (run-*.ts), s: the hold starts when it is over. */
export const PHASE_SOAK_SECONDS = 5;

/**
 * Where the hold starts, roughly, ms after the upgrade's creation: the gate's pass (when off), phase one's pass and the
 * phase soak. Faults with `holdMs` are injected that long after the hold the status shows; this estimate only places
 * them in the window.
 */
export function holdStartEstimateMs(spec: UpgradeSpecDraw, pass: number): number {
  return pass + 10_000 + (spec.gate ? 0 : pass) + PHASE_SOAK_SECONDS * 1000;
}

/** The room a hold adds to an upgrade's window: its deadline, or the paged human's late approval, and a margin. */
export function holdExtraMs(h: HoldDraw | undefined): number {
  if (!h) return 0;
  return (h.deadlineSeconds ?? HUMAN_APPROVES_AFTER_S) * 1000 + 20_000;
}

/**
 * How long an approval-only hold waits, once the faults healed, before the harness approves it as the paged human
 * would (so the upgrade goes on and comes to rest).
 */
export const HUMAN_APPROVES_AFTER_S = 10;

export interface LateDrawContext {
  r: () => number;
  mode: Mode;
  spec: UpgradeSpecDraw;
  faults: Fault[];
  /** The upgrade's active part, ms (schedule.ts). */
  activeMs: number;
  /** One replacement pass, ms (schedule.ts). */
  pass: number;
}

/**
 * The late draws: of the TwoPhase upgrades, half hold phase two for an approval (60 % of those with a deadline of
 * 10-40 s, Proceed or Rollback) and get one or two faults at the hold's edge; in process mode one upgrade in five gets
 * a kube-controller-manager moved to the target mid-run (half of those with an abort while it is newer); one in five
 * gets an operator rollout. Returns the extra window the draws need.
 */
export function drawLate(c: LateDrawContext): number {
  const { r, spec, faults } = c;
  const int = (lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
  let extraMs = 0;
  if (spec.twoPhase && r() < 0.5) {
    const hold: HoldDraw = { start: 'Approval' };
    if (r() < 0.6) {
      hold.deadlineSeconds = int(10, 40);
      hold.onDeadline = r() < 0.5 ? 'Proceed' : 'Rollback';
    }
    spec.phaseTwo = hold;
    extraMs += holdExtraMs(hold);
    const holdAt = holdStartEstimateMs(spec, c.pass);
    const n = int(1, 2);
    for (let i = 0; i < n; i++) {
      const x = r();
      if (x < 0.2) {
        // Before the hold: an approval set during phase one approves nothing later.
        faults.push({ kind: 'approve', atMs: int(3, Math.max(3, Math.floor((holdAt - c.pass) / 1000))) * 1000, durationMs: 0 });
      } else if (x < 0.45) {
        // During (or just after the start of) the hold.
        const holdMs = int(0, 15) * 1000;
        faults.push({ kind: 'approve', atMs: holdAt + holdMs, durationMs: 0, holdMs });
      } else if (x < 0.65) {
        // The leader killed in the hold; with a deadline, across it: the deadline passes while no replica leads.
        const holdMs = hold.deadlineSeconds === undefined ? int(0, 10) * 1000 : Math.max(0, hold.deadlineSeconds - int(1, 5)) * 1000;
        faults.push({ kind: r() < 0.7 ? 'operator-leader-kill' : 'operator-both-kill', atMs: holdAt + holdMs, durationMs: int(8, 25) * 1000, holdMs });
      } else if (x < 0.8) {
        const holdMs = int(0, 20) * 1000;
        faults.push({ kind: 'abort', atMs: holdAt + holdMs, durationMs: 0, holdMs });
      } else {
        // After the hold ended (a deadline passed, or the approval came): a value that must change nothing.
        const holdMs = ((hold.deadlineSeconds ?? 20) + int(2, 10)) * 1000;
        faults.push({ kind: 'approve', atMs: holdAt + holdMs, durationMs: 0, holdMs });
      }
    }
  }
  if (c.mode === 'process' && r() < 0.2) {
    const atMs = int(3, Math.floor(c.activeMs / 1000)) * 1000;
    const durationMs = int(10, 40) * 1000;
    faults.push({ kind: 'component-newer', atMs, durationMs, server: int(0, 2) });
    if (r() < 0.5) faults.push({ kind: 'abort', atMs: atMs + int(2, durationMs / 1000 - 3) * 1000, durationMs: 0 });
  }
  if (r() < 0.2) {
    faults.push({ kind: 'operator-rollout', atMs: int(3, Math.floor(c.activeMs / 1000)) * 1000, durationMs: 0 });
    // A replica that does not end on SIGTERM gets its grace period (ROLLOUT_GRACE_MS) before SIGKILL.
    extraMs += 60_000;
  }
  faults.sort((a, b) => a.atMs - b.atMs);
  return extraMs;
}

/** What `--only` picks upgrades by: a held phase two, a component moved, an operator rollout. */
export const FEATURES = ['hold', 'component', 'rollout'] as const;
export type Feature = (typeof FEATURES)[number];

/** Whether a schedule draws `feature`. */
export function drawsFeature(s: { spec: UpgradeSpecDraw; faults: Fault[] }, feature: Feature): boolean {
  if (feature === 'hold') return s.spec.phaseTwo !== undefined;
  return s.faults.some((f) => f.kind === (feature === 'component' ? 'component-newer' : 'operator-rollout'));
}

/**
 * The first `count` upgrades of a seed that draw `feature` (`--only`): index by index, each in the mode `--seed S`
 * gives its index, so it is the same upgrade the seed draws there (its replay file and line name it).
 */
export function pickUpgrades<T extends { spec: UpgradeSpecDraw; faults: Fault[] }>(draw: (index: number, mode: Mode) => T, count: number, modes: readonly Mode[], feature: Feature): T[] {
  const out: T[] = [];
  for (let i = 0; out.length < count && i < 10_000; i++) {
    const s = draw(i, modes[i % modes.length]!);
    if (drawsFeature(s, feature)) out.push(s);
  }
  return out;
}
