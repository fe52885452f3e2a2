// The plugin's commands added for issue 23 over a fake cluster: per-command help, version, completion, -o wide,
// name and jsonpath, and get without a NAME (all of them; with -w, redrawn on every change of any).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { paused, upgrading } from './fixtures.ts';
import { FakeApi as Fake, cli } from './fake-api.ts';


test('COMMAND --help prints that command\'s help, not the global one', async () => {
  const g = await cli(undefined, ['get', '--help']);
  assert.equal(g.code, 0);
  assert.match(g.out, /^kubectl apiserver-upgrade get: /);
  assert.match(g.out, /Usage:\n {2}kubectl apiserver-upgrade get \[NAME\] \[flags\]/);
  assert.match(g.out, /--events N/);
  assert.doesNotMatch(g.out, /--filename/, 'only get\'s flags');
  const p = await cli(undefined, ['help', 'pause']);
  assert.match(p.out, /^kubectl apiserver-upgrade pause: set spec\.paused/);
  assert.doesNotMatch(p.out, /--output/);
  const all = await cli(undefined, ['--help']);
  assert.match(all.out, /Commands:[\s\S]*completion SHELL[\s\S]*version/);
});

test('version and completion need no cluster', async () => {
  const v = await cli(undefined, ['version']);
  assert.equal(v.code, 0, v.err);
  assert.match(v.out, /^kubectl-apiserver_upgrade v\d+\.\d+\.\d+ \(API upgrade\.apiserver\.dev\/v1alpha1\)\n$/);
  const c = await cli(undefined, ['completion', 'bash']);
  assert.equal(c.code, 0, c.err);
  assert.match(c.out, /^# bash completion/);
});

test('-o name, -o jsonpath and -o wide', async () => {
  const api = new Fake(upgrading(), { ...paused('AnalysisBreach'), metadata: { ...paused('AnalysisBreach').metadata, name: 'other' } });
  assert.equal((await cli(api, ['get', 'to-v1-36', '-o', 'name'])).out, 'apiserverupgrade.upgrade.apiserver.dev/to-v1-36\n');
  const names = (await cli(api, ['list', '-o', 'name'])).out.trim().split('\n').sort();
  assert.deepEqual(names, ['apiserverupgrade.upgrade.apiserver.dev/other', 'apiserverupgrade.upgrade.apiserver.dev/to-v1-36']);
  const j = await cli(api, ['get', 'to-v1-36', '-o', 'jsonpath={.name} {.phase}']);
  assert.equal(j.code, 0, j.err);
  assert.equal(j.out, 'to-v1-36 Upgrading', 'the template applies to what -o json prints');
  const lj = await cli(api, ['list', '-o', 'jsonpath={range [*]}{.name}={.phase}{"\\n"}{end}']);
  assert.equal(lj.out.split('\n').filter(Boolean).sort().join(','), 'other=Paused,to-v1-36=Upgrading');
  const wide = await cli(api, ['list', '-o', 'wide']);
  assert.match(wide.out.split('\n')[0]!, /^NAME\s+PHASE.*AGE\s+DRIVER\s+MESSAGE$/);
  assert.match(wide.out, /webhook/);
  assert.doesNotMatch((await cli(api, ['list'])).out.split('\n')[0]!, /DRIVER/);
});

test('get without a NAME lists them all; get -w without a NAME watches all and redraws on any change', async () => {
  const api = new Fake(upgrading());
  const once = await cli(api, ['get']);
  assert.equal(once.code, 0, once.err);
  assert.match(once.out, /^NAME\s+PHASE/);
  assert.match(once.out, /to-v1-36\s+Upgrading/);
  let release!: () => void;
  const stopped = new Promise<void>((r) => (release = r));
  const running = cli(api, ['get', '-w'], { interrupted: () => stopped });
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(api.watched, [undefined], 'a watch of every upgrade, no field selector');
  api.objects.set('second', { ...paused('AnalysisBreach'), metadata: { ...paused('AnalysisBreach').metadata, name: 'second' } });
  api.watchers[0]!(api.objects.get('second'));
  await new Promise((r) => setTimeout(r, 20));
  release();
  const r = await running;
  assert.equal(r.code, 0, r.err);
  const tables = r.out.split(/^NAME/m).filter(Boolean);
  assert.equal(tables.length, 2, r.out);
  assert.match(tables[1]!, /second\s+Paused/);
});
