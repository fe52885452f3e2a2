// A watch of one ApiServerUpgrade through the balancer, for the campaign's history: each change arrives within
// milliseconds of its write (a poll would blur the breach reaction times by its period). Servers restart under it all
// the time, so a cut stream is re-listed and watched again from the object's resourceVersion. A stream the balancer
// pinned to a server cut from etcd stays open and silent (replay of nodes seed 102 #0: three checks written at +177.5,
// +183.2 and +189.3 s all arrived at +192.2 s), so a poll on fresh connections runs beside it: whichever sees a
// resourceVersion first records it, and an older object never replaces a newer one.
import { request } from 'node:https';
import type { ClientRequest } from 'node:http';
import { readFileSync } from 'node:fs';
import type { Cluster } from '../cluster/index.ts';
import type { ClusterLike } from '../support/operator.ts';

/** What the watch needs of a cluster (process mode or nodes mode): the balancer and the admin's credentials. */
export type WatchedCluster = ClusterLike & Pick<Cluster, 'lbUrl'> & { pki: Pick<Cluster['pki'], 'caCert' | 'adminCert' | 'adminKey'> };
import { sleep } from '../cluster/index.ts';
import { getUpgrade } from '../support/operator.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';
/** One watch event line: far above an upgrade object's size, so a runaway stream is cut, not buffered. */
const MAX_LINE = 4 * 1024 * 1024;

/**
 * Passes on only objects newer than any passed before: the watch and the poll race, and one may bring an object
 * the other already brought, or an older one. One etcd behind every server: resourceVersions are its revisions,
 * ordered as integers; an object without a numeric one is dropped.
 */
export function newerOnly(deliver: (u: ApiServerUpgrade, at: number) => void): (u: ApiServerUpgrade, at: number) => void {
  let newest = -1n;
  return (u, at) => {
    const rv = u.metadata?.resourceVersion;
    if (!rv || !/^[0-9]{1,20}$/.test(rv) || BigInt(rv) <= newest) return;
    newest = BigInt(rv);
    deliver(u, at);
  };
}

export class StatusWatch {
  private running = true;
  private req: ClientRequest | undefined;
  private readonly loop: Promise<void>;
  private readonly poll: Promise<void>;

  constructor(cluster: WatchedCluster, name: string, onObjectInOrder: (u: ApiServerUpgrade, at: number) => void) {
    const onObject = newerOnly(onObjectInOrder);
    const tls = { ca: readFileSync(cluster.pki.caCert), cert: readFileSync(cluster.pki.adminCert), key: readFileSync(cluster.pki.adminKey), servername: 'kubernetes.default.svc' };
    const watchOnce = (rv: string): Promise<void> => new Promise((resolve) => {
      const path = `${UPGRADES}?watch=1&fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}&resourceVersion=${encodeURIComponent(rv)}&timeoutSeconds=60`;
      const req = request(cluster.lbUrl + path, { ...tls, agent: false }, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          resolve();
          return;
        }
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buf += chunk;
          if (buf.length > MAX_LINE) {
            req.destroy();
            return;
          }
          for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
            const lineText = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            try {
              const ev = JSON.parse(lineText) as { type?: string; object?: ApiServerUpgrade };
              if ((ev.type === 'ADDED' || ev.type === 'MODIFIED') && ev.object) onObject(ev.object, Date.now());
            } catch {
              /* a torn line as the server went away: the re-list covers it */
            }
          }
        });
        res.on('end', () => resolve());
        res.on('error', () => resolve());
        res.on('close', () => resolve());
      });
      req.on('error', () => resolve());
      req.end();
      this.req = req;
    });
    // Fresh connections, a short deadline: a server cut from etcd holds the GET, and the balancer drops it soon.
    this.poll = (async () => {
      while (this.running) {
        const r = await cluster.request('lb', `${UPGRADES}/${name}`, { timeoutMs: 1500, newConnection: true }).catch(() => undefined);
        if (r?.status === 200) {
          try {
            onObject(JSON.parse(r.body) as ApiServerUpgrade, Date.now());
          } catch {
            /* a torn body: the next poll or the watch has it */
          }
        }
        if (this.running) await sleep(500);
      }
    })();
    this.loop = (async () => {
      while (this.running) {
        const u = await getUpgrade(cluster, name);
        if (!u) {
          await sleep(300);
          continue;
        }
        onObject(u, Date.now());
        if (!this.running) break;
        await watchOnce(u.metadata?.resourceVersion ?? '0');
        if (this.running) await sleep(100);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.req?.destroy();
    await Promise.all([this.loop, this.poll]);
  }
}
