import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';

/**
 * A long-running child whose output goes to a log file. It runs in its own process group so that
 * stop/kill reach it even behind `ip netns exec` / `unshare` / `sh -c exec` wrappers (they exec,
 * so the pid is the real server's pid; the group is a second line of defence).
 */
export class ManagedProcess {
  readonly child: ChildProcess;
  readonly logPath: string;
  private exitPromise: Promise<number | null>;
  exited = false;
  exitCode: number | null = null;
  signal: NodeJS.Signals | null = null;

  constructor(cmd: string, args: string[], logPath: string, onExit?: (p: ManagedProcess) => void) {
    this.logPath = logPath;
    const fd = openSync(logPath, 'a');
    this.child = spawn(cmd, args, { stdio: ['ignore', fd, fd], detached: true });
    closeSync(fd);
    this.exitPromise = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exited = true;
        this.exitCode = code;
        this.signal = signal;
        onExit?.(this);
        resolve(code);
      });
      this.child.on('error', () => {
        this.exited = true;
        resolve(null);
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** SIGTERM, then SIGKILL after the grace period. Resolves once the process is gone. */
  async stop(graceMs = 60_000): Promise<void> {
    if (this.exited) return;
    this.signalGroup('SIGTERM');
    const timer = setTimeout(() => this.signalGroup('SIGKILL'), graceMs);
    await this.exitPromise;
    clearTimeout(timer);
  }

  /** SIGKILL: the process gets no chance to clean up, like a crashed host. */
  async kill(): Promise<void> {
    if (this.exited) return;
    this.signalGroup('SIGKILL');
    await this.exitPromise;
  }

  signalGroup(sig: NodeJS.Signals): void {
    if (this.pid <= 0) return;
    try {
      process.kill(-this.pid, sig);
    } catch {
      try {
        process.kill(this.pid, sig);
      } catch {
        /* already gone */
      }
    }
  }
}
