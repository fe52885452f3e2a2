import { test } from 'node:test';
import assert from 'node:assert/strict';
import { e2eFiles, parseE2eArgs, tierOf } from '../../scripts/e2e-tiers.ts';

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
