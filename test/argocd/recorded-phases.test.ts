// health.lua on the ApiServerUpgrade objects a real upgrade produced in each phase (test/fixtures/argocd-phases/,
// recorded by scripts/capture-argocd-phases.ts from real kube-apiservers and the operator): the health docs/argocd.md
// promises for each phase, in lua5.1 and lua5.4, and the wave semantics of the ApplicationSet
// (argocd/upgrade-waves-applicationset.yaml): Argo CD's RollingSync starts the next wave only once every Application
// of the current one is Healthy and Synced, and an Application holding one ApiServerUpgrade is as healthy as it is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { PHASES, type Phase } from '../../src/api/vocabulary.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';
import { observedGeneration, phaseFile, PHASES_DIR } from '../../scripts/argocd-phases.ts';
import { DIR, INTERPRETERS, health, missing, type HealthStatus } from './lua.ts';

const recorded = readdirSync(PHASES_DIR).filter((f) => f.endsWith('.yaml')).sort()
  .map((file) => ({ file, obj: parse(readFileSync(join(PHASES_DIR, file), 'utf8')) as ApiServerUpgrade }));

/** The health docs/argocd.md promises for each phase. */
const PROMISED: Record<Phase, HealthStatus['status']> = {
  Pending: 'Progressing',
  Preflight: 'Progressing',
  EnablingProxy: 'Progressing',
  Upgrading: 'Progressing',
  RollingBack: 'Progressing',
  Paused: 'Suspended',
  Succeeded: 'Healthy',
  RolledBack: 'Degraded',
  Failed: 'Degraded',
};

/**
 * Whether RollingSync moves on past a wave whose Applications have these health states (argo-cd v3.5
 * applicationset/progressivesync: a step's Application counts once its health is Healthy and it is Synced; any other
 * health — Progressing, Suspended, Degraded, Missing, Unknown — holds every later step).
 */
export const waveDone = (healths: readonly string[]): boolean => healths.length > 0 && healths.every((h) => h === 'Healthy');

test('the recordings: every phase of src/api/vocabulary.ts, each file named after its object\'s phase, each observed by the operator', () => {
  const phases = new Set(recorded.map((r) => r.obj.status?.phase));
  assert.deepEqual(PHASES.filter((p) => !phases.has(p)), [], 'phases with no recorded object');
  for (const { file, obj } of recorded) {
    assert.equal(phaseFile(obj), file);
    assert.equal(obj.apiVersion, 'upgrade.apiserver.dev/v1alpha1');
    assert.equal((obj.metadata as { managedFields?: unknown }).managedFields, undefined);
    assert.equal(observedGeneration(obj), obj.metadata?.generation, `${file}: the operator had observed its spec`);
  }
});

for (const lua of INTERPRETERS) {
  for (const { file, obj } of recorded) {
    const phase = obj.status!.phase as Phase;
    test(`${lua}: recorded ${file} -> ${PROMISED[phase]}`, () => {
      const why = missing(lua);
      if (why) assert.fail(why);
      const got = health(lua, join(DIR, 'health.lua'), obj);
      assert.equal(got.status, PROMISED[phase], got.message);
      const s = obj.status!;
      const target = s.targetVersion ?? obj.spec?.targetVersion;
      // The message docs/argocd.md's table gives for the phase.
      if (phase === 'Succeeded') assert.equal(got.message, `Every kube-apiserver runs ${target}`);
      if (phase === 'RolledBack') assert.match(got.message, new RegExp(`^Rolled back to ${s.fromVersion!.replace(/\./g, '\\.')}`));
      if (phase === 'RollingBack') assert.equal(got.message, `RollingBack to ${s.fromVersion}`);
      if (phase === 'Failed') assert.match(got.message, /^Failed: /);
      if (phase === 'Paused') assert.ok(got.message.startsWith(`Paused (${s.pause!.reason}): ${s.pause!.message}`), got.message);
      if (phase === 'Paused' && s.pause!.reason === 'PausedBySpec') assert.match(got.message, /; resumes when spec\.paused is false$/);
      if (phase === 'Paused' && s.pause!.reason !== 'PausedBySpec') assert.match(got.message, /; resume once the cause is fixed$/);
      if (['Pending', 'Preflight', 'EnablingProxy', 'Upgrading'].includes(phase)) assert.ok(got.message.startsWith(`${phase} to ${target}`), got.message);
      // A wait in Pending or Preflight says what it waits for: the PreflightPassed message.
      const waiting = s.conditions?.find((c) => c.type === 'PreflightPassed' && c.status === 'False');
      if ((phase === 'Pending' || phase === 'Preflight') && waiting?.message) assert.ok(got.message.endsWith(`: ${waiting.message}`), got.message);
    });
  }
}

test('waves: only a canary whose upgrade Succeeded lets the next wave go; a paused, failing or rolled back canary holds it', () => {
  const lua = INTERPRETERS[0];
  const why = missing(lua);
  if (why) assert.fail(why);
  for (const { file, obj } of recorded) {
    const h = health(lua, join(DIR, 'health.lua'), obj).status;
    assert.equal(waveDone([h]), obj.status?.phase === 'Succeeded', `${file}: ${h}`);
    // A wave of several clusters waits for its slowest: one Succeeded cluster beside this one.
    const succeeded = recorded.find((r) => r.obj.status?.phase === 'Succeeded')!.obj;
    assert.equal(waveDone([health(lua, join(DIR, 'health.lua'), succeeded).status, h]), h === 'Healthy', file);
  }
  assert.equal(waveDone([]), false);
});
