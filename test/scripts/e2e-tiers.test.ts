import { test } from 'node:test';
import assert from 'node:assert/strict';
import { e2eFiles, parseE2eArgs, tierKubeVersions, tierOf } from '../../scripts/e2e-tiers.ts';
import { clusterBinaries } from '../../e2e/cluster/binaries.ts';

const files = ['e2e/upgrade.e2e.ts', 'e2e/runtime/leader.e2e.ts', 'e2e/extended/matrix.e2e.ts', 'e2e/extended/kubeadm/day.e2e.ts'];

test('the core tier is everything outside e2e/extended/, the extended tier what is in it', () => {
  assert.deepEqual(e2eFiles(files, parseE2eArgs([])), ['e2e/runtime/leader.e2e.ts', 'e2e/upgrade.e2e.ts']);
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
