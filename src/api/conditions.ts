import type { Condition, ConditionStatus } from './types.generated.ts';
import { CONDITION_REASON_PATTERN, compile } from './patterns.ts';

/**
 * Typed helpers for status.conditions in the style of fluxcd's pkg/runtime/conditions: callers never
 * build condition JSON by hand. Functions return new arrays and never mutate their input, so the pure
 * planner can compute a new status from an old one.
 */

/** The condition types this API defines. */
export const CONDITION_TYPES = [
  'Progressing',
  'Paused',
  'Degraded',
  'PreflightPassed',
  'DiscoveryConverged',
  'RollbackSafe',
  'Complete',
  'ProxyTrustVerified',
  'KubeadmPreflightPassed',
  'KubeadmConfigUpdated',
  'FlagProofPassed',
  'Waiting',
] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];

/** The fields a caller decides; the rest (lastTransitionTime) is derived. */
export interface ConditionInput {
  type: ConditionType;
  status: ConditionStatus;
  /** CamelCase, such as BatchConverged or AnalysisBreach. */
  reason: string;
  message: string;
  /** metadata.generation the condition was computed from. */
  observedGeneration?: number;
}

const REASON = compile(CONDITION_REASON_PATTERN);

/** Thrown for a reason the API server would reject, so the bug shows in a unit test, not in a failed status write. */
export class ConditionReasonError extends Error {
  override readonly name = 'ConditionReasonError';
}

/**
 * Returns `conditions` with `input` set. lastTransitionTime changes only when the status changes, so a
 * condition that keeps its status keeps the time it first got it (reason and message still update).
 */
export function setCondition(conditions: readonly Condition[] | undefined, input: ConditionInput, now: Date): Condition[] {
  if (!REASON.test(input.reason) || input.reason.length > 1024) {
    throw new ConditionReasonError(`condition reason must be CamelCase: ${JSON.stringify(input.reason)}`);
  }
  const list = [...(conditions ?? [])];
  const index = list.findIndex((c) => c.type === input.type);
  const existing = index === -1 ? undefined : list[index];
  const next: Condition = {
    type: input.type,
    status: input.status,
    reason: input.reason,
    message: input.message,
    lastTransitionTime: existing !== undefined && existing.status === input.status ? existing.lastTransitionTime : now.toISOString(),
    ...(input.observedGeneration === undefined ? {} : { observedGeneration: input.observedGeneration }),
  };
  if (index === -1) list.push(next);
  else list[index] = next;
  return list;
}

/** The condition of a type, if present. */
export function getCondition(conditions: readonly Condition[] | undefined, type: ConditionType): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Returns `conditions` without the condition of a type. */
export function removeCondition(conditions: readonly Condition[] | undefined, type: ConditionType): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

export function isTrue(conditions: readonly Condition[] | undefined, type: ConditionType): boolean {
  return getCondition(conditions, type)?.status === 'True';
}

export function isFalse(conditions: readonly Condition[] | undefined, type: ConditionType): boolean {
  return getCondition(conditions, type)?.status === 'False';
}

/** Absent or Unknown. */
export function isUnknown(conditions: readonly Condition[] | undefined, type: ConditionType): boolean {
  const c = getCondition(conditions, type);
  return c === undefined || c.status === 'Unknown';
}

/** True when the condition is present and was computed from `generation` (not stale). */
export function isCurrent(conditions: readonly Condition[] | undefined, type: ConditionType, generation: number | undefined): boolean {
  const c = getCondition(conditions, type);
  return c !== undefined && c.observedGeneration === generation;
}
