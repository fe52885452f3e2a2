import { writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';

/** Writes a kubeconfig that names its CA and client cert by path, as kubectl and client-node both accept. */
export async function writeKubeconfig(path: string, server: string, caCert: string, clientCert: string, clientKey: string, name = 'auo-e2e'): Promise<string> {
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server, 'certificate-authority': caCert } }],
    users: [{ name: 'admin', user: { 'client-certificate': clientCert, 'client-key': clientKey } }],
    contexts: [{ name, context: { cluster: name, user: 'admin' } }],
    'current-context': name,
  };
  await writeFile(path, stringify(doc));
  return path;
}
