// The running process after each call (docs/version-skew.md "The running process"), on real servers: v1.35.4 -> v1.36.3
// through the rig's webhook. The gate pass on v1.35.4 (which serves neither /flagz nor /statusz) is NotServed, and
// each Upgrade's server is Confirmed by its own pages. The platform starts cp-2 on v1.36.3 without the proxy gate its
// call set: /version says the target, but /flagz says the gate is off, so the call is not counted as landed and the
// upgrade pauses RunningProcessDiffers naming cp-2, --feature-gates and both values. cp-2 restarted with the gate, the
// pause lifts by itself and the upgrade Succeeds. Each server's CoordinatedLeaderElection gate is read (off).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { NEW_VERSION, PROXY_GATE, waitFor } from './cluster/index.ts';
import { createUpgrade, getUpgrade } from './support/operator.ts';
import { startRig, upgradeManifest, type Rig } from './support/rig.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

const NAME = 'running';

let rig: Rig | undefined;
after(async () => {
  await rig?.teardown();
});

async function waitUpgrade(r: Rig, what: string, ms: number, ok: (u: ApiServerUpgrade) => boolean): Promise<ApiServerUpgrade> {
  let last: ApiServerUpgrade | undefined;
  return waitFor(what, ms, async () => {
    last = (await getUpgrade(r.cluster, NAME)) ?? last;
    return last && ok(last) ? last : undefined;
  }, 250).catch((err: Error) => {
    throw new Error(`${err.message}; last seen: ${JSON.stringify({ phase: last?.status?.phase, pause: last?.status?.pause, peers: last?.status?.peers })}`, { cause: err });
  });
}

const calls = (r: Rig): string[] => [...r.hook.calls.values()].map((x) => `${x.action}:${x.hostname}`);

test('each call is checked against the server\'s own /flagz and /statusz: NotServed on v1.35.4, Confirmed on v1.36.3; a process without its call\'s gate pauses RunningProcessDiffers until it runs with it', async () => {
  const t0 = Date.now();
  const at = (): string => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
  rig = await startRig({ gate: false, healthPort: 18533 });
  const r = rig;
  const c = r.cluster;
  r.hook.gatesInstead.set('cp-2', { action: 'Upgrade', featureGates: { [PROXY_GATE]: false } });
  await createUpgrade(c, upgradeManifest(NAME, r.hook));
  process.stderr.write(`[${at()}] cluster, operator and hook up; upgrade created\n`);

  const paused = await waitUpgrade(r, 'paused RunningProcessDiffers', 4 * 60_000, (u) => u.status?.phase === 'Paused' || u.status?.phase === 'Succeeded' || u.status?.phase === 'Failed');
  process.stderr.write(`[${at()}] paused: ${paused.status?.pause?.message}\n`);
  assert.equal(paused.status?.pause?.reason, 'RunningProcessDiffers', JSON.stringify(paused.status?.pause));
  assert.match(paused.status?.pause?.message ?? '', /cp-2 \(Upgrade to v1\.36\.3\): \/flagz --feature-gates: the call meant UnknownVersionInteroperabilityProxy=true, the process runs UnknownVersionInteroperabilityProxy=false/);
  assert.deepEqual(paused.status?.pause?.servers, ['cp-2']);
  const row = (u: ApiServerUpgrade, h: string) => u.status?.peers?.find((p) => p.hostname === h);
  // cp-1's Upgrade was confirmed by both pages; cp-2's call is held in flight; cp-3 still has its gate pass, on v1.35.4.
  assert.equal(row(paused, 'cp-1')?.running?.state, 'Confirmed', JSON.stringify(row(paused, 'cp-1')?.running));
  assert.equal(row(paused, 'cp-1')?.running?.flagz, 'Read');
  assert.equal(row(paused, 'cp-1')?.running?.statusz, 'Read');
  assert.equal(row(paused, 'cp-2')?.running?.state, 'Differs');
  assert.equal(row(paused, 'cp-3')?.running?.state, 'NotServed', JSON.stringify(row(paused, 'cp-3')?.running));
  const held = paused.status?.driverCalls?.find((x) => x.server === 'cp-2' && x.action === 'Upgrade');
  assert.equal(held?.result, 'Accepted', 'not counted as landed');
  assert.equal(row(paused, 'cp-2')?.running?.call, held?.key);
  const v = JSON.parse((await c.request(1, '/version')).body) as { gitVersion: string };
  assert.equal(v.gitVersion, NEW_VERSION, 'the server itself reports the target: only its running flags differ');
  assert.deepEqual(calls(r), ['EnableProxy:cp-1', 'EnableProxy:cp-2', 'EnableProxy:cp-3', 'Upgrade:cp-1', 'Upgrade:cp-2']);
  // Each server's CoordinatedLeaderElection gate, from its /metrics (beta, off by default in v1.35 and v1.36).
  assert.deepEqual(paused.status?.peers?.map((p) => [p.hostname, p.coordinatedLeaderElection]), [['cp-1', 'Disabled'], ['cp-2', 'Disabled'], ['cp-3', 'Disabled']]);

  // It stays held: several looks later, no other call and still paused.
  await new Promise((res) => setTimeout(res, 6_000));
  const still = await getUpgrade(c, NAME);
  assert.equal(still?.status?.pause?.reason, 'RunningProcessDiffers');
  assert.equal(calls(r).length, 5);

  // The platform restarts cp-2 with the gate its call set: the pause lifts by itself, the call lands, the upgrade ends.
  const fixed = Date.now();
  await c.replace(1, { version: NEW_VERSION, featureGates: { [PROXY_GATE]: true } });
  const end = await waitUpgrade(r, 'Succeeded', 4 * 60_000, (u) => u.status?.phase === 'Succeeded' || u.status?.phase === 'Failed');
  process.stderr.write(`[${at()}] ${end.status?.phase} ${((Date.now() - fixed) / 1000).toFixed(1)} s after cp-2 was restarted with the gate\n`);
  assert.equal(end.status?.phase, 'Succeeded');
  assert.equal(end.status?.driverCalls?.find((x) => x.key === held?.key)?.result, 'Done');
  for (const h of ['cp-1', 'cp-2', 'cp-3']) assert.equal(row(end, h)?.running?.state, 'Confirmed', `${h}: ${JSON.stringify(row(end, h)?.running)}`);
  assert.deepEqual(calls(r), ['EnableProxy:cp-1', 'EnableProxy:cp-2', 'EnableProxy:cp-3', 'Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.deepEqual(r.op.exits, [], 'the operator never restarted');
  process.stderr.write(`[${at()}] done\n`);
});
