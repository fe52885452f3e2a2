// A real Alertmanager (Debian's prometheus-alertmanager, or AUO_ALERTMANAGER) on loopback for the e2e tests, with
// a given alertmanager.yml. Clustering is off (no gossip port): one instance, nothing else to agree with.
import { writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from '../cluster/cluster.ts';
import { ManagedProcess } from '../cluster/process.ts';
import { waitFor } from '../cluster/index.ts';
import { requireCommands } from '../cluster/requirements.ts';
import { registerTeardown, unregisterTeardown } from '../cluster/cleanup.ts';

export interface Alertmanager {
  /** host:port, as Prometheus's alerting.alertmanagers targets name it. */
  address: string;
  url: string;
  configFile: string;
  proc: ManagedProcess;
  stop(): Promise<void>;
}

export async function startAlertmanager(o: { dir: string; config: string }): Promise<Alertmanager> {
  const bin = process.env.AUO_ALERTMANAGER ?? 'prometheus-alertmanager';
  if (!process.env.AUO_ALERTMANAGER) requireCommands(['prometheus-alertmanager'], 'startAlertmanager()');
  await mkdir(o.dir, { recursive: true });
  const configFile = join(o.dir, 'alertmanager.yml');
  await writeFile(configFile, o.config);
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const url = `http://${address}`;
  const proc = new ManagedProcess(bin, [`--config.file=${configFile}`, `--storage.path=${join(o.dir, 'alertmanager-data')}`,
    `--web.listen-address=${address}`, '--cluster.listen-address=', '--log.level=debug'], join(o.dir, 'alertmanager.log'));
  // Killed with the test process too (a failed before(), Ctrl-C): it runs in a process group of its own.
  const key = `alertmanager-${proc.pid}`;
  registerTeardown(key, () => proc.signalGroup('SIGKILL'));
  const stop = async (): Promise<void> => {
    await proc.stop(10_000);
    unregisterTeardown(key);
  };
  try {
    await waitFor('Alertmanager to be ready', 30_000, async () => {
      if (proc.exited) throw new Error(`alertmanager exited (${proc.exitCode ?? proc.signal}); see ${proc.logPath}`);
      const r = await fetch(`${url}/-/ready`).catch(() => undefined);
      return r?.status === 200 ? true : undefined;
    }, 250);
  } catch (err) {
    await stop();
    throw err;
  }
  return { address, url, configFile, proc, stop };
}
