import type { ApiServerUpgrade } from '../api/types.generated.ts';
import type { ReconcileResult } from '../runtime/workqueue.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Driver } from '../drivers/driver.ts';
import { planReconcile, reconcileContext, whatToRead, type ReconcileContext, type ReconcileFacts, type ReconcilePlan, type ReconcileReads } from '../plan/reconcile.ts';
import { configureReconciler, type ReconcilerConfig, type ReconcilerDeps } from './reconciler-config.ts';
import { callDriver, callingDriver, countReportedFailures, readDriverReports } from './driver-calls.ts';
import { readPreflightFacts } from './preflight-reads.ts';
import { createProofJob, readFlagProof } from './flag-proof-reads.ts';
import { safeMessage } from '../plan/redact.ts';
import { syncKubeadmConfig } from './kubeadm-config-write.ts';
import { recordEvent, writeStatus } from './status-writes.ts';

export type { ReconcilerConfig, ReconcilerDeps } from './reconciler-config.ts';

/**
 * The imperative shell around the pure planner: get -> gather -> plan -> apply, each decision in src/plan/
 * (reconcile.ts: the context resolved once, what to read, the ordered actions). Gather reads what the plan
 * asked for (driver-calls.ts, preflight-reads.ts); apply writes the status (recording each call as Requested
 * before it is made), emits the step's events, makes the calls and brings kubeadm-config in line
 * (status-writes.ts, driver-calls.ts, kubeadm-config-write.ts). Errors are thrown to the work queue, whose one
 * error policy requeues with per-key backoff; a write conflict (409) is such an error, and the next reconcile
 * re-plans.
 */
export class UpgradeReconciler {
  private readonly c: ReconcilerConfig;

  constructor(deps: ReconcilerDeps) {
    this.c = configureReconciler(deps);
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const log = this.c.log.child({ upgrade: name });
    const u = await this.c.upgrades.getUpgrade(name);
    if (!u) {
      this.c.metrics.forget(name);
      return {};
    }
    const rc = reconcileContext(u, this.c.policy(), this.c.now());
    const steps = stepTimer();
    const on = { preflightFacts: this.c.preflightFacts, kubeadmFacts: this.c.kubeadmFacts !== undefined, keepKubeadmConfig: this.c.keepKubeadmConfig };
    // A finished upgrade reads nothing, not even the others (one at a time concerns only upgrades to come).
    const gathering = whatToRead(rc, rc.finished ? [] : (await this.c.upgrades.listUpgrades()).items, on);
    const facts = gathering.kind === 'read' ? await this.gather(rc, gathering.reads, log, steps.mark) : undefined;
    const p = planReconcile(rc, gathering, facts, on);
    const current = await this.apply(rc, p, log, steps.mark);
    this.c.metrics.observe(current);
    if (!rc.finished) log.debug('reconciled', { phase: current.status?.phase, batch: current.status?.batch?.current, requeueAfterMs: p.requeueAfterMs, ...steps.ms });
    if (p.requeueAfterMs === undefined) return {};
    // The plan's delays count from its own clock (rc.now: when this look began, the time its check carries), so the
    // time the look took is not added to them: the next check comes when it is due, not that much later. A look
    // eats at most half the wait, so one slower than the pace it serves (100 servers on a loaded machine) still
    // leaves a gap instead of running back to back.
    const left = rc.now.getTime() + p.requeueAfterMs - this.c.now().getTime();
    return { requeueAfterMs: Math.max(p.requeueAfterMs / 2, left) };
  }

  /**
   * What the plan asked to read: the driver's reports where asked, then the fleet and preflight's facts. The fleet
   * comes last, right before the plan that trusts it: read first, it aged by however long the reports took — a Job
   * read held 5 s by a server cut from etcd, during which that same server went down, and the plan started its
   * replacement on a 5 s old "ready" (fault campaign, nodes seed 83 #0), so its outage was never counted.
   */
  private async gather(rc: ReconcileContext, reads: ReconcileReads, log: Logger, step: (what: string) => void): Promise<ReconcileFacts> {
    const driverReports = reads.driverReports ? await readDriverReports(this.c, rc, reads.driverReports, log) : undefined;
    step('driverReportsMs');
    let obs = await this.c.observer.observe(reads.observe, rc.now.getTime());
    step('observeMs');
    if (reads.gates) {
      obs = { ...obs, gates: await this.c.gates(reads.gates) };
      step('gatesMs');
    }
    if (reads.flagProof && rc.spec.ok) {
      obs = { ...obs, flagProof: await (this.c.flagProof ?? ((u, s, o) => readFlagProof(this.c, u, s, o)))(rc.upgrade, rc.spec.spec, obs) };
      step('flagProofMs');
    }
    if (reads.running && this.c.running) {
      obs = { ...obs, running: await this.c.running(obs.peers, reads.running) };
      step('runningMs');
    }
    if (reads.preflight) {
      obs = { ...obs, ...(await readPreflightFacts(this.c, rc, obs, reads.preflight)) };
      step('preflightFactsMs');
    }
    return { obs, ...(driverReports ? { driverReports } : {}) };
  }

  /** The plan applied in its order: the status, then each action; the calls' driver is built once, at the first. */
  private async apply(rc: ReconcileContext, p: ReconcilePlan, log: Logger, step: (what: string) => void): Promise<ApiServerUpgrade> {
    let current = await writeStatus(this.c, rc.upgrade, p.status, log);
    step('statusMs');
    countReportedFailures(this.c, rc.upgrade.status, current.status);
    let driver: Driver | undefined;
    for (const a of p.actions) {
      if (a.kind === 'event') {
        await recordEvent(this.c, current, a, log);
      } else if (a.kind === 'proveFlags') {
        if (rc.spec.ok && rc.spec.spec.driver.kind === 'staticPod') {
          const failed = await createProofJob(this.c, current, rc.spec.spec.driver.staticPod, a.proof, log);
          if (failed !== undefined) await recordEvent(this.c, current, { type: 'Warning', reason: 'FlagProofJobNotCreated', note: safeMessage(failed, { maxChars: 1024 }) }, log);
        }
      } else if (a.kind === 'callDriver') {
        driver ??= await callingDriver(this.c, rc);
        current = await callDriver(this.c, current, driver, a.request, rc.now, log);
      } else {
        current = await syncKubeadmConfig(this.c, current, a.intent, rc.now, log);
      }
    }
    step('callsMs');
    return current;
  }
}

/** Where a slow reconcile spent its time (debug log): a server that hangs shows as one step's milliseconds. */
function stepTimer(): { ms: Record<string, number>; mark: (what: string) => void } {
  const ms: Record<string, number> = {};
  let last = Date.now();
  return {
    ms,
    mark: (what) => {
      const t = Date.now();
      ms[what] = t - last;
      last = t;
    },
  };
}
