// Where scripts/capture-argocd-phases.ts records the ApiServerUpgrade objects of each phase, and how it names and
// picks them; test/argocd/recorded-phases.test.ts reads them back.
import { join } from 'node:path';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

export const PHASES_DIR = join(import.meta.dirname, '..', 'test', 'fixtures', 'argocd-phases');

/** The file an observed object of this phase (and pause reason) is recorded in. */
export function phaseFile(u: ApiServerUpgrade): string | undefined {
  const phase = u.status?.phase;
  if (phase === undefined) return undefined;
  const reason = phase === 'Paused' ? u.status?.pause?.reason : undefined;
  return `${phase}${reason ? `-${reason}` : ''}.yaml`;
}

/**
 * The generation the operator last acted on: status.observedGeneration, or — before it sets that, as for an upgrade
 * waiting in Pending behind another — the newest observedGeneration of its conditions. health.lua reads it the same way.
 */
export function observedGeneration(u: ApiServerUpgrade): number | undefined {
  if (u.status?.observedGeneration !== undefined) return u.status.observedGeneration;
  const g = (u.status?.conditions ?? []).map((c) => c.observedGeneration).filter((x): x is number => typeof x === 'number');
  return g.length === 0 ? undefined : Math.max(...g);
}
