// What one upgrade of the fault campaign runs (issue 26), drawn from a seed: the spec and the fault schedule.
// Pure and deterministic (a small seeded PRNG, mulberry32), so a seed or a replay file gives the same upgrade again;
// test/campaign/schedule.test.ts checks that, and that every fault heals before the upgrade's window ends.
import { drawStartConditions } from './draw-gates.ts';
import { drawLate, LATE_FAULTS, type HoldDraw } from './late-draws.ts';

/** mulberry32: 32-bit state, good enough to spread draws; the same seed always yields the same sequence. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface UpgradeSpecDraw {
  batchSize: 1 | 2;
  soakSeconds: number;
  failureLimit: number;
  intervalSeconds: number;
  onBreach: 'Pause' | 'Rollback';
  twoPhase: boolean;
  /** The proxy gate on the servers at the start: on, or off (the operator turns it on first: EnablingProxy). */
  gate: boolean;
  /** A second operator replica from the start (a standby a leader kill hands over to). Drawn late: older seeds keep their draws. */
  standby?: boolean;
  /** The analysis reads a real Prometheus (source Prometheus) instead of the servers (Direct). Process mode; drawn after standby. */
  prometheus?: boolean;
  /** spec.gates with a PromQL gate on a gauge the harness flips (`gate-fail`). Drawn after prometheus (draw-gates.ts). */
  startGate?: boolean;
  /** spec.window: a maintenance window that closes mid-upgrade (`window-close`) and opens again (draw-gates.ts). */
  window?: boolean;
  /** The server (index) whose serving certificate expires soon, accepted in spec.acceptRisks (process mode; draw-gates.ts). */
  expiringCert?: number;
  /** phase two held for an approval (TwoPhase only; drawn last: late-draws.ts). */
  phaseTwo?: HoldDraw;
}

export const FAULT_KINDS = [
  'apiserver-kill', 'apiserver-stop', 'apiserver-restart-old', 'apiserver-restart-new',
  'operator-leader-kill', 'operator-both-kill', 'operator-late-standby',
  'hook-slow', 'hook-refuse', 'hook-fail', 'hook-lose',
  'client-errors', 'spec-edit', 'pause', 'resume', 'abort',
  // Nodes mode only (real kubelets and containerd, the static Pod driver; each node its own network namespace):
  'kubelet-stop', 'containerd-stop', 'image-missing', 'etcd-cut', 'peer-cut',
  // Process mode, when the analysis reads a real Prometheus (drawn apart: see drawUpgrade):
  'prometheus-down', 'prometheus-slow',
  // Start conditions (drawn apart: draw-gates.ts): the gate's gauge failing, the maintenance window closed, a hard
  // preflight finding present.
  'gate-fail', 'window-close', 'hard-finding',
  // Drawn last, apart from the weights (late-draws.ts): an approval, a component moved to the target, a helm upgrade of the operator.
  'approve', 'component-newer', 'operator-rollout',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface Fault {
  kind: FaultKind;
  /** When it is injected, ms after the upgrade was created. */
  atMs: number;
  /** How long it lasts before it heals (a one-shot fault: 0). */
  durationMs: number;
  /** The server it hits (index), for apiserver faults. */
  server?: number;
  /** Injected this long after the hold of phase two began (as the status shows it), not at atMs (an estimate then). */
  holdMs?: number;
}

/** process: servers as processes, the webhook driver; nodes: real kubelets and containerd, the static Pod driver. */
export const MODES = ['process', 'nodes'] as const;
export type Mode = (typeof MODES)[number];

export interface Schedule {
  seed: number;
  index: number;
  /** Absent in replay files written before the nodes mode: process. */
  mode?: Mode;
  spec: UpgradeSpecDraw;
  faults: Fault[];
  /** The upgrade's window from its creation: every fault heals well before it ends. */
  windowMs: number;
  /**
   * Liveness (`--resume-after-heal`): once the faults healed and the upgrade rests Paused, the harness resumes it, as
   * the human it paged would, up to RESUMES_AFTER_HEAL times; it must then end in a terminal phase.
   */
  resumeAfterHeal?: boolean;
}

/** How many times a resting pause is resumed after the heal (Schedule.resumeAfterHeal). */
export const RESUMES_AFTER_HEAL = 3;

/**
 * The longest an upgrade of `s` may take, for --stop-by: its window, and one more per resume a liveness run may
 * make (each resume gives the upgrade another window: awaitRest).
 */
export function budgetMs(s: Schedule): number {
  return s.windowMs * (s.resumeAfterHeal ? 1 + RESUMES_AFTER_HEAL : 1);
}

/**
 * Relative weights per mode: the apiserver and operator faults are what the campaign is for; an abort ends the
 * upgrade early. A kind of weight 0 is never drawn (the process mode's table is as it was before the nodes mode, so
 * its seeds draw the same upgrades).
 */
const WEIGHTS: Record<Mode, Record<FaultKind, number>> = {
  process: {
    'apiserver-kill': 4, 'apiserver-stop': 3, 'apiserver-restart-old': 2, 'apiserver-restart-new': 2,
    'operator-leader-kill': 3, 'operator-both-kill': 2, 'operator-late-standby': 2,
    'hook-slow': 2, 'hook-refuse': 2, 'hook-fail': 2, 'hook-lose': 2,
    'client-errors': 2, 'spec-edit': 2, 'pause': 2, 'resume': 1, 'abort': 1,
    'kubelet-stop': 0, 'containerd-stop': 0, 'image-missing': 0, 'etcd-cut': 0, 'peer-cut': 0,
    'prometheus-down': 0, 'prometheus-slow': 0, 'gate-fail': 0, 'window-close': 0, 'hard-finding': 0,
    'approve': 0, 'component-newer': 0, 'operator-rollout': 0,
  },
  // No hook here, and no restart on another binary by hand (a static Pod is rewritten only by the agent).
  nodes: {
    'apiserver-kill': 4, 'apiserver-stop': 3, 'apiserver-restart-old': 0, 'apiserver-restart-new': 0,
    'operator-leader-kill': 3, 'operator-both-kill': 2, 'operator-late-standby': 2,
    'hook-slow': 0, 'hook-refuse': 0, 'hook-fail': 0, 'hook-lose': 0,
    'client-errors': 2, 'spec-edit': 2, 'pause': 2, 'resume': 1, 'abort': 1,
    'kubelet-stop': 3, 'containerd-stop': 2, 'image-missing': 2, 'etcd-cut': 2, 'peer-cut': 2,
    'prometheus-down': 0, 'prometheus-slow': 0, 'gate-fail': 0, 'window-close': 0, 'hard-finding': 0,
    'approve': 0, 'component-newer': 0, 'operator-rollout': 0,
  },
};

/**
 * The range of each Prometheus check in the campaign (`analysis.prometheus.window`): the harness's Prometheus scrapes
 * every second, so 5 s hold enough samples (the default is 1m).
 */
export const PROMETHEUS_WINDOW_SECONDS = 5;

/** Drawn only with the Prometheus source, apart from the weights (see drawUpgrade). */
const PROMETHEUS_FAULTS: readonly FaultKind[] = ['prometheus-down', 'prometheus-slow'];

/** The kinds a mode draws. */
export function faultKinds(mode: Mode): FaultKind[] {
  return FAULT_KINDS.filter((k) => WEIGHTS[mode][k] > 0 || (mode === 'process' && [...PROMETHEUS_FAULTS, 'gate-fail', 'hard-finding'].includes(k)) || k === 'window-close' || LATE_FAULTS[mode].includes(k));
}

const ONE_SHOT = new Set<FaultKind>(['apiserver-restart-old', 'apiserver-restart-new', 'operator-late-standby', 'hook-fail', 'spec-edit', 'resume', 'abort', 'approve', 'operator-rollout']);
/** Faults that hit one server (or its node): the draw names it. */
const ON_A_SERVER = new Set<FaultKind>(['apiserver-kill', 'apiserver-stop', 'apiserver-restart-old', 'apiserver-restart-new', 'kubelet-stop', 'containerd-stop', 'image-missing', 'etcd-cut', 'peer-cut']);

/** The hold of phase two, for the output line. */
function describeHold(h: HoldDraw | undefined): string {
  if (!h) return '';
  return ` hold=${h.deadlineSeconds === undefined ? 'approval' : `${h.deadlineSeconds}s->${h.onDeadline}`}`;
}

/** The seed of upgrade `index` of a campaign: distinct per index, stable across runs. */
export function upgradeSeed(seed: number, index: number): number {
  return (Math.imul(seed >>> 0, 0x9e3779b1) + Math.imul(index + 1, 0x85ebca6b)) >>> 0;
}

/** Upgrade `index` of the campaign seeded `seed`, in `mode`. */
export function drawUpgrade(seed: number, index: number, mode: Mode = 'process'): Schedule {
  const r = prng(upgradeSeed(seed, index));
  const int = (lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const spec: UpgradeSpecDraw = {
    batchSize: r() < 0.7 ? 1 : 2,
    soakSeconds: int(2, 8),
    failureLimit: int(2, 4),
    intervalSeconds: pick([2, 3]),
    onBreach: r() < 0.5 ? 'Pause' : 'Rollback',
    twoPhase: r() < 0.25,
    gate: r() < 0.75,
  };
  // Active phases: ~60 s per 3 replacements on this machine in process mode, ~80 s through kubelets (a static Pod
  // restart after the agent Job's Pod started: 20-35 s each); more when the gate is turned on first or in two phases.
  const pass = mode === 'nodes' ? 80_000 : 60_000;
  const activeMs = pass + 10_000 + (spec.gate ? 0 : pass) + (spec.twoPhase ? pass + 10_000 : 0);
  const weights = WEIGHTS[mode];
  const total = Object.values(weights).reduce((a, b) => a + b, 0);
  const drawKind = (): FaultKind => {
    let x = r() * total;
    for (const k of FAULT_KINDS) {
      x -= weights[k];
      if (x < 0) return k;
    }
    return FAULT_KINDS[0];
  };
  const faults: Fault[] = [];
  const n = int(1, 3);
  for (let i = 0; i < n; i++) {
    const kind = drawKind();
    const atMs = int(3, Math.floor(activeMs / 1000)) * 1000;
    const durationMs = ONE_SHOT.has(kind) ? 0 : int(3, 25) * 1000;
    faults.push({ kind, atMs, durationMs, ...(ON_A_SERVER.has(kind) ? { server: int(0, 2) } : {}) });
  }
  faults.sort((a, b) => a.atMs - b.atMs);
  spec.standby = r() < 0.5;
  // Drawn after all the above, so a seed's earlier draws stay as they were: in process mode, one upgrade in three
  // reads its signals from a real Prometheus, and most of those meet Prometheus down or hung.
  if (mode === 'process' && r() < 0.35) {
    spec.prometheus = true;
    if (r() < 0.7) {
      faults.push({ kind: pick(PROMETHEUS_FAULTS), atMs: int(3, Math.floor(activeMs / 1000)) * 1000, durationMs: int(3, 25) * 1000 });
      faults.sort((a, b) => a.atMs - b.atMs);
    }
  }
  drawStartConditions({ r, int, pick }, mode, spec, faults, activeMs);
  // ---- Drawn after every draw above (keep this block last): a held phase two, a component moved mid-run, an
  // operator rollout (late-draws.ts). ----
  const lateMs = drawLate({ r, mode, spec, faults, activeMs, pass });
  const lastHeal = Math.max(...faults.map((f) => f.atMs + f.durationMs));
  // After the last heal: room for the rest of the upgrade (or its rollback) to run.
  return { seed, index, ...(mode === 'process' ? {} : { mode }), spec, faults, windowMs: lastHeal + activeMs + 90_000 + lateMs };
}

/** One line naming the spec, for the campaign's output. */
export function describeSpec(s: UpgradeSpecDraw): string {
  return `batch=${s.batchSize} soak=${s.soakSeconds}s limit=${s.failureLimit}x${s.intervalSeconds}s onBreach=${s.onBreach} ${s.twoPhase ? 'TwoPhase' : 'OnePhase'} gate=${s.gate ? 'on' : 'off'}${s.standby ? ' +standby' : ''}${s.prometheus ? ' +prometheus' : ''}${s.startGate ? ' +gate' : ''}${s.window ? ' +window' : ''}${s.expiringCert === undefined ? '' : ` +acceptRisk(cp-${s.expiringCert + 1})`}${describeHold(s.phaseTwo)}`;
}

export function describeFault(f: Fault): string {
  const where = f.server === undefined ? '' : ` cp-${f.server + 1}`;
  const at = f.holdMs === undefined ? `${Math.round(f.atMs / 1000)}s` : `hold+${Math.round(f.holdMs / 1000)}s`;
  return `${f.kind}${where}@${at}${f.durationMs ? `/${Math.round(f.durationMs / 1000)}s` : ''}`;
}

/** A replay file's content, checked: what --replay reads back (it is a file a person may have edited). */
export function parseSchedule(text: string): Schedule {
  const v = JSON.parse(text) as Partial<Schedule>;
  const ok = typeof v.seed === 'number' && typeof v.index === 'number' && typeof v.windowMs === 'number' && v.spec !== undefined && Array.isArray(v.faults)
    && (v.mode === undefined || (MODES as readonly string[]).includes(v.mode))
    && (v.resumeAfterHeal === undefined || typeof v.resumeAfterHeal === 'boolean')
    && v.faults.every((f) => (FAULT_KINDS as readonly string[]).includes(f.kind) && Number.isFinite(f.atMs) && Number.isFinite(f.durationMs) && (f.server === undefined || [0, 1, 2].includes(f.server)) && (f.holdMs === undefined || Number.isFinite(f.holdMs)));
  if (!ok) throw new Error('not a campaign schedule: want {seed, index, mode?: process|nodes, spec, faults: [{kind, atMs, durationMs, server?}], windowMs}');
  return v as Schedule;
}
