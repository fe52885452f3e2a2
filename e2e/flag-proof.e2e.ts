// The flag proof on the real v1.35.4 and v1.36.3 kube-apiservers (docs/flag-proof.md): the prove-flags command,
// as a hook runs it, on a kubeadm-shaped manifest. A feature gate v1.36 removed and an unknown flag are each refused
// by v1.36.3 with the flag and the binary's message; an unknown admission plugin is refused; the same manifest
// without them is accepted; and no probe ever connects to etcd. (v1.37.2's removed gate and admission plugin:
// e2e/extended/flag-proof-v1.37.e2e.ts.)
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { OLD_VERSION, NEW_VERSION } from './cluster/index.ts';
import { ensureBinaries } from './cluster/binaries.ts';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countingEtcd, manifestMaker, proveManifest } from './support/flag-proof.ts';
import { manifestCommand, proveFlags } from '../src/agent/prove-flags.ts';
import { proofCommand } from '../src/drivers/flag-proof-command.ts';
import { PROOF_THROWAWAY_KEY } from '../src/drivers/flag-proof-job.ts';

const etcd = await countingEtcd();
after(() => etcd.close());
const manifest = await manifestMaker(etcd.url);
const [oldBin, newBin] = await ensureBinaries([{ what: 'kube-apiserver', version: OLD_VERSION }, { what: 'kube-apiserver', version: NEW_VERSION }]);
const times: number[] = [];

test(`the kubeadm-shaped manifest is accepted by ${OLD_VERSION} and ${NEW_VERSION}`, async () => {
  for (const bin of [oldBin!, newBin!]) {
    const a = await proveManifest(bin, await manifest(OLD_VERSION, []));
    assert.deepEqual([a.exit, a.json.result, a.json.warnings], [0, 'Accepted', []], JSON.stringify(a));
    times.push(a.json.ms);
  }
});

test(`a feature gate ${NEW_VERSION} removed (ServiceTrafficDistribution, GA in v1.33): ${OLD_VERSION} accepts it with its GA warning, ${NEW_VERSION} refuses it`, async () => {
  const m = await manifest(OLD_VERSION, ['--feature-gates=ServiceTrafficDistribution=true']);
  const old = await proveManifest(oldBin!, m);
  assert.equal(old.json.result, 'Accepted', JSON.stringify(old));
  assert.deepEqual(old.json.warnings, ['Setting GA feature gate ServiceTrafficDistribution=true. It will be removed in a future release.']);
  const neu = await proveManifest(newBin!, m);
  assert.deepEqual([neu.exit, neu.json.result, neu.json.flag, neu.json.item, neu.json.message], [1, 'Refused', '--feature-gates', 'ServiceTrafficDistribution', 'unrecognized feature gate: ServiceTrafficDistribution']);
  times.push(old.json.ms, neu.json.ms);
});

test('an unknown flag and a value that does not parse: refused by both, naming the flag', async () => {
  for (const bin of [oldBin!, newBin!]) {
    const a = await proveManifest(bin, await manifest(OLD_VERSION, ['--no-such-flag=1']));
    assert.deepEqual([a.exit, a.json.result, a.json.flag, a.json.message], [1, 'Refused', '--no-such-flag', 'unknown flag: --no-such-flag']);
    const b = await proveManifest(bin, await manifest(OLD_VERSION, ['--secure-port=abc']));
    assert.deepEqual([b.json.result, b.json.flag, b.json.item], ['Refused', '--secure-port', 'abc']);
    times.push(a.json.ms, b.json.ms);
  }
});

test('an admission plugin the binary does not have (PodSecurityPolicy, removed in v1.25) is refused after every other flag was validated', async () => {
  const a = await proveManifest(newBin!, await manifest(OLD_VERSION, ['--enable-admission-plugins=NodeRestriction,PodSecurityPolicy']));
  assert.deepEqual([a.exit, a.json.result, a.json.flag, a.json.item, a.json.message], [1, 'Refused', '--enable-admission-plugins', 'PodSecurityPolicy', 'enable-admission-plugins plugin "PodSecurityPolicy" is unknown']);
  // Validation reports every error at once: two of them, the sentinel's left out.
  const b = await proveManifest(newBin!, await manifest(OLD_VERSION, ['--enable-admission-plugins=PodSecurityPolicy', '--disable-admission-plugins=NoSuchPlugin']));
  assert.equal(b.json.message, 'enable-admission-plugins plugin "PodSecurityPolicy" is unknown, disable-admission-plugins plugin "NoSuchPlugin" is unknown');
});

test('fail closed: a --version in the command line exits 0 without validating, which proves nothing', async () => {
  const a = await proveManifest(newBin!, await manifest(OLD_VERSION, ['--version=true']));
  assert.deepEqual([a.exit, a.json.result], [3, 'Inconclusive'], JSON.stringify(a));
});

test('as the proof Job runs it: the node\'s signing key replaced by the published throwaway key, the file of no other flag present — accepted, and the removed gate still refused', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'auo-proof-key-'));
  const keyFile = join(dir, 'sa.key');
  await writeFile(keyFile, PROOF_THROWAWAY_KEY);
  const command = manifestCommand(await readFile(await manifest(OLD_VERSION, []), 'utf8'));
  assert.ok(Array.isArray(command));
  // Every file flag points where nothing is (a Pod has none of the node's files) but the signing key, substituted.
  const nowhere = command.map((e) => e.replace(/=\/tmp\/auo-flag-proof-[^/]+\//, '=/nonexistent/'));
  assert.ok(nowhere.filter((e) => e.includes('=/nonexistent/')).length >= 8 && !nowhere.some((e) => e.includes('/tmp/auo-flag-proof-')), nowhere.join(' '));
  for (const [extra, result] of [[[], 'Accepted'], [['--feature-gates=ServiceTrafficDistribution=true'], 'Refused']] as const) {
    const built = proofCommand([...nowhere, ...extra], undefined, { signingKeyPath: keyFile });
    assert.ok('args' in built && built.substituted.length === 1);
    const { verdict, ms } = await proveFlags(newBin!, built.args.slice(0, -1));
    assert.equal(verdict.result, result, JSON.stringify(verdict));
    times.push(Math.round(ms));
  }
});

test('no probe connected to etcd, and each took well under the 30 s it may take', () => {
  assert.equal(etcd.connections(), 0);
  assert.ok(times.length >= 10);
  assert.ok(Math.max(...times) < 5_000, JSON.stringify(times));
  process.stderr.write(`[flag-proof] ${times.length} probes, ms: ${times.join(' ')}\n`);
});
