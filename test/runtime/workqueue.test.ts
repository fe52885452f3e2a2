import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkQueue } from '../../src/runtime/workqueue.ts';
import { ItemExponentialRateLimiter } from '../../src/runtime/rate-limiter.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

test('duplicate adds of a waiting key are merged', async () => {
  const q = new WorkQueue();
  const runs: string[] = [];
  q.add('a');
  q.add('a');
  q.add('b');
  q.add('a');
  assert.equal(q.length, 2);
  q.start(async (k) => void runs.push(k));
  await sleep(10);
  assert.deepEqual(runs, ['a', 'b']);
});

test('a key added while processing runs exactly once more afterwards, never concurrently', async () => {
  const q = new WorkQueue({ concurrency: 4 });
  const gate = deferred();
  let active = 0;
  let maxActive = 0;
  let runs = 0;
  q.start(async () => {
    active++;
    maxActive = Math.max(maxActive, active);
    runs++;
    if (runs === 1) await gate.promise;
    active--;
  });
  q.add('k');
  await sleep(5);
  q.add('k');
  q.add('k');
  q.add('k');
  await sleep(5);
  assert.equal(runs, 1, 'second run waits for the first');
  gate.resolve();
  await sleep(10);
  assert.equal(runs, 2);
  assert.equal(maxActive, 1);
});

test('distinct keys run in parallel up to the concurrency', async () => {
  const q = new WorkQueue({ concurrency: 2 });
  const gate = deferred();
  let active = 0;
  let maxActive = 0;
  q.start(async () => {
    active++;
    maxActive = Math.max(maxActive, active);
    await gate.promise;
    active--;
  });
  for (const k of ['a', 'b', 'c']) q.add(k);
  await sleep(5);
  assert.equal(maxActive, 2);
  gate.resolve();
  await sleep(5);
  assert.equal(active, 0);
});

test('failures requeue with growing per-key backoff; success forgets it', async () => {
  const q = new WorkQueue({ rateLimiter: new ItemExponentialRateLimiter({ baseMs: 10, maxMs: 1000 }) });
  const times: number[] = [];
  const delays: number[] = [];
  q.start(async () => {
    times.push(Date.now());
    if (times.length < 4) throw new Error('boom');
  });
  const q2 = q as unknown as { hooks: { onError?: (k: string, e: unknown, d: number) => void } };
  q2.hooks.onError = (_k, _e, d) => delays.push(d);
  q.add('x');
  await sleep(150);
  assert.equal(times.length, 4);
  assert.deepEqual(delays, [10, 20, 40]);
  const gaps = times.slice(1).map((t, i) => t - times[i]!);
  assert.ok(gaps[0]! >= 9 && gaps[1]! >= 19 && gaps[2]! >= 39, `gaps ${gaps.join(',')}`);
  assert.equal(q.numRequeues('x'), 0, 'success forgot the failures');
});

test('requeueAfterMs and addAfter delay a key; the earliest pending delay wins', async () => {
  const q = new WorkQueue();
  const runs: [string, number][] = [];
  const t0 = Date.now();
  q.start(async (k) => {
    runs.push([k, Date.now() - t0]);
    if (k === 'r' && runs.filter(([x]) => x === 'r').length === 1) return { requeueAfterMs: 30 };
  });
  q.addAfter('a', 60);
  q.addAfter('a', 20);
  q.addAfter('a', 80);
  q.add('r');
  await sleep(120);
  const a = runs.filter(([k]) => k === 'a');
  const r = runs.filter(([k]) => k === 'r');
  assert.equal(a.length, 1);
  assert.ok(a[0]![1] >= 19 && a[0]![1] < 60, `a ran at ${a[0]![1]}`);
  assert.equal(r.length, 2);
  assert.ok(r[1]![1] >= 29, `r requeued at ${r[1]![1]}`);
});

test('shutdown stops intake, drops queued and delayed keys, waits for in-flight work', async () => {
  const q = new WorkQueue();
  const gate = deferred();
  const runs: string[] = [];
  q.start(async (k) => {
    runs.push(k);
    if (k === 'slow') await gate.promise;
  });
  q.add('slow');
  q.add('queued');
  q.addAfter('later', 20);
  await sleep(5);
  const done = q.shutdown(1000);
  q.add('new');
  setTimeout(() => gate.resolve(), 20);
  const r = await done;
  assert.equal(r.drained, true);
  await sleep(40);
  assert.deepEqual(runs, ['slow']);
});

test('shutdown gives up at the deadline and reports what is still running', async () => {
  const q = new WorkQueue();
  q.start(() => new Promise<void>(() => undefined));
  q.add('stuck');
  await sleep(5);
  const r = await q.shutdown(20);
  assert.deepEqual(r, { drained: false, inFlight: ['stuck'] });
});
