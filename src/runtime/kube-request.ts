import { readFileSync } from 'node:fs';
import { HttpMethod, IsomorphicFetchHttpLibrary, RequestContext, type KubeConfig } from './client-node.ts';

/**
 * One HTTP request to the API server with the kubeconfig's credentials and TLS, through client-node's
 * own fetch (undici) and dispatcher. We go around the generated API classes on purpose: they pick
 * the patch content type themselves, throw untyped errors and have no per-call timeout.
 */

export type Verb = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface KubeRequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  /** Sent as JSON. */
  body?: unknown;
  /** Defaults to application/json; merge patches need application/merge-patch+json. */
  contentType?: string;
  /** Whole-request deadline, headers and body; default 15 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A response the server answered with a non-2xx status; `status` is the Status object's reason when it sent one. */
export class KubeApiError extends Error {
  readonly statusCode: number;
  readonly reason: string | undefined;
  readonly retryAfterMs: number | undefined;
  readonly body: string;

  constructor(method: string, path: string, statusCode: number, body: string, retryAfterMs: number | undefined) {
    let reason: string | undefined;
    let message = body.slice(0, 300);
    try {
      const s = JSON.parse(body) as { reason?: string; message?: string };
      reason = s.reason;
      message = s.message ?? message;
    } catch {
      /* not a Status object, e.g. an HTML page from a proxy */
    }
    super(`${method} ${path}: ${statusCode}${reason ? ` ${reason}` : ''}: ${message}`);
    this.name = 'KubeApiError';
    this.statusCode = statusCode;
    this.reason = reason;
    this.retryAfterMs = retryAfterMs;
    this.body = body;
  }
}

const http = new IsomorphicFetchHttpLibrary();

/** package.json's version, two levels up from src/runtime/ (and from dist/runtime/ once built); "unknown" if absent. */
function ownVersion(): string {
  try {
    const v = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown }).version;
    return typeof v === 'string' && v !== '' ? v : 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * Sent on every request the operator makes, through the balancer (here) and to each server directly
 * (src/observe/direct-client.ts), so the apiserver's audit log and `apiserver_request_total` name the operator.
 */
export const USER_AGENT = `apiserver-upgrade-operator/${ownVersion()}`;

/**
 * The kubeconfig as client-node's `Watch` sees it, with our User-Agent added to the headers its
 * `applySecurityAuthentication` sets: `Watch` builds its own fetch from those headers and has no other way in
 * (without this undici sends `User-Agent: undici`). Every other member is the original's (prototype chain).
 */
export function withUserAgent(kc: KubeConfig): KubeConfig {
  const wrapped = Object.create(kc) as KubeConfig;
  wrapped.applySecurityAuthentication = async (ctx: RequestContext): Promise<void> => {
    await kc.applySecurityAuthentication(ctx);
    ctx.setHeaderParam('User-Agent', USER_AGENT);
  };
  return wrapped;
}

/** Retry-After is seconds (the API server never sends an HTTP date). */
function parseRetryAfter(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const s = Number(v);
  return Number.isFinite(s) && s >= 0 ? s * 1000 : undefined;
}

export function buildUrl(kc: KubeConfig, path: string, query: KubeRequestOptions['query'] = {}): string {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const url = new URL(cluster.server.replace(/\/$/, '') + path);
  for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
  return url.toString();
}

/** Sends the request and returns the parsed JSON body (undefined for an empty body). Throws KubeApiError on non-2xx. */
export async function kubeRequest<T>(kc: KubeConfig, method: Verb, path: string, opts: KubeRequestOptions = {}): Promise<T> {
  const ctx = new RequestContext(buildUrl(kc, path, opts.query), HttpMethod[method]);
  await kc.applySecurityAuthentication(ctx);
  ctx.setHeaderParam('Accept', 'application/json');
  ctx.setHeaderParam('User-Agent', USER_AGENT);
  if (opts.body !== undefined) {
    ctx.setHeaderParam('Content-Type', opts.contentType ?? 'application/json');
    ctx.setBody(JSON.stringify(opts.body));
  }
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? 15_000);
  ctx.setSignal(opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout);
  const res = await http.send(ctx).toPromise();
  // The body read is covered by the same signal, so a server that stalls mid-body times out too.
  const text = await res.body.text();
  if (res.httpStatusCode < 200 || res.httpStatusCode >= 300) {
    throw new KubeApiError(method, path, res.httpStatusCode, text, parseRetryAfter(res.headers['retry-after']));
  }
  return (text === '' ? undefined : JSON.parse(text)) as T;
}
