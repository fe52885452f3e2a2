// A monitoring process of an e2e test (Prometheus, Alertmanager) supervised the same way: killed with the test
// process too (a failed before(), Ctrl-C: it runs in a process group of its own), and ready once its
// `/-/ready` answers 200 — or stopped, with its log named, when it exits or never gets ready.
import type { ManagedProcess } from '../cluster/process.ts';
import { waitFor } from '../cluster/index.ts';
import { registerTeardown, unregisterTeardown } from '../cluster/cleanup.ts';

/** Waits for `proc` to answer `${url}${path}` (`/-/ready` unless given); returns how to stop it. */
export async function untilReady(proc: ManagedProcess, what: string, url: string, timeoutMs: number, path = '/-/ready'): Promise<() => Promise<void>> {
  const key = `${what.replace(/\W+/g, '-')}-${proc.pid}`;
  registerTeardown(key, () => proc.signalGroup('SIGKILL'));
  const stop = async (): Promise<void> => {
    await proc.stop(10_000);
    unregisterTeardown(key);
  };
  try {
    await waitFor(`${what} to be ready`, timeoutMs, async () => {
      if (proc.exited) throw new Error(`${what} exited (${proc.exitCode ?? proc.signal}); see ${proc.logPath}`);
      const r = await fetch(`${url}${path}`).catch(() => undefined);
      return r?.status === 200 ? true : undefined;
    }, 250);
  } catch (err) {
    await stop();
    throw err;
  }
  return stop;
}
