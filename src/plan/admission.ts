import type { ApiServerUpgrade } from '../api/types.generated.ts';
import { RETRY_ANNOTATION, isTerminal } from '../api/vocabulary.ts';

/**
 * An upgrade whose work is over: terminal, and its status computed from the current generation. Nothing is
 * observed or called for it (a spec edit after the end is still acknowledged once).
 */
export function isFinished(u: ApiServerUpgrade): boolean {
  const retry = u.metadata?.annotations?.[RETRY_ANNOTATION];
  const retryPending = u.status?.phase === 'Failed' && retry !== undefined && retry !== u.status.observedRetry;
  return isTerminal(u.status?.phase) && u.status?.observedGeneration === u.metadata?.generation && !retryPending;
}

function waitingToStart(u: ApiServerUpgrade): boolean {
  const phase = u.status?.phase;
  return phase === undefined || phase === 'Pending' || phase === 'Preflight';
}

/**
 * Two upgrades acting on one fleet would fight: one that is under way, or else the oldest, goes first.
 * Returns the name of the upgrade `u` must wait for, if any.
 */
export function blockingUpgrade(u: ApiServerUpgrade, all: readonly ApiServerUpgrade[]): string | undefined {
  if (!waitingToStart(u)) return undefined;
  const order = (x: ApiServerUpgrade): string => `${x.metadata?.creationTimestamp ?? ''}/${x.metadata?.name ?? ''}`;
  const other = all.find((o) => o.metadata?.name !== u.metadata?.name && !isTerminal(o.status?.phase) && (!waitingToStart(o) || order(o) < order(u)));
  return other?.metadata?.name;
}

/**
 * Whether an update of the object calls for a reconcile: a user changed the spec (generation), an action
 * annotation, or deletion. The operator's own status writes do not — reconciling on them made a hot loop
 * while a driver was unreachable (each attempt's status write woke the next attempt at once); the planner's
 * requeue sets the cadence instead.
 */
export function updateNeedsReconcile(before: ApiServerUpgrade, after: ApiServerUpgrade): boolean {
  const a = before.metadata ?? {};
  const b = after.metadata ?? {};
  if (a.generation !== b.generation || a.deletionTimestamp !== b.deletionTimestamp) return true;
  return JSON.stringify(a.annotations ?? {}) !== JSON.stringify(b.annotations ?? {});
}
