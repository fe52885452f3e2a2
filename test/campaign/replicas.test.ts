// The campaign's operator replicas (e2e/campaign/replicas.ts) act as a Deployment would: a replica that exits by itself
// (a leader that lost its Lease) is started again after a backoff that doubles; one the harness killed, or stopped, is
// not (the fault decides what comes back).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Replicas } from '../../e2e/campaign/replicas.ts';
import type { OperatorProcess } from '../../e2e/support/operator.ts';
import { sleep } from '../../e2e/cluster/index.ts';
import { standInProcess } from './stand-in-process.ts';

/** A stand-in process that exits by itself after `lifeMs` (or is killed first); it never leads. */
function fakeOperator(lifeMs: number): OperatorProcess {
  return standInProcess(`setTimeout(() => process.exit(3), ${lifeMs})`, 'SIGTERM');
}

test('a replica that exits by itself is started again after a doubling backoff; none after stop()', async () => {
  const starts: number[] = [];
  const notes: string[] = [];
  const replicas = new Replicas(async () => {
    starts.push(Date.now());
    return fakeOperator(starts.length <= 2 ? 100 : 60_000);
  }, notes, { firstBackoffMs: 300 });
  await replicas.add();
  for (const until = Date.now() + 10_000; starts.length < 3 && Date.now() < until;) await sleep(50);
  assert.equal(starts.length, 3, `two exits, two restarts (${notes.join('; ')})`);
  const gaps = [starts[1]! - starts[0]!, starts[2]! - starts[1]!];
  // Each gap is the process's 100 ms life plus the backoff: 300 ms, then 600 ms.
  // (Lower bounds only: starting a process at load takes longer, never shorter.)
  assert.ok(gaps[0]! >= 400 && gaps[1]! >= 700, `backoff doubles: ${gaps.join(', ')} ms`);
  assert.deepEqual(notes, [0.3, 0.6].map((s) => `an operator replica exited by itself (exit 3); started again after ${s} s`));
  await replicas.stop();
  await sleep(1_000);
  assert.equal(starts.length, 3, 'a replica stopped with the run is not started again');
});

test('a replica the harness killed is not started again by the supervisor', async () => {
  let starts = 0;
  const replicas = new Replicas(async () => {
    starts++;
    return fakeOperator(60_000);
  }, [], { firstBackoffMs: 100 });
  await replicas.add();
  // Every replica SIGKILLed, healed at once: the fault itself starts two new ones, and nothing else comes back.
  // (It then waits for one to lead, which these never do: stop() ends that wait.)
  const fault = replicas.killAllReplicas(async () => undefined);
  await sleep(800);
  assert.equal(starts, 3, 'one at the start, two from the fault');
  await replicas.stop();
  await fault;
});
