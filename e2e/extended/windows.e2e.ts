// Maintenance windows on real servers (docs/operations.md "Gates, windows and accepted risks"): three real
// kube-apiservers v1.35.4 behind haproxy, the operator as a process and the e2e webhook that really replaces servers.
// A one-minute window (UTC, every day) opens about a minute after the upgrade is created:
// - nothing is called before it opens (Waiting OutsideWindow, status.waiting.until the opening);
// - batch 1 starts in it, soaks past its end and finishes after it closed; batch 2 waits for the next window
//   (tomorrow's, in status.waiting.until);
// - an abort outside the window rolls back at once, and the upgrade ends RolledBack.
// Extended tier: it waits for wall-clock minutes (about 4 minutes).
//   node_modules/.bin/node --test --test-reporter=spec e2e/extended/windows.e2e.ts   (as root)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, ReplaceWebhook, OLD_VERSION, PROXY_GATE, waitFor, sleep } from '../cluster/index.ts';
import { createUpgrade, getUpgrade, installCrd, startOperator, type OperatorProcess } from '../support/operator.ts';
import { upgradeManifest } from '../support/rig.ts';
import { ABORT_ANNOTATION } from '../../src/api/vocabulary.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

/** healthPorts 18150-18159 belong to this file. */
const HEALTH_PORT = 18150;
const NAME = 'windowed';
const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';

let cluster: Cluster;
let hook: ReplaceWebhook;
let op: OperatorProcess;

function report(msg: string): void {
  process.stderr.write(`[windows] ${msg}\n`);
}

async function until(what: string, ms: number, ok: (u: ApiServerUpgrade) => boolean): Promise<ApiServerUpgrade> {
  return waitFor(what, ms, async () => {
    const u = await getUpgrade(cluster, NAME);
    return u && ok(u) ? u : undefined;
  }, 250);
}

before(async () => {
  cluster = await Cluster.start({ servers: 3, version: OLD_VERSION, featureGates: { [PROXY_GATE]: true }, verbose: true });
  await installCrd(cluster);
  hook = await ReplaceWebhook.start(cluster);
  op = await startOperator(cluster, { healthPort: HEALTH_PORT });
});

after(async () => {
  await op?.stop();
  await hook?.close();
  await cluster?.teardown();
});

test('a window opening a minute after creation: nothing is called before it opens; batch 1 finishes after it closes, batch 2 waits for the next; an abort outside it rolls back at once', async () => {
  // The next whole minute at least 50 s away: a window of one minute, every day.
  const open = Math.ceil((Date.now() + 50_000) / 60_000) * 60_000;
  const close = open + 60_000;
  const hhmm = new Date(open).toISOString().slice(11, 16);
  const base = upgradeManifest(NAME, hook, { strategy: { soakDuration: '75s' } });
  await createUpgrade(cluster, {
    ...base,
    spec: { ...(base.spec as Record<string, unknown>), window: { timeZone: 'UTC', recurring: [{ days: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'], start: hhmm, duration: '1m' }] } },
  });
  const waiting = await until('the upgrade to wait for the window', 60_000, (u) => u.status?.waiting?.reason === 'OutsideWindow');
  assert.equal(waiting.status?.waiting?.until, new Date(open).toISOString());
  assert.equal(waiting.status?.window?.nextStart, new Date(open).toISOString());
  assert.match(waiting.status?.waiting?.message ?? '', /^batch 1 waits for the maintenance window: next opens at/);
  // Up to 2 s before it opens, nothing was called.
  await sleep(Math.max(0, open - 2_000 - Date.now()));
  assert.equal(hook.calls.size, 0, 'no call before the window opened');
  assert.deepEqual((await getUpgrade(cluster, NAME))?.status?.driverCalls ?? [], []);

  const started = await until('batch 1 to start in the window', 60_000, (u) => (u.status?.driverCalls ?? []).length === 1);
  const first = started.status!.driverCalls![0]!;
  const at = Date.parse(first.time!);
  assert.ok(at >= open && at < close, `batch 1's call at ${first.time}, in the window ${new Date(open).toISOString()}..${new Date(close).toISOString()}`);
  report(`batch 1's first call ${((at - open) / 1000).toFixed(1)} s after the window opened`);

  const held = await until('batch 1 to finish and batch 2 to wait for the next window', 240_000, (u) => (u.status?.batch?.history ?? []).length === 1 && u.status?.waiting?.reason === 'OutsideWindow');
  const finished = Date.parse(held.status!.batch!.history![0]!.completedAt!);
  assert.ok(finished >= close, `batch 1 finished at ${new Date(finished).toISOString()}, after the window closed at ${new Date(close).toISOString()}`);
  assert.equal(held.status?.waiting?.until, new Date(open + 86_400_000).toISOString(), 'the next window: tomorrow');
  assert.match(held.status?.waiting?.message ?? '', /^batch 2 waits for the maintenance window/);
  await sleep(5_000);
  assert.equal((await getUpgrade(cluster, NAME))?.status?.driverCalls?.length, 1, 'no batch 2 call outside the window');
  assert.equal(hook.calls.size, 1);

  // An abort outside the window: the rollback starts at once.
  const abortAt = Date.now();
  const r = await cluster.request('lb', `${UPGRADES}/${NAME}`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify({ metadata: { annotations: { [ABORT_ANNOTATION]: 'now' } } }) });
  assert.equal(r.status, 200, r.body);
  const rolling = await until('a Rollback call', 30_000, (u) => (u.status?.driverCalls ?? []).some((c) => c.action === 'Rollback'));
  const rb = rolling.status!.driverCalls!.find((c) => c.action === 'Rollback')!;
  const after = Date.parse(rb.time!) - abortAt;
  assert.ok(after < 15_000, `the Rollback call came ${after} ms after the abort`);
  const done = await until('the upgrade to be RolledBack', 240_000, (u) => u.status?.phase === 'RolledBack');
  assert.equal(done.status?.waiting, undefined);
  report(`abort ${new Date(abortAt).toISOString()} (outside the window): Rollback ${rb.server} recorded ${after} ms later; RolledBack`);
});
