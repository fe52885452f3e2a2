// The simulated shell: it runs the planner exactly as the reconciler does, can crash between any two of
// its writes, and checks the invariants against the world's truth after every step.
//
// Shell protocol, one reconcile:
//   0. reports = the driver's report on each call Accepted in the persisted status (a read that throws: left out)
//   1. p = plan(upgrade + reports, spec, persisted status, fresh observation, now)
//   2. persist p.status                                   (crash point 0: before this, the plan is lost)
//   3. emit p's events
//   4. for each callDriver action, in order:               (crash point 1+2i: before delivery i)
//        outcome = driver(request)                         (crash point 2+2i: after delivery i, before recording)
//        persist recordCallOutcome(status, key, outcome, now)
import type { ApiServerUpgradeSpec, ApiServerUpgradeStatus, DriverCall } from '../../../src/api/types.generated.ts';
import { plan, ABORT_ANNOTATION, RESUME_ANNOTATION, APPROVE_ANNOTATION, type Plan, type UpgradeInput, type Observation, type DriverRequest } from '../../../src/plan/index.ts';
import { recordCallOutcome } from '../../../src/plan/call-outcome.ts';
import { parseDuration } from '../../../src/api/duration.ts';
import type { CallReport } from '../../../src/plan/context.ts';
import { World, GATE, minor, release, short, stamp, storageKey, windowOpenAt } from './world.ts';
import { ProofSim } from '../flag-proof-sim.ts';

export const INVARIANTS = ['I1', 'I2', 'I3', 'I4', 'I5', 'I6', 'I7', 'I8', 'I9', 'I10', 'I11', 'I12', 'I13', 'I14', 'I15', 'I16', 'I17'] as const;
export type Inv = (typeof INVARIANTS)[number];

export const INVARIANT_TEXT: Record<Inv, string> = {
  I1: 'no server ever has two accepted ops in flight at the driver; a stopping step emits no call (RollingBack: only Rollback calls); nothing new is sent to a server with a call Requested/Accepted',
  I2: 'Succeeded => every current member runs the target and the driver holds no op; RolledBack => every member runs the from-version and the driver holds no op',
  I3: 'an Upgrade call for batch k is decided only while every member of batches < k is up at the target; one that starts batch k > 1 only when the last check did not breach and, after a resume during batch k-1, on a healthy check newer than that resume',
  I4: 'no Rollback call while rollback safety is unknown (from- or target-version storage never persisted-observed, the target\'s once a server may have run it) or unsafe (truth: something a server wrote is unreadable)',
  I5: 'status stays writable: < 512 KiB as JSON, batch.history <= 256, driverCalls <= 1024, peers <= 256',
  I6: 'never silent: Paused has a reason, an active phase requeues; once faults stop the run reaches a terminal phase or a Paused with a reason, and resuming leads on to a terminal phase',
  I7: 'hygiene: proxy.gate Unmanaged never touches the gate; RevertProxy only on servers in plan.gateTurnedOn whose gate a call of this upgrade did turn on; one batch-history record and one BatchSucceeded per batch; a Done, Rejected, Failed, TimedOut or Abandoned call keeps its result, Abandoned only from Requested, Done only once the driver carried out that very call and its server restarted at the goal',
  I8: 'an Accepted call the driver reports failed ends in that step; it ends Failed only from Accepted, on the driver\'s failed report for that very key, unless it is seen landed (observation wins: Done), and is never in flight at the driver; its server gets nothing else sent until a resume or retry (a rollback\'s Rollback call after a failed non-Rollback call excepted)',
  I9: 'a pause that fails closed on an unknown re-checks it: never Paused RollbackSafetyUnknown (spec.paused false) once both versions\' storage hashes were observed by a persisted plan (the verdict is known)',
  I10: 'no downgrade: an EnableProxy or RevertProxy call targets the release its server runs, an Upgrade never a release older than it; only a Rollback goes back',
  I12: 'no first call (the gate pass\'s first EnableProxy, or batch 1) and no new batch starts outside a maintenance window or while a gate does not hold (fails, or cannot be evaluated)',
  I13: 'a rollback is never delayed by a gate or a window: every step plans the same Rollback calls (and RollingBack) as it would without spec.gates and spec.window',
  I14: 'a plan\'s stage never moves back: once status.stage is API (phase two of TwoPhase began) no step sets it to Binaries, and no Upgrade with emulation is sent after it',
  I15: 'a held phase two (strategy.phaseTwo.start Approval) starts only on an approve value set while the persisted hold was on, or under onDeadline Proceed once its deadline (heldSince + the frozen deadline) passed; a deadline Rollback only once it passed, and ends RolledBack on the old binaries; under onDeadline Rollback, Succeeded only after an approval',
  I16: 'the static Pod driver: no Upgrade call goes to a node (first delivery of its key) whose command line as it is now, edited for that call, has no Accepted flag proof',
  I17: 'the control plane\'s skew: no Rollback call while a kube-controller-manager is newer than the minor the rollback returns to (the from-version\'s) or of unknown version; preflight never passes (freezing the plan) while one is newer than the target or of unknown version',
  I11: 'once faults stop, a pause names a real, still-present cause: MembershipChanged a server that joined, is gone or down, runs the target without emulation in phase one or runs neither version; RollbackUnsafe only when storage truly is unsafe; RollbackSafetyUnknown only while a server is down, an Upgrade call is in flight or some storage a server wrote was never observed; ComponentSkew only while a kube-controller-manager is newer than the from-version or of unknown version',
};

const STOPPING = new Set(['Paused', 'Succeeded', 'RolledBack', 'Failed']);
const TERMINAL = new Set(['Succeeded', 'RolledBack', 'Failed']);
/** Results after which a call can no longer change its server (anything else, including unknown words, counts as in flight). */
const FINISHED = new Set(['Done', 'Rejected', 'Failed', 'TimedOut', 'Abandoned']);

export class Violation extends Error {
  readonly inv: Inv;
  constructor(inv: Inv, message: string) {
    super(`${inv}: ${message}`);
    this.inv = inv;
  }
}

export interface RunSetup {
  servers: number;
  gateOn: boolean;
  fromVersion: string;
  targetVersion: string;
  suffix: string;
  storageSafe: boolean;
  downDelayMs: number;
  upDelayMs: number;
  staleOnStop: boolean;
  spec: ApiServerUpgradeSpec;
  batchTimeoutMs: number;
  /** spec.strategy.phases TwoPhase: the world emulates, and the observer reads own discovery and orphans. */
  twoPhase: boolean;
  /** spec.gates has the one query gate `health` (the world's `health` is its truth). */
  gated?: boolean;
  /** spec.window: open this many minutes every 4 minutes 10:00-11:00 UTC (schedule.ts windowOpenAt); 0: none. */
  windowOpenMin?: number;
  /** The static Pod driver: the shell reads the flag proof (test/plan/flag-proof-sim.ts) and creates its Jobs. */
  staticPod?: boolean;
  /** How long a proof Job takes to its verdict. */
  proofDelayMs?: number;
}

export const START = Date.parse('2026-11-29T10:00:00Z');

export class ModelRun {
  readonly world: World;
  readonly setup: RunSetup;
  spec: ApiServerUpgradeSpec;
  upgrade: UpgradeInput = { name: 'to-target', uid: 'uid-model', generation: 1, annotations: {} };
  /** What the API server holds: the last persisted status. */
  persisted: ApiServerUpgradeStatus | undefined;
  last: Plan | undefined;
  readonly trace: string[] = [];
  /** The static Pod driver's flag proofs: Jobs the plan asked for, verdicts after setup.proofDelayMs. */
  readonly proofs = new ProofSim();
  /** Keys delivered at least once (I16 judges a call's first delivery). */
  private readonly deliveredKeys = new Set<string>();
  /** Upgrade calls I16 judged (it is not vacuous). */
  provenCalls = 0;
  /** Pauses FlagProofRefused (a node proven again before its call, refused). */
  proofPauses = 0;
  readonly enabled: ReadonlySet<Inv>;
  /** Violations of invariants not enabled in this run: noted, not thrown. */
  readonly noted: Violation[] = [];
  private fromSeen = false;
  private targetSeen = false;
  /**
   * The target storage the planner's verdict needs was observed: in TwoPhase's phase one, that of a server running
   * the target emulating the from-minor (a joiner on the new binary without emulation adds its own, it does not
   * stand in for it: I9 judges the verdict the planner can know, I4 the conservative truth).
   */
  private plannedTargetSeen = false;
  /** The storage a persisted plan observed, as storageKey (release and emulation). */
  private readonly seenStorage = new Set<string>();
  /** A persisted plan observed a server running the target (whatever its emulation). */
  private targetRunSeen = false;
  private resumes = 0;
  private aborts = 0;
  /** Reconciles that crashed (a leader change) while the persisted hold was on. */
  crashesInHold = 0;
  /** Every approve value a human set, and whether the persisted status then showed the hold on. */
  readonly approvals = new Map<string, { at: number; whileHeld: boolean }>();
  private batchSucceededEvents = 0;
  /** When the last resume of an automatic pause took effect (the persisted phase left Paused). */
  private lastResumeAt: number | undefined;
  /** The newest Healthy check a persisted plan saw. */
  private lastHealthyCheck = -Infinity;
  /** When each batch's first Upgrade call was decided. */
  private batchStart = new Map<number, number>();
  reconciles = 0;
  /** The longest calm segment (reconciles from calm or a resume to rest), for calibrating the limits. */
  longestSegment = 0;
  /** The reconcile under way, for the trace of a violation found in it. */
  private current: string | undefined;
  /** Servers whose latest call ended Failed and no resume or retry came since: the Failed call's action, by server. */
  private failedServers = new Map<string, string>();
  /** How many calls ended Failed (persisted), to tell the generated runs do reach the case. */
  failedCalls = 0;
  /** Every status.waiting.reason a persisted step had, in order (repeats kept once in a row). */
  readonly waitReasons: string[] = [];
  /** Rollback calls planned while the gate did not hold or no window was open (I13 is not vacuous). */
  rollbackWhileHeld = 0;
  /** Persisted steps paused ComponentSkew, and preflights refused for a component (I17 is not vacuous). */
  skewHeld = 0;
  skewRefused = 0;

  constructor(setup: RunSetup, enabled: ReadonlySet<Inv>) {
    this.setup = setup;
    this.enabled = enabled;
    this.spec = structuredClone(setup.spec);
    this.proofs.delayMs = setup.proofDelayMs ?? 0;
    this.world = new World(
      {
        fromVersion: setup.fromVersion,
        targetVersion: setup.targetVersion,
        suffix: setup.suffix,
        storageSafe: setup.storageSafe,
        downDelayMs: setup.downDelayMs,
        upDelayMs: setup.upDelayMs,
        lateMs: setup.batchTimeoutMs + 30_000,
        staleOnStop: setup.staleOnStop,
        analysisIntervalMs: 10_000,
        twoPhase: setup.twoPhase,
      },
      setup.servers,
      setup.gateOn,
      START,
    );
  }

  get phase(): string {
    return this.persisted?.phase ?? 'Pending';
  }

  note(line: string): void {
    this.flushWorld();
    this.trace.push(`${stamp(this.world.now - START)} ${line}`);
  }

  private flushWorld(): void {
    if (this.world.log.length) this.trace.push(...this.world.log.splice(0));
  }

  fail(inv: Inv, message: string): void {
    const v = new Violation(inv, message);
    if (this.enabled.has(inv)) {
      if (this.current) this.note(`${this.current} <<< ${inv} violated here`);
      throw v;
    }
    if (this.noted.length < 20) this.noted.push(v);
  }

  editSpec(change: Partial<ApiServerUpgradeSpec>): void {
    this.spec = { ...this.spec, ...structuredClone(change) };
    this.upgrade = { ...this.upgrade, generation: this.upgrade.generation + 1 };
  }

  /** A human sets the approve annotation to a new value (kubectl apiserver-upgrade approve, or ahead of the hold). */
  approve(): string {
    const value = `approve-${this.approvals.size + 1}`;
    const h = this.persisted?.phaseTwoHold;
    this.approvals.set(value, { at: this.world.now, whileHeld: h?.heldSince !== undefined && h.endedBy === undefined });
    this.upgrade = { ...this.upgrade, annotations: { ...this.upgrade.annotations, [APPROVE_ANNOTATION]: value } };
    return value;
  }

  /** A human sets the abort annotation to a new value. */
  abort(): string {
    const value = `abort-${++this.aborts}`;
    this.upgrade = { ...this.upgrade, annotations: { ...this.upgrade.annotations, [ABORT_ANNOTATION]: value } };
    return value;
  }

  /** A human sets the resume annotation to a new value. */
  resume(): string {
    // The human reads the pause first. A server a MembershipChanged pause names that is indeed gone
    // (stopped, no lease) they decommission, so resuming tells the planner to drop it; the last server
    // standing they restart instead (a fleet is never empty).
    const pause = this.persisted?.phase === 'Paused' ? this.persisted.pause : undefined;
    if (pause?.reason === 'MembershipChanged' && !this.setup.staleOnStop) {
      const named = (h: string) => pause.servers?.includes(h) ?? new RegExp(`(^|[^\\w-])${h}(?![\\w-])`).test(pause.message ?? '');
      for (const s of [...this.world.servers.values()]) {
        if (s.running || !named(s.hostname)) continue;
        if ([...this.world.servers.values()].some((x) => x !== s && x.running)) {
          this.world.removeServer(s.hostname);
          this.note(`~ the human decommissions ${s.hostname} (named by the pause, stopped)`);
        } else {
          this.world.repair(s.hostname);
          this.note(`~ the human restarts ${s.hostname} (named by the pause, stopped, the last server)`);
        }
      }
    }
    // TwoPhase, phase one: a server the pause names for running the target without emulation, they remove.
    if (pause?.reason === 'MembershipChanged' && this.setup.twoPhase && this.persisted?.stage !== 'API') {
      for (const s of [...this.world.servers.values()]) {
        if (!s.running || s.version !== release(this.setup.targetVersion) || s.emulation !== undefined || !(pause.servers ?? []).includes(s.hostname)) continue;
        if (this.world.servers.size > 1) {
          this.world.removeServer(s.hostname);
          this.note(`~ the human removes ${s.hostname} (named by the pause: the target without emulation in phase one)`);
        }
      }
    }
    const value = `ack-${++this.resumes}`;
    this.upgrade = { ...this.upgrade, annotations: { ...this.upgrade.annotations, [RESUME_ANNOTATION]: value } };
    return value;
  }

  /** One reconcile, following the shell protocol; `crash` is a crash point (-1: none). */
  reconcile(crash = -1): Plan {
    this.flushWorld();
    this.reconciles++;
    const hold = this.persisted?.phaseTwoHold;
    if (crash >= 0 && hold?.heldSince !== undefined && hold.endedBy === undefined) this.crashesInHold++;
    const before = this.persisted;
    const now = new Date(this.world.now);
    const seen = this.world.observe();
    const flagProof = this.setup.staticPod ? this.proofs.observe(this.spec, before, seen.peers, now) : undefined;
    const obs = flagProof === undefined ? seen : { ...seen, flagProof };
    // As the reconciler does: the driver's reports on the calls Accepted now, read afresh (a read that throws is
    // left out; an `unknown` one is passed on here, where the reconciler drops it, so the planner is held to
    // ignoring it too).
    const driverReports: Record<string, CallReport> = {};
    const reportNotes: string[] = [];
    for (const c of before?.driverCalls ?? []) {
      if (c.result !== 'Accepted') continue;
      try {
        const r = this.world.report(c.key);
        driverReports[c.key] = r;
        if (r.kind !== 'running') reportNotes.push(`${c.action} ${c.server} ${short(c.key)} ${r.kind}`);
      } catch {
        reportNotes.push(`${c.action} ${c.server} ${short(c.key)} read failed`);
      }
    }
    const p = plan({ ...this.upgrade, driverReports }, this.spec, before, obs, now);
    this.last = p;
    this.checkNotDelayed(before, p, obs, now, driverReports);
    const calls = p.actions.flatMap((a) => (a.kind === 'callDriver' ? [a.request] : []));
    const head = `${before?.phase ?? 'Pending'}→${describePhase(p.status)}`;
    this.current = `${head}${reportNotes.length ? ` | reports ${reportNotes.join(', ')}` : ''}${calls.length ? ` | emits ${calls.map(describeCall).join(', ')}` : ''}`;
    this.checkStep(before, p, calls);
    const blocked = this.checkFailed(before, p, calls, driverReports, obs);
    if (crash === 0) {
      this.current = undefined;
      this.note(`${head} | crash before persisting: the plan is lost${calls.length ? ` (calls ${calls.map(describeCall).join(', ')})` : ''}`);
      return p;
    }
    this.persisted = p.status;
    this.failedServers = blocked;
    // The shell creates the proof Jobs after the status, before the calls.
    this.proofs.apply(p.actions, now);
    if (p.status.pause?.reason === 'FlagProofRefused' && before?.pause?.reason !== 'FlagProofRefused') this.proofPauses++;
    const reason = p.status.waiting?.reason;
    if (reason !== undefined && this.waitReasons.at(-1) !== reason) this.waitReasons.push(reason);
    const held = (this.setup.gated === true && this.world.health !== 'hold') || (this.spec.window !== undefined && !windowOpenAt(this.world.now, this.setup.windowOpenMin ?? 0));
    if (held && calls.some((c) => c.action === 'Rollback')) this.rollbackWhileHeld++;
    this.failedCalls += (p.status.driverCalls ?? []).filter((c) => c.result === 'Failed' && before?.driverCalls?.find((x) => x.key === c.key)?.result !== 'Failed').length;
    if (obs.storage?.some((s) => release(s.version) === release(this.setup.fromVersion))) this.fromSeen = true;
    if (obs.storage?.some((s) => release(s.version) === release(this.setup.targetVersion))) this.targetSeen = true;
    if (obs.storage?.some((s) => release(s.version) === release(this.setup.targetVersion) && (!this.setup.twoPhase || s.emulation === minor(this.setup.fromVersion)))) this.plannedTargetSeen = true;
    for (const st of obs.storage ?? []) this.seenStorage.add(storageKey(st.version, st.emulation));
    if (obs.peers.some((x) => x.version !== undefined && release(x.version) === release(this.setup.targetVersion))) this.targetRunSeen = true;
    this.checkPersisted(before, obs, p);
    const parts: string[] = [];
    let crashed = '';
    for (const [i, req] of calls.entries()) {
      if (crash === 1 + 2 * i) {
        crashed = ` | crash before delivering ${describeCall(req)}`;
        break;
      }
      this.checkProven(req, now);
      const supersededBefore = this.world.supersessions.length;
      const outcome = this.world.deliver(req);
      const fault = this.world.deliveries.at(-1)?.fault;
      parts.push(`${describeCall(req)}→${outcome.kind}${fault ? `(${fault})` : ''}`);
      this.checkDelivery(req, supersededBefore);
      if (crash === 2 + 2 * i) {
        crashed = ` | crash after delivering ${describeCall(req)}, before recording its outcome`;
        break;
      }
      this.persisted = recordCallOutcome(this.persisted!, req.idempotencyKey, outcome, now);
    }
    // A recorded outcome adds at most one short message to the plan's status: one size check per reconcile.
    if (calls.length && this.persisted) this.checkWritable(this.persisted);
    const events = p.actions.flatMap((a) => (a.kind === 'event' && a.reason !== 'Progressing' ? [a.reason] : []));
    this.current = undefined;
    this.note(`${head}${reportNotes.length ? ` | reports ${reportNotes.join(', ')}` : ''}${parts.length ? ` | ${parts.join(', ')}` : ''}${events.length ? ` | events ${events.join(',')}` : ''}${crashed}`);
    return p;
  }

  // ---- invariants -------------------------------------------------------------------------------------------

  /** I16: an Upgrade call's first delivery to a static-Pod node needs an Accepted proof of its command line now. */
  private checkProven(req: DriverRequest, now: Date): void {
    const first = !this.deliveredKeys.has(req.idempotencyKey);
    this.deliveredKeys.add(req.idempotencyKey);
    if (!this.setup.staticPod || req.action !== 'Upgrade' || !first) return;
    this.provenCalls++;
    const h = req.server.hostname;
    const key = this.proofs.keyOf(h, req.featureGates[GATE], req.emulatedVersion);
    const job = this.proofs.history.get(key);
    if (job === undefined || job.mode !== 'accept' || job.readyAt > now.getTime()) {
      this.fail('I16', `Upgrade ${h} delivered while its command line now (${key}) has ${job === undefined ? 'no proof' : job.readyAt > now.getTime() ? 'no verdict yet' : `the verdict ${job.mode}`}`);
    }
  }

  /** Checks on the plan itself, persisted or not. */
  private checkStep(before: ApiServerUpgradeStatus | undefined, p: Plan, calls: DriverRequest[]): void {
    const phase = p.status.phase ?? 'Pending';
    if (STOPPING.has(phase) && calls.length > 0) this.fail('I1', `a step ending ${phase} emits ${calls.map(describeCall).join(', ')}`);
    if (phase === 'RollingBack') {
      const other = calls.filter((c) => c.action !== 'Rollback');
      if (other.length) this.fail('I1', `a step in RollingBack emits ${other.map(describeCall).join(', ')}`);
    }
    const servers = new Set<string>();
    for (const c of calls) {
      const h = c.server.hostname;
      if (servers.has(h)) this.fail('I1', `one step emits two calls for ${h}`);
      servers.add(h);
      const recorded = p.status.driverCalls?.find((d) => d.key === c.idempotencyKey);
      if (!recorded) this.fail('I1', `${describeCall(c)} is emitted but not recorded in status.driverCalls`);
      const other = (p.status.driverCalls ?? []).filter((d) => d.server === h && d.key !== c.idempotencyKey && !FINISHED.has(d.result ?? ''));
      if (other.length) this.fail('I1', `${describeCall(c)} is sent while ${h} has ${other.map((d) => `${d.action} ${short(d.key)} ${d.result}`).join(', ')}`);
    }
    if (phase === 'Paused') {
      const cond = p.status.conditions?.find((c) => c.type === 'Paused');
      if (!p.status.pause?.reason || cond?.status !== 'True') this.fail('I6', `Paused without a reason (pause ${JSON.stringify(p.status.pause)}, condition Paused ${cond?.status})`);
    }
    // I14: phase two, once begun, is where the plan stays (a rollback re-applies emulation with Rollback calls).
    if (before?.stage === 'API' && p.status.stage !== 'API') this.fail('I14', `status.stage moved back from API to ${p.status.stage ?? 'none'}`);
    if (before?.stage === 'API') for (const c of calls) if (c.action === 'Upgrade' && c.emulatedVersion !== undefined) this.fail('I14', `${describeCall(c)} re-applies emulation with an Upgrade after phase two began`);
    if (!STOPPING.has(phase) && phase !== 'Pending' && p.requeueAfterMs === undefined) this.fail('I6', `active phase ${phase} asks for no requeue: nothing would wake it`);
    // I12: a first call or a new batch only inside a window and with the gate holding (the truth at this instant).
    const starts = calls.filter((c) => {
      const had = (action: string, batch: number) => (before?.driverCalls ?? []).some((d) => d.action === action && d.batch === batch);
      return (c.action === 'Upgrade' && !had('Upgrade', c.batch)) || (c.action === 'EnableProxy' && c.batch === 0 && !had('EnableProxy', 0));
    });
    for (const c of starts) {
      if (this.setup.gated && this.world.health !== 'hold') this.fail('I12', `${describeCall(c)} starts ${c.action === 'Upgrade' ? `batch ${c.batch}` : 'the gate pass'} while the gate health ${this.world.health === 'fail' ? 'fails (a critical alert fires)' : 'cannot be evaluated'}`);
      if (this.spec.window && (this.setup.windowOpenMin ?? 0) > 0 && !windowOpenAt(this.world.now, this.setup.windowOpenMin!)) this.fail('I12', `${describeCall(c)} starts ${c.action === 'Upgrade' ? `batch ${c.batch}` : 'the gate pass'} at ${new Date(this.world.now).toISOString()}, outside every maintenance window`);
    }
    // I17: no Rollback call while the truth has a kube-controller-manager newer than the from-version's minor, or unknown.
    const skewed = this.componentsPast(this.setup.fromVersion);
    for (const c of calls.filter((x) => x.action === 'Rollback')) {
      if (skewed.length) this.fail('I17', `${describeCall(c)} while kube-controller-manager ${skewed.join(', ')}`);
    }
    // I10: no downgrade, against the truth of what each server runs.
    for (const c of calls) {
      const srv = this.world.servers.get(c.server.hostname);
      if (!srv || c.action === 'Rollback') continue;
      const goal = release(c.targetVersion);
      if ((c.action === 'EnableProxy' || c.action === 'RevertProxy') && goal !== srv.version) this.fail('I10', `${describeCall(c)} targets ${goal}, but ${srv.hostname} runs ${srv.version}: a gate call would change its version`);
      if (c.action === 'Upgrade' && olderRelease(goal, srv.version)) this.fail('I10', `${describeCall(c)} targets ${goal}, older than the ${srv.version} ${srv.hostname} runs`);
    }
    // I7: call hygiene.
    for (const c of calls) {
      if (this.spec.proxy?.gate === 'Unmanaged') {
        if (Object.keys(c.featureGates).length > 0) this.fail('I7', `proxy.gate Unmanaged, yet ${describeCall(c)} carries featureGates ${JSON.stringify(c.featureGates)}`);
        if (c.action === 'EnableProxy' || c.action === 'RevertProxy') this.fail('I7', `proxy.gate Unmanaged, yet ${describeCall(c)}`);
      }
      if (c.action === 'RevertProxy') {
        const turnedOn = before?.plan?.gateTurnedOn ?? p.status.plan?.gateTurnedOn;
        if (!turnedOn?.includes(c.server.hostname)) this.fail('I7', `${describeCall(c)} on a server not in status.plan.gateTurnedOn (${JSON.stringify(turnedOn)})`);
        else if (!this.world.turnedOn.has(c.server.hostname)) this.fail('I7', `${describeCall(c)}: no call of this upgrade turned ${c.server.hostname}'s gate on (gateTurnedOn ${JSON.stringify(turnedOn)})`);
      }
    }
  }

  /** The kube-controller-managers newer than `version`'s minor, or of unknown version, as `<node> runs <v>`. */
  componentsPast(version: string): string[] {
    const n = (v: string): number[] => v.replace(/^v/, '').split('.').slice(0, 2).map(Number);
    const [ma, mi] = n(version);
    return [...this.world.components].filter(([, v]) => {
      if (v === undefined) return true;
      const [a, b] = n(v);
      return a! > ma! || (a === ma && b! > mi!);
    }).map(([node, v]) => `${node} runs ${v ?? 'an unknown version'}`);
  }

  /**
   * I13: the same step planned without spec.gates and spec.window: where that one rolls back (a Rollback call, or
   * RollingBack), this one does the same, at once.
   */
  private checkNotDelayed(before: ApiServerUpgradeStatus | undefined, p: Plan, obs: Observation, now: Date, driverReports: Record<string, CallReport>): void {
    if (!this.spec.gates && !this.spec.window) return;
    const { gates: _g, window: _w, ...free } = this.spec;
    const q = plan({ ...this.upgrade, driverReports }, free, before, obs, now);
    const rollbacks = (x: Plan) => x.actions.flatMap((a) => (a.kind === 'callDriver' && a.request.action === 'Rollback' ? [a.request.server.hostname] : [])).sort();
    const want = rollbacks(q);
    if (want.length === 0 && q.status.phase !== 'RollingBack') return;
    const got = rollbacks(p);
    if (JSON.stringify(got) !== JSON.stringify(want) || p.status.phase !== q.status.phase) {
      this.fail('I13', `without gates and windows this step is ${q.status.phase} with Rollback ${want.join(', ') || 'none'}; with them ${p.status.phase} with Rollback ${got.join(', ') || 'none'} (gate ${this.world.health}${this.spec.window ? `, window ${windowOpenAt(this.world.now, this.setup.windowOpenMin ?? 0) ? 'open' : 'closed'}` : ''})`);
    }
  }

  /**
   * I8, on the plan itself (persisted or not): Failed only from Accepted on a failed report for that key, never
   * for a call that landed, never while the driver still holds the op; then nothing for its server until a
   * resume or a retry. The map of such servers follows the persisted statuses only.
   */
  private checkFailed(before: ApiServerUpgradeStatus | undefined, p: Plan, calls: DriverRequest[], reports: Record<string, CallReport>, obs: Observation): Map<string, string> {
    const phase = p.status.phase ?? 'Pending';
    // A resume (out of Paused) or a retry (out of Failed) acknowledges the failures before it, those of this very
    // step included (the planner records them before it resumes: a failure ended at or before a resume is retried).
    // An abort out of Paused is no resume: it leaves Paused without one (resumedAt stays).
    const resumed = (before?.phase === 'Paused' && phase !== 'Paused' && p.status.resumedAt !== before.resumedAt) || (before?.phase === 'Failed' && phase !== 'Failed');
    const blocked = resumed ? new Map<string, string>() : new Map(this.failedServers);
    for (const c of p.status.driverCalls ?? []) {
      const was = before?.driverCalls?.find((x) => x.key === c.key);
      if (c.result !== 'Failed' || was?.result === 'Failed') continue;
      const who = `${c.action} ${c.server} ${short(c.key)}`;
      if (was?.result !== 'Accepted') this.fail('I8', `${who} Failed from ${was?.result ?? 'nothing'}: only an Accepted call the driver reports on can fail`);
      if (reports[c.key]?.kind !== 'failed') this.fail('I8', `${who} Failed, but the driver's report for that key was ${reports[c.key]?.kind ?? 'not read'}`);
      const op = this.world.ops.find((o) => o.key === c.key);
      // Observation wins: a call whose landing this very observation shows (its server back, restarted, at the
      // call's version and gate) is Done, whatever the driver says. One the planner cannot see land yet may fail.
      const seen = obs.peers.find((x) => x.hostname === c.server);
      const gateWanted = c.action === 'EnableProxy' ? 'on' : c.action === 'RevertProxy' ? 'off' : undefined;
      const visiblyLanded = op?.landed === true && seen !== undefined && seen.ready && !seen.stale && release(seen.version ?? '') === release(c.target ?? '') && seen.holderIdentity !== c.holderBefore && (gateWanted === undefined || seen.proxyGate === gateWanted);
      if (visiblyLanded) this.fail('I8', `${who} Failed, yet this observation shows it landed (observation wins: it is Done)`);
      if (op && (op.stage === 'scheduled' || op.stage === 'down')) this.fail('I8', `${who} Failed while the driver still holds it (${op.fate}, ${op.stage})`);
      if (!resumed) blocked.set(c.server, c.action);
    }
    // At once: an Accepted call the driver reports failed ends in this step, Failed or (landed) Done.
    for (const c of before?.driverCalls ?? []) {
      if (c.result !== 'Accepted' || reports[c.key]?.kind !== 'failed') continue;
      const now = p.status.driverCalls?.find((x) => x.key === c.key)?.result;
      if (now !== 'Failed' && now !== 'Done') this.fail('I8', `${c.action} ${c.server} ${short(c.key)}: the driver reports it failed, yet it is ${now ?? 'gone from status'}`);
    }
    for (const c of p.status.driverCalls ?? []) {
      if (c.result !== 'Failed') continue;
      const op = this.world.ops.find((o) => o.key === c.key);
      if (op && (op.stage === 'scheduled' || op.stage === 'down')) this.fail('I8', `${c.action} ${c.server} ${short(c.key)} is Failed, yet the driver still holds it (${op.fate}, ${op.stage}): it is in flight`);
    }
    for (const c of calls) {
      const failedAction = blocked.get(c.server.hostname);
      if (failedAction === undefined) continue;
      if (c.action === 'Rollback' && failedAction !== 'Rollback' && phase === 'RollingBack') continue;
      this.fail('I8', `${describeCall(c)} sent to ${c.server.hostname}, whose ${failedAction} call ended Failed, with no resume or retry since`);
    }
    return blocked;
  }

  /** I15: a held phase two ends only on its approval or its deadline, and a deadline Rollback ends on the old binaries. */
  private checkHold(before: ApiServerUpgradeStatus | undefined, s: ApiServerUpgradeStatus, fresh: DriverCall[]): void {
    const policy = s.plan?.phaseTwo;
    if (!this.setup.twoPhase || policy?.start !== 'Approval') return;
    const apiBatches = new Set((s.plan?.batches ?? []).filter((b) => b.stage === 'API').map((b) => b.index));
    const hadApi = (before?.driverCalls ?? []).some((c) => c.action === 'Upgrade' && apiBatches.has(c.batch ?? 0));
    const h = s.phaseTwoHold;
    const now = this.world.now;
    const deadlineMs = policy.deadline === undefined ? undefined : parseDuration(policy.deadline);
    const deadlinePassed = h?.deadline !== undefined && h.heldSince !== undefined && deadlineMs !== undefined && Date.parse(h.deadline) === Date.parse(h.heldSince) + deadlineMs && now >= Date.parse(h.deadline);
    const approvedInHold = h?.endedBy === 'Approved' && h.approval !== undefined && this.approvals.get(h.approval)?.whileHeld === true;
    for (const c of fresh.filter((x) => x.action === 'Upgrade' && apiBatches.has(x.batch ?? 0))) {
      if (hadApi) break;
      if (h?.heldSince === undefined) this.fail('I15', `phase two started (Upgrade ${c.server} ${short(c.key)}) with no hold recorded`);
      else if (!approvedInHold && !(h.endedBy === 'DeadlineProceeded' && h.onDeadline === 'Proceed' && deadlinePassed)) {
        this.fail('I15', `phase two started (Upgrade ${c.server} ${short(c.key)}) with the hold ${JSON.stringify(h)}: no approval set while it was on (${JSON.stringify([...this.approvals])}), nor a passed deadline under Proceed`);
      }
      break;
    }
    if (h?.endedBy === 'DeadlineRolledBack' && before?.phaseTwoHold?.endedBy !== 'DeadlineRolledBack' && !(h.onDeadline === 'Rollback' && deadlinePassed)) this.fail('I15', `the hold ended DeadlineRolledBack before its deadline: ${JSON.stringify(h)} at ${new Date(now).toISOString()}`);
    if (s.phase === 'RolledBack' && before?.phase !== 'RolledBack' && h?.endedBy === 'DeadlineRolledBack' && s.stage === 'API') this.fail('I15', 'a deadline Rollback ended RolledBack on the API stage, not on the old binaries');
    if (s.phase === 'Succeeded' && before?.phase !== 'Succeeded' && policy.onDeadline === 'Rollback' && h?.endedBy !== 'Approved') this.fail('I15', `Succeeded under onDeadline Rollback without an approval: ${JSON.stringify(h)}`);
  }

  /** Checks on a persisted plan: what it decided is now durable. */
  private checkPersisted(before: ApiServerUpgradeStatus | undefined, obs: Observation, p: Plan): void {
    const s = p.status;
    const phase = s.phase ?? 'Pending';
    if (!p.actions.some((a) => a.kind === 'callDriver')) this.checkWritable(s);
    const target = release(this.setup.targetVersion);
    const from = release(this.setup.fromVersion);
    // I2: the end states are true.
    if ((phase === 'Succeeded' || phase === 'RolledBack') && before?.phase !== phase) {
      // A phase-two rollback of a TwoPhase upgrade ends on the target binary emulating the from-version.
      const apiBack = phase === 'RolledBack' && s.stage === 'API';
      const want = phase === 'Succeeded' || apiBack ? target : from;
      const emulation = apiBack ? minor(from) : undefined;
      const wrong = [...this.world.servers.values()].filter((x) => !x.running || x.version !== want || x.emulation !== emulation);
      if (wrong.length) this.fail('I2', `${phase}, yet ${wrong.map((x) => `${x.hostname} ${x.running ? `runs ${x.version}${x.emulation ? ` emulating ${x.emulation}` : ''}` : 'is stopped'}`).join(', ')} (want ${want}${emulation ? ` emulating ${emulation}` : ''})`);
      const pending = this.world.pendingOps().filter((o) => {
        if (o.action === 'Upgrade' || o.action === 'Rollback') return true;
        return s.driverCalls?.find((c) => c.key === o.key)?.result !== 'TimedOut';
      });
      if (pending.length) this.fail('I2', `${phase}, yet the driver still holds ${pending.map((o) => `${o.action} ${o.server} ${short(o.key)} (${o.fate})`).join(', ')}`);
    }
    const beforeKeys = new Set((before?.driverCalls ?? []).map((c) => c.key));
    const fresh = (s.driverCalls ?? []).filter((c) => !beforeKeys.has(c.key));
    const now = this.world.now;
    if (before?.phase === 'Paused' && before.pause?.reason !== 'PausedBySpec' && phase !== 'Paused') this.lastResumeAt = now;
    if (obs.analysis?.verdict === 'Healthy') this.lastHealthyCheck = Math.max(this.lastHealthyCheck, Date.parse(obs.analysis.time));
    // I3: widen only from a good place.
    for (const c of fresh.filter((x) => x.action === 'Upgrade')) {
      const k = c.batch ?? 0;
      const earlier = earlierBatchServers(s, k);
      const bad: string[] = [];
      for (const h of earlier) {
        // TwoPhase: the server itself was in an earlier batch (phase one); its own replacement is this call's business.
        if (h === c.server) continue;
        const srv = this.world.servers.get(h);
        if (!srv) continue; // no longer a member
        const seen = obs.peers.find((x) => x.hostname === h);
        if (!srv.running || srv.version !== target || !seen?.ready || seen.stale) bad.push(`${h} (${!srv.running ? 'stopped' : srv.version !== target ? `runs ${srv.version}` : 'not ready'})`);
      }
      if (bad.length) this.fail('I3', `Upgrade ${c.server} ${short(c.key)} for batch ${k} decided while earlier-batch ${bad.join(', ')}`);
      const startsBatch = k > 1 && !(before?.driverCalls ?? []).some((x) => x.action === 'Upgrade' && x.batch === k);
      if (startsBatch && obs.analysis?.verdict === 'Breach') this.fail('I3', `batch ${k} started (Upgrade ${c.server}) on a breaching check (${obs.analysis.time})`);
      const previous = this.batchStart.get(k - 1);
      if (startsBatch && this.lastResumeAt !== undefined && previous !== undefined && this.lastResumeAt >= previous && this.lastHealthyCheck <= this.lastResumeAt) {
        this.fail('I3', `batch ${k} started (Upgrade ${c.server}) with no healthy check newer than the resume at ${stamp(this.lastResumeAt - START)} during batch ${k - 1}`);
      }
      if (!this.batchStart.has(k)) this.batchStart.set(k, now);
    }
    this.checkHold(before, s, fresh);
    // I4: rollback only when known safe.
    for (const c of fresh.filter((x) => x.action === 'Rollback')) {
      // A Rollback to the old binary of a server seen up on it, and truly running it, moves nothing (it supersedes
      // whatever the driver may still hold for it): no storage is read that the server does not read already.
      const seen = obs.peers.find((x) => x.hostname === c.server);
      const srv = this.world.servers.get(c.server);
      const staysPut = c.emulatedVersion === undefined && srv?.running === true && srv.version === from && srv.emulation === undefined && seen?.ready === true && !seen.stale && release(seen.version ?? '') === from && seen.emulation === undefined;
      if (staysPut) continue;
      // TwoPhase: a rollback re-applying the emulation (phase two) keeps the binary: it reads all it stored. One to
      // the old binary (phase one) reads what the emulating servers wrote; only a server that ran the target
      // without emulation wrote what it may not.
      // Nothing is unreadable that no server wrote: in OnePhase, once a server ran the target.
      const unreadable = this.setup.twoPhase ? c.emulatedVersion === undefined && this.world.unemulatedWrote : [...this.world.ran].some((k) => k.startsWith(release(this.setup.targetVersion)));
      const why = [
        ...(this.setup.storageSafe || !unreadable ? [] : [this.setup.twoPhase ? 'a server ran the target without emulation and wrote storage the from-version cannot read' : 'the target version writes storage the from-version cannot read']),
        ...(this.fromSeen ? [] : ['the from-version storage was never observed']),
        // Needed once a server may have run the target: an Upgrade the driver accepted, or one seen on it.
        ...(this.targetSeen || !(this.targetRunSeen || this.world.ops.some((o) => o.action === 'Upgrade')) ? [] : ['the target-version storage was never observed']),
      ];
      if (why.length) this.fail('I4', `Rollback ${c.server} ${short(c.key)} decided although ${why.join(' and ')}`);
    }
    // I17: preflight froze the plan only with no kube-controller-manager newer than the target, none unknown.
    if (s.plan && !before?.plan) {
      const past = this.componentsPast(this.setup.targetVersion);
      if (past.length) this.fail('I17', `preflight passed (plan frozen) while kube-controller-manager ${past.join(', ')}, past the target ${this.setup.targetVersion}`);
    }
    if (phase === 'Paused' && s.pause?.reason === 'ComponentSkew') this.skewHeld++;
    if (s.conditions?.some((c) => c.type === 'PreflightPassed' && (c.reason === 'ComponentNewerThanTarget' || c.reason === 'ComponentVersionUnknown'))) this.skewRefused++;
    // I9: a pause on an unknown acts once the unknown is known (the planner records the target's hashes in the
    // step that first observes them, so a persisted step after both were observed knows the verdict).
    if (phase === 'Paused' && s.pause?.reason === 'RollbackSafetyUnknown' && this.spec.paused !== true && s.fromVersion !== undefined && this.fromSeen && this.plannedTargetSeen && s.stage !== 'API') {
      this.fail('I9', `Paused RollbackSafetyUnknown although both versions' storage hashes were observed (plan.targetStorage ${s.plan?.targetStorage?.length ?? 0} entries): ${s.pause.message ?? ''}`);
    }
    // I7: the call lifecycle.
    for (const c of s.driverCalls ?? []) {
      const was = before?.driverCalls?.find((x) => x.key === c.key)?.result;
      if (was === c.result) continue;
      const who = `${c.action} ${c.server} ${short(c.key)}`;
      if (was !== undefined && FINISHED.has(was)) this.fail('I7', `${who} was ${was}, now ${c.result}`);
      else if (c.result === 'Abandoned' && was !== undefined && was !== 'Requested') this.fail('I7', `${who} Abandoned from ${was}: only a call never accepted is abandoned`);
      else if (c.result === 'Done' && !this.world.ops.some((o) => o.key === c.key && (o.landed || (o.restarted && this.world.servers.get(c.server)?.version === release(c.target ?? ''))))) {
        // A failed op that restarted its server where the call wanted it anyway (a Rollback of a server whose
        // Upgrade had failed) is indistinguishable from a landed one: Done is right.
        const op = this.world.ops.find((o) => o.key === c.key);
        this.fail('I7', `${who} marked Done, but the driver ${op ? `${op.stage === 'superseded' ? 'superseded' : op.fate === 'fail' && op.stage === 'finished' ? 'failed' : 'has not landed'} it (${op.fate})` : 'never carried it out'}`);
      }
    }
    // I7: one history record and one BatchSucceeded per batch.
    const history = s.batch?.history ?? [];
    const indices = history.map((h) => h.index);
    if (new Set(indices).size !== indices.length) this.fail('I7', `batch.history repeats a batch: indices ${JSON.stringify(indices)}`);
    this.batchSucceededEvents += p.actions.filter((a) => a.kind === 'event' && a.reason === 'BatchSucceeded').length;
    if (this.batchSucceededEvents > new Set(indices).size) this.fail('I7', `${this.batchSucceededEvents} BatchSucceeded events for ${new Set(indices).size} finished batches`);
  }

  /**
   * I11, at rest once faults stopped (the calm loop calls it on a pause, before a human acts): the pause's reason
   * names a cause that is real and still present in the world, so waiting or acting on it is not in vain.
   */
  checkPauseCause(): void {
    const s = this.persisted;
    const pause = s?.pause;
    if (s?.phase !== 'Paused' || !pause || this.spec.paused === true) return;
    const target = release(this.setup.targetVersion);
    const from = release(this.setup.fromVersion);
    const servers = [...this.world.servers.values()];
    const down = servers.filter((x) => !x.running).map((x) => x.hostname);
    if (pause.reason === 'MembershipChanged') {
      const members = new Set(s.plan?.members ?? []);
      const phaseOne = this.setup.twoPhase && s.stage !== 'API';
      const changed = (h: string): boolean => {
        const x = this.world.servers.get(h);
        if (!x || !x.running) return members.has(h);
        if (!members.has(h)) return true;
        if (x.version !== from && x.version !== target) return true;
        return phaseOne && x.version === target && x.emulation === undefined && minor(target) !== minor(from);
      };
      const named = pause.servers?.length ? pause.servers : [...new Set([...members, ...servers.map((x) => x.hostname)])];
      if (!named.some(changed)) this.fail('I11', `Paused MembershipChanged, but none of ${named.join(', ')} joined, left, is down or runs what the plan cannot cover: ${pause.message ?? ''}`);
    }
    if (pause.reason === 'RollbackUnsafe') {
      const unsafe = !this.setup.storageSafe && (!this.setup.twoPhase || this.world.unemulatedWrote);
      if (!unsafe) this.fail('I11', `Paused RollbackUnsafe, but what the servers wrote is readable by ${from}: ${pause.message ?? ''}`);
    }
    if (pause.reason === 'ComponentSkew' && this.componentsPast(this.setup.fromVersion).length === 0) {
      this.fail('I11', `Paused ComponentSkew with every kube-controller-manager on the from-version's minor: ${pause.message ?? ''}`);
    }
    if (pause.reason === 'RollbackSafetyUnknown' && s.fromVersion !== undefined) {
      const unseen = [...this.world.ran].filter((k) => !this.seenStorage.has(k));
      // An Upgrade call still in flight may yet land on the target: that is an unknown too (until it times out).
      const flying = (s.driverCalls ?? []).filter((c) => c.action === 'Upgrade' && !FINISHED.has(c.result ?? ''));
      // A server that took an Upgrade call (the driver accepted it; it may have run the target before it failed) and
      // left the fleet before any server on the target was read: what it may have written can never be observed, so
      // the unknown is real for the operator whatever the truth was (a failed pull, say). Only a resume goes on.
      const goneUnread = (s.driverCalls ?? []).filter((c) => c.action === 'Upgrade' && c.acceptedAt !== undefined && c.result !== 'Rejected' && !this.world.servers.has(c.server));
      const unknowable = goneUnread.length > 0 && (s.plan?.targetStorage?.length ?? 0) === 0;
      if (down.length === 0 && unseen.length === 0 && flying.length === 0 && !unknowable) this.fail('I11', `Paused RollbackSafetyUnknown with every server up, no Upgrade in flight and the storage of all they ran observed (${[...this.world.ran].join(', ')}): ${pause.message ?? ''}`);
    }
  }

  /** I1 at the driver: a second op accepted for a server that already had one in flight. */
  private checkDelivery(req: DriverRequest, supersededBefore: number): void {
    for (const x of this.world.supersessions.slice(supersededBefore)) {
      const prev = this.persisted?.driverCalls?.find((c) => c.key === x.previous.key);
      // A call the planner saw time out may be superseded: the driver replaces what it still holds.
      if (prev?.result === 'TimedOut') continue;
      this.fail('I1', `${describeCall(req)} accepted while the driver still held ${x.previous.action} ${short(x.previous.key)} for ${x.server} (status: ${prev ? prev.result : 'not recorded'})`);
    }
  }

  private checkWritable(s: ApiServerUpgradeStatus): void {
    const size = JSON.stringify(s).length;
    if (size >= 512 * 1024) this.fail('I5', `status is ${size} bytes as JSON`);
    const h = s.batch?.history?.length ?? 0;
    if (h > 256) this.fail('I5', `batch.history has ${h} records`);
    const c = s.driverCalls?.length ?? 0;
    if (c > 1024) this.fail('I5', `driverCalls has ${c} entries`);
    const pe = s.peers?.length ?? 0;
    if (pe > 256) this.fail('I5', `peers has ${pe} rows`);
  }

  isTerminal(): boolean {
    return TERMINAL.has(this.phase);
  }
}

/** Whether release a (v1.35.4) is older than release b. */
function olderRelease(a: string, b: string): boolean {
  const n = (v: string) => v.replace(/^v/, '').split('.').map(Number);
  const [x, y] = [n(a), n(b)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) < (y[i] ?? 0);
  return false;
}

/** The servers of the batches before batch k: from the frozen plan, or (older statuses) the peer rows. */
function earlierBatchServers(s: ApiServerUpgradeStatus, k: number): string[] {
  // TwoPhase: phase two's batches hold phase one's servers again; a server of batch k itself is that batch's own
  // business (its replacement may be under way), never an earlier batch's.
  if (s.plan?.batches) {
    const own = new Set(s.plan.batches.filter((b) => b.index === k).flatMap((b) => b.servers));
    return s.plan.batches.filter((b) => b.index < k).flatMap((b) => b.servers).filter((h) => !own.has(h));
  }
  return (s.peers ?? []).filter((r) => r.batch !== undefined && r.batch > 0 && r.batch < k).map((r) => r.hostname);
}

export function describeCall(r: DriverRequest): string {
  const g = r.featureGates[GATE];
  return `${r.action} ${r.server.hostname}${r.action === 'Upgrade' ? ` b${r.batch}` : ''}${g === undefined ? '' : ` gate=${g}`} ${short(r.idempotencyKey)}`;
}

export function describePhase(s: ApiServerUpgradeStatus): string {
  const phase = s.phase ?? 'Pending';
  return phase === 'Paused' ? `Paused(${s.pause?.reason ?? '?'})` : phase;
}

export function describeCalls(calls: DriverCall[] | undefined): string {
  return (calls ?? []).map((c) => `${c.action} ${c.server} ${short(c.key)} ${c.result}`).join('; ');
}
