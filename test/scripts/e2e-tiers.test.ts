import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_STREAMS, LONGEST_FIRST, e2eFiles, parseE2eArgs, tierKubeVersions, tierOf } from '../../scripts/e2e-tiers.ts';
import { globSync } from 'node:fs';
import { clusterBinaries } from '../../e2e/cluster/binaries.ts';

const files = ['e2e/upgrade.e2e.ts', 'e2e/runtime/leader.e2e.ts', 'e2e/extended/matrix.e2e.ts', 'e2e/extended/kubeadm/day.e2e.ts'];

test('the core tier is everything outside e2e/extended/, the extended tier what is in it', () => {
  assert.deepEqual(e2eFiles(files, parseE2eArgs([])), ['e2e/upgrade.e2e.ts', 'e2e/runtime/leader.e2e.ts']);
  assert.deepEqual(e2eFiles(files, parseE2eArgs(['--tier', 'extended'])), ['e2e/extended/kubeadm/day.e2e.ts', 'e2e/extended/matrix.e2e.ts']);
  assert.equal(e2eFiles(files, parseE2eArgs(['--tier=all'])).length, files.length);
  assert.equal(tierOf('e2e/extendedness.e2e.ts'), 'core');
});

test('plain words filter by path; unknown tiers and options are refused', () => {
  assert.deepEqual(e2eFiles(files, parseE2eArgs(['--tier', 'all', 'kubeadm'])), ['e2e/extended/kubeadm/day.e2e.ts']);
  assert.throws(() => parseE2eArgs(['--tier', 'slow']), /--tier takes core, extended, all/);
  assert.throws(() => parseE2eArgs(['--tier']), /--tier takes/);
  assert.throws(() => parseE2eArgs(['--fast']), /unknown option --fast/);
});

test('only the extended tier needs the matrix versions; setup (core, CI) builds just the default pair', () => {
  assert.deepEqual(tierKubeVersions('core'), []);
  assert.deepEqual(tierKubeVersions('extended'), ['v1.34.4', 'v1.35.4', 'v1.36.1', 'v1.36.3', 'v1.37.2']);
  assert.deepEqual(tierKubeVersions('all'), tierKubeVersions('extended'));
  const setupBuilds = clusterBinaries().filter((b) => b.what === 'kube-apiserver').map((b) => b.version);
  for (const v of ['v1.34.4', 'v1.36.1', 'v1.37.2']) assert.ok(!setupBuilds.includes(v), `${v} is not built by setup: ${setupBuilds.join(', ')}`);
});

test('the longest files start first, the rest by name; every file named longest exists in the core tier', () => {
  const all = ['e2e/a.e2e.ts', 'e2e/helm-install.e2e.ts', 'e2e/static-pod-nodes.e2e.ts', 'e2e/b.e2e.ts'];
  assert.deepEqual(e2eFiles(all, parseE2eArgs([])), ['e2e/static-pod-nodes.e2e.ts', 'e2e/helm-install.e2e.ts', 'e2e/a.e2e.ts', 'e2e/b.e2e.ts']);
  const core = e2eFiles(globSync('e2e/**/*.e2e.ts'), parseE2eArgs([]));
  for (const f of LONGEST_FIRST) assert.ok(core.includes(f), `${f} is a core e2e file (renamed? update LONGEST_FIRST)`);
  assert.deepEqual(core.slice(0, LONGEST_FIRST.length), [...LONGEST_FIRST]);
});

test('--streams sets how many files run at once (1 to 4), two by default', () => {
  assert.equal(parseE2eArgs([]).streams, DEFAULT_STREAMS);
  assert.equal(parseE2eArgs(['--streams', '1']).streams, 1);
  assert.equal(parseE2eArgs(['--streams=3', 'upgrade']).streams, 3);
  assert.deepEqual(parseE2eArgs(['--streams=3', 'upgrade']).filters, ['upgrade']);
  for (const bad of [['--streams', '0'], ['--streams', '5'], ['--streams', '1;rm'], ['--streams']]) assert.throws(() => parseE2eArgs(bad), /--streams takes 1 to 4/);
});
