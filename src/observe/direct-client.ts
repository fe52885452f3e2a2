/**
 * Talks to one kube-apiserver directly by its address, bypassing the load balancer, with the
 * cluster CA and the operator's own credentials from a KubeConfig. The thin I/O shell around the
 * pure observe/* functions; tested end to end against real servers, not in unit tests.
 *
 * Uses node:https rather than global fetch: fetch ignores an https.Agent, and reaching undici's
 * dispatcher would mean depending on a transitive package. Each server's serving certificate
 * carries its own IP as a SAN, so verifying against the address works; `serverName` can ask for
 * `kubernetes.default.svc` instead, the name the peer proxy itself verifies.
 */
import type https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { CredentialAgent, decoded, errorText, httpsCall, readBody } from '../runtime/https-call.ts';
import type { Credentials, KubeAccess } from '../runtime/kubeconfig.ts';
import type { APIGroupDiscoveryList, APIResourceList } from './discovery.ts';
import { EtagCache } from './etag-cache.ts';
import { hostOf } from './inventory.ts';
import type { ProbeResult } from './inventory.ts';
import { parsePromStream } from './prom-text.ts';
import type { ParsedMetrics, WantedFamilies } from './prom-text.ts';
import { COORDINATED_LEADER_ELECTION, FAMILIES, featureGateState, processStartOf, proxyGateState } from './signals.ts';
import { USER_AGENT } from '../runtime/kube-request.ts';
import { bigBodySlots, capExceeded, DISCOVERY_MAX_BYTES, METRICS_MAX_BYTES, METRICS_MAX_KEPT_BYTES, METRICS_MAX_KEPT_SAMPLES, METRICS_MAX_LINE_BYTES, parseBoundedJson, SMALL_BODY_MAX_BYTES, type Slots } from '../runtime/body-limits.ts';
import type { PromLimits } from './prom-text.ts';
import { safeMessage } from '../plan/redact.ts';

export const DISCOVERY_ACCEPT = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
export const DISCOVERY_ACCEPT_NOPEER = `${DISCOVERY_ACCEPT};profile=nopeer`;
// Ask for the classic text format, so content negotiation never hands us OpenMetrics or protobuf.
const METRICS_ACCEPT = 'text/plain;version=0.0.4';

/** The credentials of each request: the kubeconfig's (KubeAccess.credentials), or a test's. */
export type CredentialSource = () => Promise<Credentials>;

/** A request's own deadline (body included), instead of the client's `timeoutMs`. */
export interface Deadline {
  timeoutMs?: number;
  /**
   * An end shared by several requests (epoch ms): the request gets what is left of it when it is sent (after
   * waiting for a slot), never less than `timeoutMs` — a request sent after the end still gets that long.
   */
  until?: number;
}

export interface DirectClientOptions {
  /** Whole-request deadline, body included. */
  timeoutMs?: number;
  /** Largest discovery document (aggregated or legacy) read into memory; default DISCOVERY_MAX_BYTES. */
  maxBodyBytes?: number;
  /** The caps of one /metrics page; default the operator's (src/runtime/body-limits.ts). */
  metricsLimits?: PromLimits;
  /** Big bodies read and parsed at once (discovery, /metrics); default the process-wide `bigBodySlots`. */
  slots?: Slots;
  /** TLS name to verify instead of the address's IP, e.g. `kubernetes.default.svc`. */
  serverName?: string;
  /**
   * Kept-alive TLS connections per server. Default 2: each costs ~0.3 MiB of RSS (bench/README.md: 4 per server
   * held 50-100 MiB more at 50-100 servers), and two let one hung request (a server that lost etcd) not hold up
   * the rest of that server's probes.
   */
  maxSocketsPerServer?: number;
}

export class DirectHttpError extends Error {
  readonly status: number;
  readonly address: string;
  readonly path: string;
  constructor(address: string, path: string, status: number, body: string) {
    super(`GET https://${address}${path}: HTTP ${status}${body ? `: ${safeMessage(body, { maxChars: 200 })}` : ''}`);
    this.name = 'DirectHttpError';
    this.status = status;
    this.address = address;
    this.path = path;
  }
}

export interface VersionInfo {
  gitVersion: string;
  major?: string;
  minor?: string;
  /** KEP-4330 (1.31+): the version the server emulates (`--emulated-version`, its own minor by default). */
  emulationMajor?: string;
  emulationMinor?: string;
  gitCommit?: string;
  [field: string]: unknown;
}

/**
 * The emulated version of a `/version` answer, "1.35" (emulationMajor.emulationMinor); undefined when either
 * field is absent or not a plain number (servers before 1.31 have neither).
 */
export function emulationOf(info: Pick<VersionInfo, 'emulationMajor' | 'emulationMinor'>): string | undefined {
  const { emulationMajor: major, emulationMinor: minor } = info;
  if (typeof major !== 'string' || typeof minor !== 'string' || !/^\d+$/.test(major) || !/^\d+$/.test(minor)) return undefined;
  return `${major}.${minor}`;
}

export interface DiscoveryRequest {
  /** The peer-aggregated view (true) or the server's own (`profile=nopeer`). */
  peer: boolean;
  /** `/api` (core group) instead of `/apis`. */
  core: boolean;
}

export class DirectClient {
  private readonly credentials: CredentialSource;
  private readonly timeoutMs: number;
  private readonly maxBodyBytes: number;
  private readonly metricsLimits: PromLimits;
  private readonly slots: Slots;
  private readonly serverName: string | undefined;
  private readonly etags = new EtagCache();
  private readonly agent: CredentialAgent;

  constructor(credentials: CredentialSource, options: DirectClientOptions = {}) {
    this.credentials = credentials;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxBodyBytes = options.maxBodyBytes ?? DISCOVERY_MAX_BYTES;
    this.metricsLimits = options.metricsLimits ?? { maxBytes: METRICS_MAX_BYTES, maxLineBytes: METRICS_MAX_LINE_BYTES, maxKeptSamples: METRICS_MAX_KEPT_SAMPLES, maxKeptBytes: METRICS_MAX_KEPT_BYTES };
    this.slots = options.slots ?? bigBodySlots;
    this.serverName = options.serverName;
    this.agent = new CredentialAgent(options.maxSocketsPerServer ?? 2);
  }

  /** With the kubeconfig's CA, client certificate and auth headers; the TLS name checked is each server's address. */
  static fromKubeConfig(access: KubeAccess, options?: DirectClientOptions): DirectClient {
    return new DirectClient(() => access.credentials(), options);
  }

  async getVersion(address: string, o: Deadline = {}): Promise<VersionInfo> {
    const info = parseBoundedJson<VersionInfo>(await this.getText(address, '/version', 'application/json', SMALL_BODY_MAX_BYTES, o), 64, `https://${address}/version`);
    if (typeof info.gitVersion !== 'string') throw new Error(`https://${address}/version: no gitVersion`);
    return info;
  }

  /** `/readyz`: a 500 with the failing checks is an answer (not ready), not an error. */
  async readyz(address: string, o: Deadline = {}): Promise<{ ready: boolean; status: number; body: string }> {
    const res = await this.request(address, '/readyz', { Accept: 'text/plain' }, o);
    const body = await readBody(res, SMALL_BODY_MAX_BYTES, `https://${address}/readyz`);
    return { ready: res.statusCode === 200, status: res.statusCode ?? 0, body };
  }

  /** Any GET, its status and (bounded) body: a non-200 is an answer, not an error (e.g. `/readyz/etcd`). */
  async get(address: string, path: string, accept = 'text/plain'): Promise<{ status: number; body: string }> {
    const res = await this.request(address, path, { Accept: accept });
    const body = await readBody(res, SMALL_BODY_MAX_BYTES, `https://${address}${path}`);
    return { status: res.statusCode ?? 0, body };
  }

  /** A GET whose body is read up to `maxBytes` (a larger one throws): `/flagz` and `/statusz`, in the `accept` type asked. */
  async page(address: string, path: string, accept: string, maxBytes: number): Promise<{ status: number; body: string }> {
    const res = await this.request(address, path, { Accept: accept });
    const body = await readBody(res, maxBytes, `https://${address}${path}`);
    return { status: res.statusCode ?? 0, body };
  }

  /** Streams `/metrics` (gzipped when the server agrees, ~10x fewer bytes) through the decompressor into the parser, keeping only the wanted families. */
  async metrics(address: string, wanted: WantedFamilies, o: Deadline = {}): Promise<ParsedMetrics> {
    // Asked and parsed inside a slot (its kept samples are a big body; the deadline starts once the slot is
    // held); the page is streamed, never held whole.
    return this.slots.run(async () => {
      const res = await this.request(address, '/metrics', { Accept: METRICS_ACCEPT }, o);
      if (res.statusCode !== 200) throw new DirectHttpError(address, '/metrics', res.statusCode ?? 0, await readBody(res, 4096).catch(() => ''));
      const body = decoded(res);
      try {
        return await parsePromStream(body, wanted, this.metricsLimits);
      } finally {
        if (!res.complete) {
          body.destroy();
          res.destroy();
        }
      }
    });
  }

  /**
   * Keeps up to `entries` discovery answers for If-None-Match (never fewer than the default 256): the fleet
   * observer asks for 4 documents per server, and a cache smaller than that turns every 304 into a full body.
   */
  fitEtagCache(entries: number): void {
    this.etags.resize(entries);
  }

  /** Aggregated discovery; answers from the ETag cache on 304. */
  async discovery(address: string, which: DiscoveryRequest, o: Deadline = {}): Promise<APIGroupDiscoveryList> {
    const path = which.core ? '/api' : '/apis';
    const accept = which.peer ? DISCOVERY_ACCEPT : DISCOVERY_ACCEPT_NOPEER;
    const key = `${address} ${path} ${accept}`;
    const cached = this.etags.get(key);
    const headers: Record<string, string> = { Accept: accept };
    if (cached) headers['If-None-Match'] = cached.etag;
    const where = `https://${address}${path}`;
    // Asked, read and parsed inside a slot: at most BIG_BODY_SLOTS documents are in memory at once, process-wide.
    const doc = await this.slots.run(async () => {
      const res = await this.request(address, path, headers, o);
      let body: string;
      if (res.statusCode === 304 && cached) {
        res.resume();
        body = cached.body;
      } else if (res.statusCode === 200) {
        body = await readBody(res, this.maxBodyBytes, where);
        const etag = res.headers.etag;
        if (etag) this.etags.set(key, etag, body);
        else this.etags.delete(key);
      } else {
        throw new DirectHttpError(address, path, res.statusCode ?? 0, await readBody(res, 4096).catch(() => ''));
      }
      return parseBoundedJson<APIGroupDiscoveryList>(body, undefined, where);
    });
    if (doc.kind !== 'APIGroupDiscoveryList') throw new Error(`${where}: expected APIGroupDiscoveryList, got ${String(doc.kind)}`);
    return doc;
  }

  /** Legacy discovery of one group/version (`/api/v1`, `/apis/<g>/<v>`), for storageVersionHash. */
  async resourceList(address: string, path: string): Promise<APIResourceList> {
    const where = `https://${address}${path}`;
    return this.slots.run(async () => {
      const res = await this.request(address, path, { Accept: 'application/json' });
      const body = await readBody(res, this.maxBodyBytes, where);
      if (res.statusCode !== 200) throw new DirectHttpError(address, path, res.statusCode ?? 0, body);
      return parseBoundedJson<APIResourceList>(body, undefined, where);
    });
  }

  /** Version, readiness and proxy gate of one address; partial failures land in `error`. */
  async probe(address: string): Promise<ProbeResult> {
    return (await this.probeWithMetrics(address, new Set([FAMILIES.featureEnabled, FAMILIES.processStart]))).probe;
  }

  /**
   * The probe plus the parsed `/metrics` families asked for, from one scrape: the fleet observer reads the
   * gate and the analysis signals from the same page instead of fetching 1.4 MB twice per server.
   */
  async probeWithMetrics(address: string, wanted: WantedFamilies | undefined, o: Deadline = {}): Promise<{ probe: ProbeResult; metrics?: ParsedMetrics; capped?: { body: string; message: string }[] }> {
    const [version, ready, metrics] = await Promise.allSettled([
      this.getVersion(address, o),
      this.readyz(address, o),
      // No scrape asked for (`undefined`): no gate state either; the caller keeps the last one.
      wanted === undefined ? Promise.resolve(undefined) : this.metrics(address, wanted, o),
    ]);
    const result: ProbeResult = {};
    const errors: string[] = [];
    if (version.status === 'fulfilled') {
      result.version = version.value.gitVersion;
      const emulation = emulationOf(version.value);
      if (emulation !== undefined) result.emulation = emulation;
    } else errors.push(`version: ${errorText(version.reason)}`);
    if (ready.status === 'fulfilled') result.ready = ready.value.ready;
    else errors.push(`readyz: ${errorText(ready.reason)}`);
    if (metrics.status === 'fulfilled') {
      if (metrics.value) {
        result.proxyGate = proxyGateState(metrics.value);
        result.coordinatedLeaderElection = featureGateState(metrics.value, COORDINATED_LEADER_ELECTION);
        const start = processStartOf(metrics.value);
        if (start !== undefined) result.processStart = start;
      }
    } else errors.push(`metrics: ${errorText(metrics.reason)}`);
    if (errors.length > 0) result.error = errors.join('; ');
    const capped = ([['version', version], ['readyz', ready], ['metrics', metrics]] as const).flatMap(([body, r]) => {
      const c = r.status === 'rejected' ? capExceeded(r.reason) : undefined;
      return c ? [{ body, message: c.message }] : [];
    });
    return { probe: result, ...(metrics.status === 'fulfilled' && metrics.value ? { metrics: metrics.value } : {}), ...(capped.length > 0 ? { capped } : {}) };
  }

  /** Closes pooled connections. */
  close(): void {
    this.agent.destroy();
  }

  private async getText(address: string, path: string, accept: string, maxBytes: number, o: Deadline = {}): Promise<string> {
    const res = await this.request(address, path, { Accept: accept }, o);
    const body = await readBody(res, maxBytes, `https://${address}${path}`);
    if (res.statusCode !== 200) throw new DirectHttpError(address, path, res.statusCode ?? 0, body);
    return body;
  }

  /** One GET (httpsCall: sent once more when a kept-alive socket had been closed; GETs only, so repeating is safe). */
  private async request(address: string, path: string, headers: Record<string, string>, o: Deadline = {}): Promise<IncomingMessage> {
    const timeoutMs = o.until === undefined ? (o.timeoutMs ?? this.timeoutMs) : Math.max(o.timeoutMs ?? 0, Math.min(this.timeoutMs, o.until - Date.now()));
    const creds = await this.credentials();
    const host = hostOf(address);
    const port = Number(address.slice(address.lastIndexOf(':') + 1));
    if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`address ${address} has no valid port`);
    const options: https.RequestOptions = {
      host,
      port,
      path,
      method: 'GET',
      headers: { 'User-Agent': USER_AGENT, 'Accept-Encoding': 'gzip', ...creds.headers, ...headers },
      agent: this.agent.for(creds),
      // The deadline covers the body too: aborting destroys the response stream as well.
      signal: AbortSignal.timeout(timeoutMs),
    };
    if (this.serverName) options.servername = this.serverName;
    try {
      return await httpsCall(options, undefined, `GET https://${address}${path}`);
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw new Error(`GET https://${address}${path}: no answer within ${timeoutMs}ms`, { cause: err });
      throw err;
    }
  }
}
