import type { LeaderElector } from './leader.ts';
import type { WorkQueue } from './workqueue.ts';
import type { HealthServer } from './health.ts';
import type { Logger } from './logger.ts';

export interface ShutdownParts {
  logger: Logger;
  queue?: WorkQueue;
  leader?: LeaderElector;
  /** Informers (or anything else with a stop()). */
  informers?: { stop(): Promise<void> }[];
  health?: HealthServer;
  /** How long in-flight reconciles may take to finish. Default 20 s. */
  drainDeadlineMs?: number;
  /** Everything must be done by then, or we exit anyway. Default 30 s (a pod's default grace period). */
  hardDeadlineMs?: number;
  /** Injected for tests; default process.exit. */
  exit?: (code: number) => void;
}

/**
 * Graceful stop. The order differs from "release first" on purpose: in-flight reconciles finish while
 * we still hold the lease, so a successor never acts alongside a write of ours; only then is the lease
 * released (the successor starts within a retry period), then the watches and the health server close.
 */
export async function shutdown(p: ShutdownParts, reason: string): Promise<void> {
  const log = p.logger.child({ component: 'shutdown' });
  const exit = p.exit ?? ((code: number) => process.exit(code));
  const hard = setTimeout(() => {
    log.error('shutdown did not finish in time; exiting', { hardDeadlineMs: p.hardDeadlineMs ?? 30_000 });
    exit(1);
  }, p.hardDeadlineMs ?? 30_000);
  hard.unref();
  log.info('shutting down', { reason });
  try {
    if (p.queue) {
      const r = await p.queue.shutdown(p.drainDeadlineMs ?? 20_000);
      if (!r.drained) log.warn('reconciles still running at the drain deadline', { keys: r.inFlight });
    }
    await p.leader?.stop({ release: true });
    await Promise.all((p.informers ?? []).map((i) => i.stop()));
    await p.health?.close();
    log.info('shutdown complete');
    clearTimeout(hard);
    exit(0);
  } catch (err) {
    log.error('shutdown failed', { err });
    clearTimeout(hard);
    exit(1);
  }
}

/** Runs shutdown() on the first SIGTERM or SIGINT; a second signal exits at once. Returns an uninstaller. */
export function installSignalHandlers(p: ShutdownParts): () => void {
  let started = false;
  const onSignal = (sig: NodeJS.Signals): void => {
    if (started) {
      p.logger.warn('second signal; exiting now', { signal: sig });
      (p.exit ?? ((c: number) => process.exit(c)))(1);
      return;
    }
    started = true;
    void shutdown(p, sig);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return () => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  };
}
