// The purge that .ci/run starts with (issue 23): every package the set-up installs goes, except the ones kept with a
// reason; the caches of installed tools are cleared, the Go binary cache is not. Tested as logic only: purging this
// machine would take other tests' tools away; CI runs it for real.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KEEP, purgeCommands, purgePlan, toolPaths } from '../../scripts/fresh-machine.ts';
import { SYSTEM } from '../../e2e/cluster/requirements.ts';

test('every package of SYSTEM is purged or kept with a reason; KEEP names only SYSTEM\'s packages', () => {
  const plan = purgePlan();
  const all = new Set(SYSTEM.map((n) => n.pkg));
  assert.deepEqual(new Set([...plan.purge, ...plan.keep.map((k) => k.pkg)]), all);
  assert.deepEqual(plan.purge, [...new Set(plan.purge)].sort(), 'each once, sorted');
  for (const pkg of Object.keys(KEEP)) assert.ok(all.has(pkg), `KEEP's ${pkg} is a package of SYSTEM`);
  for (const k of plan.keep) assert.ok(k.why.length > 20, `${k.pkg} says why`);
  for (const pkg of ['lua5.1', 'haproxy', 'busybox-static', 'containerd']) assert.ok(plan.purge.includes(pkg), pkg);
});

test('a package added to SYSTEM is purged without any other change (the list is read, not copied)', () => {
  const plan = purgePlan([...SYSTEM, { command: 'skopeo', pkg: 'skopeo', why: 'x', for: ['e2e'] }]);
  assert.ok(plan.purge.includes('skopeo'));
  assert.deepEqual(purgeCommands(plan), [['apt-get', 'purge', '-y', '-q', ...plan.purge], ['apt-get', 'autoremove', '--purge', '-y', '-q']]);
  assert.deepEqual(purgeCommands({ purge: [], keep: [] }), []);
});

test('toolPaths: the tool cache always; /usr/local/bin/kubectl only when it is setup\'s copy of the cached build', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fresh-'));
  const built = join(dir, 'built-kubectl');
  const installed = join(dir, 'kubectl');
  writeFileSync(built, 'ELF kubectl v1.35.4');
  assert.deepEqual(toolPaths({ toolCache: join(dir, 'tools'), kubectl: { installed, built } }), [join(dir, 'tools')], 'none installed');
  writeFileSync(installed, 'ELF kubectl v1.35.4');
  assert.deepEqual(toolPaths({ toolCache: join(dir, 'tools'), kubectl: { installed, built } }), [join(dir, 'tools'), installed]);
  writeFileSync(installed, 'the machine\'s own kubectl');
  assert.deepEqual(toolPaths({ toolCache: join(dir, 'tools'), kubectl: { installed, built } }), [join(dir, 'tools')]);
  assert.deepEqual(toolPaths({ toolCache: join(dir, 'tools'), kubectl: { installed, built: undefined } }), [join(dir, 'tools')]);
  assert.ok(!toolPaths().some((p) => p.includes('/bin') && p.endsWith('apiserver-upgrade-operator/bin')), 'never the Go binary cache');
});
