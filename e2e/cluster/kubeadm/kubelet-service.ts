// The kubelet of a real-kubeadm node, run the way kubeadm's systemd unit runs it (kubelet.service enabled,
// Restart=always, the 10-kubeadm.conf drop-in's command line), for a machine without an init system. kubeadm asks
// for start/stop/restart through the `systemctl` stand-in (kubeadm-files.ts systemctlShim), which drops request
// files here; every start and stop is recorded, so a test can count what kubeadm caused.
import { existsSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ManagedProcess } from '../process.ts';
import { kubeletServiceArgs, KUBELET_CONFIG, KUBELET_FLAGS_ENV } from './kubeadm-files.ts';

export interface KubeletServiceEvent {
  at: number;
  what: 'start' | 'stop' | 'exit' | 'request-start' | 'request-stop' | 'request-restart';
  detail?: string;
}

export interface KubeletServiceOptions {
  name: string;
  /** The node's folder on this machine (its /var/lib/kubelet is <root>/var/lib/kubelet). */
  root: string;
  kubeletBin: string;
  /** A process in the node's namespaces (its containerd), for nsenter. */
  nsPid: number;
  logPath: string;
  requestsDir: string;
  stateFile: string;
}

/** systemd's RestartSec in kubeadm's kubelet.service is 10 s; 2 s here, so a crash costs the tests less. */
const RESTART_DELAY_MS = 2000;

export class KubeletService {
  readonly events: KubeletServiceEvent[] = [];
  private proc?: ManagedProcess;
  /** Enabled, as kubeadm's package installs it: it runs whenever kubeadm has written its configuration. */
  private wanted = true;
  private lastStart = 0;
  private timer?: NodeJS.Timeout;
  private busy = false;
  private closed = false;

  private readonly o: KubeletServiceOptions;

  constructor(o: KubeletServiceOptions) {
    this.o = o;
  }

  begin(): void {
    this.timer = setInterval(() => void this.tick(), 250);
  }

  get running(): boolean {
    return this.proc !== undefined && !this.proc.exited;
  }

  /** Times the kubelet was started. */
  get starts(): number {
    return this.events.filter((e) => e.what === 'start').length;
  }

  private host(path: string): string {
    return join(this.o.root, path.slice(1));
  }

  private async tick(): Promise<void> {
    if (this.busy || this.closed) return;
    this.busy = true;
    try {
      for (const f of (await readdir(this.o.requestsDir).catch(() => [])).sort()) {
        const verb = /^(start|stop|restart)\.\d+$/.exec(f)?.[1] as 'start' | 'stop' | 'restart' | undefined;
        if (verb === undefined) continue;
        this.events.push({ at: Date.now(), what: `request-${verb}` });
        if (verb === 'stop' || verb === 'restart') await this.stopKubelet();
        this.wanted = verb !== 'stop';
        if (this.wanted) await this.maybeStart(true);
        await rm(join(this.o.requestsDir, f), { force: true });
      }
      if (this.proc?.exited && !this.events.some((e) => e.what === 'exit' && e.at >= this.lastStart)) {
        this.events.push({ at: Date.now(), what: 'exit', detail: String(this.proc.exitCode ?? this.proc.signal) });
      }
      if (this.wanted) await this.maybeStart(false);
      await writeFile(this.o.stateFile, this.running ? 'active' : 'inactive');
    } finally {
      this.busy = false;
    }
  }

  private async maybeStart(now: boolean): Promise<void> {
    if (this.running) return;
    if (!now && Date.now() - this.lastStart < RESTART_DELAY_MS) return;
    if (!existsSync(this.host(KUBELET_CONFIG)) || !existsSync(this.host(KUBELET_FLAGS_ENV))) return;
    const args = kubeletServiceArgs(await readFile(this.host(KUBELET_FLAGS_ENV), 'utf8'));
    this.lastStart = Date.now();
    this.proc = new ManagedProcess('nsenter', ['-t', String(this.o.nsPid), '-m', '-u', '-n', '--', this.o.kubeletBin, ...args, '--v=1'], this.o.logPath);
    this.events.push({ at: this.lastStart, what: 'start', detail: args.join(' ') });
  }

  private async stopKubelet(): Promise<void> {
    if (!this.running) return;
    this.events.push({ at: Date.now(), what: 'stop' });
    await this.proc!.stop(15_000);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.proc?.kill();
  }
}
