import type { DeadlineAction, PhaseTwoPolicy, PhaseTwoStart } from './types.generated.ts';
import { formatDuration, tryParseDuration } from './duration.ts';

/** spec.strategy.phaseTwo (or its frozen copy in status.plan) with the deadline parsed. */
export interface ResolvedPhaseTwo {
  start: PhaseTwoStart;
  /** Absent: the hold lasts until an approval or an abort. */
  deadlineMs?: number;
  onDeadline?: DeadlineAction;
}

/**
 * Resolves a phaseTwo policy; returns the problem as a string instead when it is not one the CRD admits (a deadline
 * without onDeadline or the reverse, a deadline without start Approval, a malformed duration), so the spec resolver
 * can refuse it and a frozen copy can be read fail-closed. Absent: Automatic, today's behaviour.
 */
export function resolvePhaseTwo(p: PhaseTwoPolicy | undefined): ResolvedPhaseTwo | string {
  const start = p?.start ?? 'Automatic';
  if (start !== 'Automatic' && start !== 'Approval') return `phaseTwo.start ${JSON.stringify(start)} must be Automatic or Approval`;
  if ((p?.deadline === undefined) !== (p?.onDeadline === undefined)) return 'phaseTwo.deadline and phaseTwo.onDeadline go together: a deadline must say what it does (Proceed or Rollback)';
  if (p?.deadline === undefined) return { start };
  if (start !== 'Approval') return 'phaseTwo.deadline needs start Approval: an automatic phase two has no hold to end';
  const ms = tryParseDuration(p.deadline);
  if (ms === undefined) return `phaseTwo.deadline ${JSON.stringify(p.deadline)} must be a Go duration such as 10s, 2m or 1h30m`;
  if (p.onDeadline !== 'Proceed' && p.onDeadline !== 'Rollback') return `phaseTwo.onDeadline ${JSON.stringify(p.onDeadline)} must be Proceed or Rollback`;
  return { start, deadlineMs: ms, onDeadline: p.onDeadline };
}

/** The policy to freeze into status.plan at preflight, from the resolved spec. */
export function phaseTwoToFreeze(p: ResolvedPhaseTwo): PhaseTwoPolicy {
  return { start: p.start, ...(p.deadlineMs === undefined || p.onDeadline === undefined ? {} : { deadline: formatDuration(p.deadlineMs), onDeadline: p.onDeadline }) };
}
