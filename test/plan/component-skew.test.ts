import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { Sim, peer, spec, OLD, NEW } from './fleet.ts';
import { ABORT_ANNOTATION, RESUME_ANNOTATION } from '../../src/plan/index.ts';
import type { ObservedComponent, ObservedComponents } from '../../src/plan/component-skew.ts';
import { componentPreflight, rollbackSkew } from '../../src/plan/component-skew.ts';
import { componentsFromPods, observeComponents, versionOfImage, COMPONENT_PODS_PATH, COMPONENT_PODS_SELECTOR } from '../../src/observe/components.ts';

/** The phase, read afresh (assertions narrow `sim.status?.phase` for the compiler; the simulation changes it). */
const phaseOf = (sim: Sim): string | undefined => sim.status?.phase;
const threeOld = () => [peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on'), peer('cp-3', OLD, 'on')];

function kcm(node: string, version: string | undefined): ObservedComponent {
  return { component: 'kube-controller-manager', pod: `kube-system/kube-controller-manager-${node}`, node, ...(version ? { version, image: `registry.k8s.io/kube-controller-manager:${version}` } : { unknown: 'its image has no tag' }) };
}
function scheduler(node: string, version: string): ObservedComponent {
  return { component: 'kube-scheduler', pod: `kube-system/kube-scheduler-${node}`, node, version, image: `registry.k8s.io/kube-scheduler:${version}` };
}
const all = (v: string): ObservedComponents => ({ pods: ['cp-1', 'cp-2', 'cp-3'].flatMap((n) => [kcm(n, v), scheduler(n, v)]) });

function pod(name: string, component: string, image: string | undefined, over: Partial<V1Pod> = {}): V1Pod {
  return {
    metadata: { name, namespace: 'kube-system', labels: { component, tier: 'control-plane' } },
    spec: { nodeName: 'cp-1', containers: [{ name: component, ...(image === undefined ? {} : { image }) }] },
    status: { phase: 'Running' },
    ...over,
  };
}

test('the version is read from the image tag, checked against strict patterns; anything else is unknown', () => {
  assert.deepEqual(versionOfImage('registry.k8s.io/kube-controller-manager:v1.36.3'), { version: 'v1.36.3' });
  assert.deepEqual(versionOfImage(`registry.k8s.io:5000/kube-scheduler:v1.35.4@sha256:${'a'.repeat(64)}`), { version: 'v1.35.4' });
  // Kubernetes' build writes a version's + as _ in image tags.
  assert.deepEqual(versionOfImage('registry.k8s.io/kube-scheduler:v1.36.0-alpha.1.5_0123abcd'), { version: 'v1.36.0-alpha.1.5+0123abcd' });
  assert.ok('unknown' in versionOfImage(`registry.k8s.io/kube-scheduler@sha256:${'a'.repeat(64)}`));
  assert.ok('unknown' in versionOfImage('registry.k8s.io/kube-scheduler'));
  assert.ok('unknown' in versionOfImage('registry.k8s.io/kube-scheduler:latest'));
  assert.ok('unknown' in versionOfImage('registry.k8s.io/kube-scheduler:v1.36'));
  assert.ok('unknown' in versionOfImage('evil image; rm -rf /:v1.36.3'));
  assert.ok('unknown' in versionOfImage(`r.example/${'a'.repeat(600)}:v1.36.3`));
  assert.ok('unknown' in versionOfImage(undefined));
});

test('mirror Pods become components with node, Pod and version; terminal Pods are left out; bad names are not kept as text', () => {
  assert.equal(COMPONENT_PODS_SELECTOR, 'tier=control-plane,component in (kube-controller-manager,kube-scheduler)');
  const o = componentsFromPods([
    pod('kube-controller-manager-cp-1', 'kube-controller-manager', 'registry.k8s.io/kube-controller-manager:v1.36.3'),
    pod('kube-scheduler-cp-1', 'kube-scheduler', undefined),
    pod('old', 'kube-scheduler', 'registry.k8s.io/kube-scheduler:v1.37.0', { status: { phase: 'Failed' } }),
    pod('Bad Name', 'kube-controller-manager', 'registry.k8s.io/kube-controller-manager:v1.35.4', { spec: { nodeName: 'x;y', containers: [{ name: 'kube-controller-manager', image: 'registry.k8s.io/kube-controller-manager:v1.35.4' }] } }),
    pod('other', 'etcd', 'registry.k8s.io/etcd:3.6.0'),
  ]);
  assert.ok('pods' in o);
  assert.deepEqual(o.pods.map((c) => [c.component, c.pod, c.node, c.version ?? `unknown: ${c.unknown}`]), [
    ['kube-controller-manager', 'kube-system/kube-controller-manager-cp-1', 'cp-1', 'v1.36.3'],
    ['kube-scheduler', 'kube-system/kube-scheduler-cp-1', 'cp-1', 'unknown: the Pod has no container image'],
    ['kube-controller-manager', 'kube-system/(invalid name)', '', 'v1.35.4'],
  ]);
  assert.deepEqual(componentsFromPods(Array.from({ length: 257 }, (_, i) => pod(`p${i}`, 'kube-scheduler', 'r/kube-scheduler:v1.35.4'))), { error: `more than 256 Pods match ${COMPONENT_PODS_SELECTOR}` });
});

test('preflight: a component newer than the target is named (component, node, version); by minor, so a newer patch passes', () => {
  assert.equal(componentPreflight({ pods: [kcm('cp-1', OLD), scheduler('cp-2', OLD)] }, NEW).ok, true, 'one minor older than the target is within the policy');
  const r = componentPreflight({ pods: [kcm('cp-1', OLD), kcm('cp-2', 'v1.37.2')] }, NEW);
  assert.equal(r.ok, false);
  assert.ok(!r.ok && r.reason === 'ComponentNewerThanTarget');
  assert.match(!r.ok ? r.message : '', /kube-controller-manager on node cp-2 \(Pod kube-system\/kube-controller-manager-cp-2\) runs v1\.37\.2, newer than v1\.36\.3/);
  assert.equal(componentPreflight({ pods: [kcm('cp-1', 'v1.36.9')] }, NEW).ok, true);
  const unknown = componentPreflight({ pods: [kcm('cp-1', undefined)] }, NEW);
  assert.ok(!unknown.ok && unknown.reason === 'ComponentVersionUnknown' && /cp-1.*version unknown \(its image has no tag\)/.test(unknown.message));
  const unlisted = componentPreflight({ error: 'HTTP 403' }, NEW);
  assert.ok(!unlisted.ok && unlisted.reason === 'ComponentVersionUnknown' && unlisted.message.includes('HTTP 403'));
  assert.deepEqual(componentPreflight({ pods: [] }, NEW), { ok: true, note: 'no kube-controller-manager or kube-scheduler Pod in kube-system: their versions are not checked' });
  assert.deepEqual(componentPreflight(undefined, NEW), { ok: true });
});

test('the planner refuses to start an upgrade whose target is older than a kube-controller-manager, calling nothing; it starts once the component is back', () => {
  const sim = new Sim(threeOld(), spec({ targetVersion: NEW }));
  sim.extra.components = { pods: [kcm('cp-1', OLD), kcm('cp-2', 'v1.37.2'), scheduler('cp-1', OLD)] };
  sim.step();
  assert.equal(sim.status?.phase, 'Preflight');
  assert.equal(sim.condition('PreflightPassed')?.reason, 'ComponentNewerThanTarget');
  assert.match(sim.condition('PreflightPassed')!.message, /kube-controller-manager on node cp-2 .* runs v1\.37\.2/);
  assert.deepEqual(sim.calls(), []);
  assert.deepEqual(sim.status?.components?.map((c) => `${c.component}/${c.node}=${c.version}`), ['kube-controller-manager/cp-1=v1.35.4', 'kube-controller-manager/cp-2=v1.37.2', 'kube-scheduler/cp-1=v1.35.4']);
  sim.extra.components = all(OLD);
  sim.step();
  assert.equal(sim.condition('PreflightPassed')?.status, 'True');
});

test('a component of unknown version holds preflight (fail closed)', () => {
  const sim = new Sim(threeOld());
  sim.extra.components = { pods: [kcm('cp-1', undefined)] };
  sim.step();
  assert.equal(sim.condition('PreflightPassed')?.reason, 'ComponentVersionUnknown');
  assert.deepEqual(sim.calls(), []);
});

/** Two servers on the target, then cp-1's kube-controller-manager upgraded to the target by hand, then an abort. */
function abortedWithNewerComponent(): Sim {
  const sim = new Sim(threeOld());
  sim.extra.components = all(OLD);
  sim.step();
  sim.step();
  sim.applyDriverCalls(); // cp-1 upgraded
  sim.step();
  sim.step();
  sim.applyDriverCalls(); // cp-2 upgraded
  assert.equal(sim.status?.phase, 'Upgrading');
  sim.extra.components = { pods: [kcm('cp-1', NEW), kcm('cp-2', OLD), kcm('cp-3', OLD), scheduler('cp-1', OLD)] };
  sim.upgrade = { ...sim.upgrade, annotations: { [ABORT_ANNOTATION]: 'a1' } };
  sim.step();
  return sim;
}

test('an abort that would leave a kube-controller-manager newer than the from-version pauses ComponentSkew naming it, with no Rollback call', () => {
  const sim = abortedWithNewerComponent();
  assert.equal(sim.status?.phase, 'Paused');
  assert.equal(sim.status?.pause?.reason, 'ComponentSkew');
  assert.match(sim.status?.pause?.message ?? '', /rollback not started: a rollback to v1\.35\.4 would leave kube-controller-manager on node cp-1 \(Pod kube-system\/kube-controller-manager-cp-1\) runs v1\.36\.3, newer than v1\.35\.4/);
  assert.deepEqual(sim.status?.pause?.servers, ['kube-controller-manager/cp-1']);
  assert.ok(sim.status?.pause?.heldRollback?.includes('aborted'));
  assert.deepEqual(sim.calls(), []);
  // Still newer: it stays paused, calling nothing.
  sim.step();
  assert.equal(sim.status?.pause?.reason, 'ComponentSkew');
  assert.deepEqual(sim.calls(), []);
  // The component brought back: the pause lifts by itself and the rollback starts.
  sim.extra.components = all(OLD);
  sim.step();
  assert.equal(sim.status?.phase, 'RollingBack');
  const calls: string[] = [];
  for (let i = 0; i < 40 && sim.status?.phase === 'RollingBack'; i++) {
    sim.step();
    calls.push(...sim.calls());
    sim.applyDriverCalls();
  }
  assert.deepEqual(calls, ['Rollback:cp-2', 'Rollback:cp-1']);
  assert.equal(sim.status?.phase, 'RolledBack');
});

test('a resume of a ComponentSkew pause continues the upgrade instead', () => {
  const sim = abortedWithNewerComponent();
  sim.upgrade = { ...sim.upgrade, annotations: { ...sim.upgrade.annotations, [RESUME_ANNOTATION]: 'r1' } };
  sim.step();
  assert.equal(sim.status?.phase, 'Upgrading');
});

test('a component upgraded while the rollback runs stops further Rollback calls (paused, naming it)', () => {
  const sim = new Sim(threeOld());
  sim.extra.components = all(OLD);
  sim.step();
  sim.step();
  sim.applyDriverCalls();
  sim.step();
  sim.step();
  sim.applyDriverCalls();
  sim.upgrade = { ...sim.upgrade, annotations: { [ABORT_ANNOTATION]: 'a1' } };
  sim.step();
  assert.equal(sim.status?.phase, 'RollingBack');
  sim.step();
  assert.deepEqual(sim.calls(), ['Rollback:cp-2']);
  sim.applyDriverCalls();
  sim.extra.components = { pods: [scheduler('cp-3', NEW)] };
  for (let i = 0; i < 5; i++) {
    sim.step();
    assert.deepEqual(sim.calls(), []);
    sim.applyDriverCalls();
  }
  assert.equal(sim.status?.pause?.reason, 'ComponentSkew');
  assert.match(sim.status?.pause?.message ?? '', /^rolling back to v1\.35\.4; no further Rollback call: .*kube-scheduler on node cp-3 .* runs v1\.36\.3/);
  // Back on the from-version: the rollback goes on where it stood and ends.
  sim.extra.components = all(OLD);
  const calls: string[] = [];
  for (let i = 0; i < 40 && phaseOf(sim) !== 'RolledBack'; i++) {
    sim.step();
    calls.push(...sim.calls());
    sim.applyDriverCalls();
  }
  assert.deepEqual(calls, ['Rollback:cp-1']);
  assert.equal(sim.status?.phase, 'RolledBack');
});

test('a rollback whose calls are all done finishes though a component moved meanwhile: nothing more is called', () => {
  const sim = new Sim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on')]);
  sim.extra.components = all(OLD);
  sim.step();
  sim.step();
  sim.applyDriverCalls();
  sim.upgrade = { ...sim.upgrade, annotations: { [ABORT_ANNOTATION]: 'a1' } };
  sim.step();
  sim.step();
  assert.deepEqual(sim.calls(), ['Rollback:cp-1']);
  sim.applyDriverCalls();
  sim.extra.components = all(NEW);
  for (let i = 0; i < 10 && phaseOf(sim) === 'RollingBack'; i++) {
    sim.step();
    assert.deepEqual(sim.calls(), []);
  }
  assert.equal(sim.status?.phase, 'RolledBack');
});

test('rollbackSkew compares with the emulated minor in phase two, and an unlisted fleet holds (fail closed)', () => {
  assert.equal(rollbackSkew(all(OLD), '1.35'), undefined);
  assert.match(rollbackSkew(all(NEW), '1.35')!.message, /runs v1\.36\.3, newer than 1\.35/);
  assert.deepEqual(rollbackSkew({ error: 'timeout' }, OLD)?.blockers, ['(not listed)']);
  assert.equal(rollbackSkew(undefined, OLD), undefined);
});

test('observeComponents lists the component Pods by their selector; a failed list is the observation\'s error, never a rejection', async () => {
  const asked: string[] = [];
  const ok = await observeComponents(async <T,>(path: string): Promise<T> => {
    asked.push(path);
    return { items: [pod('kube-scheduler-cp-2', 'kube-scheduler', 'registry.k8s.io/kube-scheduler:v1.35.4', { spec: { nodeName: 'cp-2', containers: [{ name: 'kube-scheduler', image: 'registry.k8s.io/kube-scheduler:v1.35.4' }] } })] } as T;
  });
  assert.deepEqual(asked, [COMPONENT_PODS_PATH]);
  assert.deepEqual(ok, { pods: [{ component: 'kube-scheduler', pod: 'kube-system/kube-scheduler-cp-2', node: 'cp-2', image: 'registry.k8s.io/kube-scheduler:v1.35.4', version: 'v1.35.4' }] });
  const failed = await observeComponents(async () => {
    throw new Error('HTTP 403: pods is forbidden');
  });
  assert.ok('error' in failed && failed.error.includes('HTTP 403: pods is forbidden'));
});
