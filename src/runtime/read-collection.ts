import type { KubeAccess } from './kubeconfig.ts';
import { Informer } from './informer.ts';
import type { KubeObject } from './object-cache.ts';
import type { Logger } from './logger.ts';

export interface ReadCollectionOptions {
  kubeConfig: KubeAccess;
  /** Collection path, e.g. /api/v1/nodes. */
  path: string;
  logger: Logger;
  /** The whole read, fallback LIST included. Default 30 s. */
  timeoutMs?: number;
  /** What to keep of each object, applied as it arrives (the Informer's `transform`). */
  transform?: (obj: KubeObject) => KubeObject;
}

/**
 * A collection's state, read once: an informer's first read (a streaming list, or a LIST where the server refuses
 * one; docs/runtime.md "Relists without a LIST"), then stopped. For a collection read now and then that is not
 * worth watching all the time (every Node of a cluster at preflight). Rejects after `timeoutMs`.
 */
export async function readCollection<T extends KubeObject>(o: ReadCollectionOptions): Promise<T[]> {
  const timeoutMs = o.timeoutMs ?? 30_000;
  const informer = new Informer<T>({
    kubeConfig: o.kubeConfig, path: o.path, name: `read ${o.path}`, logger: o.logger, listTimeoutMs: timeoutMs,
    ...(o.transform ? { transform: o.transform } : {}),
    // The first error backs off 200 ms doubling; a read that cannot succeed ends at timeoutMs anyway.
    backoff: { baseMs: 200, maxMs: 5_000, factor: 2, jitter: 0.2 },
  });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${o.path}: not read within ${timeoutMs} ms`)), timeoutMs);
  });
  informer.start();
  try {
    await Promise.race([informer.synced, timedOut]);
    return informer.list();
  } finally {
    clearTimeout(timer);
    await informer.stop();
  }
}
