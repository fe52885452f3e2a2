// The node agent's wait for the new kube-apiserver. The old server keeps answering /readyz 200 until the kubelet
// stops it, so a 200 counts only once the old server was seen gone (a refused connection, a timeout or a non-200),
// or when /version already reports the target version while the old server reported another one (a restart too
// quick to see). When the manifest was not replaced (already as asked: a re-run), no gap is needed.
import { gitVersion, notReady } from './probe.ts';

export interface WaitInput {
  base: string;
  /** Whether the manifest was replaced: then the old server must be seen gone first. */
  replaced: boolean;
  /** The gitVersion the server reported before the replacement, if it could be read. */
  oldVersion: string | undefined;
  /** The target version. */
  version: string;
  timeoutMs: number;
  pollMs: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export type WaitResult = { ready: true; afterMs: number } | { ready: false; last: string };

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function waitReady(w: WaitInput): Promise<WaitResult> {
  const now = w.now ?? Date.now;
  const sleep = w.sleep ?? pause;
  const start = now();
  const end = start + w.timeoutMs;
  let gap = !w.replaced;
  let last = 'no answer yet';
  for (;;) {
    const down = await notReady(w.base);
    if (down === undefined) {
      if (!gap && w.oldVersion !== undefined && w.oldVersion !== w.version && (await gitVersion(w.base)) === w.version) gap = true;
      if (gap) return { ready: true, afterMs: now() - start };
      last = '200, but from the server that ran before: it was never seen stopping';
    } else {
      gap = true;
      last = down.why;
    }
    if (now() >= end) return { ready: false, last };
    await sleep(Math.min(w.pollMs, Math.max(0, end - now())));
  }
}
