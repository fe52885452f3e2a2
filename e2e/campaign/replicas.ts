// The operator replicas of one campaign upgrade and the faults that hit them (leader SIGKILL, every replica SIGKILLed,
// a standby that starts late), the same in both modes: the replicas are processes of this run, connected through the
// balancer. Records when no replica led (nothing can act on a breach then) and how long a standby took to lead.
// A replica that exits by itself (a leader that lost its Lease exits, as client-go's do) is started again after the
// kubelet's CrashLoopBackOff, as its Deployment would: seed 74 #1, at load 20, lost its only replica and stood still.
import { sleep } from '../cluster/index.ts';
import type { OperatorProcess } from '../support/operator.ts';
import type { Span } from './history-check.ts';

/** When the replica last logged that it started leading (epoch ms), if it did. */
export function leadsSince(op: OperatorProcess): number | undefined {
  try {
    const l = op.logLines().filter((x) => x.message === 'started leading').at(-1);
    return l ? Date.parse(String(l.timestamp)) : undefined;
  } catch {
    return undefined;
  }
}
const alive = (op: OperatorProcess): boolean => op.child.exitCode === null && op.child.signalCode === null;

export class Replicas {
  readonly ops: OperatorProcess[] = [];
  /** Spans with no replica leading, from a kill until one leads again. */
  readonly blind: Span[] = [];
  /** Leader SIGKILL -> another, already running replica leading, ms. */
  readonly takeoverMs: number[] = [];
  private readonly start: () => Promise<OperatorProcess>;
  private readonly notes: string[];
  /** Replicas the harness killed: any other exit is the operator's own. */
  private readonly killed = new WeakSet<OperatorProcess>();
  private stopping = false;
  /** Exits of the operator's own, for the kubelet's backoff: 10 s, doubling, at most 5 min. */
  private selfExits = 0;
  private readonly killAll = (): void => {
    for (const op of this.ops) op.child.kill('SIGKILL');
  };

  private readonly firstBackoffMs: number;

  constructor(start: () => Promise<OperatorProcess>, notes: string[], o: { firstBackoffMs?: number } = {}) {
    this.start = start;
    this.notes = notes;
    this.firstBackoffMs = o.firstBackoffMs ?? 10_000;
    // The replicas are this run's children: they go with it, however it ends.
    process.on('exit', this.killAll);
  }

  async add(): Promise<OperatorProcess> {
    const op = await this.start();
    this.ops.push(op);
    op.child.once('exit', (code, signal) => {
      if (this.stopping || this.killed.has(op)) return;
      void this.restartAfterExit(`exit ${code ?? signal}`);
    });
    return op;
  }

  /** Marks a replica the harness ends (a rollout's SIGTERM): its exit is not the operator's own. */
  retire(op: OperatorProcess): void {
    this.killed.add(op);
  }

  private kill(op: OperatorProcess): void {
    this.killed.add(op);
    op.child.kill('SIGKILL');
  }

  /** What a Deployment's kubelet does for a container that exited: start it again after the crash-loop backoff. */
  private async restartAfterExit(how: string): Promise<void> {
    const from = Date.now();
    const led = this.leaderAfter(from);
    for (;;) {
      const backoffMs = Math.min(300_000, this.firstBackoffMs * 2 ** this.selfExits++);
      this.notes.push(`an operator replica exited by itself (${how}); started again after ${backoffMs / 1000} s`);
      await sleep(backoffMs);
      if (this.stopping) return;
      try {
        await this.add();
        break;
      } catch (err) {
        how = `start failed: ${(err as Error).message.split('\n')[0]}`;
      }
    }
    await led;
  }

  /** Waits until a live replica leads after `since` (bounded), and records the blind span. */
  async leaderAfter(since: number): Promise<number | undefined> {
    const until = Date.now() + 90_000;
    while (Date.now() < until && !this.stopping) {
      const t = this.ops.filter(alive).map(leadsSince).find((x) => x !== undefined && x >= since);
      if (t !== undefined) {
        this.blind.push({ from: since, to: t });
        return t;
      }
      await sleep(200);
    }
    this.blind.push({ from: since, to: Date.now() });
    return undefined;
  }

  /** SIGKILL of the replica that leads; after `heal`, a new replica starts. Returns a note when none led. */
  async killLeader(heal: () => Promise<void>): Promise<string | undefined> {
    const leader = this.ops.filter(alive).map((op) => ({ op, t: leadsSince(op) })).filter((x) => x.t !== undefined).sort((a, b) => b.t! - a.t!)[0];
    if (!leader) return 'no replica led';
    const standby = this.ops.some((op) => alive(op) && op !== leader.op);
    const from = Date.now();
    this.kill(leader.op);
    const led = this.leaderAfter(from);
    await heal();
    await this.add();
    const t = await led;
    if (standby && t !== undefined) this.takeoverMs.push(t - from);
    return undefined;
  }

  /** SIGKILL of every replica; after `heal`, two new ones start. */
  async killAllReplicas(heal: () => Promise<void>): Promise<void> {
    const from = Date.now();
    for (const op of this.ops.filter(alive)) this.kill(op);
    const led = this.leaderAfter(from);
    await heal();
    await this.add();
    await this.add();
    await led;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.ops.map((op) => op.stop().catch(() => undefined)));
    process.off('exit', this.killAll);
  }
}
