// The campaign's operator rollout (e2e/campaign/rollout.ts) does what the chart's RollingUpdate does on helm upgrade:
// one replica at a time, SIGTERM and SIGKILL after the grace period, a new replica for each old one, and a replica it
// ended is not started again as if it had exited by itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Replicas } from '../../e2e/campaign/replicas.ts';
import { rollOut, terminate } from '../../e2e/campaign/rollout.ts';
import type { OperatorProcess } from '../../e2e/support/operator.ts';
import { sleep } from '../../e2e/cluster/index.ts';
import { standInProcess } from './stand-in-process.ts';

/** A stand-in process: it ends on SIGTERM, or, with `ignoreTerm`, only on SIGKILL; it never leads. */
function process_(ignoreTerm: boolean): OperatorProcess {
  return standInProcess(ignoreTerm ? "process.on('SIGTERM', () => undefined); setInterval(() => undefined, 1000)" : 'setInterval(() => undefined, 1000)', 'SIGKILL');
}

test('terminate: SIGTERM, and SIGKILL only once the grace period ran out', async () => {
  const polite = process_(false);
  await sleep(300);
  assert.equal(await terminate(polite, 5_000), false);
  assert.equal(polite.exits[0]?.signal, 'SIGTERM');
  const stubborn = process_(true);
  // Its SIGTERM handler must be installed before the signal, or the default action ends it.
  await sleep(500);
  const t = Date.now();
  assert.equal(await terminate(stubborn, 400), true);
  // A timer runs on the event loop's cached millisecond clock, so by Date.now() a 400 ms grace can end at 399 ms.
  assert.ok(Date.now() - t >= 398, 'the grace period is waited out');
  assert.equal(stubborn.exits[0]?.signal, 'SIGKILL');
});

test('a rollout replaces every live replica with a new one, one at a time, and the supervisor restarts none of the old', async () => {
  const started: OperatorProcess[] = [];
  const notes: string[] = [];
  const replicas = new Replicas(async () => {
    const p = process_(started.length === 1);
    started.push(p);
    await sleep(200);
    return p;
  }, notes, { firstBackoffMs: 100 });
  await replicas.add();
  await replicas.add();
  const span = await rollOut(replicas, notes, 300);
  assert.equal(started.length, 4, 'two old replicas, two new ones');
  assert.ok(span.to > span.from);
  await sleep(800);
  assert.equal(started.length, 4, 'no old replica came back by the crash-loop backoff');
  assert.ok(started.slice(0, 2).every((p) => p.exits.length === 1), 'both old replicas ended');
  assert.ok(started.slice(2).every((p) => p.exits.length === 0), 'both new replicas run');
  assert.deepEqual(notes, ['operator-rollout: a replica outlived its 0.3 s grace period and was SIGKILLed']);
  await replicas.stop();
});
