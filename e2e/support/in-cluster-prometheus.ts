// A real Prometheus (upstream's, built with kubernetes_sd_configs: Debian's has none) that runs as if in a Pod of
// the e2e cluster, so that a configuration written for a Prometheus in the cluster runs unchanged: it gets what the
// kubelet gives a Pod, a ServiceAccount token and the cluster CA at /var/run/secrets/kubernetes.io/serviceaccount/
// and the KUBERNETES_SERVICE_HOST/PORT of the API. The files are put there in a private mount namespace (a tmpfs over
// /run for this process alone), so nothing on the host changes; kubernetes_sd_configs without api_server then
// take the in-cluster path they take in a Pod, and credentials_file/ca_file read those files.
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../cluster/cluster.ts';
import { ManagedProcess } from '../cluster/process.ts';
import { requireCommands } from '../cluster/requirements.ts';
import { untilReady } from './ready-process.ts';

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface InClusterPrometheus {
  url: string;
  proc: ManagedProcess;
  stop(): Promise<void>;
}

/**
 * Starts Prometheus (the binary `bin`) with `config` as its prometheus.yml, written into `dir` (relative rule_files are read from
 * there), and answers once /-/ready says 200. `api` is the address of the API as a Pod sees it (the balancer).
 * `binds` puts host folders at the paths a Pod's volumes would be mounted at (each `to` must exist), in the same
 * private mount namespace; `configFile` then names the configuration by its path there instead of `config`.
 * `args` are more flags (none of those set here: config file, storage path, listen address, retention, log level).
 */
export async function startInClusterPrometheus(o: { bin: string; dir: string; config: string; token: string; caFile: string; api: { host: string; port: number }; binds?: { from: string; to: string }[]; configFile?: string; args?: string[] }): Promise<InClusterPrometheus> {
  requireCommands(['unshare'], 'startInClusterPrometheus()');
  const sa = join(o.dir, 'serviceaccount');
  await mkdir(sa, { recursive: true });
  await writeFile(join(sa, 'token'), o.token, { mode: 0o600 });
  await copyFile(o.caFile, join(sa, 'ca.crt'));
  const cfg = join(o.dir, 'prometheus.yml');
  await writeFile(cfg, o.config);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // /var/run is a link to /run on Debian: the tmpfs goes on the folder it resolves to.
  const run = realpathSync('/var/run');
  const script = [
    'set -e',
    `mount -t tmpfs -o size=1m,mode=0755 auo-in-cluster ${run}`,
    `mkdir -p ${SERVICE_ACCOUNT_DIR}`,
    `cp "$1/token" "$1/ca.crt" ${SERVICE_ACCOUNT_DIR}/`,
    'export KUBERNETES_SERVICE_HOST="$2" KUBERNETES_SERVICE_PORT="$3"',
    'shift 3',
    // Each bind as two arguments (from, to) before `--`: paths, never parsed as shell.
    'while [ "$1" != -- ]; do mount --bind "$1" "$2"; shift 2; done',
    'shift',
    'exec "$@"',
  ].join('\n');
  const proc = new ManagedProcess('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', script, 'in-cluster', sa, o.api.host, String(o.api.port),
    ...(o.binds ?? []).flatMap((b) => [b.from, b.to]), '--',
    o.bin, `--config.file=${o.configFile ?? cfg}`, `--storage.tsdb.path=${join(o.dir, 'prometheus-data')}`,
    `--web.listen-address=127.0.0.1:${port}`, '--storage.tsdb.retention.time=1h', '--log.level=info', ...(o.args ?? [])], join(o.dir, 'prometheus.log'));
  const stop = await untilReady(proc, 'the in-cluster Prometheus', url, 60_000);
  return { url, proc, stop };
}
