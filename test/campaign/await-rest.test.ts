// awaitRest in liveness runs (e2e/campaign/result.ts): a resume the API server refuses is noted and tried again after
// the hold, never the run's end. Mocked clocks: the loop polls each second and holds a pause 20 s before resuming.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { setImmediate as tickQueue } from 'node:timers/promises';
import { awaitRest } from '../../e2e/campaign/result.ts';
import { RESUMES_AFTER_HEAL } from '../../e2e/campaign/schedule.ts';
import type { StatusRecorder } from '../../e2e/campaign/status-recorder.ts';

const T0 = 1_800_000_000_000;

/**
 * awaitRest on mocked clocks for a recorder stuck at `last`, from the heal on: how many seconds it ran, and whether it
 * ended normally. `resume`, when given, is its liveness resume.
 */
async function restsAfter(last: Record<string, unknown>, o: { inFlight?: boolean; resume?: () => Promise<void>; resumes?: number[]; notes?: string[] } = {}): Promise<{ seconds: number; settled: 'resolved' | 'rejected' | undefined }> {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: T0 });
  try {
    // Only `last` is read; a recorder needs a cluster to watch.
    const status = { last: { t: T0, ...last } } as unknown as StatusRecorder;
    let settled: 'resolved' | 'rejected' | undefined;
    const done = awaitRest({
      createdAt: T0, windowMs: 300_000, healedAt: () => T0, status, lastDriverActivity: () => 0, inFlight: () => o.inFlight ?? false,
      resume: o.resume, resumes: o.resumes, notes: o.notes,
    }).then(() => void (settled = 'resolved'), () => void (settled = 'rejected'));
    let s = 0;
    for (; s < 700 && settled === undefined; s++) {
      mock.timers.tick(1000);
      await tickQueue();
    }
    await done;
    return { seconds: s, settled };
  } finally {
    mock.timers.reset();
  }
}

test('a resume that does not land is noted, counted, and tried again after the hold', async () => {
  const resumes: number[] = [];
  const notes: string[] = [];
  let tries = 0;
  const { settled } = await restsAfter({ phase: 'Paused', pauseReason: 'AnalysisBreach' }, {
    resume: () => {
      tries++;
      return Promise.reject(new Error('patch: HTTP 503 the server is currently unable to handle the request'));
    },
    resumes, notes,
  });
  assert.equal(settled, 'resolved', 'the wait ends normally');
  assert.equal(tries, RESUMES_AFTER_HEAL, 'each resume is tried, up to the limit');
  assert.equal(resumes.length, RESUMES_AFTER_HEAL);
  assert.ok(resumes.every((t, i) => i === 0 || t - resumes[i - 1]! > 20_000), `tries held 20 s apart: ${resumes.map((t) => t - T0).join(', ')}`);
  assert.equal(notes.length, RESUMES_AFTER_HEAL);
  assert.match(notes[0]!, /resume after the heal: patch: HTTP 503/);
});

test('a preflight waiting MixedVersions rests after a minute, never resumed; another preflight wait runs the window out', async () => {
  let resumed = 0;
  const resume = async (): Promise<void> => void resumed++;
  const mixed = await restsAfter({ phase: 'Preflight', waiting: 'MixedVersions' }, { resume, resumes: [] });
  assert.ok(mixed.seconds > 60 && mixed.seconds < 70, `rested after ${mixed.seconds} s`);
  assert.equal(resumed, 0, 'a preflight wait is not a pause: nothing to resume');
  const unhealthy = await restsAfter({ phase: 'Preflight', waiting: 'UnhealthyFleet' }, { resume, resumes: [] });
  assert.ok(unhealthy.seconds >= 300, `waited the window: ${unhealthy.seconds} s`);
  const busy = await restsAfter({ phase: 'Preflight', waiting: 'MixedVersions' }, { inFlight: true, resume, resumes: [] });
  assert.ok(busy.seconds >= 300, `a replacement in flight: waited ${busy.seconds} s`);
});
