// The flag proof against v1.37.2 (docs/flag-proof.md): an admission plugin and a feature gate that v1.36.3 has and
// v1.37.2 removed — JobValidation (added in v1.36) and SidecarContainers (GA in v1.33, removed in v1.37) — are
// accepted by v1.36.3 and refused by v1.37.2 with the flag and the binary's message; the same manifest without them
// is accepted by both; no probe connects to etcd.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { ensureBinaries } from '../cluster/binaries.ts';
import { MINOR_V1_37 as path } from './paths.ts';
import { countingEtcd, manifestMaker, proveManifest } from '../support/flag-proof.ts';

const etcd = await countingEtcd();
after(() => etcd.close());
const manifest = await manifestMaker(etcd.url);
const [fromBin, toBin] = await ensureBinaries([{ what: 'kube-apiserver', version: path.from }, { what: 'kube-apiserver', version: path.to }]);

test(`${path.from} -> ${path.to}: the manifest without removed names is accepted by both`, async () => {
  for (const bin of [fromBin!, toBin!]) {
    const a = await proveManifest(bin, await manifest(path.from, ['--enable-admission-plugins=NodeRestriction']));
    assert.deepEqual([a.exit, a.json.result, a.json.warnings], [0, 'Accepted', []], JSON.stringify(a));
  }
});

test(`an admission plugin ${path.to} removed (JobValidation): accepted by ${path.from}, refused by ${path.to} after every flag was validated`, async () => {
  const m = await manifest(path.from, ['--enable-admission-plugins=NodeRestriction,JobValidation']);
  assert.equal((await proveManifest(fromBin!, m)).json.result, 'Accepted');
  const a = await proveManifest(toBin!, m);
  assert.deepEqual([a.exit, a.json.result, a.json.flag, a.json.item, a.json.message], [1, 'Refused', '--enable-admission-plugins', 'JobValidation', 'enable-admission-plugins plugin "JobValidation" is unknown']);
});

test(`a feature gate ${path.to} removed (SidecarContainers): accepted by ${path.from} with its GA warning, refused by ${path.to}`, async () => {
  const m = await manifest(path.from, ['--feature-gates=SidecarContainers=true']);
  const old = await proveManifest(fromBin!, m);
  assert.deepEqual([old.json.result, old.json.warnings], ['Accepted', ['Setting GA feature gate SidecarContainers=true. It will be removed in a future release.']]);
  const a = await proveManifest(toBin!, m);
  assert.deepEqual([a.exit, a.json.result, a.json.flag, a.json.item], [1, 'Refused', '--feature-gates', 'SidecarContainers']);
});

test('no probe connected to etcd', () => {
  assert.equal(etcd.connections(), 0);
});
