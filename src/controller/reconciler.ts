import type { ApiServerUpgrade, ApiServerUpgradeStatus } from '../api/types.generated.ts';
import { resolveSpec, SpecError, type ResolvedSpec } from '../api/defaults.ts';
import { plan, type Action, type Observation, type Plan } from '../plan/index.ts';
import { blockingUpgrade, isFinished } from '../plan/admission.ts';
import { analysisDue } from '../plan/analysis.ts';
import { recordCallOutcome, type CallOutcome } from '../plan/call-outcome.ts';
import { safeMessage } from '../plan/redact.ts';
import type { FleetObserver, AnalysisSettings } from '../observe/fleet.ts';
import type { ListFn } from '../runtime/cached-list.ts';
import { KubeApiError, upgradeRef, type KubeClient, type EventSource } from '../runtime/kube.ts';
import type { ReconcileResult } from '../runtime/workqueue.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Driver } from '../drivers/driver.ts';
import type { CallReport } from '../plan/context.ts';
import { createMergePatch } from './merge-patch.ts';
import { setCondition } from '../api/conditions.ts';
import type { OperatorMetrics } from './metrics.ts';
import { faultPoint } from './fault-injection.ts';
import { checkSpec, describeViolations, type Policy } from '../plan/policy.ts';
import type { UpgradeReads } from '../runtime/upgrade-cache.ts';
import { observeTrust, type TrustObserverDeps } from '../observe/trust.ts';
import { observeCoverage } from '../observe/coverage.ts';
import type { ObservedKubeadm } from '../plan/kubeadm-preflight.ts';
import type { ObservedPeer } from '../plan/observation.ts';
import { editClusterConfiguration, kubeadmConfigDue, kubeadmIntent, recordKubeadmConfig, KUBEADM_CONFIG_KEY, type KubeadmConfigOutcome } from '../plan/kubeadm-config.ts';
import { KUBEADM_CONFIG_PATH } from '../observe/kubeadm.ts';
import { isTerminal } from '../api/vocabulary.ts';

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
  /** Where upgrades are read (src/runtime/upgrade-cache.ts: the informer's cache); absent: `kube`, a GET and a LIST per reconcile. */
  upgrades?: UpgradeReads;
  /**
   * Read the trust and coverage facts at preflight (docs/trust.md): the kube-apiserver mirror Pods, the
   * APIServices, a TLS handshake with each server and the driver's Describe. main.ts turns it on; absent: not read.
   */
  preflightFacts?: boolean;
  /** LISTs of the preflight facts (mirror Pods, APIServices), answered from informers where main.ts has them; absent: the API. */
  list?: ListFn;
  /**
   * Reads the facts of the preflight checks for kubeadm clusters (src/observe/kubeadm.ts) with the other preflight
   * facts; `always`: read them even without a kubeadm-config (the static Pod driver). Absent: not read.
   */
  kubeadmFacts?: (peers: readonly ObservedPeer[], always: boolean) => Promise<ObservedKubeadm>;
  /**
   * Brings kube-system/kubeadm-config in line once an upgrade Succeeded or RolledBack (src/plan/kubeadm-config.ts,
   * docs/kubeadm-runbook.md). main.ts turns it on; absent: never read nor written.
   */
  keepKubeadmConfig?: boolean;
}

type CallAction = Extract<Action, { kind: 'callDriver' }>;

interface ConfigMapLike {
  metadata?: { resourceVersion?: string };
  data?: Record<string, string>;
}

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
    const u = await (this.d.upgrades ?? this.d.kube).getUpgrade(name);
    if (!u) {
      this.d.metrics.forget(name);
      return {};
    }
    if (isFinished(u)) {
      // An ending recorded before kubeadm-config was brought in line (a restart, a conflict retried): done now.
      const current = this.d.keepKubeadmConfig && kubeadmConfigDue(u.status) ? await this.syncKubeadmConfig(u, log) : u;
      this.d.metrics.observe(current);
      return {};
    }
    const now = (this.d.now ?? (() => new Date()))();
    // Where a slow reconcile spent its time (debug log): a server that hangs shows as one step's milliseconds.
    const steps: Record<string, number> = {};
    let mark = Date.now();
    const step = (name: string): void => {
      const t = Date.now();
      steps[name] = t - mark;
      mark = t;
    };
    const blocker = blockingUpgrade(u, (await (this.d.upgrades ?? this.d.kube).listUpgrades()).items);
    // One reading of the policy for the whole reconcile: the planner and the calls see the same one.
    const policy = this.d.policy?.();
    let p: Plan;
    if (blocker) {
      p = blockedPlan(u, blocker, now);
    } else {
      let obs: Observation = await this.d.observer.observe(analysisSettings(u, now), now.getTime());
      step('observeMs');
      if (this.d.preflightFacts && atPreflight(u)) {
        obs = { ...obs, ...(await this.preflightFacts(u, obs, policy)) };
        step('preflightFactsMs');
      }
      const driverReports = await this.driverReports(u, policy, log);
      step('driverReportsMs');
      p = plan({ name, uid: u.metadata?.uid ?? name, generation: u.metadata?.generation ?? 0, annotations: u.metadata?.annotations ?? {}, ...(driverReports ? { driverReports } : {}) }, u.spec, u.status, obs, now, policy);
    }
    let current = await this.writeStatus(u, p.status, log);
    step('statusMs');
    this.countReportedFailures(u.status, current.status);
    // Events before the calls: a call that fails must not lose what this step decided and announced.
    for (const a of p.actions) if (a.kind === 'event') await this.event(current, a, log);
    const calls = p.actions.filter((a): a is CallAction => a.kind === 'callDriver');
    if (calls.length > 0) current = await this.makeCalls(current, calls, now, log, policy);
    if (this.d.keepKubeadmConfig && isTerminal(current.status?.phase) && kubeadmConfigDue(current.status)) current = await this.syncKubeadmConfig(current, log);
    this.d.metrics.observe(current);
    step('callsMs');
    log.debug('reconciled', { phase: current.status?.phase, batch: current.status?.batch?.current, requeueAfterMs: p.requeueAfterMs, ...steps });
    return p.requeueAfterMs === undefined ? {} : { requeueAfterMs: p.requeueAfterMs };
  }

  /**
   * The driver's reports on the calls Accepted in the status (Driver.report), read afresh on every reconcile and
   * never kept in memory: the planner records a `failed` one as the call's result. Bounded by the calls in
   * flight. Fails closed: a report that cannot be read (the driver cannot be built, the read throws) or says
   * `unknown` is left out, and the call is judged from observation alone. A driver without `report` reads nothing.
   */
  private async driverReports(u: ApiServerUpgrade, policy: Policy | undefined, log: Logger): Promise<Record<string, CallReport> | undefined> {
    const accepted = (u.status?.driverCalls ?? []).filter((c) => c.result === 'Accepted');
    if (accepted.length === 0) return undefined;
    let spec: ResolvedSpec;
    try {
      spec = resolveSpec(u.spec);
    } catch (err) {
      if (err instanceof SpecError) return undefined;
      throw err;
    }
    // The webhook driver has no report (docs/drivers.md); building it would read its token Secret on every
    // reconcile for nothing. A spec outside the policy never gets its driver built (as for the calls).
    if (spec.driver.kind === 'webhook') return undefined;
    if (policy !== undefined && checkSpec(policy, spec).length > 0) return undefined;
    let driver: Driver;
    try {
      driver = await this.d.driverFor(spec, u.metadata!.name!);
    } catch (err) {
      log.warn('driver not built: its reports on the calls in flight are not read this time', { err: err instanceof Error ? err.message : String(err) });
      return undefined;
    }
    const report = driver.report?.bind(driver);
    if (!report) return undefined;
    const reports: Record<string, CallReport> = {};
    await Promise.all(accepted.map(async (c) => {
      const clog = log.child({ server: c.server, key: c.key, action: c.action });
      try {
        const r = await report({ idempotencyKey: c.key, action: c.action, server: { hostname: c.server } });
        if (r.kind === 'unknown') clog.debug('driver report unknown: the call is judged from observation alone', { detail: r.message });
        else reports[c.key] = { kind: r.kind, message: r.message };
        if (r.kind === 'failed') clog.warn('the driver reports the replacement failed', { detail: r.message });
      } catch (err) {
        // `report` should never reject; if it does, it is no answer — never a failure on a guess.
        clog.warn('driver report not read: the call is judged from observation alone', { err: err instanceof Error ? err.message : String(err) });
      }
    }));
    return reports;
  }

  /** Counts, once, each call the written status ended Failed on the driver's report (outcome "failed"). */
  private countReportedFailures(before: ApiServerUpgradeStatus | undefined, after: ApiServerUpgradeStatus | undefined): void {
    const was = new Map((before?.driverCalls ?? []).map((c) => [c.key, c.result]));
    for (const c of after?.driverCalls ?? []) {
      if (c.result === 'Failed' && was.get(c.key) === 'Accepted') this.d.metrics.driverCalls.inc({ action: c.action, outcome: 'failed' });
    }
  }

  /** Writes the status when it changed, as a merge patch guarded by resourceVersion (409 -> re-read and re-plan). */
  private async writeStatus(u: ApiServerUpgrade, status: ApiServerUpgradeStatus, log: Logger): Promise<ApiServerUpgrade> {
    const patch = createMergePatch(u.status ?? {}, status);
    if (patch === undefined) return u;
    const before = u.status?.phase;
    let updated: ApiServerUpgrade;
    try {
      updated = await this.d.kube.patchUpgradeStatus(u.metadata!.name!, patch as Partial<ApiServerUpgradeStatus>, { resourceVersion: u.metadata!.resourceVersion! });
    } catch (err) {
      // Gone from the API while our reads still hold it: those reads are behind (their watch may be stuck).
      if (err instanceof KubeApiError && err.statusCode === 404) this.d.upgrades?.gone?.(u.metadata!.name!);
      throw err;
    }
    this.d.upgrades?.written?.(u, updated);
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
      const answered: CallOutcome = await driver.call(request);
      // Whatever the driver passes on of a hook's or Job's words is logged and written: made safe once, here.
      const outcome: CallOutcome = { ...answered, message: safeMessage(answered.message, { maxChars: 1024 }) };
      this.d.metrics.driverCalls.inc({ action: request.action, outcome: outcome.kind });
      faultPoint('after-call', clog);
      if (outcome.kind === 'transient') clog.warn('driver call not delivered, the same key is sent again on the next reconcile', { detail: outcome.message });
      else clog.info('driver answered', { outcome: outcome.kind, detail: outcome.message });
      current = await this.writeStatus(current, recordCallOutcome(current.status ?? {}, request.idempotencyKey, outcome, now), clog);
    }
    return current;
  }

  /**
   * Preflight's trust and coverage facts (src/observe/trust.ts, coverage.ts; docs/trust.md), read only before
   * the upgrade starts. The driver's Describe is called only for a spec the policy allows (as every call).
   */
  private async preflightFacts(u: ApiServerUpgrade, obs: Observation, policy: Policy | undefined): Promise<Pick<Observation, 'trust' | 'coverage' | 'kubeadm'>> {
    let spec: ResolvedSpec;
    try {
      spec = resolveSpec(u.spec);
    } catch (err) {
      if (err instanceof SpecError) return {};
      throw err;
    }
    const list = this.d.list ?? (<T>(path: string): Promise<T> => this.d.kube.request<T>('GET', path));
    const deps: TrustObserverDeps = { list };
    if (policy !== undefined && checkSpec(policy, spec).length > 0) {
      deps.noDescribe = 'the spec is outside the operator\'s policy: its driver is not called';
    } else {
      try {
        const driver = await this.d.driverFor(spec, u.metadata!.name!);
        if (driver.describe) deps.describe = (server) => driver.describe!(server);
        else deps.noDescribe = `the ${spec.driver.kind} driver has no Describe`;
      } catch (err) {
        deps.noDescribe = `the driver could not be built: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
    const [trust, coverage, kubeadm] = await Promise.all([
      observeTrust(obs.peers, this.d.observer.lastInventory, deps),
      observeCoverage(list),
      this.d.kubeadmFacts ? this.d.kubeadmFacts(obs.peers, spec.driver.kind === 'staticPod') : Promise.resolve(undefined),
    ]);
    return { trust, coverage, ...(kubeadm ? { kubeadm } : {}) };
  }

  /**
   * kube-system/kubeadm-config brought in line with what the ended upgrade changed (src/plan/kubeadm-config.ts
   * decides): read, edited, written back with the resourceVersion read (a 409 is thrown to the work queue, whose
   * retry reads it again), and the outcome recorded in status with the KubeadmConfigUpdated condition and an
   * Event. Not there: not a kubeadm cluster. Forbidden: recorded, with what to set by hand. Other errors are
   * thrown and retried: status records nothing until it is done.
   */
  private async syncKubeadmConfig(u: ApiServerUpgrade, log: Logger): Promise<ApiServerUpgrade> {
    let spec: ResolvedSpec;
    try {
      spec = resolveSpec(u.spec);
    } catch (err) {
      if (err instanceof SpecError) return u;
      throw err;
    }
    const intent = kubeadmIntent(spec, u.status ?? {});
    if (!intent) return u;
    const now = (this.d.now ?? (() => new Date()))();
    let outcome: KubeadmConfigOutcome;
    try {
      const cm = await this.d.kube.request<ConfigMapLike>('GET', KUBEADM_CONFIG_PATH);
      const text = cm.data?.[KUBEADM_CONFIG_KEY];
      if (text === undefined) {
        outcome = { kind: 'noKey' };
      } else {
        const edit = editClusterConfiguration(text, intent);
        if (edit.kind === 'updated') {
          // The object as read, resourceVersion included: a concurrent writer makes this a 409, never a lost update.
          const body = { ...cm, data: { ...cm.data, [KUBEADM_CONFIG_KEY]: edit.text } };
          const put = await this.d.kube.request<ConfigMapLike>('PUT', KUBEADM_CONFIG_PATH, { body });
          log.info('kubeadm-config updated', { changes: edit.changes, resourceVersion: put.metadata?.resourceVersion });
          outcome = { kind: 'edited', edit, ...(put.metadata?.resourceVersion ? { resourceVersion: put.metadata.resourceVersion } : {}) };
        } else {
          outcome = { kind: 'edited', edit, ...(cm.metadata?.resourceVersion ? { resourceVersion: cm.metadata.resourceVersion } : {}) };
        }
      }
    } catch (err) {
      if (err instanceof KubeApiError && err.statusCode === 404) outcome = { kind: 'absent' };
      else if (err instanceof KubeApiError && err.statusCode === 403) outcome = { kind: 'forbidden', message: err.message };
      else throw err;
    }
    const { status, events } = recordKubeadmConfig(u.status ?? {}, intent, outcome, now, u.metadata?.generation ?? 0);
    const updated = await this.writeStatus(u, status, log);
    for (const e of events) await this.event(updated, e, log);
    return updated;
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

/** Before the upgrade starts (Pending, Preflight), when preflight reads the trust and coverage facts. */
function atPreflight(u: ApiServerUpgrade): boolean {
  const phase = u.status?.phase;
  return phase === undefined || phase === 'Pending' || phase === 'Preflight';
}

function blockedPlan(u: ApiServerUpgrade, other: string, now: Date): Plan {
  const status = structuredClone(u.status ?? {});
  status.phase = status.phase ?? 'Pending';
  const message = `waiting: ApiServerUpgrade ${other} is acting on the same fleet; upgrades run one at a time`;
  status.conditions = setCondition(status.conditions, { type: 'PreflightPassed', status: 'False', reason: 'AnotherUpgradeActive', message, observedGeneration: u.metadata?.generation ?? 0 }, now);
  return { status, actions: [], requeueAfterMs: 15_000 };
}
