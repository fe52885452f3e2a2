// The purge that .ci/run starts with (issue 23): every package the set-up installs goes, except the ones kept with a
// reason; the caches of installed tools are cleared, the Go binary cache is not. Tested as logic only: purging this
// machine would take other tests' tools away; CI runs it for real.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { dpkgBaseSystem, KEEP, machinePurgePlan, purgeCommands, purgePlan, toolPaths } from '../../scripts/fresh-machine.ts';
import { SYSTEM } from '../../e2e/cluster/requirements.ts';

const noBase = (): undefined => undefined;

test('every package of SYSTEM is purged or kept with a reason; KEEP names only SYSTEM\'s packages', () => {
  const plan = machinePurgePlan();
  const all = new Set(SYSTEM.map((n) => n.pkg));
  assert.deepEqual(new Set([...plan.purge, ...plan.keep.map((k) => k.pkg)]), all);
  assert.deepEqual(plan.purge, [...new Set(plan.purge)].sort(), 'each once, sorted');
  for (const pkg of Object.keys(KEEP)) assert.ok(all.has(pkg), `KEEP's ${pkg} is a package of SYSTEM`);
  for (const k of plan.keep) assert.ok(k.why.length > 20, `${k.pkg} says why`);
  for (const pkg of ['lua5.1', 'haproxy', 'busybox-static', 'containerd']) assert.ok(plan.purge.includes(pkg), pkg);
});

test('a package added to SYSTEM is purged without any other change (the list is read, not copied)', () => {
  const plan = purgePlan([...SYSTEM, { command: 'skopeo', pkg: 'skopeo', why: 'x', for: ['e2e'] }], noBase);
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

test('the base system stays: what dpkg calls Essential or Priority required is kept, whatever SYSTEM declares', () => {
  const base = (p: string): string | undefined => (p === 'dpkg' ? 'Essential in dpkg' : undefined);
  const plan = purgePlan([{ command: 'dpkg-deb', pkg: 'dpkg', why: 'x', for: ['e2e'] }, { command: 'haproxy', pkg: 'haproxy', why: 'x', for: ['e2e'] }], base);
  assert.deepEqual(plan, { purge: ['haproxy'], keep: [{ pkg: 'dpkg', why: 'Essential in dpkg' }] });
  const mine = dpkgBaseSystem(['dpkg', 'coreutils', 'apt', 'haproxy', 'no-such-package-auo']);
  for (const p of ['dpkg', 'coreutils', 'apt']) assert.ok(mine(p) !== undefined, `${p} is base on a Debian machine`);
  assert.equal(mine('no-such-package-auo'), undefined, 'an unknown package is not base (and dpkg-query\'s exit 1 for it is not an error)');
});

test('apt-get accepts the purge this machine would run (a simulation: nothing is removed)', () => {
  // The purge of a package the base system needs is refused by apt's resolver; simulating it here finds that
  // before CI does.
  const plan = machinePurgePlan();
  const installed = plan.purge.filter((p) => spawnSync('dpkg-query', ['-W', p], { stdio: 'ignore' }).status === 0);
  if (installed.length === 0) return;
  const sim = spawnSync('apt-get', ['-s', '-q', 'purge', ...installed], { encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, maxBuffer: 8 << 20 });
  assert.equal(sim.status, 0, `apt-get -s purge ${installed.join(' ')} refused:\n${sim.stdout}\n${sim.stderr}`);
  assert.doesNotMatch(sim.stdout, /^Remv (dpkg|apt|coreutils|ca-certificates|openssl) /m, 'nothing the machine needs to install again goes');
});
