/**
 * One reconcile's decisions, above the planner: the facts resolved once at its start (the object, the spec
 * resolved or its error, the policy's verdict, now), what the shell reads this time, and the actions it
 * applies in order. The shell (src/controller/reconciler.ts) gets, gathers what `whatToRead` asks for, calls
 * `planReconcile`, and applies the plan; it decides nothing of its own and resolves nothing again.
 */
import type { ApiServerUpgrade, ApiServerUpgradeStatus, DriverCall } from '../api/types.generated.ts';
import { defaultAnalysis, resolveSpec, SpecError, type ResolvedSpec } from '../api/defaults.ts';
import { setCondition } from '../api/conditions.ts';
import { isTerminal } from '../api/vocabulary.ts';
import type { Action } from './actions.ts';
import type { CallReport, UpgradeInput } from './context.ts';
import type { AnalysisSettings, GateReads, Observation } from './observation.ts';
import { checkSpec, type Policy, type PolicyViolation } from './policy.ts';
import { blockingUpgrade, isFinished } from './admission.ts';
import { analysisDue } from './analysis.ts';
import { startTimeReads } from './start-time-reads.ts';
import { callsToReport, inFlight } from './calls.ts';
import { kubeadmConfigDue, kubeadmIntent, type KubeadmIntent } from './kubeadm-config.ts';
import { invalidSpecPlan, isHeldBeforePreflight, planResolved, type Plan } from './planner.ts';

export type SpecResolution = { ok: true; spec: ResolvedSpec } | { ok: false; error: SpecError };

/** What one reconcile knows before it reads anything: resolved once, read by every later step. */
export interface ReconcileContext {
  readonly upgrade: ApiServerUpgrade;
  readonly now: Date;
  readonly spec: SpecResolution;
  /** The operator's policy (--policy-file), read once for the whole reconcile; undefined: none, everything allowed. */
  readonly policy: Policy | undefined;
  /** The policy's verdict on the spec: empty when allowed, without a policy, or when the spec is invalid. */
  readonly violations: readonly PolicyViolation[];
  /** Terminal and acknowledged (src/plan/admission.ts): nothing is observed or called. */
  readonly finished: boolean;
}

export function reconcileContext(upgrade: ApiServerUpgrade, policy: Policy | undefined, now: Date): ReconcileContext {
  let spec: SpecResolution;
  try {
    spec = { ok: true, spec: resolveSpec(upgrade.spec) };
  } catch (err) {
    if (!(err instanceof SpecError)) throw err;
    spec = { ok: false, error: err };
  }
  const violations = spec.ok && policy !== undefined ? checkSpec(policy, spec.spec) : [];
  return { upgrade, now, spec, policy, violations, finished: isFinished(upgrade) };
}

/** The shell's wiring that changes what is read or done (src/main.ts turns each on). */
export interface ReconcileSwitches {
  /** Read the trust and coverage facts at preflight (docs/trust.md). */
  preflightFacts: boolean;
  /** Read the facts of the preflight checks for kubeadm clusters, with the other preflight facts. */
  kubeadmFacts: boolean;
  /** Bring kube-system/kubeadm-config in line once an upgrade Succeeded or RolledBack. */
  keepKubeadmConfig: boolean;
}

export interface ReconcileReads {
  observe: AnalysisSettings;
  /** Preflight's trust and coverage facts (and kubeadm's, when `kubeadm` is set); absent: not read this time. */
  preflight?: {
    /** Why the driver's Describe is not called; absent: called, when the driver has one. */
    noDescribe?: string;
    /** `always`: read even without a kubeadm-config (the static Pod driver). */
    kubeadm?: { always: boolean };
  };
  /**
   * The flag proof's facts (src/plan/flag-proof-gate.ts): the nodes' command lines and the proof Jobs, for the static
   * Pod driver while a call may still start; absent: not read.
   */
  flagProof?: true;
  /** spec.gates' facts (src/plan/start-gates.ts), while a step may still start; absent: not read. */
  gates?: GateReads;
  /** The calls whose driver reports are read (calls.ts callsToReport); absent: none. */
  driverReports?: DriverCall[];
  /**
   * The servers whose /flagz and /statusz are read (src/plan/running-process.ts): those with a call in flight.
   * Absent: none.
   */
  running?: string[];
}

/** What this reconcile reads: nothing (finished), nothing more (held back by another upgrade), or `reads`. */
export type Gathering = { kind: 'finished' } | { kind: 'blocked'; by: string } | { kind: 'read'; reads: ReconcileReads };

/** `others`: the upgrades on the cluster, listed by the shell unless the upgrade is finished. */
export function whatToRead(rc: ReconcileContext, others: readonly ApiServerUpgrade[], on: ReconcileSwitches): Gathering {
  if (rc.finished) return { kind: 'finished' };
  const by = blockingUpgrade(rc.upgrade, others);
  if (by !== undefined) return { kind: 'blocked', by };
  const reads: ReconcileReads = { observe: { ...analysisSettings(rc), startTimes: startTimeReads(rc.upgrade.status) } };
  const spec = rc.spec.ok ? rc.spec.spec : undefined;
  // Only before the upgrade starts; a spec outside the policy never gets its driver called (as every call).
  if (on.preflightFacts && spec && atPreflight(rc.upgrade)) {
    reads.preflight = {
      ...(rc.violations.length > 0 ? { noDescribe: 'the spec is outside the operator\'s policy: its driver is not called' } : {}),
      ...(on.kubeadmFacts ? { kubeadm: { always: spec.driver.kind === 'staticPod' } } : {}),
    };
  }
  // The flag proof: the static Pod driver proves each node's command line before its call. Not for a spec outside the
  // policy (its preflight is refused; a run under way pauses), nor once no Upgrade call can start.
  if (spec && spec.driver.kind === 'staticPod' && rc.violations.length === 0 && provesFlags(rc.upgrade)) reads.flagProof = true;
  // A webhook without reportsStatus has no report (docs/drivers.md): building it would read its token Secret for
  // nothing. A spec outside the policy never gets its driver built.
  // A spec outside the policy never gets its gates' Prometheus queried (its address is the policy's to allow).
  if (spec && startsAhead(rc.upgrade) && rc.violations.length === 0) {
    const g = spec.gates;
    if (g.queries.length > 0 || g.controlPlaneNodesReady) {
      reads.gates = { ...(g.prometheus ? { prometheus: g.prometheus } : {}), queries: g.queries.map((q) => ({ name: q.name, query: q.query })), controlPlaneNodes: g.controlPlaneNodesReady };
    }
  }
  const inFlightOn = (rc.upgrade.status?.driverCalls ?? []).filter(inFlight).map((c) => c.server);
  if (inFlightOn.length > 0) reads.running = [...new Set(inFlightOn)].sort();
  const toReport = spec ? callsToReport(rc.upgrade.status?.driverCalls ?? [], rc.now, spec.strategy.batchTimeoutMs, spec.driver) : [];
  if (toReport.length > 0 && rc.violations.length === 0) reads.driverReports = toReport;
  return { kind: 'read', reads };
}

/** Phases in which a first call or a new batch may still start (src/plan/start-gates.ts): the gates are read then. */
function startsAhead(u: ApiServerUpgrade): boolean {
  const phase = u.status?.phase;
  return phase === undefined || phase === 'Pending' || phase === 'Preflight' || phase === 'EnablingProxy' || phase === 'Upgrading';
}

/** Phases in which a node's Upgrade call may still be made, or preflight proves the nodes (held before it: Paused). */
function provesFlags(u: ApiServerUpgrade): boolean {
  const phase = u.status?.phase;
  return phase === undefined || phase === 'Pending' || phase === 'Preflight' || phase === 'EnablingProxy' || phase === 'Upgrading' || (phase === 'Paused' && u.status?.pause?.resumePhase === 'Preflight');
}

/** Before the upgrade starts (Pending, Preflight, or paused by the spec before preflight passed), when preflight reads the trust and coverage facts. */
function atPreflight(u: ApiServerUpgrade): boolean {
  const phase = u.status?.phase;
  // The planner runs preflight there too: it needs the same facts, or a step without the kubeadm facts would pass it
  // on checks it never made.
  return phase === undefined || phase === 'Pending' || phase === 'Preflight' || isHeldBeforePreflight(phase, u.status);
}

/** The observation's settings: the spec's analysis, or the API's defaults while the spec is invalid. */
function analysisSettings(rc: ReconcileContext): AnalysisSettings {
  const a = rc.spec.ok ? rc.spec.spec.analysis : defaultAnalysis();
  const status = rc.upgrade.status;
  return {
    intervalMs: a.intervalMs,
    due: analysisDue(status?.lastAnalysis, a.intervalMs, rc.now),
    proxyErrorRatio: a.thresholds.proxyErrorRatio,
    errorRatio: a.thresholds.errorRatio,
    latencyP99Seconds: a.thresholds.latencyP99Ms / 1000,
    unavailableAPIServices: a.thresholds.unavailableAPIServices,
    webhookErrorRatio: a.thresholds.webhookErrorRatio,
    webhookMinCalls: a.thresholds.webhookMinCalls,
    ...(a.source === 'Prometheus' && a.prometheus ? { prometheus: a.prometheus } : {}),
    // Phase two of a TwoPhase upgrade: a rollback would orphan the objects only the target serves; list them.
    ...(status?.stage === 'API' && status.fromVersion ? {
      orphansOf: {
        fromVersion: status.fromVersion, targetVersion: rc.upgrade.spec.targetVersion,
        ...(status.plan?.fromStorage?.length ? { fromStored: status.plan.fromStorage.map((h) => h.resource) } : {}),
      },
    } : {}),
  };
}

/** What the shell read, as `whatToRead` asked. */
export interface ReconcileFacts {
  obs: Observation;
  /** The driver's reports by idempotency key; a call without one is judged from observation alone. */
  driverReports?: Record<string, CallReport>;
}

/** kube-system/kubeadm-config brought in line with `intent` (src/plan/kubeadm-config.ts); the shell reads and writes it. */
export interface KubeadmConfigAction {
  kind: 'syncKubeadmConfig';
  intent: KubeadmIntent;
}

export type ReconcileAction = Action | KubeadmConfigAction;

/**
 * The status to write first, then the actions in the order they are applied: the events (a call that fails
 * must not lose what this step announced), the flag proof Jobs, the calls, and last kubeadm-config.
 */
export interface ReconcilePlan {
  status: ApiServerUpgradeStatus;
  actions: ReconcileAction[];
  requeueAfterMs: number | undefined;
}

export function planReconcile(rc: ReconcileContext, gathering: Gathering, facts: ReconcileFacts | undefined, on: Pick<ReconcileSwitches, 'keepKubeadmConfig'>): ReconcilePlan {
  const p = stepPlan(rc, gathering, facts);
  const events = p.actions.filter((a) => a.kind === 'event');
  const calls = p.actions.filter((a) => a.kind === 'callDriver');
  const proofs = p.actions.filter((a) => a.kind === 'proveFlags');
  // The ending is recorded before kubeadm-config is brought in line: after a restart or a conflict it is done then.
  const kubeadm = on.keepKubeadmConfig && rc.spec.ok && isTerminal(p.status.phase) && kubeadmConfigDue(p.status) ? kubeadmIntent(rc.spec.spec, p.status) : undefined;
  return { status: p.status, actions: [...events, ...proofs, ...calls, ...(kubeadm ? [{ kind: 'syncKubeadmConfig' as const, intent: kubeadm }] : [])], requeueAfterMs: p.requeueAfterMs };
}

function stepPlan(rc: ReconcileContext, gathering: Gathering, facts: ReconcileFacts | undefined): Plan {
  const u = rc.upgrade;
  if (gathering.kind === 'finished') return { status: u.status ?? {}, actions: [], requeueAfterMs: undefined };
  if (gathering.kind === 'blocked') return blockedPlan(u, gathering.by, rc.now);
  const input: UpgradeInput = {
    name: u.metadata?.name ?? '',
    uid: u.metadata?.uid ?? u.metadata?.name ?? '',
    generation: u.metadata?.generation ?? 0,
    annotations: u.metadata?.annotations ?? {},
    ...(facts?.driverReports ? { driverReports: facts.driverReports } : {}),
  };
  if (!rc.spec.ok) return invalidSpecPlan(input, u.status, rc.spec.error, rc.now);
  if (!facts) throw new Error('planReconcile: what whatToRead asked for was not read');
  return planResolved(input, rc.spec.spec, u.status, facts.obs, rc.now, rc.policy, rc.violations);
}

/** Held back by another upgrade on the same fleet: said in PreflightPassed, looked at again in 15 s. */
function blockedPlan(u: ApiServerUpgrade, other: string, now: Date): Plan {
  const status = structuredClone(u.status ?? {});
  status.phase = status.phase ?? 'Pending';
  const message = `waiting: ApiServerUpgrade ${other} is acting on the same fleet; upgrades run one at a time`;
  status.conditions = setCondition(status.conditions, { type: 'PreflightPassed', status: 'False', reason: 'AnotherUpgradeActive', message, observedGeneration: u.metadata?.generation ?? 0 }, now);
  return { status, actions: [], requeueAfterMs: 15_000 };
}
