// An operator rollout as `helm upgrade` makes one: the chart's Deployment has strategy RollingUpdate with
// maxUnavailable 1 and maxSurge 0 and terminationGracePeriodSeconds 40 (charts/*/templates/deployment.yaml,
// values.yaml). One replica at a time: the old one gets SIGTERM (SIGKILL once the grace period ran out), a new one
// starts at once (the Deployment does not wait for a terminating Pod) and the next old replica goes only once the new
// one is ready (/readyz). The new replicas run the same code as the old ones: what this models is new processes taking
// over mid-upgrade, possibly mid-call; a chart upgrade across releases is e2e/extended/operator-lifecycle.e2e.ts.
import type { OperatorProcess } from '../support/operator.ts';
import type { Span } from './history-check.ts';
import { leadsSince, type Replicas } from './replicas.ts';

/** The chart's terminationGracePeriodSeconds. */
export const ROLLOUT_GRACE_MS = 40_000;

const alive = (op: OperatorProcess): boolean => op.child.exitCode === null && op.child.signalCode === null;

/** SIGTERM, and SIGKILL once `graceMs` ran out; resolves when the process ended, with whether it needed the SIGKILL. */
export async function terminate(op: OperatorProcess, graceMs: number): Promise<boolean> {
  if (!alive(op)) return false;
  const done = new Promise((r) => op.child.once('exit', r));
  op.child.kill('SIGTERM');
  let killed = false;
  const t = setTimeout(() => {
    killed = true;
    op.child.kill('SIGKILL');
  }, graceMs);
  await done;
  clearTimeout(t);
  return killed;
}

/**
 * Rolls every live replica over, one at a time; records when no replica led (Replicas.leaderAfter from each SIGTERM)
 * and notes a replica that needed the SIGKILL. Returns the rollout's span: the first SIGTERM to the last new replica
 * ready (a terminating replica may end later: its own span is in the blind spans).
 */
export async function rollOut(replicas: Replicas, notes: string[], graceMs = ROLLOUT_GRACE_MS): Promise<Span> {
  const from = Date.now();
  const old = replicas.ops.filter(alive);
  const ends: Promise<unknown>[] = [];
  for (const op of old.length ? old : [undefined]) {
    if (op) {
      replicas.retire(op);
      const since = Date.now();
      // The leader: the live replica that started leading last.
      const leader = replicas.ops.filter(alive).map((x) => ({ x, t: leadsSince(x) })).filter((x) => x.t !== undefined).sort((a, b) => b.t! - a.t!)[0]?.x;
      ends.push(terminate(op, graceMs).then((killed) => {
        if (killed) notes.push(`operator-rollout: a replica outlived its ${graceMs / 1000} s grace period and was SIGKILLed`);
      }));
      // Nothing leads from the leader's SIGTERM until another replica does.
      if (leader === op) ends.push(replicas.leaderAfter(since));
    }
    await replicas.add();
  }
  const to = Date.now();
  await Promise.all(ends);
  return { from, to };
}
