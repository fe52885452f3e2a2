// The Sim of fleet.ts, driven through the shell protocol: each reconcile plans from the persisted status,
// persists, then delivers each call to a simulated driver and records its outcome with recordCallOutcome.
// The driver is idempotent by key and holds one op per server (a newer one supersedes it); an op lands
// when the test says so (land) or, with autoLand, before the next reconcile: the server restarts (new
// lease holder) at the call's version and gate. Storage hashes and analysis checks are observed the way
// the real observer gives them: storage per version of the servers up now, a check per interval. Before each
// plan it reads the driver's report on every call Accepted in the status, as the reconciler does.
import type { ApiServerUpgradeSpec, DriverCall } from '../../../src/api/types.generated.ts';
import { plan, RESUME_ANNOTATION, type Plan, type Observation, type ObservedPeer, type ObservedStorage, type DriverRequest } from '../../../src/plan/index.ts';
import { recordCallOutcome, type CallOutcome } from '../../../src/plan/call-outcome.ts';
import type { CallReport } from '../../../src/plan/context.ts';
import { callsToReport } from '../../../src/plan/calls.ts';
import { resolveSpec } from '../../../src/api/defaults.ts';
import { Sim, spec as defaultSpec } from '../fleet.ts';
import { GATE, release, storageHashes } from './world.ts';

/** Where a reconcile crashes: before persisting its plan, before delivery i, or after delivery i before recording it. */
export type Crash = 'beforePersist' | { before: number } | { after: number };

export type DriverMode = 'accept' | 'reject' | 'unreachable' | 'lost';

export class ShellSim extends Sim {
  /** Whether the target version's storage is readable by the from-version. */
  storageSafe = true;
  /** Storage is read completely (false: no storage entries at all). */
  readStorage = true;
  /** An analysis check per 10 s interval with this verdict (false: only what `extra.analysis` says). */
  checks = true;
  verdict: 'Healthy' | 'Breach' | 'Inconclusive' = 'Healthy';
  discoveryConverged = true;
  driverMode: DriverMode = 'accept';
  /** Land every held op before the next reconcile. */
  autoLand = true;
  /** Build metadata the servers append to their version when they come back (`+rke2r1`). */
  suffix = '';
  readonly answers = new Map<string, CallOutcome>();
  /** The op the driver holds for each server (accepted, not landed). */
  readonly held = new Map<string, DriverRequest>();
  /** Keys of ops that never land (autoLand skips them); a newer op for the server replaces them. */
  readonly hung = new Set<string>();
  /** Servers stopped by an op: their identity Lease is gone. */
  readonly stopped = new Map<string, ObservedPeer>();
  readonly delivered: DriverRequest[] = [];
  /**
   * What the driver reports on a key it accepted (Driver.report): `running` unless set here; 'throws' is a read
   * that fails (left out, as the reconciler does).
   */
  readonly reports = new Map<string, CallReport | 'throws'>();
  readonly events: { reason: string; note: string }[] = [];
  /** Every persisted phase, with its pause reason: `Paused(BatchTimeout)`. */
  readonly phases: string[] = [];
  /** Plans that emitted calls while ending in a phase that must not (for assertions). */
  readonly plans: Plan[] = [];
  private holderSeq = 0;
  private resumes = 0;

  constructor(peers: ObservedPeer[], s: ApiServerUpgradeSpec = defaultSpec()) {
    super(
      peers.map((p) => ({ holderIdentity: `${p.identity}_0`, ...p })),
      s,
    );
    this.extra = {};
  }

  observe(): Observation {
    const obs: Observation = {
      peers: this.peers.map((p) => ({ ...p })),
      discovery: this.discoveryConverged ? { converged: true, message: 'converged' } : { converged: false, message: 'cp-1 peer-aggregated /apis misses newgroup.dev/v1/things' },
    };
    if (this.checks) {
      const t = Math.floor(this.now.getTime() / 10_000) * 10_000;
      obs.analysis = {
        time: new Date(t).toISOString(),
        verdict: this.verdict,
        signals: this.verdict === 'Breach' ? { proxyErrorRatio: 0.4 } : { proxyErrorRatio: 0 },
        breaches: this.verdict === 'Breach' ? [{ signal: 'proxyErrorRatio', observed: '0.4', threshold: '0.01' }] : [],
      };
    }
    if (this.readStorage) {
      const storage: ObservedStorage[] = [];
      for (const p of this.peers) {
        if (!p.ready || p.stale || p.version === undefined || storage.some((s) => s.version === p.version)) continue;
        storage.push({ version: p.version, server: p.hostname, hashes: { ...storageHashes(this.storageKind(p.version)) }, kinds: {} });
      }
      obs.storage = storage;
    }
    const flagProof = this.proofs.observe(this.spec, this.status, this.peers, this.now);
    return { ...obs, ...(flagProof ? { flagProof } : {}), ...this.extra };
  }

  private storageKind(version: string): 'base' | 'safe' | 'unsafe' {
    const m = /^v1\.(\d+)\./.exec(version);
    if (m && Number(m[1]) <= 35) return 'base';
    return this.storageSafe ? 'safe' : 'unsafe';
  }

  /** One reconcile through the shell protocol. */
  reconcile(advanceMs = 1000, crash?: Crash): Plan {
    this.now = new Date(this.now.getTime() + advanceMs);
    if (this.autoLand) for (const [h, req] of [...this.held]) if (!this.hung.has(req.idempotencyKey)) this.land(h);
    // What the shell reads (callsToReport): the calls Accepted — `running` unless set — and the ended calls awaiting
    // settlement, whose agent exited when it landed (`succeeded`) unless set otherwise.
    const driverReports: Record<string, CallReport> = {};
    let toReport: DriverCall[] = [];
    try {
      const resolved = resolveSpec(this.spec);
      toReport = callsToReport(this.status?.driverCalls ?? [], this.now, resolved.strategy.batchTimeoutMs, resolved.driver);
    } catch {
      /* a spec the planner refuses makes no call: nothing to report on */
    }
    for (const c of toReport) {
      const r = this.reports.get(c.key) ?? (c.result === 'Accepted' ? { kind: 'running', message: 'the agent Job runs' } : { kind: 'succeeded', message: 'the agent Job completed' });
      if (r !== 'throws') driverReports[c.key] = r;
    }
    const p = plan({ ...this.upgrade, driverReports }, this.spec, this.status, this.observe(), this.now);
    this.last = p;
    this.plans.push(p);
    if (crash === 'beforePersist') return p;
    this.status = p.status;
    this.phases.push(p.status.phase === 'Paused' ? `Paused(${p.status.pause?.reason ?? '?'})` : (p.status.phase ?? 'Pending'));
    for (const a of p.actions) if (a.kind === 'event') this.events.push({ reason: a.reason, note: a.note });
    this.proofs.apply(p.actions, this.now);
    const calls = p.actions.flatMap((a) => (a.kind === 'callDriver' ? [a.request] : []));
    for (const [i, req] of calls.entries()) {
      if (typeof crash === 'object' && 'before' in crash && crash.before === i) return p;
      const outcome = this.deliver(req);
      if (typeof crash === 'object' && 'after' in crash && crash.after === i) return p;
      this.status = recordCallOutcome(this.status, req.idempotencyKey, outcome, this.now);
    }
    return p;
  }

  /** Reconciles until `done` holds (checked after each reconcile) or `max` reconciles; returns how many ran. */
  runUntil(done: (sim: this) => boolean, max = 100, advanceMs = 5000): number {
    for (let i = 1; i <= max; i++) {
      this.reconcile(advanceMs);
      if (done(this)) return i;
    }
    return max + 1;
  }

  /** Reconciles until a terminal phase or a pause. */
  runToRest(max = 100, advanceMs = 5000): string {
    this.runUntil((s) => ['Succeeded', 'RolledBack', 'Failed', 'Paused'].includes(s.status?.phase ?? ''), max, advanceMs);
    return this.status?.phase ?? 'Pending';
  }

  deliver(req: DriverRequest): CallOutcome {
    this.delivered.push(req);
    const mode = this.driverMode;
    const lost: CallOutcome = { kind: 'transient', message: 'deadline exceeded awaiting the answer' };
    if (mode === 'unreachable') return { kind: 'transient', message: 'connect ECONNREFUSED' };
    const first = this.answers.get(req.idempotencyKey);
    if (first) return mode === 'lost' ? lost : first;
    const known = this.peers.some((p) => p.hostname === req.server.hostname) || this.stopped.has(req.server.hostname);
    let outcome: CallOutcome;
    if (!known) outcome = { kind: 'rejected', message: `HTTP 404: no server ${req.server.hostname}` };
    else if (mode === 'reject') outcome = { kind: 'rejected', message: 'HTTP 422: refused' };
    else {
      outcome = { kind: 'accepted', message: 'HTTP 202' };
      this.held.set(req.server.hostname, req);
    }
    this.answers.set(req.idempotencyKey, outcome);
    return mode === 'lost' ? lost : outcome;
  }

  /** The op the driver holds for `hostname` never lands (until a newer op replaces it). */
  hang(hostname: string): void {
    const req = this.held.get(hostname);
    if (!req) throw new Error(`the driver holds no op for ${hostname}`);
    this.hung.add(req.idempotencyKey);
  }

  /**
   * The op held for `hostname` fails and the driver says so from now on (a failed report is final: the driver
   * holds nothing more for it). The server stays as it is — or restarts at its old version (`restart`: the
   * agent restored the backup manifest). Returns the op's key.
   */
  failHeld(hostname: string, message: string, opts: { restart?: boolean } = {}): string {
    const req = this.held.get(hostname);
    if (!req) throw new Error(`the driver holds no op for ${hostname}`);
    if (opts.restart) this.land(hostname, { fail: true });
    else this.held.delete(hostname);
    this.reports.set(req.idempotencyKey, { kind: 'failed', message });
    return req.idempotencyKey;
  }

  /** The op held for `hostname` stops the server: its identity Lease disappears. */
  stop(hostname: string): void {
    const i = this.peers.findIndex((p) => p.hostname === hostname);
    if (i === -1) return;
    this.stopped.set(hostname, this.peers[i]!);
    this.peers.splice(i, 1);
  }

  /**
   * The op held for `hostname` lands: the server comes back (new holder) at the call's version and gate,
   * or at its old ones (`fail`), or as a new server named `as` (a replaced node; the old name is gone).
   */
  land(hostname: string, opts: { as?: string; fail?: boolean } = {}): void {
    const req = this.held.get(hostname);
    if (!req) throw new Error(`the driver holds no op for ${hostname}`);
    this.held.delete(hostname);
    const old = this.peers.find((p) => p.hostname === hostname) ?? this.stopped.get(hostname);
    if (!old) return;
    this.peers = this.peers.filter((p) => p.hostname !== hostname);
    this.stopped.delete(hostname);
    const g = req.featureGates[GATE];
    const gate = opts.fail || g === undefined ? old.proxyGate : g ? 'on' : 'off';
    const version = opts.fail ? old.version : `${release(req.targetVersion)}${this.suffix}`;
    const name = opts.as ?? hostname;
    const identity = opts.as ? `apiserver-${opts.as}` : old.identity;
    this.peers.push({ ...old, hostname: name, identity, ...(version === undefined ? {} : { version }), proxyGate: gate, ready: true, stale: false, holderIdentity: `${identity}_${++this.holderSeq}` });
    this.peers.sort((a, b) => a.hostname.localeCompare(b.hostname));
  }

  /** A human sets the resume annotation to a new value. */
  resume(value = `ack-${++this.resumes}`): void {
    this.upgrade = { ...this.upgrade, annotations: { ...this.upgrade.annotations, [RESUME_ANNOTATION]: value } };
  }

  editSpec(change: Partial<ApiServerUpgradeSpec>): void {
    this.spec = { ...this.spec, ...change };
    this.upgrade = { ...this.upgrade, generation: this.upgrade.generation + 1 };
  }

  /** `Action:hostname` of every delivery so far (repeats of one key included). */
  deliveries(action?: DriverRequest['action']): string[] {
    return this.delivered.filter((r) => action === undefined || r.action === action).map((r) => `${r.action}:${r.server.hostname}`);
  }

  /** Distinct keys delivered, as `Action:hostname`, in first-delivery order. */
  distinctCalls(action?: DriverRequest['action']): string[] {
    const seen = new Set<string>();
    const out: string[] = [];
    for (const r of this.delivered) {
      if ((action && r.action !== action) || seen.has(r.idempotencyKey)) continue;
      seen.add(r.idempotencyKey);
      out.push(`${r.action}:${r.server.hostname}`);
    }
    return out;
  }

  peerOf(hostname: string): ObservedPeer | undefined {
    return this.peers.find((p) => p.hostname === hostname) ?? this.stopped.get(hostname);
  }
}
