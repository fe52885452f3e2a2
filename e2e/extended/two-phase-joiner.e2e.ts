// TwoPhase on real servers, a server that joins on the from-version after phase two began (docs/two-phase.md):
// four v1.35.4 servers, cp-4 stopped (its identity Lease goes with a graceful stop) before the upgrade is created;
// once phase two began, cp-4 starts again and joins. The upgrade pauses MembershipChanged naming it; one resume
// gives it a single phase-two call (the target without emulation) and the upgrade ends Succeeded, with no other
// pause: the plan's stage never goes back to phase one.
// Extended tier (about 5 minutes):
//   node_modules/.bin/node --test --test-reporter=spec e2e/extended/two-phase-joiner.e2e.ts   (as root)
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { NEW_VERSION, waitFor, type Cluster } from '../cluster/index.ts';
import { freePort } from '../cluster/cluster.ts';
import { createUpgrade, getUpgrade } from '../support/operator.ts';
import { startRig, upgradeManifest } from '../support/rig.ts';
import { identityLeases } from '../support/identity-leases.ts';
import { RESUME_ANNOTATION } from '../../src/api/vocabulary.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const NAME = 'two-phase-joiner';
const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';

function report(msg: string): void {
  process.stderr.write(`[two-phase-joiner] ${msg}\n`);
}

async function until(cluster: Cluster, what: string, want: (u: ApiServerUpgrade) => boolean, within = 6 * 60_000): Promise<ApiServerUpgrade> {
  let last = '';
  return waitFor(what, within, async () => {
    const u = await getUpgrade(cluster, NAME);
    const line = `${u?.status?.phase} ${u?.status?.stage ?? ''} ${u?.status?.batch?.progress ?? ''} ${u?.status?.pause?.reason ?? ''}`;
    if (line !== last) report(last = line);
    return u && want(u) ? u : undefined;
  }, 500);
}

test('TwoPhase: a server that joins on v1.35.4 after phase two began gets one call to v1.36.3 without emulation; the upgrade ends Succeeded after one resume', async () => {
  const rig = await startRig({ gate: true, healthPort: await freePort(), servers: 4 });
  cleanups.push(() => rig.teardown());
  const { cluster, hook } = rig;
  await cluster.stop(3);
  await waitFor('cp-4\'s identity Lease gone after its graceful stop', 60_000, async () => ((await identityLeases(cluster)).length === 3 ? true : undefined), 500);

  await createUpgrade(cluster, upgradeManifest(NAME, hook, { strategy: { soakDuration: '20s', batchTimeout: '3m', phases: 'TwoPhase', phaseSoakDuration: '5s' } }));
  const inPhaseTwo = await until(cluster, 'phase two under way', (u) => u.status?.stage === 'API' || ['Paused', 'Failed', 'Succeeded'].includes(u.status?.phase ?? ''));
  assert.equal(inPhaseTwo.status?.stage, 'API', JSON.stringify(inPhaseTwo.status?.pause));
  assert.equal(inPhaseTwo.status?.phase, 'Upgrading');
  await cluster.start(3);
  report('cp-4 started on v1.35.4');

  const paused = await until(cluster, 'the joiner noticed', (u) => u.status?.phase !== 'Upgrading');
  assert.equal(paused.status?.phase, 'Paused', JSON.stringify(paused.status));
  assert.equal(paused.status?.pause?.reason, 'MembershipChanged');
  assert.match(paused.status?.pause?.message ?? '', /joined: cp-4/);
  assert.equal(paused.status?.stage, 'API');

  const r = await cluster.request('lb', `${UPGRADES}/${NAME}`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify({ metadata: { annotations: { [RESUME_ANNOTATION]: 'accept-cp-4' } } }) });
  assert.equal(r.status, 200, r.body);
  const stages = new Set<string>();
  const final = await until(cluster, 'Succeeded after the resume', (u) => {
    if (u.status?.observedResume === 'accept-cp-4' && u.status.stage) stages.add(u.status.stage);
    return u.status?.observedResume === 'accept-cp-4' && u.status.phase !== 'Upgrading';
  });
  await hook.idle();
  assert.equal(final.status?.phase, 'Succeeded', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.deepEqual([...stages], ['API'], 'the stage never went back to Binaries');
  const calls = [...hook.calls.values()].sort((a, b) => a.at - b.at).map((c) => `${c.action}:${c.hostname}@${c.emulatedVersion ?? '-'}`);
  assert.deepEqual(calls.filter((c) => c.includes(':cp-4@')), ['Upgrade:cp-4@-'], calls.join(', '));
  assert.equal(calls.length, 7, calls.join(', '));
  for (const s of cluster.servers) {
    const v = JSON.parse((await cluster.request(s.index, '/version')).body) as { gitVersion: string; emulationMinor?: string };
    assert.equal(`${v.gitVersion}/1.${v.emulationMinor ?? '?'}`, `${NEW_VERSION}/1.36`, `${s.name} on the target's own API`);
  }
  assert.deepEqual(final.status?.plan?.members, ['cp-1', 'cp-2', 'cp-3', 'cp-4']);
});
