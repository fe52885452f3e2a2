import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Default versions of the e2e cluster: an adjacent old/new pair where the proxy gate goes alpha -> beta. */
export const OLD_VERSION = process.env.AUO_OLD_VERSION ?? 'v1.35.4';
export const NEW_VERSION = process.env.AUO_NEW_VERSION ?? 'v1.36.3';
export const ETCD_VERSION = process.env.AUO_ETCD_VERSION ?? 'v3.6.16';

const buildScript = fileURLToPath(new URL('./build-binaries.sh', import.meta.url));

/** `AUO_KUBE_APISERVER_V1_35_4=/path/to/kube-apiserver` or `AUO_ETCD=/path/to/etcd` skip the build. */
function prebuiltFromEnv(what: 'kube-apiserver' | 'etcd', version: string): string | undefined {
  const key = what === 'etcd' ? 'AUO_ETCD' : `AUO_KUBE_APISERVER_${version.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
  const path = process.env[key];
  if (path === undefined || path === '') return undefined;
  if (!existsSync(path)) throw new Error(`${key}=${path} does not exist`);
  return path;
}

const inFlight = new Map<string, Promise<string>>();

/**
 * Returns the path of a binary, building it into the cache outside the repo when missing.
 * Build progress streams to stderr so a cold first run (minutes) does not look hung.
 */
export function binary(what: 'kube-apiserver' | 'etcd', version: string): Promise<string> {
  const pre = prebuiltFromEnv(what, version);
  if (pre !== undefined) return Promise.resolve(pre);
  const key = `${what}@${version}`;
  let p = inFlight.get(key);
  if (p === undefined) {
    p = new Promise<string>((resolve, reject) => {
      const child = spawn('bash', [buildScript, what, version], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.on('error', reject);
      // 'close', not 'exit': stdout may still hold the path when the process has exited.
      child.on('close', (code) => {
        const path = out.trim().split('\n').pop() ?? '';
        if (code === 0 && existsSync(path)) resolve(path);
        else reject(new Error(`building ${key} failed (exit ${code}); see the build output above`));
      });
    });
    inFlight.set(key, p);
  }
  return p;
}
