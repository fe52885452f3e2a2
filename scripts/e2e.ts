// `npm run e2e [-- --tier core|extended|all] [--streams N] [<file filter>...]`: the end-to-end suite against real servers, by tier.
//   core      every e2e/**/*.e2e.ts outside e2e/extended/: what a change can break quickly, the newest upgrade path.
//             `.ci/run` runs this tier.
//   extended  e2e/extended/**/*.e2e.ts: the version matrix, real kubeadm, long campaigns; run before each release
//             (docs/timings.md records one result per tier per release).
//   all       both.
// Set-up (scripts/setup.ts e2e) runs first, as before. Extra arguments that are not flags keep only the files whose path
// contains one of them (e.g. `npm run e2e -- --tier all upgrade`).
import { spawnSync } from 'node:child_process';
import { globSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { e2eFiles, parseE2eArgs, tierKubeVersions } from './e2e-tiers.ts';
import { ensureBinaries, PROMETHEUS_OPERATOR_VERSION } from '../e2e/cluster/binaries.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
let args;
try {
  args = parseE2eArgs(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(2);
}
const files = e2eFiles(globSync('e2e/**/*.e2e.ts', { cwd: root }), args);
if (files.length === 0) {
  process.stderr.write(`no e2e file of tier ${args.tier}${args.filters.length > 0 ? ` matches ${args.filters.join(', ')}` : ''}\n`);
  process.exit(2);
}
process.stderr.write(`[e2e] tier ${args.tier}: ${files.length} files, ${args.streams} at a time\n`);
const node = process.execPath;
const setup = spawnSync(node, ['scripts/setup.ts', 'e2e'], { cwd: root, stdio: 'inherit' });
if (setup.status !== 0) process.exit(setup.status ?? 1);
// The extended tier's other versions (e2e/extended/paths.ts), built here once, never by setup or the core tier.
const extra = tierKubeVersions(args.tier);
if (extra.length > 0) {
  process.stderr.write(`[e2e] tier ${args.tier}: kube-apiserver ${extra.join(', ')}, prometheus-operator ${PROMETHEUS_OPERATOR_VERSION}\n`);
  // prometheus-operator: e2e/extended/prometheus-operator.e2e.ts runs it (kube-prometheus-stack's monitoring).
  await ensureBinaries([...extra.map((version) => ({ what: 'kube-apiserver' as const, version })), { what: 'prometheus-operator', version: PROMETHEUS_OPERATOR_VERSION }]);
}
const run = spawnSync(node, ['--test', `--test-concurrency=${args.streams}`, '--test-reporter=spec', ...files], { cwd: root, stdio: 'inherit' });
process.exit(run.status ?? 1);
