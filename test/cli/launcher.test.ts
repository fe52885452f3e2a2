// The plugin's executable, run the ways it is installed: linked into a bin folder (npm, krew), through
// `npm exec` from another folder, and copied under a node_modules folder (an npm install from a tarball),
// always with the machine's PATH, whose `node` may be too old to run TypeScript.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const launcher = join(root, 'src', 'cli', 'kubectl-apiserver_upgrade');
const tmp = mkdtempSync(join(tmpdir(), 'auo-plugin-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** PATH without this project's node_modules/.bin: the `node` found there is whatever the machine has. */
const PATH = (process.env.PATH ?? '').split(':').filter((d) => !d.includes('node_modules')).join(':');

function exec(cmd: string, args: string[], o: { cwd?: string; env?: Record<string, string> } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: o.cwd ?? tmp, env: { HOME: process.env.HOME ?? tmp, PATH, ...o.env }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

test('package.json names the launcher as the bin kubectl finds as `kubectl apiserver-upgrade`', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin?: Record<string, string> };
  assert.deepEqual(pkg.bin, { 'kubectl-apiserver_upgrade': 'src/cli/kubectl-apiserver_upgrade' });
});

test('linked into a bin folder elsewhere, it finds the project\'s Node and runs', async () => {
  const bin = join(tmp, 'bin');
  mkdirSync(bin);
  symlinkSync(launcher, join(bin, 'kubectl-apiserver_upgrade'));
  const r = await exec(join(bin, 'kubectl-apiserver_upgrade'), ['--help']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Usage:\n {2}kubectl apiserver-upgrade COMMAND/m);
  const bad = await exec(join(bin, 'kubectl-apiserver_upgrade'), ['list', '--kubeconfig', join(tmp, 'none')]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /^error: cannot load the kubeconfig: .*none: the kubeconfig does not exist/);
  const usage = await exec(join(bin, 'kubectl-apiserver_upgrade'), ['frob']);
  assert.equal(usage.code, 2);
});

test('AUO_NODE that cannot run TypeScript is refused with a reason', async () => {
  writeFileSync(join(tmp, 'old-node'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
  const r = await exec(launcher, ['--help'], { env: { AUO_NODE: join(tmp, 'old-node') } });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /AUO_NODE=.*old-node does not run TypeScript \(Node >= 22\.19 needed\)/);
});

test('`npm exec` from another folder runs the project\'s bin', async () => {
  const r = await exec('npm', ['exec', '--prefix', root, '--', 'kubectl-apiserver_upgrade', '--help']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /plan -f FILE \| NAME/);
});

test('copied under node_modules (where Node refuses to strip types) it still runs, through its loader hook', async () => {
  const pkg = join(tmp, 'proj', 'node_modules', 'apiserver-upgrade-operator');
  mkdirSync(pkg, { recursive: true });
  cpSync(join(root, 'src'), join(pkg, 'src'), { recursive: true });
  cpSync(join(root, 'package.json'), join(pkg, 'package.json'));
  // Its dependencies (and the `node` package) as npm would have put them next to it.
  symlinkSync(join(root, 'node_modules'), join(pkg, 'node_modules'));
  const r = await exec(join(pkg, 'src', 'cli', 'kubectl-apiserver_upgrade'), ['list', '--kubeconfig', join(tmp, 'none')]);
  assert.equal(r.code, 1);
  assert.equal(r.stderr.split('\n')[0], `error: cannot load the kubeconfig: ${join(tmp, 'none')}: the kubeconfig does not exist`, 'the whole program loaded; no warning printed');
});
