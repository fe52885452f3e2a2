/**
 * HTTPS on node:https for both of the operator's paths: the API through the balancer (kube-request.ts, watch.ts)
 * and each apiserver by its address (src/observe/direct-client.ts). Kept-alive connections per credential set,
 * one retry when the server had closed a kept-alive socket, gzip, and bounded bodies.
 */
import https from 'node:https';
import http, { type IncomingMessage } from 'node:http';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { Credentials } from './kubeconfig.ts';
import { BodyCapExceeded } from './body-limits.ts';

/**
 * One kept-alive https.Agent for the TLS material of the latest credentials: replaced (and the old one's sockets
 * closed) when an exec plugin or a rotated file hands out a new CA, certificate or key. The name to verify is
 * per request (`servername`): the direct client asks each server by its address, the balancer by tls-server-name.
 */
export class CredentialAgent {
  private current: { agent: https.Agent; material: Credentials } | undefined;
  private readonly maxSockets: number | undefined;

  constructor(maxSockets?: number) {
    this.maxSockets = maxSockets;
  }

  for(creds: Credentials): https.Agent {
    const same = (a: Buffer | undefined, b: Buffer | undefined): boolean => (a === undefined ? b === undefined : b !== undefined && a.equals(b));
    const c = this.current;
    if (c && same(c.material.ca, creds.ca) && same(c.material.cert, creds.cert) && same(c.material.key, creds.key)
      && c.material.rejectUnauthorized === creds.rejectUnauthorized) {
      return c.agent;
    }
    c?.agent.destroy();
    const agent = new https.Agent({
      ca: creds.ca, cert: creds.cert, key: creds.key, rejectUnauthorized: creds.rejectUnauthorized, keepAlive: true,
      ...(this.maxSockets !== undefined ? { maxSockets: this.maxSockets } : {}),
    });
    this.current = { agent, material: creds };
    return agent;
  }

  destroy(): void {
    this.current?.agent.destroy();
    this.current = undefined;
  }

  /**
   * Closes the kept-alive sockets no request is using. Behind a TCP balancer each socket stays with the server it
   * was opened to: after one timed out, its idle siblings may lead to the same hung server, and each would hold the
   * next requests for a whole deadline (a status write on a socket kept to a server cut from etcd lost a check: nodes
   * seed 102 #4). New connections go where the balancer's health checks send them. Sockets in use are left alone.
   */
  dropIdle(): void {
    if (this.current) dropIdleSockets(this.current.agent);
  }
}

/** Closes an agent's kept-alive sockets that no request is using (CredentialAgent.dropIdle says why). */
export function dropIdleSockets(agent: http.Agent): void {
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}

/** A kept-alive socket the server had closed before answering: the request is sent once more (httpsCall). */
class ReusedSocketClosed extends Error {}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * One request; resolves with the response as soon as its headers are in (the caller reads or streams the body).
 * `describe` names it in errors ("GET https://…/path"). A request that fails with ECONNRESET, EPIPE or a hang-up
 * before any answer on a kept-alive socket is sent once more on a fresh one: the server closed the idle socket (its
 * keep-alive timeout, Go's 90 s or Node's 5 s) just as we reused it, and the request never reached a handler.
 */
export async function httpsCall(options: https.RequestOptions, body: string | undefined, describe: string): Promise<IncomingMessage> {
  try {
    return await httpsCallOnce(options, body, describe);
  } catch (err) {
    if (!(err instanceof ReusedSocketClosed)) throw err;
    return httpsCallOnce(options, body, describe);
  }
}

function httpsCallOnce(options: https.RequestOptions, body: string | undefined, describe: string): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    // Plain http only where a kubeconfig says http:// (a local test server, an in-cluster port 80).
    const req = (options.protocol === 'http:' ? http.request : https.request)(options, resolve);
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.message === 'socket hang up')) {
        reject(new ReusedSocketClosed(`${describe}: ${errorText(err)} on a reused socket`, { cause: err }));
        return;
      }
      // Keeps the error's code (ECONNREFUSED, ...) and name (AbortError, TimeoutError) for the callers' classifiers.
      const wrapped = new Error(`${describe}: ${err.name === 'AbortError' ? 'aborted or timed out' : errorText(err)}`, { cause: err }) as NodeJS.ErrnoException;
      wrapped.name = err.name;
      if (err.code !== undefined) wrapped.code = err.code;
      reject(wrapped);
    });
    req.end(body);
  });
}

/**
 * The body as sent: gunzipped as it streams when the server answered `Content-Encoding: gzip`. An error or
 * abort of the response (the request deadline) ends the decompressed stream with that error.
 */
export function decoded(res: IncomingMessage): Readable {
  if (String(res.headers['content-encoding'] ?? '').toLowerCase() !== 'gzip') return res;
  const gunzip = createGunzip();
  pipeline(res, gunzip, () => {});
  return gunzip;
}

/**
 * The whole body as text, at most `maxBytes` of it after decompression (a small gzipped body cannot expand past
 * maxBytes in memory: the gunzip stream is read chunk by chunk and dropped at the cap). Over the cap: the
 * response is destroyed and a BodyCapExceeded thrown. `what` names the body in that error.
 */
export async function readBody(res: IncomingMessage, maxBytes: number, what?: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const body = decoded(res);
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > maxBytes) {
      res.destroy();
      if (body !== res) body.destroy();
      throw new BodyCapExceeded('bytes', maxBytes, what);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}
