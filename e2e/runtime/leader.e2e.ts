// Two electors on one Lease through the balancer: exactly one leads; a released lease changes hands
// within one jittered retry period; a leader that vanishes without releasing is replaced after leaseDuration.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, waitFor, sleep } from '../cluster/index.ts';
import { LeaderElector } from '../../src/runtime/leader.ts';
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

// A candidate polls every retryPeriod jittered as client-go's JitterUntil(retryPeriod, 1.2): 2 s to
// 4.4 s. A released lease is taken at the candidate's next poll, so the handover takes at most
// 4.4 s plus the release and acquire round trips; allow 0.8 s for those.
const RELEASE_HANDOVER_BOUND_MS = 2_000 * (1 + 1.2) + 800;

test('release hands over within one jittered retry period (at most 4.4 s)', { timeout: 60_000 }, async () => {
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

test('without release, the other takes over after leaseDuration (15 s), not before', { timeout: 60_000 }, async () => {
  const log: string[] = [];
  const a = elector('auo-kill', 'a', log);
  const b = elector('auo-kill', 'b', log);
  a.start();
  b.start();
  try {
    const first = await leaderOf(a, b);
    const second = first === a ? b : a;
    await sleep(2500);
    const t0 = Date.now();
    await first.stop({ release: false });
    await sleep(10_000);
    assert.equal(second.isLeader, false, 'nobody takes a lease before it expires');
    await waitFor('the other to lead', 15_000, async () => (second.isLeader ? true : undefined), 100);
    const took = Date.now() - t0;
    process.stderr.write(`takeover without release: ${took} ms\n`);
    assert.ok(took >= 12_000 && took < 22_000, `took ${took} ms`);
  } finally {
    await Promise.all([a.stop({ release: false }), b.stop({ release: false })]);
  }
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
