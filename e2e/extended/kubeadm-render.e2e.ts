// Real kubeadm renders, for each case of e2e/support/kubeadm-render.ts, the kube-apiserver manifest the operator must
// leave for `kubeadm upgrade apply`/`node` to the same version to find it equal and skip the restart
// (cmd/kubeadm/app/phases/upgrade/staticpods.go: "Current and new manifests of kube-apiserver are equal, skipping
// upgrade"; util/staticpod ManifestFilesAreEqual compares the whole Pod read from each file):
//   1. kubeadm v1.35.4 renders the node's manifest from the cluster's configuration before the upgrade;
//   2. the operator's agent edits it (the gate pass, then v1.36.3) and the operator edits kubeadm-config;
//   3. kubeadm v1.36.3 renders the manifest from the edited kubeadm-config (and, where the peer address is not the
//      advertise address, a per-node patch adding --peer-advertise-*): it must equal step 2's, as data.
// The renders are also checked against test/fixtures/kubeadm-render/ (which test/agent/kubeadm-equal.test.ts reads
// without kubeadm); AUO_WRITE_KUBEADM_RENDER_FIXTURES=1 writes them anew.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { parse } from 'yaml';
import { binary } from '../cluster/binaries.ts';
import { RENDER_CASES, clusterConfiguration, initConfiguration, operatorClusterConfiguration, operatorManifest, peerPatch, type RenderCase } from '../support/kubeadm-render.ts';

const OLD = 'v1.35.4';
const NEW = 'v1.36.3';
const FIXTURES = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'kubeadm-render');
const WRITE = process.env.AUO_WRITE_KUBEADM_RENDER_FIXTURES === '1';
const DEBIAN_CA_DIRS = ['etc/ca-certificates', 'usr/share/ca-certificates', 'usr/local/share/ca-certificates'];

/**
 * kubeadm's kube-apiserver manifest for the node of `config`. kubeadm runs chrooted into a throwaway folder
 * (`--rootfs`), so its dry run writes nothing on this machine outside it (no /etc/kubernetes, which the clusters of
 * the harness bind their nodes' folders onto).
 */
async function render(kubeadm: string, config: string, patches?: string): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'auo-kubeadm-render-'));
  try {
    // kubeadm mounts each of these CA folders that exists (phases/controlplane/volumes.go caCertsExtraVolumePaths):
    // a Debian host's, so the render is the same on any machine.
    for (const d of DEBIAN_CA_DIRS) await mkdir(join(root, d), { recursive: true });
    if (patches !== undefined) {
      await mkdir(join(root, 'patches'));
      await writeFile(join(root, 'patches', 'kube-apiserver+json.json'), patches);
    }
    await writeFile(join(root, 'kubeadm.yaml'), initConfiguration(config, patches === undefined ? undefined : '/patches'));
    await mkdir(join(root, 'out'));
    await promisify(execFile)(kubeadm, ['init', 'phase', 'control-plane', 'apiserver', '--rootfs', root, '--config', '/kubeadm.yaml', '--dry-run'], { env: { ...process.env, KUBEADM_INIT_DRYRUN_DIR: '/out' }, timeout: 60_000, maxBuffer: 1 << 20 });
    return await readFile(join(root, 'out', 'kube-apiserver.yaml'), 'utf8');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

async function fixture(name: string, rendered: string): Promise<void> {
  const path = join(FIXTURES, name);
  if (WRITE) await writeFile(path, rendered);
  assert.ok(existsSync(path), `${path} is missing: run with AUO_WRITE_KUBEADM_RENDER_FIXTURES=1`);
  assert.equal(readFileSync(path, 'utf8'), rendered, `${name}: kubeadm renders what the fixture holds`);
}

test('kubeadm v1.36.3 renders, from the kubeadm-config the operator leaves, the kube-apiserver manifest its agent left: kubeadm upgrade skips it', { timeout: 20 * 60_000 }, async () => {
  const [kubeadmOld, kubeadmNew] = await Promise.all([binary('kubeadm', OLD), binary('kubeadm', NEW)]);
  if (WRITE) await mkdir(FIXTURES, { recursive: true });
  const check = async (c: RenderCase): Promise<void> => {
    const before = clusterConfiguration(c, OLD);
    const old = await render(kubeadmOld, before);
    await fixture(`${c.name}-${OLD}.yaml`, old);
    const left = operatorManifest(old, c, NEW);
    const config = operatorClusterConfiguration(before, NEW);
    const patch = c.name === 'peer-patch' ? peerPatch(c) : undefined;
    const kubeadms = await render(kubeadmNew, config, patch);
    await fixture(`${c.name}-${NEW}.yaml`, kubeadms);
    process.stderr.write(`[render] ${c.name}: the operator's command ${JSON.stringify((parse(left) as { spec: { containers: { command: string[] }[] } }).spec.containers[0]!.command.slice(-5))}\n`);
    assert.deepEqual(parse(left), parse(kubeadms), `${c.name}: kubeadm ${NEW}'s manifest equals the operator's`);
    // The comparison can fail: without the operator's kubeadm-config edit kubeadm renders another manifest.
    const unedited = await render(kubeadmNew, before.replace(`kubernetesVersion: ${OLD}`, `kubernetesVersion: ${NEW}`), patch);
    assert.notDeepEqual(parse(left), parse(unedited), `${c.name}: without the kubeadm-config edit kubeadm's manifest differs`);
  };
  for (const c of RENDER_CASES) await check(c);
});
