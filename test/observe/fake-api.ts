// The cluster's API as the FleetObserver lists it through the balancer, for the tests that run it against
// fixture servers: identity Leases pointing at them, the EndpointSlice, the APIServices, and object lists.
import { Writable } from 'node:stream';
import winston from 'winston';
import type { V1EndpointSliceList, V1PodList } from '@kubernetes/client-node';
import { APISERVICES_PATH } from '../../src/observe/fleet.ts';
import type { IdentityLeaseLike } from '../../src/observe/inventory.ts';
import type { APIServiceLike } from '../../src/observe/discovery.ts';
import type { Logger } from '../../src/runtime/logger.ts';
import type { FixtureServer } from './fixture-server.ts';

export const NOW = Date.parse('2026-11-29T10:00:00Z');

/** A logger that keeps every line (JSON objects), debug included. */
export function capturingLogger(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  return { log: winston.createLogger({ level: 'debug', format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] }), lines };
}

/** Objects of one resource as the fake lists them. */
export interface FakeObjects {
  items: { name: string; namespace?: string }[];
  /** Leave `remainingItemCount` out of a paginated answer (as a list with a selector does): count by `continue`. */
  noRemainingItemCount?: boolean;
}

export class FakeApi {
  leases = new Map<string, IdentityLeaseLike>();
  /** The APIService list's items (none by default: nothing aggregated). */
  apiServices: APIServiceLike[] = [];
  /** When set, listing the APIServices fails with it (e.g. a 403 without the RBAC rule). */
  apiServicesError: Error | undefined;
  apiServiceLists = 0;
  /** Collection path (`/apis/<g>/<v>/<resource>`, `/api/v1/<resource>`) -> its objects; unknown paths answer 404. */
  objects = new Map<string, FakeObjects>();
  /** Collection path -> the error listing it throws. */
  objectErrors = new Map<string, Error>();
  /** Every object list asked for, query included, in order. */
  objectLists: string[] = [];
  private rv = 100;

  add(s: Pick<FixtureServer, 'hostname' | 'address'>, holder = `apiserver-${s.hostname}_uuid-1`): void {
    this.leases.set(s.hostname, {
      metadata: {
        name: `apiserver-${s.hostname}`,
        resourceVersion: String(this.rv++),
        labels: { 'apiserver.kubernetes.io/identity': 'kube-apiserver', 'kubernetes.io/hostname': s.hostname },
        annotations: { 'kubernetes.io/peer-advertise-address': s.address },
      },
      spec: { holderIdentity: holder, renewTime: new Date(NOW).toISOString(), leaseDurationSeconds: 3600 },
    });
  }

  /** A renewal: new renewTime and resourceVersion, holder kept unless given (a restart). */
  renew(hostname: string, holder?: string): void {
    const l = this.leases.get(hostname)!;
    this.leases.set(hostname, { metadata: { ...l.metadata, resourceVersion: String(this.rv++) }, spec: { ...l.spec, holderIdentity: holder ?? l.spec?.holderIdentity, renewTime: new Date(NOW + this.rv * 1000).toISOString() } });
  }

  list = async <T,>(path: string): Promise<T> => {
    if (path.includes('/leases')) return { items: [...this.leases.values()] } as unknown as T;
    if (path.includes('/endpointslices')) {
      const ips = [...this.leases.values()].map((l) => l.metadata!.annotations!['kubernetes.io/peer-advertise-address']!.split(':')[0]!);
      return { items: [{ addressType: 'IPv4', endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })), ports: [{ name: 'https', port: 6443 }] }] } as unknown as V1EndpointSliceList as T;
    }
    if (path.includes('/pods?')) return { items: [] } as unknown as V1PodList as T;
    if (path === APISERVICES_PATH) {
      this.apiServiceLists++;
      if (this.apiServicesError) throw this.apiServicesError;
      return { kind: 'APIServiceList', apiVersion: 'apiregistration.k8s.io/v1', items: this.apiServices } as unknown as T;
    }
    return this.objectList(path) as T;
  };

  /** A paginated list as kube-apiserver answers it: `limit`, an offset in `continue`, `remainingItemCount`. */
  private objectList(path: string): unknown {
    const [base = '', query = ''] = path.split('?');
    this.objectLists.push(path);
    const error = this.objectErrors.get(base);
    if (error) throw error;
    const objects = this.objects.get(base);
    if (!objects) throw new Error(`GET ${path}: 404 Not Found`);
    const q = new URLSearchParams(query);
    const limit = Number(q.get('limit') ?? objects.items.length);
    const offset = Number(q.get('continue') ?? 0);
    const page = objects.items.slice(offset, offset + limit);
    const left = objects.items.length - offset - page.length;
    const metadata: Record<string, unknown> = { resourceVersion: '4242' };
    if (left > 0) {
      metadata.continue = String(offset + page.length);
      if (!objects.noRemainingItemCount) metadata.remainingItemCount = left;
    }
    const kind = `${base.split('/').at(-1)}List`;
    return { kind, apiVersion: 'v1', metadata, items: page.map((o) => ({ metadata: { name: o.name, ...(o.namespace ? { namespace: o.namespace } : {}) } })) };
  }
}
