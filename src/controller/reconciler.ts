import type { ApiServerUpgrade, ApiServerUpgradeStatus } from '../api/types.generated.ts';
import { resolveSpec, SpecError, type ResolvedSpec } from '../api/defaults.ts';
import { plan, type Action, type Observation } from '../plan/index.ts';
import type { FleetObserver, AnalysisSettings } from '../observe/fleet.ts';
import { KubeApiError, upgradeRef, type KubeClient, type EventSource } from '../runtime/kube.ts';
import type { ReconcileResult } from '../runtime/workqueue.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Driver } from '../drivers/driver.ts';
import { createMergePatch } from './merge-patch.ts';
import { setCondition } from '../api/conditions.ts';
import type { OperatorMetrics } from './metrics.ts';

export interface ReconcilerDeps {
  kube: KubeClient;
  observer: FleetObserver;
  driverFor: (spec: ResolvedSpec, upgradeName: string) => Promise<Driver>;
  metrics: OperatorMetrics;
  log: Logger;
  events: EventSource;
  now?: () => Date;
}

const TERMINAL = new Set(['Succeeded', 'RolledBack', 'Failed']);

/**
 * The imperative shell around the pure planner: read the upgrade, observe the fleet, plan, write the
 * status (recording driver calls before making them), make the calls, record their outcome, emit events.
 * Errors are thrown to the work queue, whose one error policy requeues with per-key backoff.
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
    if (TERMINAL.has(u.status?.phase ?? '') && u.status?.observedGeneration === u.metadata?.generation) {
      this.d.metrics.observe(u);
      return {};
    }
    const blocker = await this.otherActiveUpgrade(u);
    const now = (this.d.now ?? (() => new Date()))();
    const obs: Observation = blocker ? { peers: [] } : await this.d.observer.observe(analysisSettings(u), now.getTime());
    const p = blocker
      ? blockedPlan(u, blocker, now)
      : plan({ name, uid: u.metadata?.uid ?? name, generation: u.metadata?.generation ?? 0, annotations: u.metadata?.annotations ?? {} }, u.spec, u.status, obs, now);

    let current = await this.writeStatus(u, p.status, log);
    const calls = p.actions.filter((a): a is Extract<Action, { kind: 'callDriver' }> => a.kind === 'callDriver');
    if (calls.length > 0) current = await this.makeCalls(current, calls, log);
    for (const a of p.actions) if (a.kind === 'event') await this.event(current, a, log);
    this.d.metrics.observe(current);
    const batch = current.status?.batch;
    log.debug('reconciled', { phase: current.status?.phase, batch: batch?.current, requeueAfterMs: p.requeueAfterMs });
    return p.requeueAfterMs === undefined ? {} : { requeueAfterMs: p.requeueAfterMs };
  }

  /** Two upgrades acting on one fleet would fight: one that is under way, or else the oldest, goes first. */
  private async otherActiveUpgrade(u: ApiServerUpgrade): Promise<string | undefined> {
    if (!waitingToStart(u)) return undefined;
    const { items } = await this.d.kube.listUpgrades();
    const order = (x: ApiServerUpgrade): string => `${x.metadata?.creationTimestamp ?? ''}/${x.metadata?.name ?? ''}`;
    const other = items.find((o) => o.metadata?.name !== u.metadata?.name && !TERMINAL.has(o.status?.phase ?? '') && (!waitingToStart(o) || order(o) < order(u)));
    return other?.metadata?.name;
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

  /** The calls are already recorded as Pending in the written status; make each and record its outcome. */
  private async makeCalls(u: ApiServerUpgrade, calls: Extract<Action, { kind: 'callDriver' }>[], log: Logger): Promise<ApiServerUpgrade> {
    const spec = resolveSpec(u.spec);
    const driver = await this.d.driverFor(spec, u.metadata!.name!);
    let current = u;
    for (const { request } of calls) {
      const clog = log.child({ batch: request.batch, server: request.server.hostname, key: request.idempotencyKey, action: request.action });
      let result: 'Succeeded' | 'Failed';
      let message: string;
      try {
        clog.info('calling driver', { target: request.targetVersion });
        const out = await driver.call(request);
        result = out.kind === 'accepted' ? 'Succeeded' : 'Failed';
        message = out.message;
        this.d.metrics.driverCalls.inc({ action: request.action, outcome: out.kind });
      } catch (err) {
        // Transient: the call stays Pending and is sent again, with the same key, on the next reconcile.
        this.d.metrics.driverCalls.inc({ action: request.action, outcome: 'transientError' });
        clog.warn('driver call failed, will retry with the same key', { err: (err as Error).message });
        throw err;
      }
      clog.info('driver answered', { result, message });
      const next = structuredClone(current.status ?? {});
      const call = next.driverCalls?.find((c) => c.key === request.idempotencyKey);
      if (call) {
        call.result = result;
        call.message = message.slice(0, 4000);
      }
      current = await this.writeStatus(current, next, clog);
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

function analysisSettings(u: ApiServerUpgrade): AnalysisSettings {
  let spec: ResolvedSpec | undefined;
  try {
    spec = resolveSpec(u.spec);
  } catch (err) {
    if (!(err instanceof SpecError)) throw err;
  }
  return {
    intervalMs: spec?.analysis.intervalMs ?? 10_000,
    proxyErrorRatio: spec?.analysis.thresholds.proxyErrorRatio ?? 0.01,
    errorRatio: spec?.analysis.thresholds.errorRatio ?? 0.05,
    latencyP99Seconds: (spec?.analysis.thresholds.latencyP99Ms ?? 1000) / 1000,
    ...(u.status?.fromVersion ? { fromVersion: u.status.fromVersion } : {}),
    targetVersion: u.spec.targetVersion,
    ...(spec?.analysis.source === 'Prometheus' && spec.analysis.prometheus ? { prometheus: spec.analysis.prometheus } : {}),
  };
}

function waitingToStart(u: ApiServerUpgrade): boolean {
  const phase = u.status?.phase;
  return phase === undefined || phase === 'Pending' || phase === 'Preflight';
}

function blockedPlan(u: ApiServerUpgrade, other: string, now: Date): { status: ApiServerUpgradeStatus; actions: Action[]; requeueAfterMs: number } {
  const status = structuredClone(u.status ?? {});
  status.phase = status.phase ?? 'Pending';
  const message = `waiting: ApiServerUpgrade ${other} is acting on the same fleet; upgrades run one at a time`;
  status.conditions = setCondition(status.conditions, { type: 'PreflightPassed', status: 'False', reason: 'AnotherUpgradeActive', message, observedGeneration: u.metadata?.generation ?? 0 }, now);
  return { status, actions: [], requeueAfterMs: 15_000 };
}
