import type { ApiServerUpgradeStatus, DriverAction, DriverCall, PeerStatus, UpgradePhase } from '../api/types.generated.ts';
import { setCondition, type ConditionInput } from '../api/conditions.ts';
import type { ResolvedSpec } from '../api/defaults.ts';
import type { Action, DriverRequest } from './actions.ts';
import type { Observation, ObservedPeer } from './observation.ts';
import { idempotencyKey } from './keys.ts';

export { PROXY_GATE } from '../api/constants.ts';

/** The upgrade object as the planner needs it. */
export interface UpgradeInput {
  name: string;
  uid: string;
  generation: number;
  annotations: Record<string, string>;
}

/**
 * One planning step's working state: the status being built and the side effects requested.
 * Each phase handler reads the observation and writes here; nothing else is mutated.
 */
export class PlanContext {
  readonly spec: ResolvedSpec;
  readonly obs: Observation;
  readonly now: Date;
  readonly upgrade: UpgradeInput;
  status: ApiServerUpgradeStatus;
  readonly actions: Action[] = [];
  requeueAfterMs: number | undefined;
  /** What the active phase is doing right now, for the Progressing condition's message (default: the phase). */
  progressMessage: string | undefined;

  constructor(upgrade: UpgradeInput, spec: ResolvedSpec, status: ApiServerUpgradeStatus, obs: Observation, now: Date) {
    this.upgrade = upgrade;
    this.spec = spec;
    this.obs = obs;
    this.now = now;
    this.status = structuredClone(status);
  }

  get phase(): UpgradePhase {
    return this.status.phase ?? 'Pending';
  }

  setPhase(phase: UpgradePhase): void {
    this.status.phase = phase;
  }

  condition(input: ConditionInput): void {
    this.status.conditions = setCondition(this.status.conditions, { observedGeneration: this.upgrade.generation, ...input }, this.now);
  }

  event(type: 'Normal' | 'Warning', reason: string, note: string, server?: string): void {
    this.actions.push({ kind: 'event', type, reason, note, ...(server === undefined ? {} : { server }) });
  }

  /** Asks to be called again within `ms`; the shortest request wins. */
  requeue(ms: number): void {
    this.requeueAfterMs = this.requeueAfterMs === undefined ? ms : Math.min(this.requeueAfterMs, ms);
  }

  observed(hostname: string): ObservedPeer | undefined {
    return this.obs.peers.find((p) => p.hostname === hostname);
  }

  peerRow(hostname: string): PeerStatus | undefined {
    return this.status.peers?.find((p) => p.hostname === hostname);
  }

  findCall(key: string): DriverCall | undefined {
    return this.status.driverCalls?.find((c) => c.key === key);
  }

  /**
   * Records a driver call as Pending and asks the shell to make it. The shell persists the status before it
   * calls, so a crash in between re-sends the same key, which the driver ignores.
   */
  callDriver(action: DriverAction, batch: number, hostname: string, target: string, featureGates: Record<string, boolean>): DriverCall {
    // Earlier attempts of the same step; a resume abandons a failed one so the step is tried again.
    const attempts = (this.status.driverCalls ?? []).filter((c) => c.server === hostname && c.batch === batch && c.action === action && c.target === target);
    const latest = attempts.at(-1);
    const attempt = latest?.result === 'Abandoned' ? attempts.length : Math.max(0, attempts.length - 1);
    const key = idempotencyKey(this.upgrade.uid, batch, hostname, action, target, attempt);
    const existing = this.findCall(key);
    const peer = this.peerRow(hostname);
    if (existing && existing.result !== 'Pending') return existing;
    // A call still Pending was recorded but never confirmed delivered (the shell crashed, or the hook was
    // unreachable): send it again with the same key, which the driver recognises.
    const call: DriverCall = existing ?? { key, server: hostname, batch, action, target, time: this.now.toISOString(), result: 'Pending' };
    if (!existing) this.status.driverCalls = [...(this.status.driverCalls ?? []), call];
    const request: DriverRequest = {
      idempotencyKey: key,
      action,
      upgrade: this.upgrade.name,
      batch,
      server: { identity: peer?.identity ?? '', hostname, ...(peer?.address === undefined ? {} : { address: peer.address }) },
      targetVersion: target,
      featureGates,
    };
    this.actions.push({ kind: 'callDriver', request });
    return call;
  }

  setPeerState(hostname: string, state: PeerStatus['state'], message?: string): void {
    const row = this.peerRow(hostname);
    if (!row) return;
    row.state = state;
    if (message === undefined) delete row.message;
    else row.message = message;
  }
}
