import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { KubeAccess } from './kubeconfig.ts';
import { sleepUnlessAborted, withJitter } from './backoff.ts';
import { KubeApiError, kubeRequest } from './kube-request.ts';
import { microTime } from './kube.ts';
import { candidateWaitMs, decide, MIN_TAKEOVER_MARGIN_MS, mustStepDown, observe, renewAttemptMs, type LeaseRecord, type Observed } from './leader-decision.ts';
import type { Logger } from './logger.ts';

export interface LeaderElectionOptions {
  kubeConfig: KubeAccess;
  namespace: string;
  name: string;
  /** Default: hostname_pid_random, unique per process even when pods share a hostname. */
  identity?: string;
  /** Defaults 13 s, 10 s, 2 s (client-go: 15 s, 10 s, 2 s; see DEFAULTS). */
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** How often a candidate looks at a lease another process holds (default 500 ms, jittered +20%). */
  standbyPollMs?: number;
  logger: Logger;
  /** Called when this process starts leading; `signal` aborts when it stops leading. */
  onStartedLeading(signal: AbortSignal): void;
  /** Called once per leadership term when it ends: lost, released or stopped. */
  onStoppedLeading(): void;
  /** Called whenever the observed leader changes (including to us). */
  onNewLeader?(identity: string): void;
}

interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: LeaseRecord;
}

/**
 * Takeover after a leader dies without releasing (SIGKILL, node loss) is leaseDuration after the standby saw the
 * last renewal, plus how late it looks. Measured with client-go's timings (e2e/runtime/leader.e2e.ts, docs/runtime.md):
 * ~18 s, of which up to 4.4 s was the standby's jittered 2 s poll (once to see the last renewal late, once to see
 * the expiry late). The standby now looks every 500 ms and at the expiry itself, and the lease is 13 s instead of
 * 15 s: renewDeadline stays 10 s (a leader must survive the replacement of the very server it talks to, where
 * requests hang until cut), and the 3 s left exceed MIN_TAKEOVER_MARGIN_MS, because the leader now counts its
 * deadline from the start of its last successful renewal, not from the answer (the old margin of 5 s lost the
 * answer's latency).
 */
export const DEFAULTS = { leaseDurationMs: 13_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, standbyPollMs: 500 } as const;

export function defaultIdentity(): string {
  return `${hostname()}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

/**
 * Lease-based leader election after client-go's, with a faster standby (DEFAULTS). A leader renews every retryPeriod and
 * steps down (its onStoppedLeading runs and its signal aborts) when no renewal succeeded for
 * renewDeadline — before others may take over at leaseDuration. API errors while apiservers are
 * being replaced are retried, never thrown.
 */
export class LeaderElector {
  readonly identity: string;
  private readonly o: LeaderElectionOptions;
  private readonly log: Logger;
  private readonly stopCtl = new AbortController();
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly standbyPollMs: number;
  /** The last look's verdict on a lease another process holds: when it expires by our clock; undefined after an error. */
  private expiresInMs: number | undefined;
  private observed: Observed = { fingerprint: '', at: 0 };
  private leaderCtl?: AbortController;
  private lastLeader = '';
  private loop?: Promise<void>;

  constructor(o: LeaderElectionOptions) {
    this.o = o;
    this.identity = o.identity ?? defaultIdentity();
    this.leaseDurationMs = o.leaseDurationMs ?? DEFAULTS.leaseDurationMs;
    this.renewDeadlineMs = o.renewDeadlineMs ?? DEFAULTS.renewDeadlineMs;
    this.retryPeriodMs = o.retryPeriodMs ?? DEFAULTS.retryPeriodMs;
    this.standbyPollMs = o.standbyPollMs ?? DEFAULTS.standbyPollMs;
    if (!(this.leaseDurationMs - this.renewDeadlineMs >= MIN_TAKEOVER_MARGIN_MS && this.renewDeadlineMs > this.retryPeriodMs && this.standbyPollMs > 0)) {
      throw new Error(`leader election needs leaseDuration >= renewDeadline + ${MIN_TAKEOVER_MARGIN_MS} ms, renewDeadline > retryPeriod, standbyPoll > 0`);
    }
    this.log = o.logger.child({ component: 'leader', lease: `${o.namespace}/${o.name}`, identity: this.identity });
  }

  get isLeader(): boolean {
    return this.leaderCtl !== undefined;
  }

  start(): void {
    if (this.loop) return;
    this.loop = this.run().catch((err: unknown) => {
      this.log.error('leader election loop failed', { err });
    });
  }

  /**
   * Stops campaigning. With `release`, a leader hands the lease back (empty holder, 1 s duration,
   * like client-go's ReleaseOnCancel) so a successor takes over within a retry period, not a lease duration.
   */
  async stop(o: { release?: boolean; timeoutMs?: number } = {}): Promise<void> {
    const wasLeading = this.isLeader;
    this.stopCtl.abort();
    await this.loop;
    if (wasLeading && o.release !== false) await this.release(o.timeoutMs ?? 5_000);
    this.stepDown('stopped');
  }

  private get leasePath(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.o.namespace)}/leases`;
  }

  private async run(): Promise<void> {
    const signal = this.stopCtl.signal;
    while (!signal.aborted) {
      // Candidate: try every retryPeriod (jittered, as client-go's JitterUntil with factor 1.2).
      const attemptAt = Date.now();
      if (await this.tryAcquireOrRenew(this.retryPeriodMs * 2)) {
        this.startLeading();
        await this.renewLoop(attemptAt);
        // As client-go's Run: leadership lost is the end of this elector. Its owner stops acting and exits (main.ts),
        // and campaigning again here would hand the lease back to a process that is shutting down.
        if (!signal.aborted) this.log.info('not campaigning again after losing the lease');
        return;
      }
      // Held by another: look again soon, and at its expiry. An error (no answer, a conflict): the retry period,
      // jittered as client-go's JitterUntil with factor 1.2, so a struggling server is not polled fast.
      const wait = this.expiresInMs === undefined
        ? this.retryPeriodMs + withJitter(this.retryPeriodMs * 0.6, 1)
        : candidateWaitMs(this.expiresInMs, this.standbyPollMs + withJitter(this.standbyPollMs * 0.1, 1));
      await sleepUnlessAborted(wait, signal);
    }
  }

  /** `acquiredAt`: when the attempt that acquired the lease started (see the deadline below). */
  private async renewLoop(acquiredAt: number): Promise<void> {
    const signal = this.stopCtl.signal;
    let lastRenew = acquiredAt;
    while (!signal.aborted) {
      await sleepUnlessAborted(this.retryPeriodMs, signal);
      if (signal.aborted) return;
      // Retry within the deadline: each attempt may use only the time left before we must step down.
      let failed = 0;
      for (;;) {
        const left = lastRenew + this.renewDeadlineMs - Date.now();
        if (mustStepDown(lastRenew, Date.now(), this.renewDeadlineMs) || left <= 0) {
          this.log.warn('failed to renew the lease within renewDeadline; stepping down', { renewDeadlineMs: this.renewDeadlineMs });
          this.stepDown('lost');
          return;
        }
        // The first attempt gets one retryPeriod: a request stuck on a server that lost etcd (its connection held
        // there by a TCP balancer) then costs one attempt, and the next, on a new connection, still fits within
        // renewDeadline. Each failed attempt doubles the next one's (renewAttemptMs): at load a server that answers a
        // write in 3 s is slow, not gone (the CI campaign's nodes seed 10 lost its only replica's lease three times at
        // an apiserver p99 of 3-13 s, every attempt cut at 2 s). The deadline counts from the attempt's start: the
        // renewal was written after it, so a candidate's clock for it starts later still, and our step-down always
        // precedes its takeover by leaseDuration - renewDeadline.
        const attemptAt = Date.now();
        if (await this.tryAcquireOrRenew(renewAttemptMs(left, this.retryPeriodMs, failed))) {
          lastRenew = attemptAt;
          break;
        }
        failed++;
        if (signal.aborted) return;
        await sleepUnlessAborted(Math.min(this.retryPeriodMs / 4, Math.max(0, left)), signal);
      }
    }
  }

  private startLeading(): void {
    this.leaderCtl = new AbortController();
    this.log.info('started leading');
    try {
      this.o.onStartedLeading(this.leaderCtl.signal);
    } catch (err) {
      this.log.error('onStartedLeading threw', { err });
    }
  }

  private stepDown(why: string): void {
    const ctl = this.leaderCtl;
    if (!ctl) return;
    this.leaderCtl = undefined;
    ctl.abort();
    this.log.info('stopped leading', { why });
    try {
      this.o.onStoppedLeading();
    } catch (err) {
      this.log.error('onStoppedLeading threw', { err });
    }
  }

  private noteLeader(holder: string): void {
    if (holder === this.lastLeader) return;
    this.lastLeader = holder;
    if (holder !== '') this.log.info('new leader observed', { leader: holder });
    try {
      this.o.onNewLeader?.(holder);
    } catch {
      /* informational */
    }
  }

  /** One round of client-go's tryAcquireOrRenew; true when we hold the lease afterwards. Never throws. */
  /**
   * One look at the lease and, when ours to take or keep, one write — both within `timeoutMs` together: a renewal
   * that ends after the renew deadline would have the leader act past it, into the takeover margin.
   */
  private async tryAcquireOrRenew(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    const opts = (): { timeoutMs: number; signal: AbortSignal } => ({ timeoutMs: Math.max(1, deadline - Date.now()), signal: this.stopCtl.signal });
    this.expiresInMs = undefined;
    try {
      let lease: Lease | undefined;
      try {
        lease = await kubeRequest<Lease>(this.o.kubeConfig, 'GET', `${this.leasePath}/${encodeURIComponent(this.o.name)}`, opts());
      } catch (err) {
        if (!(err instanceof KubeApiError && err.statusCode === 404)) throw err;
      }
      const now = Date.now();
      this.observed = observe(this.observed, lease?.spec, now);
      const d = decide({
        lease: lease?.spec, observed: this.observed, identity: this.identity, now,
        leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000), nowText: microTime(new Date(now)),
      });
      if (d.action === 'wait') {
        this.noteLeader(d.holder);
        this.expiresInMs = d.expiresInMs;
        return false;
      }
      let written: Lease;
      if (d.action === 'create') {
        written = await kubeRequest<Lease>(this.o.kubeConfig, 'POST', this.leasePath, {
          ...opts(), body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.o.name, namespace: this.o.namespace }, spec: d.record },
        });
      } else {
        // resourceVersion makes this a compare-and-swap: a concurrent writer gets 409, and we retry.
        written = await kubeRequest<Lease>(this.o.kubeConfig, 'PUT', `${this.leasePath}/${encodeURIComponent(this.o.name)}`, {
          ...opts(), body: { ...lease, spec: { ...lease?.spec, ...d.record } },
        });
      }
      this.observed = observe(this.observed, written.spec, Date.now());
      this.noteLeader(this.identity);
      return true;
    } catch (err) {
      if (this.stopCtl.signal.aborted) return false;
      const conflict = err instanceof KubeApiError && (err.statusCode === 409 || err.statusCode === 422);
      const level = conflict || this.isLeader ? 'info' : 'debug';
      this.log.log(level, 'lease acquire/renew attempt failed', { leading: this.isLeader, err: err instanceof Error ? err.message : String(err) });
      return false;
    }
  }

  /** Gives the lease up if we still hold it; bounded and best effort (a failed release just means a slower failover). */
  private async release(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const path = `${this.leasePath}/${encodeURIComponent(this.o.name)}`;
    while (Date.now() < deadline) {
      try {
        const lease = await kubeRequest<Lease>(this.o.kubeConfig, 'GET', path, { timeoutMs: Math.max(500, deadline - Date.now()) });
        if ((lease.spec?.holderIdentity ?? '') !== this.identity) return;
        const now = microTime(new Date());
        await kubeRequest<Lease>(this.o.kubeConfig, 'PUT', path, {
          timeoutMs: Math.max(500, deadline - Date.now()),
          body: { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now } },
        });
        this.log.info('released the lease');
        return;
      } catch (err) {
        this.log.warn('lease release attempt failed', { err: err instanceof Error ? err.message : String(err) });
        await sleepUnlessAborted(Math.min(500, Math.max(0, deadline - Date.now())));
      }
    }
  }
}
