// hedged(): a second attempt beside a slow first one; the first success wins and the loser is aborted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hedged } from '../../src/runtime/hedge.ts';

const after = <T>(ms: number, value: T, signal: AbortSignal, fail = false): Promise<T> => new Promise((resolve, reject) => {
  const t = setTimeout(() => (fail ? reject(new Error(String(value))) : resolve(value)), ms);
  signal.addEventListener('abort', () => {
    clearTimeout(t);
    reject(new DOMException('aborted', 'AbortError'));
  });
});

test('a first attempt that answers in time is the only one', async () => {
  const started: boolean[] = [];
  assert.equal(await hedged((signal, second) => (started.push(second), after(10, 'first', signal)), 100), 'first');
  await new Promise((r) => setTimeout(r, 150));
  assert.deepEqual(started, [false]);
});

test('a held first attempt: the second wins and the first is aborted', async () => {
  const signals: AbortSignal[] = [];
  const got = await hedged((signal, second) => (signals.push(signal), second ? after(10, 'second', signal) : after(10_000, 'first', signal)), 50);
  assert.equal(got, 'second');
  assert.equal(signals.length, 2);
  assert.equal(signals[0]!.aborted, true, 'the held one is cancelled');
  assert.equal(signals[1]!.aborted, false);
});

test('a first attempt failing before the second starts ends the call with its error', async () => {
  const started: boolean[] = [];
  await assert.rejects(hedged((signal, second) => (started.push(second), after(10, 'refused', signal, true)), 100), /refused/);
  await new Promise((r) => setTimeout(r, 150));
  assert.deepEqual(started, [false], 'no second try: retrying failures is the caller\'s policy');
});

test('one failing after the second started waits for the other; both failing gives the first failure', async () => {
  assert.equal(await hedged((signal, second) => (second ? after(60, 'second', signal) : after(80, 'first failed', signal, true)), 50), 'second');
  assert.equal(await hedged((signal, second) => (second ? after(5, 'second failed', signal, true) : after(100, 'first', signal)), 50), 'first');
  await assert.rejects(hedged((signal, second) => (second ? after(100, 'second failed', signal, true) : after(80, 'first failed', signal, true)), 50), /first failed/);
});

test('a second try declined when it is due: the first alone decides, its own error included', async () => {
  const started: boolean[] = [];
  const attempt = (ok: boolean) => (signal: AbortSignal, second: boolean): Promise<string> =>
    (started.push(second), second ? after(5, 'the second try', signal, true) : after(80, ok ? 'first' : 'first: 409 Conflict', signal, !ok));
  await assert.rejects(hedged(attempt(false), 20, () => false), /^Error: first: 409 Conflict$/);
  assert.equal(await hedged(attempt(true), 20, () => false), 'first');
  assert.deepEqual(started, [false, false], 'no second try was started');
});
