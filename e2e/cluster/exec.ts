import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Runs a command and returns its stdout; the error carries the command's stderr so failures explain themselves. */
export async function run(cmd: string, args: string[], opts: { cwd?: string; input?: string } = {}): Promise<string> {
  try {
    const { stdout } = await execFileAsync(cmd, args, { cwd: opts.cwd, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.stderr?.trim() || e.message}`, { cause: err });
  }
}

/** Synchronous variant for exit handlers, where nothing asynchronous runs any more. Never throws. */
export function runSyncQuiet(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value other than undefined, or throws with the last reason at the deadline. */
export async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? last.message : String(last ?? 'condition never held');
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${why}`);
    }
    await sleep(intervalMs);
  }
}
