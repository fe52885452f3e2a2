import type { ApiServerUpgrade, ApiServerUpgradeStatus } from '../api/types.generated.ts';
import { resolveSpec, SpecError, type ResolvedSpec } from '../api/defaults.ts';
import { plan, type Action, type Observation, type Plan } from '../plan/index.ts';
import { blockingUpgrade, isFinished } from '../plan/admission.ts';
import { analysisDue } from '../plan/analysis.ts';
import { recordCallOutcome, type CallOutcome } from '../plan/call-outcome.ts';
import type { FleetObserver, AnalysisSettings } from '../observe/fleet.ts';
import { KubeApiError, upgradeRef, type KubeClient, type EventSource } from '../runtime/kube.ts';
import type { ReconcileResult } from '../runtime/workqueue.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Driver } from '../drivers/driver.ts';
import { createMergePatch } from './merge-patch.ts';
import { setCondition } from '../api/conditions.ts';
import type { OperatorMetrics } from './metrics.ts';
import { faultPoint } from './fault-injection.ts';
import { checkSpec, describeViolations, type Policy } from '../plan/policy.ts';

export interface ReconcilerDeps {
  kube: KubeClient;
  observer: FleetObserver;
  driverFor: (spec: ResolvedSpec, upgradeName: string) => Promise<Driver>;
  metrics: OperatorMetrics;
  log: Logger;
  events: EventSource;
  now?: () => Date;
  /** The operator's policy (--policy-file), read once per reconcile; absent: the operator runs without one and allows every spec. */
  policy?: () => Policy;
}

type CallAction = Extract<Action, { kind: 'callDriver' }>;

/**
 * The imperative shell around the pure planner: get -> observe -> plan -> apply. Apply writes the status
 * (recording each call as Requested before it is made), emits the step's events, then makes the calls,
 * recording each outcome with recordCallOutcome. Errors are thrown to the work queue, whose one error policy
 * requeues with per-key backoff; a write conflict (409) is such an error, and the next reconcile re-plans.
 */
export class UpgradeReconciler {
  private readonly d: ReconcilerDeps;

  constructor(deps: ReconcilerDeps) {
    this.d = deps;
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const log = this.d.log.child({ upgrade: name });
    const u = await this.d.kube.getUpgrade(name);
    if (!u) {
      this.d.metrics.forget(name);
      return {};
    }
    if (isFinished(u)) {
      this.d.metrics.observe(u);
      return {};
    }
    const now = (this.d.now ?? (() => new Date()))();
    const blocker = blockingUpgrade(u, (await this.d.kube.listUpgrades()).items);
    // One reading of the policy for the whole reconcile: the planner and the calls see the same one.
    const policy = this.d.policy?.();
    let p: Plan;
    if (blocker) {
      p = blockedPlan(u, blocker, now);
    } else {
      const obs: Observation = await this.d.observer.observe(analysisSettings(u, now), now.getTime());
      p = plan({ name, uid: u.metadata?.uid ?? name, generation: u.metadata?.generation ?? 0, annotations: u.metadata?.annotations ?? {} }, u.spec, u.status, obs, now, policy);
    }
    let current = await this.writeStatus(u, p.status, log);
    // Events before the calls: a call that fails must not lose what this step decided and announced.
    for (const a of p.actions) if (a.kind === 'event') await this.event(current, a, log);
    const calls = p.actions.filter((a): a is CallAction => a.kind === 'callDriver');
    if (calls.length > 0) current = await this.makeCalls(current, calls, now, log, policy);
    this.d.metrics.observe(current);
    log.debug('reconciled', { phase: current.status?.phase, batch: current.status?.batch?.current, requeueAfterMs: p.requeueAfterMs });
    return p.requeueAfterMs === undefined ? {} : { requeueAfterMs: p.requeueAfterMs };
  }

  /** Writes the status when it changed, as a merge patch guarded by resourceVersion (409 -> re-read and re-plan). */
  private async writeStatus(u: ApiServerUpgrade, status: ApiServerUpgradeStatus, log: Logger): Promise<ApiServerUpgrade> {
    const patch = createMergePatch(u.status ?? {}, status);
    if (patch === undefined) return u;
    const before = u.status?.phase;
    const updated = await this.d.kube.patchUpgradeStatus(u.metadata!.name!, patch as Partial<ApiServerUpgradeStatus>, { resourceVersion: u.metadata!.resourceVersion! });
    if (before !== status.phase) log.info('phase changed', { from: before ?? 'none', to: status.phase, batch: status.batch?.current });
    return updated;
  }

  /** The calls are recorded as Requested in the written status; deliver each and record what came of it. */
  private async makeCalls(u: ApiServerUpgrade, calls: CallAction[], now: Date, log: Logger, policy: Policy | undefined): Promise<ApiServerUpgrade> {
    const spec = resolveSpec(u.spec);
    // The planner made no call for a spec outside the policy; checked again here, before the driver is built
    // (building a webhook driver reads its token Secret), so that a refused spec never reaches it.
    const refused = policy === undefined ? [] : checkSpec(policy, spec);
    if (refused.length > 0) throw new Error(`no driver built, no call made: ${describeViolations(policy!, refused)}`);
    const driver = await this.d.driverFor(spec, u.metadata!.name!);
    let current = u;
    for (const { request } of calls) {
      const clog = log.child({ batch: request.batch, server: request.server.hostname, key: request.idempotencyKey, action: request.action });
      faultPoint('before-call', clog);
      clog.info('calling driver', { target: request.targetVersion });
      const outcome: CallOutcome = await driver.call(request);
      this.d.metrics.driverCalls.inc({ action: request.action, outcome: outcome.kind });
      faultPoint('after-call', clog);
      if (outcome.kind === 'transient') clog.warn('driver call not delivered, the same key is sent again on the next reconcile', { detail: outcome.message });
      else clog.info('driver answered', { outcome: outcome.kind, detail: outcome.message });
      current = await this.writeStatus(current, recordCallOutcome(current.status ?? {}, request.idempotencyKey, outcome, now), clog);
    }
    return current;
  }

  private async event(u: ApiServerUpgrade, a: Extract<Action, { kind: 'event' }>, log: Logger): Promise<void> {
    try {
      await this.d.kube.createEvent(this.d.events, { regarding: upgradeRef(u), type: a.type, reason: a.reason, action: a.reason, note: a.server ? `${a.server}: ${a.note}` : a.note });
    } catch (err) {
      // An event is a courtesy: losing one must not fail or repeat the step that produced it.
      log.warn('event not recorded', { reason: a.reason, err: err instanceof KubeApiError ? err.message : String(err) });
    }
    log.info(a.note, { event: a.reason, type: a.type, ...(a.server ? { server: a.server } : {}) });
  }
}

function analysisSettings(u: ApiServerUpgrade, now: Date): AnalysisSettings {
  let spec: ResolvedSpec | undefined;
  try {
    spec = resolveSpec(u.spec);
  } catch (err) {
    if (!(err instanceof SpecError)) throw err;
  }
  const intervalMs = spec?.analysis.intervalMs ?? 10_000;
  return {
    intervalMs,
    due: analysisDue(u.status?.lastAnalysis?.time, intervalMs, now),
    proxyErrorRatio: spec?.analysis.thresholds.proxyErrorRatio ?? 0.01,
    errorRatio: spec?.analysis.thresholds.errorRatio ?? 0.05,
    latencyP99Seconds: (spec?.analysis.thresholds.latencyP99Ms ?? 1000) / 1000,
    ...(spec ? { unavailableAPIServices: spec.analysis.thresholds.unavailableAPIServices, webhookErrorRatio: spec.analysis.thresholds.webhookErrorRatio, webhookMinCalls: spec.analysis.thresholds.webhookMinCalls } : {}),
    ...(spec?.analysis.source === 'Prometheus' && spec.analysis.prometheus ? { prometheus: spec.analysis.prometheus } : {}),
    // Phase two of a TwoPhase upgrade: a rollback would orphan the objects only the target serves; list them.
    ...(u.status?.stage === 'API' && u.status.fromVersion ? { orphansOf: { fromVersion: u.status.fromVersion, targetVersion: u.spec.targetVersion } } : {}),
  };
}

function blockedPlan(u: ApiServerUpgrade, other: string, now: Date): Plan {
  const status = structuredClone(u.status ?? {});
  status.phase = status.phase ?? 'Pending';
  const message = `waiting: ApiServerUpgrade ${other} is acting on the same fleet; upgrades run one at a time`;
  status.conditions = setCondition(status.conditions, { type: 'PreflightPassed', status: 'False', reason: 'AnotherUpgradeActive', message, observedGeneration: u.metadata?.generation ?? 0 }, now);
  return { status, actions: [], requeueAfterMs: 15_000 };
}
