// run() end to end over a fake cluster: what each command prints, writes and exits with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { upgradeFromManifest } from '../../src/cli/cli.ts';
import { CliError } from '../../src/cli/client.ts';
import { RESUME_ANNOTATION } from '../../src/api/vocabulary.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';
import { NOW, event, paused, upgrading, withPhase } from './fixtures.ts';
import { FakeApi as SharedFakeApi, cli } from './fake-api.ts';

/** The fake with the Started event every command test here expects in `describe`. */
class FakeApi extends SharedFakeApi {
  constructor(...us: ApiServerUpgrade[]) {
    super(...us);
    this.eventList = [event('Started', 'upgrade to v1.36.3 started', 290)];
  }
}

test('usage errors exit 2 without connecting; --help exits 0', async () => {
  const never = (): never => assert.fail('connected');
  const r = await cli(never, ['resume']);
  assert.equal(r.code, 2);
  assert.equal(r.err, "error: resume needs the NAME of an ApiServerUpgrade\nSee 'kubectl apiserver-upgrade --help'.\n");
  const h = await cli(never, ['--help']);
  assert.equal(h.code, 0);
  assert.match(h.out, /^Usage:$/m);
});

test('a kubeconfig that cannot be loaded is one error line, exit 1', async () => {
  const r = await cli(() => { throw new CliError('cannot load the kubeconfig /nope: ENOENT'); }, ['list']);
  assert.deepEqual([r.code, r.err], [1, 'error: cannot load the kubeconfig /nope: ENOENT\n']);
});

test('get: human view, -o json view, and a missing object', async () => {
  const api = new FakeApi(paused('AnalysisBreach'));
  const r = await cli(api, ['get', 'to-v1-36']);
  assert.equal(r.code, 0);
  assert.match(r.out, /^Phase: +॥ Paused \(AnalysisBreach\)$/m);
  assert.match(r.out, /^ {2}\d+m\d*s? +Normal +Started +upgrade to v1\.36\.3 started$/m);
  const j = await cli(api, ['get', 'to-v1-36', '-o', 'json']);
  const v = JSON.parse(j.out) as { phase: string; pause: { reason: string }; events: unknown[] };
  assert.deepEqual([v.phase, v.pause.reason, v.events.length], ['Paused', 'AnalysisBreach', 1]);
  const missing = await cli(api, ['get', 'nope']);
  assert.deepEqual([missing.code, missing.err], [1, 'error: apiserverupgrade "nope" not found\n']);
  assert.equal(api.patches.length, 0);
});

test('get -w draws the object, then again on each change, never twice the same view', async () => {
  const api = new FakeApi(upgrading());
  let stop!: () => void;
  const done = new Promise<void>((r) => (stop = r));
  const p = cli(api, ['get', 'to-v1-36', '-w'], { interrupted: () => done });
  await new Promise((r) => setTimeout(r, 20));
  const next = paused('AnalysisBreach');
  api.watchers[0]!(upgrading());
  api.watchers[0]!(next);
  api.watchers[0]!(undefined);
  await new Promise((r) => setTimeout(r, 20));
  stop();
  const r = await p;
  assert.equal(r.code, 0);
  const phases = [...r.out.matchAll(/^Phase: +\S+ (\w+)/gm)].map((m) => m[1]);
  assert.deepEqual(phases, ['Upgrading', 'Paused']);
  assert.match(r.out, /apiserverupgrade "to-v1-36" was deleted/);
});

test('list: rows, and -o yaml', async () => {
  const api = new FakeApi(upgrading());
  assert.match((await cli(api, ['list'])).out, /^to-v1-36 +Upgrading +v1\.35\.4 +v1\.36\.3 +1\/3 +2\/3 +- +- +5m$/m);
  assert.match((await cli(api, ['list', '-o', 'yaml'])).out, /^- name: to-v1-36\n {2}phase: Upgrading$/m);
});

test('pause and resume patch the object and say what they did; a refusal is one line, exit 1, no write', async () => {
  const api = new FakeApi(upgrading());
  const p = await cli(api, ['pause', 'to-v1-36']);
  assert.equal(p.code, 0);
  assert.match(p.out, /spec\.paused set to true\. This is a spec edit/);
  assert.deepEqual(api.patches.pop()!.patch, { spec: { paused: true }, metadata: { resourceVersion: '4242' } });
  const r = await cli(api, ['resume', 'to-v1-36']);
  assert.deepEqual([r.code, r.out, r.err], [1, '', 'error: to-v1-36 is not paused (phase Upgrading)\n']);
  assert.equal(api.patches.length, 0);
  api.objects.set('to-v1-36', paused('BatchTimeout'));
  const ok = await cli(api, ['resume', 'to-v1-36']);
  assert.equal(ok.code, 0);
  assert.deepEqual(api.patches.pop()!.patch, { metadata: { annotations: { [RESUME_ANNOTATION]: NOW.toISOString() }, resourceVersion: '4242' } });
});

test('a write conflict re-reads and decides again; three in a row give up', async () => {
  const api = new FakeApi(withPhase('Failed'));
  api.conflicts = 2;
  assert.equal((await cli(api, ['retry', 'to-v1-36'])).code, 0);
  assert.equal(api.patches.length, 1);
  api.conflicts = 3;
  const r = await cli(api, ['retry', 'to-v1-36']);
  assert.deepEqual([r.code, r.err], [1, 'error: to-v1-36 kept changing while retry was applied; try again\n']);
});

test('plan NAME observes the fleet once, writes nothing, and prints the plan', async () => {
  const api = new FakeApi(paused('PausedBySpec'));
  const r = await cli(api, ['plan', 'to-v1-36', '-o', 'json']);
  assert.equal(r.code, 0, r.err);
  assert.equal(api.observed, 1);
  assert.equal(api.patches.length, 0);
  const v = JSON.parse(r.out) as { batches: { servers: string[] }[]; projection: { calls: { action: string; server: string }[] }; uid: string };
  assert.equal(v.uid, 'uid-1');
  assert.deepEqual(v.batches.map((b) => b.servers), [['cp-1'], ['cp-2'], ['cp-3']]);
  assert.deepEqual(v.projection.calls.map((c) => `${c.action}:${c.server}`), ['EnableProxy:cp-1', 'EnableProxy:cp-2', 'EnableProxy:cp-3', 'Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
});

test('plan -f FILE: a YAML manifest; another active upgrade is named; a bad spec is refused before observing', async () => {
  const api = new FakeApi(upgrading());
  const manifest = 'apiVersion: upgrade.apiserver.dev/v1alpha1\nkind: ApiServerUpgrade\nmetadata: {name: next}\nspec:\n  targetVersion: v1.36.3\n  driver: {webhook: {url: "https://h.example/r"}}\n';
  const r = await cli(api, ['plan', '-f', 'next.yaml'], { readFile: async () => `---\n# a comment\n${manifest}` });
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^Dry run of ApiServerUpgrade next \(from a file\)/m);
  assert.match(r.out, /ApiServerUpgrade to-v1-36 is under way/);
  assert.match(r.out, /keys shown \(from a placeholder UID\) will differ/);
  const bad = await cli(api, ['plan', '-f', 'bad.yaml'], { readFile: async () => manifest.replace('v1.36.3', '1.36') });
  assert.equal(bad.code, 1);
  assert.match(bad.err, /^error: invalid spec: spec\.targetVersion 1\.36 must be a Kubernetes release version/);
  assert.equal(api.observed, 1);
  const unreadable = await cli(api, ['plan', '-f', 'x.yaml']);
  assert.deepEqual([unreadable.code, unreadable.err], [1, 'error: cannot read x.yaml: no file\n']);
});

test('manifests: one ApiServerUpgrade among other documents; none, two, or the wrong apiVersion are refused', () => {
  const up = 'apiVersion: upgrade.apiserver.dev/v1alpha1\nkind: ApiServerUpgrade\nmetadata: {name: a}\nspec: {targetVersion: v1.36.3, driver: {webhook: {url: "https://h/r"}}}\n';
  assert.equal(upgradeFromManifest(`apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n${up}`, 'f').metadata?.name, 'a');
  assert.equal(upgradeFromManifest(JSON.stringify({ apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', spec: { targetVersion: 'v1.36.3' } }), 'f').spec.targetVersion, 'v1.36.3');
  assert.throws(() => upgradeFromManifest('kind: ConfigMap\n', 'f'), /f holds no ApiServerUpgrade/);
  assert.throws(() => upgradeFromManifest(`${up}---\n${up}`, 'f'), /holds 2 ApiServerUpgrades; plan one at a time/);
  assert.throws(() => upgradeFromManifest(up.replace('v1alpha1', 'v1'), 'f'), /apiVersion upgrade\.apiserver\.dev\/v1 is not upgrade\.apiserver\.dev\/v1alpha1/);
  assert.throws(() => upgradeFromManifest('a: [', 'f'), /^CliError: f: /);
});
