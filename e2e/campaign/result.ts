// What one campaign upgrade yields, in both modes, and the parts of a run that do not depend on the mode: the fault
// schedule run, the servers the faults claim, waiting until the upgrade rests, the judged history, the output line.
import { NEW_VERSION, OLD_VERSION, sleep } from '../cluster/index.ts';
import { NEW_ONLY } from '../support/rig.ts';
import type { Sample } from '../support/traffic.ts';
import { checkHistory, restingPreflight, SELF_LIFTING, type CheckRecord, type DriverOp, type BreachWindow, type History, type ServerRecord, type Span, type StatusSnapshot, type Verdict } from './history-check.ts';
import type { CallSeen, GateRecord, RiskRecord, WindowSpec } from './rules-gates.ts';
import type { StatusRecorder } from './status-recorder.ts';
import { describeFault, describeSpec, PROMETHEUS_WINDOW_SECONDS, RESUMES_AFTER_HEAL, type Fault, type Schedule } from './schedule.ts';

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
 * Until the faults healed and the upgrade rests (a terminal phase, or paused 20 s — a minute for a pause that lifts
 * by itself or a preflight that waits MixedVersions — with no replacement in flight), or the window ends. A loaded
 * machine slows every replacement: while the driver still made progress in the last minute or still runs a
 * replacement, the window stretches (up to twice its length) rather than calling a slow upgrade stuck (seed 7 #8:
 * 30 s per replacement). With `resume` (liveness runs), a resting pause is resumed instead, up to RESUMES_AFTER_HEAL
 * times, each giving the upgrade another window; the times go to `resumes`.
 */
export async function awaitRest(o: {
  createdAt: number; windowMs: number; healedAt: () => number; status: StatusRecorder; lastDriverActivity: () => number; inFlight: () => boolean;
  resume?: () => Promise<void>; resumes?: number[]; notes?: string[];
}): Promise<void> {
  const resumes = o.resumes ?? [];
  const start = (): number => Math.max(o.createdAt, resumes.at(-1) ?? 0);
  // A replacement still in flight stretches it too: the operator waits for it until batchTimeout (nodes seed 311 #3:
  // a static Pod's new server took over two minutes to start at load 20, within its 180 s batchTimeout).
  const end = (): number => start() + (o.lastDriverActivity() > Date.now() - 60_000 || o.inFlight() ? 2 : 1) * o.windowMs;
  while (Date.now() < end()) {
    await sleep(1000);
    const healedAt = o.healedAt();
    if (healedAt === 0) continue;
    const p = o.status.last;
    if (p && TERMINAL.has(p.phase) && Date.now() - p.t > 3000) break;
    // A pause that lifts by itself once its cause is gone (MembershipChanged, RollbackSafetyUnknown) may take a
    // while to: a Lease renewed, hashes read. Seed 51 #4 lifted a MembershipChanged pause 21 s after the heal and was
    // judged at rest 0.1 s before; such a pause must hold a minute before it counts as rest.
    // A preflight that waits MixedVersions waits for a human to finish the fleet (a server the harness restarted on
    // another binary before it passed stays there): it rests as a self-lifting pause does, never resumed (no pause).
    const restingWait = restingPreflight(p);
    const liftsBySelf = restingWait || (p?.pauseReason !== undefined && SELF_LIFTING.has(p.pauseReason));
    const held = Date.now() - Math.max(p?.t ?? 0, healedAt, resumes.at(-1) ?? 0) > (liftsBySelf ? 60_000 : 20_000) && !o.inFlight();
    if (restingWait && held) break;
    if (p?.phase === 'Paused' && held) {
      if (!o.resume || resumes.length >= RESUMES_AFTER_HEAL) break;
      resumes.push(Date.now());
      // A resume that does not land (the API server answering 5xx at load) is noted and counts as one of the
      // resumes: the next is tried after the hold, as the paged human would try again.
      await o.resume().catch((err: Error) => o.notes?.push(`resume after the heal: ${err.message.split('\n')[0]}`));
    }
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
  const resumed = r.history.resumesAfterHeal?.length ? ` resumed-after-heal=${r.history.resumesAfterHeal.length}` : '';
  return `#${s.index} seed=${s.seed} mode=${s.mode ?? 'process'} ${describeSpec(s.spec)} faults=[${s.faults.map(describeFault).join(', ')}] outcome=${r.outcome}${resumed} ${(r.durationMs / 1000).toFixed(0)}s${skipped} verdict=${verdict}`;
}

/**
 * Injects each fault of the schedule at its time (ms after `createdAt`) and lets it heal; a fault that throws is
 * noted, never the run's end. Resolves with the time the last one healed.
 */
export async function runFaults(s: Schedule, createdAt: number, inject: (f: Fault) => Promise<void>, log: (m: string) => void, notes: string[], when?: (f: Fault) => Promise<number | undefined>): Promise<number> {
  const at = (): string => `[campaign +${((Date.now() - createdAt) / 1000).toFixed(1)}s]`;
  await Promise.all(s.faults.map(async (f) => {
    // `when` times a fault from the hold of phase two (Fault.holdMs): undefined when the hold never began.
    const t = when ? await when(f) : createdAt + f.atMs;
    if (t === undefined) return void notes.push(`${describeFault(f)}: not injected (the hold of phase two never began)`);
    await sleep(Math.max(0, t - Date.now()));
    log(`${at()} inject ${describeFault(f)}`);
    try {
      await inject(f);
      log(`${at()} healed ${describeFault(f)}`);
    } catch (err) {
      notes.push(`${f.kind}: ${(err as Error).message.split('\n')[0]}`);
    }
  }));
  return Date.now();
}

/**
 * The servers the faults take down, one such fault per server at a time: the drawn server, or the next one that is
 * neither in a replacement (`busy`) nor held by another fault (the harness never races the driver on one server).
 */
export class ServerClaims {
  private readonly held = new Set<number>();
  private readonly busy: (i: number) => boolean;
  private readonly notes: string[];

  constructor(busy: (i: number) => boolean, notes: string[]) {
    this.busy = busy;
    this.notes = notes;
  }

  /** Runs `use` on the claimed server, then frees it; notes the fault as not injected when every server is taken. */
  async with(f: Fault, use: (i: number) => Promise<void>): Promise<void> {
    const want = f.server ?? 0;
    const i = [0, 1, 2].map((k) => (want + k) % 3).find((x) => !this.busy(x) && !this.held.has(x));
    if (i === undefined) return void this.notes.push(`${f.kind}: every server busy`);
    if (i !== want) this.notes.push(`${f.kind}: cp-${want + 1} busy, hit cp-${i + 1}`);
    this.held.add(i);
    try {
      await use(i);
    } finally {
      this.held.delete(i);
    }
  }
}

/** What the harness recorded of one upgrade, as the checker reads it. */
export interface Recorded {
  schedule: Schedule;
  t0: number;
  createdAt: number;
  endedAt: number;
  healedAt: number;
  batchMax: number;
  ops: DriverOp[];
  servers: ServerRecord[];
  statuses: StatusSnapshot[];
  breaches: BreachWindow[];
  faultDown: (Span & { server: string })[];
  blind: Span[];
  takeoverMs: number[];
  /** spec.strategy.batchTimeout of the upgrade, ms. */
  batchTimeoutMs: number;
  /** The client's answers for the target-only resource. */
  samples: readonly Sample[];
  notes: string[];
  harnessError: string | undefined;
  /** Resumes issued after the heal (Schedule.resumeAfterHeal). */
  resumes?: number[];
  /** The operator's analysis checks (StatusRecorder.checks): kept in the history file, not judged. */
  checks?: CheckRecord[];
  /** The start conditions: calls first seen in status, the gate as the harness set it, the window given (rules-gates.ts). */
  callsSeen?: CallSeen[];
  gate?: GateRecord;
  window?: WindowSpec;
  risks?: RiskRecord;
  /** What the late faults recorded (late-faults.ts): the hold, approvals, component versions, rollouts. */
  late?: Pick<History, 'hold' | 'approvals' | 'components' | 'rollouts'>;
}

/** The history of one upgrade (v1.35.4 -> v1.36.3), judged by the checker. */
export function judge(r: Recorded): UpgradeResult {
  // A check from Prometheus covers max(window, interval) and checks never overlap (docs/api.md, analysis.prometheus.window):
  // failureLimit counts windows there, so the breach bound is in windows (seed 52 #9 was judged in 2 s intervals).
  const checkEveryMs = Math.max(r.schedule.spec.intervalSeconds, r.schedule.spec.prometheus ? PROMETHEUS_WINDOW_SECONDS : 0) * 1000;
  const history: History = {
    spec: { fromVersion: OLD_VERSION, targetVersion: NEW_VERSION, batchSize: r.batchMax, failureLimit: r.schedule.spec.failureLimit, intervalMs: checkEveryMs, targetOnlyResources: [NEW_ONLY], batchTimeoutMs: r.batchTimeoutMs, driverReportsFailure: r.schedule.mode === 'nodes' },
    ops: r.ops,
    servers: r.servers,
    statuses: r.statuses,
    breaches: r.breaches,
    faultDown: r.faultDown,
    operatorBlind: r.blind,
    healedAt: r.healedAt || r.endedAt,
    endedAt: r.endedAt,
    ...(r.resumes?.length ? { resumesAfterHeal: r.resumes } : {}),
    ...(r.checks?.length ? { checks: r.checks } : {}),
    ...(r.callsSeen?.length ? { callsSeen: r.callsSeen } : {}),
    ...(r.gate ? { gate: r.gate } : {}),
    ...(r.window ? { window: r.window } : {}),
    ...(r.risks ? { risks: r.risks } : {}),
    ...r.late,
    // A server a fault took down may take the only copy of the target's API with it: those answers are the fault's.
    client: r.samples
      .filter((x) => !r.faultDown.some((f) => x.at >= f.from - 1000 && x.at <= f.to + 5000))
      .map((x) => ({ t: x.at, resource: NEW_ONLY, code: x.status === 'error' ? 0 : x.status })),
  };
  return {
    schedule: r.schedule, outcome: outcome(history), durationMs: r.endedAt - r.t0, createdAt: r.createdAt,
    verdict: checkHistory(history), history, skipped: r.notes, takeoverMs: r.takeoverMs,
    ...(r.harnessError ? { harnessError: r.harnessError } : {}),
  };
}
