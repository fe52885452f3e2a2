import type { ApiServerUpgradeStatus, DriverAction, DriverCall, PeerStatus, UpgradePhase } from '../api/types.generated.ts';
import { setCondition, type ConditionInput } from '../api/conditions.ts';
import type { ResolvedSpec } from '../api/defaults.ts';
import type { Action, DriverRequest } from './actions.ts';
import type { Observation, ObservedPeer } from './observation.ts';
import { idempotencyKey } from './keys.ts';
import { processIdentity } from './process-identity.ts';
import type { Policy } from './policy.ts';

import { safeMessage } from './redact.ts';
import { PROXY_GATE } from '../api/constants.ts';

export { PROXY_GATE };

/**
 * What a driver reported, after accepting a call, about the replacement it runs (src/drivers/driver.ts
 * `DriverReport`, the same shape). `failed` ends a call in flight Failed; `succeeded`, `failed` and `gone` on an
 * ended call settle it (driverSettledAt): from then on the driver runs nothing for it.
 */
export interface CallReport {
  kind: 'running' | 'succeeded' | 'failed' | 'unknown' | 'gone';
  message: string;
}

/** The upgrade object as the planner needs it. */
export interface UpgradeInput {
  name: string;
  uid: string;
  generation: number;
  annotations: Record<string, string>;
  /**
   * The driver's reports on the calls Accepted in the status planned from, by idempotency key, read by the shell
   * in this reconcile (never kept in memory across reconciles). A call without an entry (a driver without
   * reports, a read that failed) is judged from observation alone, as before.
   */
  driverReports?: Readonly<Record<string, CallReport>>;
}

/** The feature gates a call carries: the proxy gate when the call sets it, nothing otherwise. */
export function callGates(call: Pick<DriverCall, 'gate'>): Record<string, boolean> {
  return call.gate === undefined ? {} : { [PROXY_GATE]: call.gate };
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
  /** The operator's policy (--policy-file, src/plan/policy.ts); undefined when it runs without one. */
  readonly policy: Policy | undefined;
  status: ApiServerUpgradeStatus;
  readonly actions: Action[] = [];
  /** Keys of the calls first recorded in this step (dropped again if the step ends up stopping). */
  readonly newCalls = new Set<string>();
  requeueAfterMs: number | undefined;
  /** What the active phase is doing right now, for the Progressing condition's message (default: the phase). */
  progressMessage: string | undefined;

  /**
   * Why this step waits before its next call without pausing (src/plan/start-gates.ts settles it into status.waiting
   * and the Waiting condition when the step ends); undefined: it does not wait.
   */
  waiting: { reason: string; message: string; gate?: string; until?: string } | undefined;

  /** The phase the step started in (the status planned from). */
  readonly initialPhase: UpgradePhase | undefined;

  constructor(upgrade: UpgradeInput, spec: ResolvedSpec, status: ApiServerUpgradeStatus, obs: Observation, now: Date, policy?: Policy) {
    this.upgrade = upgrade;
    this.initialPhase = status.phase;
    this.policy = policy;
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
    // An Event's note is at most 1 KiB (events.k8s.io/v1), and may carry a server's or driver's words.
    this.actions.push({ kind: 'event', type, reason, note: safeMessage(note, { maxChars: 1024 }), ...(server === undefined ? {} : { server }) });
  }

  /** This step waits (a gate, the window, a preflight verdict that is not final): said in status.waiting. */
  wait(reason: string, message: string, extra: { gate?: string; until?: string } = {}): void {
    this.waiting = { reason, message, ...extra };
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

  /** The calls of one step (server, batch, action, target), oldest attempt first. */
  attempts(hostname: string, batch: number, action: DriverAction, target: string): DriverCall[] {
    return (this.status.driverCalls ?? []).filter((c) => c.server === hostname && c.batch === batch && c.action === action && c.target === target);
  }

  /**
   * Records a new attempt of a step as Requested and asks the shell to make it. The shell persists the
   * status before it calls, so a crash in between leaves a Requested call that is sent again, same key.
   */
  requestCall(action: DriverAction, batch: number, hostname: string, target: string, gate: boolean | undefined, emulatedVersion?: string): DriverCall {
    const attempt = this.attempts(hostname, batch, action, target).length;
    const key = idempotencyKey(this.upgrade.uid, batch, hostname, action, target, attempt);
    const observed = this.observed(hostname);
    const holderBefore = processIdentity(observed);
    const call: DriverCall = {
      key,
      server: hostname,
      ...(observed ? { identity: observed.identity } : {}),
      batch,
      action,
      target,
      ...(gate === undefined ? {} : { gate }),
      ...(emulatedVersion === undefined ? {} : { emulatedVersion }),
      time: this.now.toISOString(),
      ...(holderBefore === undefined ? {} : { holderBefore }),
      attempts: 0,
      result: 'Requested',
    };
    this.status.driverCalls = [...(this.status.driverCalls ?? []), call];
    this.newCalls.add(key);
    this.send(call);
    return call;
  }

  /** Asks the shell to deliver a recorded call (again: the key makes a repeat harmless). */
  send(call: DriverCall): void {
    const row = this.peerRow(call.server);
    const observed = this.observed(call.server);
    const address = observed?.address ?? row?.address;
    const request: DriverRequest = {
      idempotencyKey: call.key,
      action: call.action,
      upgrade: this.upgrade.name,
      batch: call.batch ?? 0,
      server: { identity: call.identity ?? observed?.identity ?? row?.identity ?? '', hostname: call.server, ...(address === undefined ? {} : { address }) },
      targetVersion: call.target ?? '',
      ...(call.emulatedVersion === undefined ? {} : { emulatedVersion: call.emulatedVersion }),
      featureGates: callGates(call),
    };
    this.actions.push({ kind: 'callDriver', request });
  }

  setPeerState(hostname: string, state: PeerStatus['state'], message?: string): void {
    const row = this.peerRow(hostname);
    if (!row) return;
    row.state = state;
    if (message === undefined) delete row.message;
    else row.message = message;
  }
}
