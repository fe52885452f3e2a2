/**
 * One watch request: the stream of `{"type": ..., "object": ...}` lines the API server sends for `?watch=true`,
 * handed to `onEvent` as they arrive. Settles when the stream ends: resolves when the server closed it cleanly
 * (timeoutSeconds reached, a graceful shutdown), rejects with a KubeApiError for an HTTP error status, or with the
 * socket's error (its `code`: ECONNRESET, ...) when the connection broke. Silence is the caller's to police
 * (the informer's watchdog): a watch may rightly be quiet for minutes.
 */
import { readBody } from './https-call.ts';
import { BodyCapExceeded, WATCH_MAX_LINE_BYTES as MAX_LINE_BYTES, parseBoundedJson } from './body-limits.ts';
import { KubeApiError, openKubeRequest, type KubeRequestOptions } from './kube-request.ts';
import type { KubeAccess } from './kubeconfig.ts';
import { safeMessage } from '../plan/redact.ts';

export interface WatchEvent {
  type: string;
  // The watched kind's object, or a Status for ERROR events; the informer reads only what it needs.
  object: Record<string, unknown>;
}


export async function watch(access: KubeAccess, path: string, query: KubeRequestOptions['query'], onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
  const res = await openKubeRequest(access, 'GET', path, { query: { ...query, watch: true }, headers: { Accept: 'application/json' }, signal });
  const status = res.statusCode ?? 0;
  if (status !== 200) throw new KubeApiError('GET', path, status, await readBody(res, 64 * 1024).catch(() => ''), undefined);
  res.setEncoding('utf8');
  // The unfinished last line, in pieces: joined once its newline arrives, so a long line costs linear time.
  let partial: string[] = [];
  let partialLength = 0;
  await new Promise<void>((resolve, reject) => {
    const fail = (err: Error): void => {
      res.destroy();
      reject(err);
    };
    res.on('data', (chunk: string) => {
      const nl = chunk.indexOf('\n');
      if (nl === -1) {
        partial.push(chunk);
        partialLength += chunk.length;
        if (partialLength > MAX_LINE_BYTES) return fail(new Error(`GET ${path}: a watch event longer than ${MAX_LINE_BYTES} bytes`));
        return;
      }
      partial.push(chunk);
      const lines = partial.join('').split('\n');
      const rest = lines.pop() ?? '';
      partial = rest === '' ? [] : [rest];
      partialLength = rest.length;
      if (partialLength > MAX_LINE_BYTES) return fail(new Error(`GET ${path}: a watch event longer than ${MAX_LINE_BYTES} bytes`));
      for (const line of lines) {
        if (line.trim() === '') continue;
        let e: WatchEvent;
        try {
          e = parseBoundedJson<WatchEvent>(line, undefined, `GET ${path}: a watch event`);
        } catch (err) {
          return fail(err instanceof BodyCapExceeded ? err : new Error(`GET ${path}: a watch event that is not JSON: ${safeMessage(line, { maxChars: 200 })}`));
        }
        if (typeof e.type !== 'string' || typeof e.object !== 'object' || e.object === null) return fail(new Error(`GET ${path}: a watch event without type or object: ${safeMessage(line, { maxChars: 200 })}`));
        onEvent(e);
        // A handler may have stopped the watch.
        if (res.destroyed) return;
      }
    });
    // A connection that breaks mid-stream errors the response (ECONNRESET, "aborted"); a clean close ends it
    // ('end' comes only after the whole response). A close without either is a break too.
    res.on('error', reject);
    res.on('end', resolve);
    res.on('close', () => {
      if (!res.complete) reject(Object.assign(new Error(`GET ${path}: the connection closed mid-stream`), { code: 'ECONNRESET' }));
    });
  });
}
