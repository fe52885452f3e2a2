import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { mapLimit, mapLimitSettled } from '../../src/observe/map-limit.ts';

describe('mapLimit', () => {
  it('keeps input order and never exceeds the limit', async () => {
    let inFlight = 0;
    let peak = 0;
    const got = await mapLimit([5, 1, 4, 2, 3, 0], 2, async (n) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await sleep(n);
      inFlight--;
      return n * 10;
    });
    assert.deepEqual(got, [50, 10, 40, 20, 30, 0]);
    assert.equal(peak, 2);
  });

  it('settles every item, and the strict form rejects with the first failure', async () => {
    const fn = async (n: number) => {
      if (n % 2 === 1) throw new Error(`odd ${n}`);
      return n;
    };
    const settled = await mapLimitSettled([0, 1, 2, 3], 3, fn);
    assert.deepEqual(settled.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled', 'rejected']);
    await assert.rejects(mapLimit([0, 1, 2, 3], 3, fn), /odd 1/);
  });

  it('handles an empty list and refuses a bad limit', async () => {
    assert.deepEqual(await mapLimit([], 3, async () => 1), []);
    await assert.rejects(mapLimit([1], 0, async () => 1), RangeError);
  });
});
