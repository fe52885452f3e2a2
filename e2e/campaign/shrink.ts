// Cuts a violating schedule down to the faults it needs (`npm run campaign -- --shrink FILE`): each fault is left out
// in turn and the upgrade run again; a fault whose removal still breaks one of the same rules stays out. This is the
// last stage of delta debugging (one fault at a time), the one that pays on schedules of 1 to 4 faults. Each run is
// minutes on real servers, so each candidate is tried once: a violation that did not come back keeps its fault, and
// the result is minimal only as far as one run per candidate could tell.
import type { Schedule } from './schedule.ts';

/** The schedule with fault `i` left out; everything else (spec, window, the other faults' times) as it was. */
export function withoutFault(s: Schedule, i: number): Schedule {
  return { ...s, faults: s.faults.filter((_, j) => j !== i) };
}

/** A run shows the same failure when it breaks at least one rule the original broke. */
export function sameFailure(originalRules: readonly string[], rules: readonly string[]): boolean {
  return rules.some((r) => originalRules.includes(r));
}

export interface ShrinkResult {
  schedule: Schedule;
  /** The runs made, each with the faults it had and whether the failure came back. */
  tried: { faults: number; reproduced: boolean }[];
}

/**
 * Leaves out each fault in turn, from the last drawn to the first, keeping every removal after which `breaks`
 * still reports the failure — down to none, when the upgrade fails without any fault. `breaks` runs one upgrade; `budget` caps the number of runs (the rest keep their faults).
 */
export async function shrink(s: Schedule, breaks: (candidate: Schedule) => Promise<boolean>, budget = Infinity): Promise<ShrinkResult> {
  let current = s;
  const tried: ShrinkResult['tried'] = [];
  for (let i = current.faults.length - 1; i >= 0 && tried.length < budget; i--) {
    const candidate = withoutFault(current, i);
    const reproduced = await breaks(candidate);
    tried.push({ faults: candidate.faults.length, reproduced });
    if (reproduced) current = candidate;
  }
  return { schedule: current, tried };
}
