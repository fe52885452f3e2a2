// Two electors on one Lease through the balancer: exactly one leads; a released lease changes hands within one
// standby poll; a leader that vanishes without releasing is replaced at leaseDuration by the standby's own clock.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, waitFor, sleep } from '../cluster/index.ts';
import { DEFAULTS, LeaderElector } from '../../src/runtime/leader.ts';
import { e2eLogger, kubeConfigOf } from './support.ts';

let cluster: Cluster;
before(async () => {
  cluster = await Cluster.start({ servers: 3, verbose: true });
});
after(async () => {
  await cluster?.teardown();
});

function elector(name: string, identity: string, log: string[]): LeaderElector {
  return new LeaderElector({
    kubeConfig: kubeConfigOf(cluster), namespace: 'kube-system', name, identity, logger: e2eLogger(),
    onStartedLeading: () => log.push(`${identity} started`),
    onStoppedLeading: () => log.push(`${identity} stopped`),
  });
}

async function leaderOf(a: LeaderElector, b: LeaderElector): Promise<LeaderElector> {
  return waitFor('a leader', 30_000, async () => {
    const leaders = [a, b].filter((e) => e.isLeader);
    assert.ok(leaders.length <= 1, 'never two leaders');
    return leaders[0];
  }, 100);
}

// A candidate looks at a held lease every standbyPoll (500 ms, +10% jitter). A released lease is taken at its next
// look, so the handover takes at most 550 ms plus four round trips through haproxy (the release's GET and PUT, the
// candidate's GET and PUT); allow 1.5 s for those on a loaded machine (measured 1.4 s in all at a load average of 37).
// (Before: client-go's candidate poll, retryPeriod jittered by 1.2, 2 s to 4.4 s; measured 3.6 s.)
const RELEASE_HANDOVER_BOUND_MS = DEFAULTS.standbyPollMs * 1.1 + 1_500;

test('release hands over within one standby poll (at most 0.55 s) plus round trips', { timeout: 60_000 }, async () => {
  const log: string[] = [];
  const a = elector('auo-release', 'a', log);
  const b = elector('auo-release', 'b', log);
  a.start();
  b.start();
  try {
    const first = await leaderOf(a, b);
    const second = first === a ? b : a;
    await sleep(3000);
    assert.equal(first.isLeader, true);
    assert.equal(second.isLeader, false);
    const t0 = Date.now();
    await first.stop({ release: true });
    await waitFor('the other to lead', 10_000, async () => (second.isLeader ? true : undefined), 50);
    const took = Date.now() - t0;
    process.stderr.write(`handover after release: ${took} ms\n`);
    assert.ok(took < RELEASE_HANDOVER_BOUND_MS, `took ${took} ms, bound ${RELEASE_HANDOVER_BOUND_MS} ms`);
    assert.deepEqual(log, [`${first.identity} started`, `${first.identity} stopped`, `${second.identity} started`]);
  } finally {
    await Promise.all([a.stop({ release: false }), b.stop({ release: false })]);
  }
});

// Without a release, the candidate's clock for the last renewal starts when it sees it: at most one standby poll
// after it was written, which was at most one retryPeriod (and the renewal's round trip) before the leader vanished.
// It takes over at the expiry by its own clock (it looks then): leaseDuration after that, within a round trip.
const TAKEOVER_MIN_MS = DEFAULTS.leaseDurationMs - DEFAULTS.retryPeriodMs - 1_000;
const TAKEOVER_MAX_MS = DEFAULTS.leaseDurationMs + DEFAULTS.standbyPollMs * 1.1 + 1_000;

test(`without release, the other takes over after leaseDuration (${DEFAULTS.leaseDurationMs / 1000} s), not before (3 rounds)`, { timeout: 150_000 }, async () => {
  const took: number[] = [];
  for (const round of [1, 2, 3]) {
    const log: string[] = [];
    const a = elector(`auo-kill-${round}`, 'a', log);
    const b = elector(`auo-kill-${round}`, 'b', log);
    a.start();
    b.start();
    try {
      const first = await leaderOf(a, b);
      const second = first === a ? b : a;
      // Vanish at a different point of the leader's 2 s renew period each round.
      await sleep(2500 + round * 600);
      const t0 = Date.now();
      await first.stop({ release: false });
      await sleep(TAKEOVER_MIN_MS - 500);
      assert.equal(second.isLeader, false, 'nobody takes a lease before it expires');
      await waitFor('the other to lead', 15_000, async () => (second.isLeader ? true : undefined), 20);
      took.push(Date.now() - t0);
      process.stderr.write(`takeover without release, round ${round}: ${took.at(-1)} ms\n`);
    } finally {
      await Promise.all([a.stop({ release: false }), b.stop({ release: false })]);
    }
  }
  for (const t of took) assert.ok(t >= TAKEOVER_MIN_MS && t < TAKEOVER_MAX_MS, `took ${took.join(', ')} ms, expected ${TAKEOVER_MIN_MS}-${TAKEOVER_MAX_MS} ms`);
});

test('the leader keeps leading while the server it talks to is replaced', { timeout: 90_000 }, async () => {
  const log: string[] = [];
  const a = elector('auo-replace', 'a', log);
  a.start();
  try {
    await waitFor('a to lead', 30_000, async () => (a.isLeader ? true : undefined), 100);
    for (const i of [0, 1, 2]) await cluster.replace(i, {});
    assert.equal(a.isLeader, true);
    assert.deepEqual(log, ['a started']);
  } finally {
    await a.stop({ release: true });
  }
});
