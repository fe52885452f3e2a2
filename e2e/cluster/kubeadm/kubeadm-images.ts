// The images `kubeadm config images list` names, made as the harness makes every image (images.ts: one layer, the
// Go-built binary at /usr/local/bin), under the exact names kubeadm asks for. CoreDNS and kube-proxy are not among
// them: the real-kubeadm cluster skips both add-ons (why: docs/e2e-cluster.md "Real kubeadm").
import { binary, ETCD_VERSION } from '../binaries.ts';
import { buildImage, componentImage, DEFAULT_REPOSITORY, pauseImage, strip, type ImageTar } from '../images.ts';

/** The pause tag kubeadm pins per minor (cmd/kubeadm/app/constants PauseVersion): 3.10.1 in v1.35, 3.10.2 in v1.36. */
export const KUBEADM_PAUSE: Readonly<Record<string, string>> = { '1.35': '3.10.1', '1.36': '3.10.2' };

/** etcd's tag in kubeadm's form (`3.6.16-0`) for the harness's etcd version (`v3.6.16`). */
export function etcdImageTag(version = ETCD_VERSION): string {
  const m = /^v(\d+\.\d+\.\d+)$/.exec(version);
  if (!m) throw new Error(`not an etcd version: ${version}`);
  return `${m[1]}-0`;
}

export function pauseImageName(kubernetesVersion: string): string {
  const minor = /^v1\.(\d+)\./.exec(kubernetesVersion)?.[1];
  const tag = minor === undefined ? undefined : KUBEADM_PAUSE[`1.${minor}`];
  if (tag === undefined) throw new Error(`no pause tag known for kubeadm ${kubernetesVersion}`);
  return `${DEFAULT_REPOSITORY}/pause:${tag}`;
}

/** registry.k8s.io/etcd:<tag> holding the harness's etcd (kubeadm's manifest runs `etcd`). */
export async function etcdImage(version = ETCD_VERSION): Promise<ImageTar> {
  const path = await binary('etcd', version);
  return strip(await buildImage({
    name: `${DEFAULT_REPOSITORY}/etcd:${etcdImageTag(version)}`,
    entries: [
      { path: 'usr/local/bin/etcd', type: 'file', mode: 0o755, source: path },
      { path: 'etc/passwd', type: 'file', data: 'root:x:0:0:root:/root:/sbin/nologin\n' },
      { path: 'etc/group', type: 'file', data: 'root:x:0:\n' },
      { path: 'tmp', type: 'dir', mode: 0o1777 },
      { path: 'var/lib/etcd', type: 'dir', mode: 0o700 },
    ],
  }));
}

/** Every image a kubeadm control plane of these versions runs: kube-apiserver, -controller-manager, -scheduler, etcd, pause. */
export async function kubeadmImages(versions: string[]): Promise<ImageTar[]> {
  const unique = [...new Set(versions)];
  return Promise.all([
    etcdImage(),
    ...[...new Set(unique.map(pauseImageName))].map((name) => pauseImage(name)),
    ...unique.flatMap((v) => (['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const).map((c) => componentImage(c, v))),
  ]);
}
