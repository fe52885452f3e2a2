import type { ApiServerUpgrade, ApiServerUpgradeStatus, DriverCall } from '../api/types.generated.ts';
import type { ResolvedSpec } from '../api/defaults.ts';
import type { DriverRequest, Observation } from '../plan/index.ts';
import { recordCallOutcome, type CallOutcome } from '../plan/call-outcome.ts';
import { safeMessage } from '../plan/redact.ts';
import type { FleetObserver } from '../observe/fleet.ts';
import type { ListFn } from '../runtime/cached-list.ts';
import { KubeApiError, upgradeRef, type KubeClient, type EventSource } from '../runtime/kube.ts';
import type { ReconcileResult } from '../runtime/workqueue.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Driver } from '../drivers/driver.ts';
import type { CallReport } from '../plan/context.ts';
import { createMergePatch } from './merge-patch.ts';
import type { OperatorMetrics } from './metrics.ts';
import { faultPoint } from './fault-injection.ts';
import { describeViolations, type Policy } from '../plan/policy.ts';
import type { UpgradeReads } from '../runtime/upgrade-cache.ts';
import { observeTrust, type TrustObserverDeps } from '../observe/trust.ts';
import { observeCoverage } from '../observe/coverage.ts';
import type { ObservedKubeadm } from '../plan/kubeadm-preflight.ts';
import type { ObservedPeer } from '../plan/observation.ts';
import { editClusterConfiguration, recordKubeadmConfig, KUBEADM_CONFIG_KEY, type KubeadmConfigOutcome, type KubeadmIntent } from '../plan/kubeadm-config.ts';
import { planReconcile, reconcileContext, whatToRead, type ReconcileContext, type ReconcileFacts, type ReconcilePlan, type ReconcileReads } from '../plan/reconcile.ts';
import { KUBEADM_CONFIG_PATH } from '../observe/kubeadm.ts';

export interface ReconcilerDeps {
  kube: KubeClient;
  observer: FleetObserver;
  driverFor: (spec: ResolvedSpec, upgradeName: string) => Promise<Driver>;
  metrics: OperatorMetrics;
  log: Logger;
  events: EventSource;
  now?: () => Date;
  /** The operator's policy (--policy-file), read once per reconcile; absent: the operator runs without one and allows every spec. */
  policy?: () => Policy | undefined;
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

/**
 * The wiring, every part given: `ReconcilerDeps` with each optional part decided once, in the constructor
 * (src/main.ts gives them all; the tests leave out what they do not use).
 */
export type ReconcilerConfig = Required<Omit<ReconcilerDeps, 'kubeadmFacts'>> & Pick<ReconcilerDeps, 'kubeadmFacts'>;

function configure(d: ReconcilerDeps): ReconcilerConfig {
  return {
    ...d,
    now: d.now ?? (() => new Date()),
    policy: d.policy ?? (() => undefined),
    upgrades: d.upgrades ?? d.kube,
    preflightFacts: d.preflightFacts ?? false,
    list: d.list ?? (<T>(path: string): Promise<T> => d.kube.request<T>('GET', path)),
    keepKubeadmConfig: d.keepKubeadmConfig ?? false,
  };
}

interface ConfigMapLike {
  metadata?: { resourceVersion?: string };
  data?: Record<string, string>;
}

/**
 * The imperative shell around the pure planner: get -> gather -> plan -> apply, each decision in src/plan/
 * (reconcile.ts: the context resolved once, what to read, the ordered actions). Apply writes the status
 * (recording each call as Requested before it is made), emits the step's events, makes the calls, recording
 * each outcome with recordCallOutcome, and brings kubeadm-config in line. Errors are thrown to the work queue,
 * whose one error policy requeues with per-key backoff; a write conflict (409) is such an error, and the next
 * reconcile re-plans.
 */
export class UpgradeReconciler {
  private readonly c: ReconcilerConfig;

  constructor(deps: ReconcilerDeps) {
    this.c = configure(deps);
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const log = this.c.log.child({ upgrade: name });
    const u = await this.c.upgrades.getUpgrade(name);
    if (!u) {
      this.c.metrics.forget(name);
      return {};
    }
    const rc = reconcileContext(u, this.c.policy(), this.c.now());
    // Where a slow reconcile spent its time (debug log): a server that hangs shows as one step's milliseconds.
    const steps: Record<string, number> = {};
    let mark = Date.now();
    const step = (what: string): void => {
      const t = Date.now();
      steps[what] = t - mark;
      mark = t;
    };
    const on = { preflightFacts: this.c.preflightFacts, kubeadmFacts: this.c.kubeadmFacts !== undefined, keepKubeadmConfig: this.c.keepKubeadmConfig };
    // A finished upgrade reads nothing, not even the others (one at a time concerns only upgrades to come).
    const gathering = whatToRead(rc, rc.finished ? [] : (await this.c.upgrades.listUpgrades()).items, on);
    const facts = gathering.kind === 'read' ? await this.gather(rc, gathering.reads, log, step) : undefined;
    const p = planReconcile(rc, gathering, facts, on);
    const current = await this.apply(rc, p, log, step);
    this.c.metrics.observe(current);
    if (!rc.finished) log.debug('reconciled', { phase: current.status?.phase, batch: current.status?.batch?.current, requeueAfterMs: p.requeueAfterMs, ...steps });
    return p.requeueAfterMs === undefined ? {} : { requeueAfterMs: p.requeueAfterMs };
  }

  private async gather(rc: ReconcileContext, reads: ReconcileReads, log: Logger, step: (what: string) => void): Promise<ReconcileFacts> {
    let obs = await this.c.observer.observe(reads.observe, rc.now.getTime());
    step('observeMs');
    if (reads.preflight) {
      obs = { ...obs, ...(await this.preflightFacts(rc, obs, reads.preflight)) };
      step('preflightFactsMs');
    }
    const driverReports = reads.driverReports ? await this.driverReports(rc, reads.driverReports, log) : undefined;
    step('driverReportsMs');
    return { obs, ...(driverReports ? { driverReports } : {}) };
  }

  /** The plan applied in its order: the status, then each action; the calls' driver is built once, at the first. */
  private async apply(rc: ReconcileContext, p: ReconcilePlan, log: Logger, step: (what: string) => void): Promise<ApiServerUpgrade> {
    let current = await this.writeStatus(rc.upgrade, p.status, log);
    step('statusMs');
    this.countReportedFailures(rc.upgrade.status, current.status);
    let driver: Driver | undefined;
    for (const a of p.actions) {
      if (a.kind === 'event') {
        await this.event(current, a, log);
      } else if (a.kind === 'callDriver') {
        driver ??= await this.callingDriver(rc);
        current = await this.call(current, driver, a.request, rc.now, log);
      } else {
        current = await this.syncKubeadmConfig(current, a.intent, rc.now, log);
      }
    }
    step('callsMs');
    return current;
  }

  /**
   * The driver's reports on the calls Accepted in the status (Driver.report), read afresh on every reconcile and
   * never kept in memory: the planner records a `failed` one as the call's result. Bounded by the calls in
   * flight. Fails closed: a report that cannot be read (the driver cannot be built, the read throws) or says
   * `unknown` is left out, and the call is judged from observation alone. A driver without `report` reads nothing.
   */
  private async driverReports(rc: ReconcileContext, accepted: readonly DriverCall[], log: Logger): Promise<Record<string, CallReport> | undefined> {
    if (!rc.spec.ok) return undefined;
    let driver: Driver;
    try {
      driver = await this.c.driverFor(rc.spec.spec, rc.upgrade.metadata!.name!);
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
      if (c.result === 'Failed' && was.get(c.key) === 'Accepted') this.c.metrics.driverCalls.inc({ action: c.action, outcome: 'failed' });
    }
  }

  /** Writes the status when it changed, as a merge patch guarded by resourceVersion (409 -> re-read and re-plan). */
  private async writeStatus(u: ApiServerUpgrade, status: ApiServerUpgradeStatus, log: Logger): Promise<ApiServerUpgrade> {
    const patch = createMergePatch(u.status ?? {}, status);
    if (patch === undefined) return u;
    const before = u.status?.phase;
    let updated: ApiServerUpgrade;
    try {
      updated = await this.c.kube.patchUpgradeStatus(u.metadata!.name!, patch as Partial<ApiServerUpgradeStatus>, { resourceVersion: u.metadata!.resourceVersion! });
    } catch (err) {
      // Gone from the API while our reads still hold it: those reads are behind (their watch may be stuck).
      if (err instanceof KubeApiError && err.statusCode === 404) this.c.upgrades?.gone?.(u.metadata!.name!);
      throw err;
    }
    this.c.upgrades?.written?.(u, updated);
    if (before !== status.phase) log.info('phase changed', { from: before ?? 'none', to: status.phase, batch: status.batch?.current });
    return updated;
  }

  /**
   * The driver of this step's calls. The planner made no call for a spec outside the policy; the verdict is
   * looked at again here, before the driver is built (building a webhook driver reads its token Secret), so
   * that a refused spec never reaches it.
   */
  private async callingDriver(rc: ReconcileContext): Promise<Driver> {
    if (rc.violations.length > 0) throw new Error(`no driver built, no call made: ${describeViolations(rc.policy!, rc.violations)}`);
    if (!rc.spec.ok) throw rc.spec.error;
    return this.c.driverFor(rc.spec.spec, rc.upgrade.metadata!.name!);
  }

  /** A call recorded as Requested in the written status: delivered, and what came of it recorded. */
  private async call(u: ApiServerUpgrade, driver: Driver, request: DriverRequest, now: Date, log: Logger): Promise<ApiServerUpgrade> {
    const clog = log.child({ batch: request.batch, server: request.server.hostname, key: request.idempotencyKey, action: request.action });
    faultPoint('before-call', clog);
    clog.info('calling driver', { target: request.targetVersion });
    const answered: CallOutcome = await driver.call(request);
    // Whatever the driver passes on of a hook's or Job's words is logged and written: made safe once, here.
    const outcome: CallOutcome = { ...answered, message: safeMessage(answered.message, { maxChars: 1024 }) };
    this.c.metrics.driverCalls.inc({ action: request.action, outcome: outcome.kind });
    faultPoint('after-call', clog);
    if (outcome.kind === 'transient') clog.warn('driver call not delivered, the same key is sent again on the next reconcile', { detail: outcome.message });
    else clog.info('driver answered', { outcome: outcome.kind, detail: outcome.message });
    return this.writeStatus(u, recordCallOutcome(u.status ?? {}, request.idempotencyKey, outcome, now), clog);
  }

  /**
   * Preflight's trust and coverage facts (src/observe/trust.ts, coverage.ts; docs/trust.md), read only before
   * the upgrade starts. The driver's Describe is called only for a spec the policy allows (as every call).
   */
  private async preflightFacts(rc: ReconcileContext, obs: Observation, what: NonNullable<ReconcileReads['preflight']>): Promise<Pick<Observation, 'trust' | 'coverage' | 'kubeadm'>> {
    if (!rc.spec.ok) return {};
    const spec = rc.spec.spec;
    const deps: TrustObserverDeps = { list: this.c.list };
    if (what.noDescribe !== undefined) {
      deps.noDescribe = what.noDescribe;
    } else {
      try {
        const driver = await this.c.driverFor(spec, rc.upgrade.metadata!.name!);
        if (driver.describe) deps.describe = (server) => driver.describe!(server);
        else deps.noDescribe = `the ${spec.driver.kind} driver has no Describe`;
      } catch (err) {
        deps.noDescribe = `the driver could not be built: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
    const kubeadmFacts = this.c.kubeadmFacts;
    const [trust, coverage, kubeadm] = await Promise.all([
      observeTrust(obs.peers, this.c.observer.lastInventory, deps),
      observeCoverage(this.c.list),
      what.kubeadm && kubeadmFacts ? kubeadmFacts(obs.peers, what.kubeadm.always) : Promise.resolve(undefined),
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
  private async syncKubeadmConfig(u: ApiServerUpgrade, intent: KubeadmIntent, now: Date, log: Logger): Promise<ApiServerUpgrade> {
    let outcome: KubeadmConfigOutcome;
    try {
      const cm = await this.c.kube.request<ConfigMapLike>('GET', KUBEADM_CONFIG_PATH);
      const text = cm.data?.[KUBEADM_CONFIG_KEY];
      if (text === undefined) {
        outcome = { kind: 'noKey' };
      } else {
        const edit = editClusterConfiguration(text, intent);
        if (edit.kind === 'updated') {
          // The object as read, resourceVersion included: a concurrent writer makes this a 409, never a lost update.
          const body = { ...cm, data: { ...cm.data, [KUBEADM_CONFIG_KEY]: edit.text } };
          const put = await this.c.kube.request<ConfigMapLike>('PUT', KUBEADM_CONFIG_PATH, { body });
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

  private async event(u: ApiServerUpgrade, a: { type: 'Normal' | 'Warning'; reason: string; note: string; server?: string }, log: Logger): Promise<void> {
    try {
      await this.c.kube.createEvent(this.c.events, { regarding: upgradeRef(u), type: a.type, reason: a.reason, action: a.reason, note: a.server ? `${a.server}: ${a.note}` : a.note });
    } catch (err) {
      // An event is a courtesy: losing one must not fail or repeat the step that produced it.
      log.warn('event not recorded', { reason: a.reason, err: err instanceof KubeApiError ? err.message : String(err) });
    }
    log.info(a.note, { event: a.reason, type: a.type, ...(a.server ? { server: a.server } : {}) });
  }
}
