// The flag proof on real kube-apiserver binaries (docs/flag-proof.md): a kubeadm-shaped static Pod manifest with real
// certificates and keys, the prove-flags command run as a hook would run it (node src/agent/prove-flags-cli.ts), and
// a TCP listener as --etcd-servers that counts every connection, so that "exits before touching etcd" is measured.
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createPki, createServingCert } from '../cluster/pki.ts';
import { apiServerFlags } from '../cluster/apiserver-flags.ts';

const CLI = join(import.meta.dirname, '../../src/agent/prove-flags-cli.ts');

export interface ProofAnswer {
  exit: number;
  json: { result: string; flag?: string; item?: string; message?: string; warnings?: string[]; ms: number };
  stderr: string;
}

/** A TCP listener that counts connections: kube-apiserver's etcd. */
export async function countingEtcd(): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  let n = 0;
  const server: Server = createServer((s) => {
    n++;
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { url: `https://127.0.0.1:${port}`, connections: () => n, close: () => new Promise((r) => server.close(() => r())) };
}

/** A folder with a PKI and a function writing a kubeadm-shaped manifest of `version`'s flags plus `extra`. */
export async function manifestMaker(etcdUrl: string): Promise<(version: string, extra: string[]) => Promise<string>> {
  const dir = await mkdtemp(join(tmpdir(), 'auo-flag-proof-'));
  const pki = await createPki(join(dir, 'pki'));
  const serving = await createServingCert(pki, 'apiserver', ['127.0.0.1'], ['localhost']);
  let n = 0;
  return async (version, extra) => {
    const flags = apiServerFlags({ version, address: '127.0.0.1', etcdUrl, pki, serving, featureGates: {}, extraFlags: [] });
    const manifest = {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'kube-apiserver', namespace: 'kube-system' },
      spec: { hostNetwork: true, containers: [{ name: 'kube-apiserver', image: `registry.k8s.io/kube-apiserver:${version}`, command: ['kube-apiserver', ...flags, ...extra] }] },
    };
    const file = join(dir, `kube-apiserver-${n++}.yaml`);
    await writeFile(file, stringify(manifest));
    return file;
  };
}

/** Runs the prove-flags command with `binary` on `manifest`. */
export function proveManifest(binary: string, manifest: string): Promise<ProofAnswer> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CLI, '--binary', binary, '--manifest', manifest], { timeout: 60_000 }, (err, stdout, stderr) => {
      const exit = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1;
      const line = stdout.trim().split('\n').pop() ?? '';
      try {
        resolve({ exit, json: JSON.parse(line) as ProofAnswer['json'], stderr });
      } catch {
        reject(new Error(`prove-flags printed no JSON (exit ${exit}): ${stdout} ${stderr}`));
      }
    });
  });
}
