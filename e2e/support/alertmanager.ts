// A real Alertmanager (Debian's prometheus-alertmanager, or AUO_ALERTMANAGER) on loopback for the e2e tests, with
// a given alertmanager.yml. Clustering is off (no gossip port): one instance, nothing else to agree with.
import { writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from '../cluster/cluster.ts';
import { ManagedProcess } from '../cluster/process.ts';
import { requireCommands } from '../cluster/requirements.ts';
import { untilReady } from './ready-process.ts';

export interface Alertmanager {
  /** host:port, as Prometheus's alerting.alertmanagers targets name it. */
  address: string;
  url: string;
  configFile: string;
  proc: ManagedProcess;
  stop(): Promise<void>;
}

/** `host`: the address it listens on (loopback unless given: an Endpoints object may not name a loopback address). */
export async function startAlertmanager(o: { dir: string; config: string; host?: string }): Promise<Alertmanager> {
  const bin = process.env.AUO_ALERTMANAGER ?? 'prometheus-alertmanager';
  if (!process.env.AUO_ALERTMANAGER) requireCommands(['prometheus-alertmanager'], 'startAlertmanager()');
  await mkdir(o.dir, { recursive: true });
  const configFile = join(o.dir, 'alertmanager.yml');
  await writeFile(configFile, o.config);
  const port = await freePort();
  const address = `${o.host ?? '127.0.0.1'}:${port}`;
  const url = `http://${address}`;
  const proc = new ManagedProcess(bin, [`--config.file=${configFile}`, `--storage.path=${join(o.dir, 'alertmanager-data')}`,
    `--web.listen-address=${address}`, '--cluster.listen-address=', '--log.level=debug'], join(o.dir, 'alertmanager.log'));
  const stop = await untilReady(proc, 'alertmanager', url, 30_000);
  return { address, url, configFile, proc, stop };
}
