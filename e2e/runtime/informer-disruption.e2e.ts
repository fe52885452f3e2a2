// The informer keeps delivering events while every apiserver behind the balancer is replaced in
// turn and one is SIGKILLed: it restarts its watch as often as needed and never stops.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { KubeAccess } from '../../src/runtime/kubeconfig.ts';
import { Cluster, waitFor } from '../cluster/index.ts';
import { Informer } from '../../src/runtime/informer.ts';
import type { KubeObject } from '../../src/runtime/object-cache.ts';
import { createLease, deleteLease, e2eLogger, kubeConfigOf, LEASES, listLeaseNames } from './support.ts';

let cluster: Cluster;
before(async () => {
  // Compacting etcd every 5 s makes an old resourceVersion unservable from etcd too, so the 410 test is deterministic.
  cluster = await Cluster.start({ servers: 3, verbose: true, extraFlags: ['--etcd-compaction-interval=5s'] });
});
after(async () => {
  await cluster?.teardown();
});

test('an informer on Leases rides through 3 graceful replacements and a SIGKILL', { timeout: 150_000 }, async () => {
  const labels = { test: 'informer-disruption' };
  const seen: string[] = [];
  const informer = new Informer<KubeObject>({
    kubeConfig: kubeConfigOf(cluster), path: LEASES, labelSelector: 'test=informer-disruption', name: 'leases',
    logger: e2eLogger(),
    // A stopping apiserver only exits once its open watches end (see docs/runtime.md): short
    // watches keep each graceful stop to seconds instead of its 60 s shutdown timeout.
    timeoutSeconds: 8, watchdogMarginMs: 5000,
  });
  informer.addHandlers({ add: (o) => seen.push(o.metadata?.name ?? '') });
  informer.start();
  try {
    await informer.synced;
    const sees = async (name: string): Promise<void> => {
      await createLease(cluster, name, labels);
      await waitFor(`informer to see ${name}`, 30_000, async () => (informer.get(`default/${name}`) ? true : undefined));
    };
    await sees('before');
    const steps: [string, () => Promise<unknown>][] = [
      ['replace-0', () => cluster.replace(0, {})],
      ['replace-1', () => cluster.replace(1, {})],
      ['replace-2', () => cluster.replace(2, {})],
      ['kill-1', async () => { await cluster.kill(1); await cluster.start(1); }],
    ];
    for (const [name, disrupt] of steps) {
      // A create while the disruption is under way, and one after it.
      const during = disrupt();
      await sees(`during-${name}`);
      await during;
      await sees(`after-${name}`);
      process.stderr.write(`${name}: restarts ${JSON.stringify(informer.stats())}\n`);
    }
    const stats = informer.stats();
    const restarts = Object.values(stats.restarts).reduce((a, b) => a + b, 0);
    assert.ok(restarts >= 1, `the informer restarted its watch (${JSON.stringify(stats)})`);
    for (const [name] of steps) assert.ok(seen.includes(`after-${name}`), `saw the create after ${name}`);
    assert.equal(informer.hasSynced, true);
  } finally {
    await informer.stop();
  }
});

test('all servers restarted while the informer backs off: it resumes (relisting on 410), replays the delete, and matches a fresh list', { timeout: 120_000 }, async () => {
  const labels = { test: 'informer-gone' };
  for (const n of ['a', 'b', 'c']) await createLease(cluster, `gone-${n}`, labels);
  const deleted: string[] = [];
  const informer = new Informer<KubeObject>({
    kubeConfig: kubeConfigOf(cluster), path: LEASES, labelSelector: 'test=informer-gone', name: 'gone',
    logger: e2eLogger(), timeoutSeconds: 300,
    // A long fixed backoff leaves a window in which the collection changes unseen.
    backoff: { baseMs: 25_000, maxMs: 25_000, jitter: 0 },
  });
  informer.addHandlers({ delete: (o) => deleted.push(o.metadata?.name ?? '') });
  informer.start();
  try {
    await informer.synced;
    assert.deepEqual(informer.keys().sort(), ['default/gone-a', 'default/gone-b', 'default/gone-c']);
    // Restarted servers build their watch caches from the current revision, and etcd has compacted
    // our older resourceVersion away: the re-watch is answered with 410.
    await Promise.all([0, 1, 2].map((i) => cluster.kill(i)));
    await Promise.all([0, 1, 2].map((i) => cluster.start(i)));
    await deleteLease(cluster, 'gone-b');
    await createLease(cluster, 'gone-d', labels);
    // Whether the server answers 410 (then we relist and diff) or still serves the old resourceVersion
    // (then the delete arrives as a watch event) is up to it; either way the cache must converge.
    const fresh = (await listLeaseNames(cluster, 'test=informer-gone')).map((n) => `default/${n}`);
    await waitFor('cache to match a fresh list', 60_000, async () => (JSON.stringify(informer.keys().sort()) === JSON.stringify(fresh) ? true : undefined));
    assert.deepEqual(deleted, ['gone-b']);
    const stats = informer.stats();
    process.stderr.write(`410: ${JSON.stringify(stats)}\n`);
    // Every server here has WatchList on (the default since 1.34): the state is read by streaming lists only.
    assert.equal(stats.listed, 0, `no LIST: ${JSON.stringify(stats)}`);
    assert.equal(stats.streamed, stats.relists);
  } finally {
    await informer.stop();
  }
});

test('a watch silent past maxSilenceMs is resumed (no relist); resync() relists at once, at most once per interval', { timeout: 60_000 }, async () => {
  const labels = { test: 'informer-silent' };
  const informer = new Informer<KubeObject>({
    kubeConfig: kubeConfigOf(cluster), path: LEASES, labelSelector: 'test=informer-silent', name: 'silent',
    logger: e2eLogger(), timeoutSeconds: 300, maxSilenceMs: 2000,
  });
  informer.start();
  try {
    await informer.synced;
    // Nothing matches: the watch stays silent, as one served by a kube-apiserver that lost etcd does.
    await waitFor('two watchdog restarts', 20_000, async () => ((informer.stats().restarts.watchdog ?? 0) >= 2 ? true : undefined), 200);
    assert.equal(informer.stats().relists, 1, 'a silent watch resumes from its resourceVersion: no LIST');
    await createLease(cluster, 'silent-a', labels);
    await waitFor('the resumed watch to deliver', 20_000, async () => (informer.get('default/silent-a') ? true : undefined), 100);
    assert.equal(informer.stats().relists, 1);

    assert.equal(informer.resync('test: the cache is behind', 10_000), true);
    await waitFor('the resync to relist', 20_000, async () => (informer.stats().relists === 2 ? true : undefined), 100);
    assert.equal(informer.stats().restarts.resync, 1);
    assert.deepEqual(informer.keys(), ['default/silent-a']);
    assert.equal(informer.resync('again at once', 10_000), false, 'at most once per interval: no LIST loop');
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(informer.stats().relists, 2);
    assert.equal(informer.stats().listed, 0, 'the resync read the state with a streaming list');
  } finally {
    await informer.stop();
    await deleteLease(cluster, 'silent-a').catch(() => undefined);
  }
});

// Last: it leaves cp-3 with WatchList off.
test('a server that refuses streaming lists (WatchList off) is listed instead; the watch and resync() work as before', { timeout: 90_000 }, async () => {
  await cluster.replace(2, { featureGates: { WatchList: false } });
  const labels = { test: 'informer-no-watchlist' };
  const kc = KubeAccess.fromFile(cluster.server(2).kubeconfig);
  const informer = new Informer<KubeObject>({
    kubeConfig: kc, path: LEASES, labelSelector: 'test=informer-no-watchlist', name: 'no-watchlist', logger: e2eLogger(), timeoutSeconds: 300,
  });
  informer.start();
  try {
    await informer.synced;
    assert.deepEqual(informer.stats(), { restarts: {}, relists: 1, streamed: 0, listed: 1 });
    await createLease(cluster, 'nowl-a', labels);
    await waitFor('the watch to deliver', 20_000, async () => (informer.get('default/nowl-a') ? true : undefined), 100);
    assert.equal(informer.resync('test: the cache is behind'), true);
    await waitFor('the resync to list', 20_000, async () => (informer.stats().relists === 2 ? true : undefined), 100);
    assert.deepEqual({ ...informer.stats(), restarts: undefined }, { restarts: undefined, relists: 2, streamed: 0, listed: 2 });
    assert.deepEqual(informer.keys(), ['default/nowl-a']);
  } finally {
    await informer.stop();
    await deleteLease(cluster, 'nowl-a').catch(() => undefined);
  }
});
