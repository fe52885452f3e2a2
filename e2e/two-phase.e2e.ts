// Two-phase upgrades on real servers (KEP-4330 compatibility versions): 3 × v1.35.4 -> v1.36.3 first as
// "v1.36.3 --emulated-version=1.35" (phase one), then the emulation lifted (phase two); a breach in each phase
// with onBreach Rollback.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { NEW_VERSION, OLD_VERSION, waitFor, type Cluster } from './cluster/index.ts';
import { createUpgrade, getUpgrade } from './support/operator.ts';
import { startRig, upgradeManifest, NEW_ONLY } from './support/rig.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';
const twoPhase = { soakDuration: '2s', batchTimeout: '3m', phases: 'TwoPhase', phaseSoakDuration: '10s' };

interface ServerVersion { gitVersion: string; emulationMinor?: string }
async function versions(cluster: Cluster): Promise<string[]> {
  return Promise.all(cluster.servers.map(async (s) => {
    const v = JSON.parse((await cluster.request(s.index, '/version')).body) as ServerVersion;
    return `${v.gitVersion}/1.${v.emulationMinor ?? '?'}`;
  }));
}

async function ownResources(cluster: Cluster, i: number): Promise<string> {
  const r = await cluster.request(i, '/apis', { headers: { Accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList;profile=nopeer' } });
  const doc = JSON.parse(r.body) as { items: { metadata: { name: string }; versions: { version: string; resources: { resource: string }[] }[] }[] };
  return doc.items.flatMap((g) => g.versions.flatMap((v) => v.resources.map((x) => `${g.metadata.name}/${v.version}/${x.resource}`))).sort().join('\n');
}

/** Proxied requests since each server started, by group/version/resource (v1.36 labels them; v1.35 does not). */
async function rerouted(cluster: Cluster): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const s of cluster.servers) {
    const m = (await cluster.request(s.index, '/metrics')).body;
    for (const l of m.split('\n')) {
      if (!l.startsWith('apiserver_rerouted_request_total')) continue;
      const label = (k: string): string => new RegExp(`[{,]\\s*${k}="([^"]*)"`).exec(l)?.[1] ?? '';
      const gvr = `${label('group')}/${label('version')}/${label('resource')}`;
      out.set(gvr, (out.get(gvr) ?? 0) + Number(l.split(' ').at(-1)));
    }
  }
  return out;
}

async function until(cluster: Cluster, name: string, want: (u: ApiServerUpgrade) => boolean, within = 6 * 60_000): Promise<ApiServerUpgrade> {
  let last = '';
  return waitFor(`${name}`, within, async () => {
    const u = await getUpgrade(cluster, name);
    const line = `${u?.status?.phase} ${u?.status?.stage ?? ''} ${u?.status?.batch?.progress ?? ''} ${u?.status?.pause?.message ?? ''}`;
    if (line !== last) process.stderr.write(`[${name}] ${(last = line)}\n`);
    if (u && want(u)) return u;
    const p = u?.status?.phase;
    if (p === 'Paused' || p === 'Failed' || p === 'RolledBack' || p === 'Succeeded') return u;
    return undefined;
  }, 500);
}

async function patchSpec(cluster: Cluster, name: string, spec: object, annotations?: Record<string, string>): Promise<void> {
  const r = await cluster.request('lb', `${UPGRADES}/${name}`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify({ spec, ...(annotations ? { metadata: { annotations } } : {}) }) });
  assert.equal(r.status, 200, r.body);
}

test('TwoPhase 3 × v1.35.4 -> v1.36.3: phase one changes binaries only (API, storage and proxy untouched), phase two the API; Succeeded', async () => {
  const rig = await startRig({ gate: true, healthPort: 18120 });
  cleanups.push(() => rig.teardown());
  const { cluster, hook, traffic } = rig;
  const oldResources = await ownResources(cluster, 0);
  const t0 = Date.now();
  await createUpgrade(cluster, upgradeManifest('two-phase', hook, { strategy: twoPhase }));
  const between = await until(cluster, 'two-phase', (u) => u.status?.batch?.phaseSoakUntil !== undefined);
  const phaseOneMs = Date.now() - t0;
  assert.equal(between.status?.phase, 'Upgrading', JSON.stringify(between.status?.pause));
  assert.deepEqual(await versions(cluster), cluster.servers.map(() => `${NEW_VERSION}/1.35`), 'after phase one every server runs the new binary emulating 1.35');
  for (const s of cluster.servers) assert.equal(await ownResources(cluster, s.index), oldResources, `${s.name} serves exactly what v1.35.4 served`);
  // Nothing of the API skew was proxied: every server serves the same built-ins. What a just-started server
  // forwards while its CRD informer syncs (the operator's own apiserverupgrades) is start-up, not skew.
  const proxied = [...(await rerouted(cluster))].filter(([gvr, n]) => n > 0 && !gvr.startsWith('upgrade.apiserver.dev/') && gvr !== '//');
  process.stderr.write(`phase one: proxied by group/version/resource ${JSON.stringify([...(await rerouted(cluster))])}\n`);
  assert.deepEqual(proxied, [], 'no built-in resource was proxied in phase one');
  assert.equal(traffic.count((x) => x.status === 200), 0, `the v1.36-only resource (${NEW_ONLY}) is not served in phase one`);
  assert.equal(between.status?.conditions?.find((c) => c.type === 'RollbackSafe')?.status, 'True', 'every storage version written in phase one is readable by v1.35.4');

  const t1 = Date.now();
  const final = await until(cluster, 'two-phase', (u) => u.status?.phase === 'Succeeded');
  const phaseTwoMs = Date.now() - t1;
  await hook.idle();
  await traffic.stop();
  assert.equal(final.status?.phase, 'Succeeded', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.deepEqual(await versions(cluster), cluster.servers.map(() => `${NEW_VERSION}/1.36`));
  const calls = [...hook.calls.values()].sort((a, b) => a.at - b.at).map((c) => `${c.action}:${c.hostname}@${c.emulatedVersion ?? '-'}`);
  assert.deepEqual(calls, ['Upgrade:cp-1@1.35', 'Upgrade:cp-2@1.35', 'Upgrade:cp-3@1.35', 'Upgrade:cp-1@-', 'Upgrade:cp-2@-', 'Upgrade:cp-3@-']);
  const firstServed = traffic.samples.find((x) => x.status === 200)?.at;
  assert.ok(firstServed !== undefined, 'the v1.36-only resource appears in phase two');
  const batch4 = final.status?.batch?.history?.find((h) => h.index === 4);
  const converged = Date.parse(batch4?.completedAt ?? '') - 2_000;
  process.stderr.write(`two-phase: phase one ${(phaseOneMs / 1000).toFixed(0)} s, phase two (incl. the ${twoPhase.phaseSoakDuration} soak) ${(phaseTwoMs / 1000).toFixed(0)} s; traffic after phase two began ${JSON.stringify(traffic.summary(firstServed))}\n`);
  assert.equal(traffic.count((x) => x.status === 404, converged), 0, 'no 404 for the new resource once the first lifted server converged');
});

test('TwoPhase: a breach in phase one rolls every server back to the v1.35.4 binary; objects written meanwhile stay readable', async () => {
  const rig = await startRig({ gate: true, healthPort: 18122 });
  cleanups.push(() => rig.teardown());
  const { cluster, hook } = rig;
  await createUpgrade(cluster, upgradeManifest('two-phase-rb1', hook, { strategy: twoPhase, analysis: { onBreach: 'Rollback', failureLimit: 1 } }));
  await until(cluster, 'two-phase-rb1', (u) => (u.status?.batch?.current ?? 0) >= 2);
  // Written by a server on the new binary, emulating 1.35: volumeattributesclasses are stored as v1 there.
  const vac = { apiVersion: 'storage.k8s.io/v1', kind: 'VolumeAttributesClass', metadata: { name: 'gold' }, driverName: 'csi.example.com', parameters: { iops: '100' } };
  const w = await cluster.request(0, '/apis/storage.k8s.io/v1/volumeattributesclasses', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(vac) });
  assert.equal(w.status, 201, w.body);
  await patchSpec(cluster, 'two-phase-rb1', { analysis: { thresholds: { latencyP99: '1ms' } } });
  const final = await until(cluster, 'two-phase-rb1', (u) => u.status?.phase === 'RolledBack');
  await hook.idle();
  assert.equal(final.status?.phase, 'RolledBack', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.deepEqual(await versions(cluster), cluster.servers.map(() => `${OLD_VERSION}/1.35`), 'every server back on the v1.35.4 binary');
  for (const s of cluster.servers) {
    const r = await cluster.request(s.index, '/apis/storage.k8s.io/v1/volumeattributesclasses/gold');
    assert.equal(r.status, 200, `${s.name} reads the object written during phase one: ${r.body}`);
  }
  assert.ok([...hook.calls.values()].filter((c) => c.action === 'Rollback').every((c) => c.emulatedVersion === undefined));
});

test('TwoPhase: a breach in phase two with a MutatingAdmissionPolicy v1 pauses naming it; with consent it re-emulates 1.35 and reports the orphan', async () => {
  const rig = await startRig({ gate: true, healthPort: 18124 });
  cleanups.push(() => rig.teardown());
  const { cluster, hook } = rig;
  const name = 'two-phase-rb2';
  // The breach is the test's own (the patch to 1ms below). Until then no bound is one a loaded machine crosses: a
  // breach before the policy exists (at load 25: the default 1 s latency, then the error ratios of the restarts)
  // rolls cp-1 back to emulating 1.35, and the policy's POST then meets a server that does not serve it (404).
  const loose = { latencyP99: '30s', errorRatio: 1, proxyErrorRatio: 1 };
  await createUpgrade(cluster, upgradeManifest(name, hook, { strategy: twoPhase, analysis: { onBreach: 'Rollback', failureLimit: 1, thresholds: loose } }));
  const lifted = await until(cluster, name, (u) => u.status?.phase === 'RollingBack' || (u.status?.stage === 'API' && (u.status?.batch?.history ?? []).some((h) => h.index === 4)));
  assert.equal(lifted.status?.phase, 'Upgrading', `cp-1 lifted to 1.36 while upgrading: ${JSON.stringify(lifted.status?.pause ?? lifted.status?.conditions)}`);
  const map = {
    apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingAdmissionPolicy', metadata: { name: 'label-configmaps' },
    spec: {
      matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }] },
      mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"mutated": "yes"}}}' } }],
      reinvocationPolicy: 'Never', failurePolicy: 'Fail',
    },
  };
  const w = await cluster.request(0, '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(map) });
  assert.equal(w.status, 201, w.body);
  await patchSpec(cluster, name, { analysis: { thresholds: { latencyP99: '1ms' } } });
  // A breach that comes before the operator listed the target-only objects (latency over the default 1 s at load,
  // before the patch above) pauses RollbackSafetyUnknown first; that pause re-checks, and names the orphan once listed.
  // until() returns on any pause: wait past RollbackSafetyUnknown here (at load 10 a latency breach with failureLimit 1
  // came while cp-1's phase-two Upgrade was in flight, before any server emulating 1.36 had its discovery read).
  const paused = await waitFor(`${name} paused on a known cause`, 6 * 60_000, async () => {
    const u = await getUpgrade(cluster, name);
    return u && (['Failed', 'RolledBack', 'Succeeded'].includes(u.status?.phase ?? '') || (u.status?.phase === 'Paused' && u.status.pause?.reason !== 'RollbackSafetyUnknown')) ? u : undefined;
  }, 500);
  assert.equal(paused.status?.pause?.reason, 'RollbackOrphans', JSON.stringify(paused.status?.pause));
  assert.match(paused.status?.pause?.message ?? '', /label-configmaps/);
  assert.equal(paused.status?.conditions?.find((c) => c.type === 'RollbackSafe')?.reason, 'WouldOrphanObjects');
  const rollbacksBefore = [...hook.calls.values()].filter((c) => c.action === 'Rollback').length;
  assert.equal(rollbacksBefore, 0, 'nothing was rolled back while paused');

  await patchSpec(cluster, name, { rollback: { orphanedObjects: 'Proceed' } }, { 'upgrade.apiserver.dev/resume': 'consent' });
  await waitFor('the resume to be taken', 60_000, async () => ((await getUpgrade(cluster, name))?.status?.observedResume === 'consent' ? true : undefined), 300);
  const final = await until(cluster, name, (u) => u.status?.phase === 'RolledBack');
  await hook.idle();
  assert.equal(final.status?.phase, 'RolledBack', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.deepEqual(await versions(cluster), cluster.servers.map(() => `${NEW_VERSION}/1.35`), 'every server back on the 1.35 API (new binary, emulating)');
  assert.deepEqual(final.status?.orphanedObjects?.map((o) => `${o.resource}:${(o.names ?? []).join(',')}`), ['admissionregistration.k8s.io/v1/mutatingadmissionpolicies:label-configmaps']);
  assert.ok([...hook.calls.values()].filter((c) => c.action === 'Rollback').every((c) => c.emulatedVersion === '1.35'));
  const gone = await cluster.request('lb', '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies/label-configmaps');
  assert.equal(gone.status, 404, 'the orphaned policy is no longer served — which is why the operator asked first');
});
