// The harness registry (e2e/cluster/registry.ts) for real, in ~10 s: Debian's docker-registry on its own address,
// an OCI tar pushed with skopeo, and a containerd in a network namespace of its own — started with the nodes
// mode's containerd config (kubeadm-layout.ts: certs.d as the CRI registry config_path) — pulling
// registry.k8s.io/pause:3.10 by its upstream name through the hosts.toml mirror over plain HTTP. ctr is given the same
// certs.d (--hosts-dir): the resolver and hosts.toml reading are containerd's own, the ones its CRI plugin uses; the
// kubelets' pulls through the CRI are e2e/extended/release-install-nodes.e2e.ts. Then the registry stops and leaves nothing behind.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pauseImage, listImages, type ImageTar } from './cluster/images.ts';
import { containerdPulls, startRegistry, writeMirrorHosts, type Registry } from './cluster/registry.ts';
import { containerdConfig, registryConfigPath } from './cluster/nodes/kubeadm-layout.ts';
import { createNetns, deleteNetnsSync, releaseSubnet, type Netns } from './cluster/netns.ts';
import { STATE_ROOT } from './cluster/cleanup.ts';
import { ManagedProcess } from './cluster/process.ts';
import { run, waitFor } from './cluster/exec.ts';

describe('the harness registry: push with skopeo, pull by upstream name through a containerd hosts.toml mirror', () => {
  const root = mkdtempSync('/tmp/auo-registry-');
  let registry: Registry;
  let image: ImageTar;
  let ns: Netns | undefined;
  let containerd: ManagedProcess | undefined;

  before(async () => {
    image = await pauseImage();
    registry = await startRegistry();
  });

  after(async () => {
    await containerd?.stop(10_000);
    if (ns) {
      deleteNetnsSync(ns);
      releaseSubnet(STATE_ROOT, ns.prefix);
    }
    await registry?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('answers /v2/ on an address of its own and stores a pushed OCI tar under its full upstream name, digest unchanged', async () => {
    assert.match(registry.address, /^10\.77\.\d+\.1:5000$/);
    const pushed = await registry.push(image.path, image.name);
    assert.equal(pushed.reference, `${registry.address}/registry.k8s.io/pause:3.10`);
    assert.equal(pushed.digest, image.manifestDigest, 'pushed as built: the tar\'s manifest, layers uncompressed');
    const tags = await (await fetch(`http://${registry.address}/v2/registry.k8s.io/pause/tags/list`)).json() as { tags: string[] };
    assert.deepEqual(tags.tags, ['3.10']);
  });

  it('a containerd in another network namespace pulls registry.k8s.io/pause:3.10 through the mirror, and the registry logs containerd\'s pull', async () => {
    ns = await createNetns(`reg${process.pid}`, STATE_ROOT);
    writeFileSync(join(root, 'containerd.toml'), containerdConfig({ root, pauseImage: image.name }));
    await writeMirrorHosts(registryConfigPath(root), registry.address);
    containerd = new ManagedProcess('ip', ['netns', 'exec', ns.name, 'containerd', '--config', join(root, 'containerd.toml')], join(root, 'containerd.log'));
    const socket = join(root, 'containerd', 'containerd.sock');
    await waitFor('the containerd socket', 30_000, async () => (existsSync(socket) ? true : undefined), 200);
    await run('ip', ['netns', 'exec', ns.name, 'ctr', '-a', socket, '-n', 'k8s.io', 'images', 'pull', '--hosts-dir', registryConfigPath(root), image.name]);
    assert.equal((await listImages(socket)).get(image.name), image.manifestDigest);
    const pulls = containerdPulls(readFileSync(registry.logPath, 'utf8'));
    assert.ok(pulls.includes('registry.k8s.io/pause:3.10'), `containerd resolved the tag at the registry (pulls: ${pulls.join(', ')})`);
    assert.ok(pulls.includes(`registry.k8s.io/pause:${image.manifestDigest}`), 'and fetched the manifest by digest');
    const fromNode = readFileSync(registry.logPath, 'utf8').split('\n').filter((l) => l.startsWith(`${ns!.prefix}.2 `) && l.includes('"containerd/'));
    assert.ok(fromNode.length > 0, 'the requests came from the namespace\'s address, not the host');
  });

  it('stops cleanly: the process, its link and address, its storage are gone', async () => {
    const { address } = registry;
    const dir = join(registry.logPath, '..');
    await registry.stop();
    // (Not a failed fetch: this machine's network answers connections to unknown addresses.)
    assert.ok(!(await run('ss', ['-Hltn'])).includes(address), 'nothing listens on the address');
    assert.ok(!(await run('ip', ['-4', '-o', 'addr', 'show'])).includes(` ${address.split(':')[0]}/`), 'the address is gone');
    assert.ok(!existsSync(dir), 'the storage and state folder are gone');
  });
});
