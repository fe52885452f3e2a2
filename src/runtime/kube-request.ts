import { readFileSync } from 'node:fs';
import type https from 'node:https';
import http, { type IncomingMessage } from 'node:http';
import { CredentialAgent, dropIdleSockets, httpsCall, readBody } from './https-call.ts';
import { KUBE_MAX_BODY_BYTES, KUBE_MAX_JSON_CONTAINERS, parseBoundedJson } from './body-limits.ts';
import type { KubeAccess } from './kubeconfig.ts';
import { safeMessage } from '../plan/redact.ts';

/**
 * One HTTP request to the API server with the kubeconfig's credentials and TLS, on node:https with kept-alive
 * connections. No generated API classes: they pick the patch content type themselves, throw untyped errors and have
 * no per-call timeout.
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
  /** Opens a new connection: the idle kept-alive ones are closed first (they may be kept to a server that holds requests). */
  freshConnection?: boolean;
}

/** The most of a body that is not a Status object that an error's message shows. */
const BODY_SHOWN = 300;
/** The most of a Status's message (an admission webhook's denial can be long) an error's message shows. */
const STATUS_MESSAGE_SHOWN = 2048;
/** The most of a Status's reason (a CamelCase word when the server sent it) an error's message shows. */
const REASON_SHOWN = 64;

/** A response the server answered with a non-2xx status; `reason` is the Status object's reason when it sent one. */
export class KubeApiError extends Error {
  readonly statusCode: number;
  readonly reason: string | undefined;
  readonly retryAfterMs: number | undefined;
  readonly body: string;

  constructor(method: string, path: string, statusCode: number, body: string, retryAfterMs: number | undefined) {
    let reason: string | undefined;
    // What the server (or a proxy, or an admission webhook through it) wrote goes into logs, status and Events: made
    // plain and redacted before it is cut, a Status's message and reason as much as a body that is not a Status.
    let message = safeMessage(body, { maxChars: BODY_SHOWN });
    try {
      const s = JSON.parse(body) as { reason?: unknown; message?: unknown };
      if (typeof s.reason === 'string') reason = s.reason;
      if (typeof s.message === 'string') message = safeMessage(s.message, { maxChars: STATUS_MESSAGE_SHOWN });
    } catch {
      /* not a Status object, e.g. an HTML page from a proxy */
    }
    const shownReason = reason === undefined ? '' : safeMessage(reason, { maxChars: REASON_SHOWN }).trim();
    super(`${method} ${path}: ${statusCode}${shownReason ? ` ${shownReason}` : ''}: ${message}`);
    this.name = 'KubeApiError';
    this.statusCode = statusCode;
    this.reason = reason;
    this.retryAfterMs = retryAfterMs;
    this.body = body;
  }
}

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

/** Retry-After is seconds (the API server never sends an HTTP date). */
function parseRetryAfter(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const s = Number(v);
  return Number.isFinite(s) && s >= 0 ? s * 1000 : undefined;
}

/** The API server's URL for `path` and `query` (undefined values left out). */
export function buildUrl(access: KubeAccess, path: string, query: KubeRequestOptions['query'] = {}): URL {
  const url = new URL(access.server + path);
  for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
  return url;
}


// One pool of kept-alive connections per kubeconfig (the operator has one; tests make several).
const agents = new WeakMap<KubeAccess, CredentialAgent>();
const plainAgent = new http.Agent({ keepAlive: true });

/**
 * Opens a request to the API server and resolves with the response once its headers are in; the body is the
 * caller's to read (kubeRequest) or stream (watch.ts). `signal` aborts it, the body included.
 */
export async function openKubeRequest(access: KubeAccess, method: Verb, path: string, o: { query?: KubeRequestOptions['query']; headers?: Record<string, string>; body?: string; signal?: AbortSignal }): Promise<IncomingMessage> {
  const creds = await access.credentials();
  let agent = agents.get(access);
  if (!agent) agents.set(access, (agent = new CredentialAgent()));
  const url = buildUrl(access, path, o.query);
  const tls = url.protocol === 'https:';
  const options: https.RequestOptions = {
    protocol: url.protocol,
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port || (tls ? 443 : 80),
    path: url.pathname + url.search,
    method,
    headers: { 'User-Agent': USER_AGENT, ...creds.headers, ...o.headers },
    agent: tls ? agent.for(creds) : plainAgent,
    ...(creds.serverName !== undefined ? { servername: creds.serverName } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
  };
  const res = await httpsCall(options, o.body, `${method} ${path}`);
  // The credentials were refused: an exec plugin's cached token may have been revoked before its expiry.
  if (res.statusCode === 401) access.credentialsRejected();
  return res;
}

/** Sends the request and returns the parsed JSON body (undefined for an empty body). Throws KubeApiError on non-2xx. */
export async function kubeRequest<T>(access: KubeAccess, method: Verb, path: string, opts: KubeRequestOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const timeout = AbortSignal.timeout(timeoutMs);
  const headers: Record<string, string> = { Accept: 'application/json', 'Accept-Encoding': 'gzip' };
  if (opts.body !== undefined) headers['Content-Type'] = opts.contentType ?? 'application/json';
  let res: IncomingMessage;
  let text: string;
  if (opts.freshConnection) {
    agents.get(access)?.dropIdle();
    dropIdleSockets(plainAgent);
  }
  try {
    res = await openKubeRequest(access, method, path, {
      query: opts.query,
      headers,
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
      signal: opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout,
    });
    // The body read is covered by the same signal, so a server that stalls mid-body times out too.
    text = await readBody(res, KUBE_MAX_BODY_BYTES, `${method} ${path}`);
  } catch (err) {
    // node:https reports either abort as an AbortError: the deadline is a TimeoutError (transient, retried), the
    // caller's cancel stays an AbortError (final). See retry.ts isTransient.
    if (timeout.aborted && !opts.signal?.aborted) {
      agents.get(access)?.dropIdle();
      dropIdleSockets(plainAgent);
      throw new DOMException(`${method} ${path}: no answer within ${timeoutMs} ms`, 'TimeoutError');
    }
    throw err;
  }
  const status = res.statusCode ?? 0;
  if (status < 200 || status >= 300) {
    const retryAfter = res.headers['retry-after'];
    throw new KubeApiError(method, path, status, text, parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter));
  }
  return (text === '' ? undefined : parseBoundedJson<T>(text, KUBE_MAX_JSON_CONTAINERS, `${method} ${path}`)) as T;
}
