// The truth of a simulated fleet and its driver, for the model-based tests of the planner.
//
// The world knows what the planner can only infer: which binary each server runs, which operations the
// driver holds for which server, and whether the new version's storage is readable by the old one. The
// simulated shell (run.ts) observes it the way the real observer does and delivers the planner's calls
// to the driver here; the invariants compare the planner's decisions with this truth.
import type { Observation, ObservedPeer, ObservedStorage, ObservedAnalysis } from '../../../src/plan/observation.ts';
import type { DriverRequest } from '../../../src/plan/actions.ts';
import type { CallOutcome } from '../../../src/plan/call-outcome.ts';
import type { CallReport } from '../../../src/plan/context.ts';

export const GATE = 'UnknownVersionInteroperabilityProxy';

/** The end of an idempotency key, enough to tell calls apart in a trace. */
export function short(key: string): string {
  return `#${key.slice(-5)}`;
}

/** `+95s`, `+12m05s`: time since the run started. */
export function stamp(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 600 ? `+${s}s` : `+${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** `1.35` of `v1.35.4`. */
export function minor(v: string): string {
  return v.replace(/^v/, '').split('.').slice(0, 2).join('.');
}

/** The release a reported version stands for: build metadata (`+rke2r1`) dropped. */
export function release(v: string): string {
  return v.replace(/\+.*$/, '');
}

/** One set of storage versions: the release a server runs and the minor it emulates (none: its own). */
export function storageKey(version: string, emulation: string | undefined): string {
  return `${release(version)}${emulation === undefined ? '' : ` emulating ${emulation}`}`;
}

/** What happens to an operation the driver accepted. */
export type Fate =
  /** stops, comes back at the target (version and gate) with a new lease holder */
  | 'land'
  /** stops, comes back at the old version and gate (a failed replacement) */
  | 'fail'
  /** stops and never comes back */
  | 'hangDown'
  /** never even stops */
  | 'hangUp'
  /** lands, but only after batchTimeout has passed */
  | 'late'
  /** lands at the target under a new hostname (a replaced node); the old hostname is gone */
  | 'rename'
  /** never stops its server; when it would have, the driver reports it failed (the target image cannot be pulled) */
  | 'pullFail'
  /** stops, comes back at the old version and gate, and the driver reports it failed (the agent restored the backup) */
  | 'failReported'
  /** lands at the target, yet the driver reports it failed (a check after the swap failed): observation wins */
  | 'landReported';

/** A fault of one delivery. */
export type DeliveryFault =
  /** connection refused: not received, transient */
  | 'unreachable'
  /** received and carried out, but the answer is lost: transient to the shell */
  | 'lost'
  /** 4xx: refused for good */
  | 'reject'
  /** 5xx: not carried out, transient */
  | '5xx';

export interface Server {
  hostname: string;
  index: number;
  /** The release the binary is (no build metadata). */
  version: string;
  gate: boolean;
  /** The minor it emulates (`--emulated-version`), undefined: its own. */
  emulation?: string;
  /** False while an operation has it stopped (its identity Lease is gone, or stale when stops are ungraceful). */
  running: boolean;
  holder: string;
  lastRenew: number;
}

export interface Op {
  key: string;
  server: string;
  action: DriverRequest['action'];
  target: string;
  gate: boolean | undefined;
  /** The `--emulated-version` the op starts its server with; undefined: none. */
  emulatedVersion?: string;
  acceptedAt: number;
  downAt: number;
  upAt: number;
  fate: Fate;
  stage: 'scheduled' | 'down' | 'finished' | 'superseded';
  /** It brought its server back at its target (under its name, or a new one). */
  landed?: boolean;
  /** It restarted its server (landed, or failed back to the old version). */
  restarted?: boolean;
  /** The driver reports it failed (from when it finished: a failed report is final, the op changes nothing more). */
  reportFailed?: boolean;
}

export interface WorldParams {
  fromVersion: string;
  targetVersion: string;
  /** Build metadata every server appends to what it reports (`+rke2r1`), or ''. */
  suffix: string;
  /** Whether the target version's storage is readable by the from-version (the rollback-safety truth). */
  storageSafe: boolean;
  /** An op stops its server this long after acceptance, and brings it back this long after that. */
  downDelayMs: number;
  upDelayMs: number;
  /** When a late op lands: this long after acceptance (more than batchTimeout). */
  lateMs: number;
  /** A stopped server leaves a stale Lease behind (an ungraceful stop) instead of deleting it. */
  staleOnStop: boolean;
  analysisIntervalMs: number;
  /** The observer reads the servers' own discovery and the orphans (as it does for a TwoPhase upgrade). */
  twoPhase?: boolean;
}

/** The storage version hashes the simulated versions write (see rollback-safety.ts). */
const BASE: Record<string, string> = { '/v1/pods': 'P1', 'apps/v1/deployments': 'D1', 'example.dev/v1beta1/widgets': 'W1' };
const SAFE_NEW: Record<string, string> = { ...BASE, 'example.dev/v1/widgets': 'W1', 'newgroup.dev/v1/things': 'T1' };
const UNSAFE_NEW: Record<string, string> = { ...BASE, 'example.dev/v1beta1/widgets': 'W2', 'example.dev/v1/widgets': 'W2' };

export function storageHashes(kind: 'base' | 'safe' | 'unsafe'): Record<string, string> {
  return kind === 'base' ? BASE : kind === 'safe' ? SAFE_NEW : UNSAFE_NEW;
}

export interface Window {
  from: number;
  to: number;
  verdict: 'Breach' | 'Inconclusive';
}

/** A violation the world itself detects (a second op accepted for a server with one in flight). */
export interface Supersession {
  at: number;
  server: string;
  previous: Op;
  next: Op;
}

export class World {
  readonly p: WorldParams;
  now: number;
  servers = new Map<string, Server>();
  /** Every op ever accepted, oldest first. */
  ops: Op[] = [];
  /** The first answer per key: a repeated key gets it again and does nothing new. */
  answers = new Map<string, CallOutcome>();
  faults: DeliveryFault[] = [];
  fates: Fate[] = [];
  supersessions: Supersession[] = [];
  windows: Window[] = [];
  /** Discovery does not converge before this time. */
  stuckUntil = 0;
  /** Hostnames that answer /readyz 503 at the next observation only. */
  blips = new Set<string>();
  /** The next this-many observations read storage incompletely (no entry). */
  flakyStorage = 0;
  /** The next this-many report reads fail: alternately an `unknown` answer and a read that throws. */
  reportFaults = 0;
  /** The truth of spec.gates' one query gate (`health`): it holds, fails (a firing alert), or cannot be evaluated (Prometheus down). */
  health: 'hold' | 'fail' | 'unknown' = 'hold';
  /**
   * The truth of the rest of the control plane: each kube-controller-manager's release by node (the nodes the fleet
   * started on), or undefined when its mirror Pod's image names no version. A human may move one at any time.
   */
  components = new Map<string, string | undefined>();
  /** Every delivery, for the trace. */
  deliveries: { at: number; request: DriverRequest; outcome: CallOutcome; fault: DeliveryFault | undefined }[] = [];
  /** Hostnames whose proxy gate an op turned on (it was off before): the only ones a revert may turn off. */
  turnedOn = new Set<string>();
  /** A server ran the target version without emulation while the target was a minor ahead: it wrote at the target's storage versions. */
  unemulatedWrote = false;
  /** Every release and emulation a server ran (storageKey): the storage versions written to etcd. */
  readonly ran = new Set<string>();
  /** What happened to the servers, for the trace (drained by the shell). */
  log: string[] = [];
  readonly start: number;
  private holderSeq = 0;
  private nextIndex = 1;

  constructor(p: WorldParams, servers: number, gateOn: boolean, start: number) {
    this.p = p;
    this.now = start;
    this.start = start;
    for (let i = 0; i < servers; i++) this.components.set(this.addServer(p.fromVersion, gateOn).hostname, release(p.fromVersion));
    this.noteWriters();
  }

  addServer(version: string, gate: boolean, hostname?: string): Server {
    const index = this.nextIndex++;
    const s: Server = { hostname: hostname ?? `cp-${index}`, index, version, gate, running: true, holder: '', lastRenew: this.now };
    s.holder = this.newHolder(s);
    this.servers.set(s.hostname, s);
    return s;
  }

  removeServer(hostname: string): void {
    this.servers.delete(hostname);
    for (const op of this.ops) if (op.server === hostname && (op.stage === 'scheduled' || op.stage === 'down')) op.stage = 'finished';
  }

  /** A human restarts a stopped server as it is (same binary): whatever op stopped it is cancelled. */
  repair(hostname: string): void {
    const s = this.servers.get(hostname);
    if (!s || s.running) return;
    for (const op of this.ops) if (op.server === hostname && (op.stage === 'scheduled' || op.stage === 'down')) op.stage = 'finished';
    s.running = true;
    s.holder = this.newHolder(s);
    s.lastRenew = this.now;
  }

  private newHolder(s: Server): string {
    return `apiserver-${s.hostname}_${(++this.holderSeq).toString(16).padStart(4, '0')}`;
  }

  /** The ops the driver still holds (accepted, not finished). */
  pendingOps(): Op[] {
    return this.ops.filter((o) => o.stage === 'scheduled' || o.stage === 'down');
  }

  pendingOp(hostname: string): Op | undefined {
    return this.pendingOps().find((o) => o.server === hostname);
  }

  /** The earliest time after now at which an op changes a server, or Infinity. */
  nextChange(): number {
    let t = Infinity;
    for (const o of this.pendingOps()) {
      if (o.stage === 'scheduled' && o.downAt > this.now) t = Math.min(t, o.downAt);
      if (o.upAt > this.now) t = Math.min(t, o.upAt);
    }
    return t;
  }

  /** Notes what the running servers run (each release and emulation is a set of storage versions written), and a server that runs the target a minor ahead without emulation (it writes at the target's storage versions). */
  noteWriters(): void {
    for (const s of this.servers.values()) if (s.running) this.ran.add(storageKey(s.version, s.emulation));
    if (minor(this.p.targetVersion) === minor(this.p.fromVersion)) return;
    for (const s of this.servers.values()) if (s.running && s.version === release(this.p.targetVersion) && s.emulation === undefined) this.unemulatedWrote = true;
  }

  /** Lets time pass: ops stop and bring back servers in time order. */
  advance(ms: number): void {
    const end = this.now + Math.max(0, ms);
    for (;;) {
      let next: { op: Op; at: number } | undefined;
      for (const op of this.pendingOps()) {
        const at = op.stage === 'scheduled' ? op.downAt : op.upAt;
        if (at <= end && (!next || at < next.at)) next = { op, at };
      }
      if (!next) break;
      this.now = Math.max(this.now, next.at);
      this.step(next.op);
    }
    this.now = end;
    for (const s of this.servers.values()) if (s.running) s.lastRenew = this.now;
    this.noteWriters();
  }

  private step(op: Op): void {
    const s = this.servers.get(op.server);
    if (!s) {
      op.stage = 'finished';
      return;
    }
    if (op.stage === 'scheduled' && op.fate === 'pullFail') {
      op.stage = 'finished';
      op.reportFailed = true;
      this.note(`${s.hostname} untouched: ${op.action} ${short(op.key)} failed before stopping it (the driver reports it failed)`);
      return;
    }
    if (op.stage === 'scheduled') {
      s.running = false;
      op.stage = 'down';
      this.note(`${s.hostname} stopped by ${op.action} ${short(op.key)}`);
      return;
    }
    op.stage = 'finished';
    const failed = op.fate === 'fail' || op.fate === 'failReported';
    op.landed = !failed;
    op.restarted = true;
    op.reportFailed = op.fate === 'failReported' || op.fate === 'landReported';
    if (op.fate === 'rename') {
      this.servers.delete(s.hostname);
      const base = s.hostname.replace(/-r\d+$/, '');
      const n = this.addServer(release(op.target), op.gate ?? s.gate, `${base}-r${this.nextIndex}`);
      n.emulation = op.emulatedVersion;
      if (n.gate && (this.turnedOn.has(s.hostname) || (op.gate === true && !s.gate))) this.turnedOn.add(n.hostname);
      this.note(`${s.hostname} came back as ${n.hostname} at ${n.version} gate ${n.gate ? 'on' : 'off'} (${op.action} ${short(op.key)})`);
      return;
    }
    s.running = true;
    s.holder = this.newHolder(s);
    s.lastRenew = this.now;
    if (!failed) {
      s.version = release(op.target);
      s.emulation = op.emulatedVersion;
      if (op.gate === true && !s.gate) this.turnedOn.add(s.hostname);
      if (op.gate !== undefined) s.gate = op.gate;
    }
    this.note(`${s.hostname} back at ${s.version} gate ${s.gate ? 'on' : 'off'}${failed ? ' (the op failed)' : ''}${op.reportFailed ? ' (the driver reports it failed)' : ''} (${op.action} ${short(op.key)})`);
  }

  note(line: string): void {
    this.log.push(`${stamp(this.now - this.start)} ${line}`);
  }

  /** One delivery of a driver call, as a real driver answers it. */
  deliver(req: DriverRequest): CallOutcome {
    const fault = this.faults.shift();
    const outcome = this.answer(req, fault);
    this.deliveries.push({ at: this.now, request: req, outcome, fault });
    return outcome;
  }

  private answer(req: DriverRequest, fault: DeliveryFault | undefined): CallOutcome {
    if (fault === 'unreachable') return { kind: 'transient', message: 'connect ECONNREFUSED' };
    if (fault === '5xx') return { kind: 'transient', message: 'HTTP 503 from the driver' };
    const first = this.answers.get(req.idempotencyKey);
    if (first) return fault === 'lost' ? { kind: 'transient', message: 'deadline exceeded awaiting the answer' } : first;
    let outcome: CallOutcome;
    const s = this.servers.get(req.server.hostname);
    if (!s) outcome = { kind: 'rejected', message: `HTTP 404: no server ${req.server.hostname}` };
    else if (fault === 'reject') outcome = { kind: 'rejected', message: 'HTTP 422: refused' };
    else {
      outcome = { kind: 'accepted', message: 'HTTP 202' };
      this.accept(req, s);
    }
    this.answers.set(req.idempotencyKey, outcome);
    return fault === 'lost' ? { kind: 'transient', message: 'deadline exceeded awaiting the answer' } : outcome;
  }

  private accept(req: DriverRequest, s: Server): void {
    const fate = this.fates.shift() ?? 'land';
    const g = req.featureGates[GATE];
    const downAt = fate === 'hangUp' ? Infinity : s.running ? this.now + this.p.downDelayMs : this.now;
    const upAt = fate === 'hangDown' || fate === 'hangUp' ? Infinity : fate === 'late' ? Math.max(downAt + 1, this.now + this.p.lateMs) : downAt + this.p.upDelayMs;
    const op: Op = {
      key: req.idempotencyKey,
      server: s.hostname,
      action: req.action,
      target: req.targetVersion,
      gate: g,
      ...(req.emulatedVersion === undefined ? {} : { emulatedVersion: req.emulatedVersion }),
      acceptedAt: this.now,
      downAt,
      upAt,
      fate,
      stage: s.running ? 'scheduled' : 'down',
    };
    // A new op for a server supersedes the one the driver still holds for it.
    const previous = this.pendingOp(s.hostname);
    if (previous) {
      previous.stage = 'superseded';
      this.supersessions.push({ at: this.now, server: s.hostname, previous, next: op });
    }
    this.ops.push(op);
  }

  /**
   * What the driver reports on an op it accepted, as Driver.report answers: `failed` once a failed op finished
   * (final), `running` while it runs, `succeeded` once it finished otherwise — even for a `fail` op (a driver
   * that cannot tell): only observation makes a call Done. A key it never accepted, or a read fault, is
   * `unknown`; a fault may instead throw, as a broken driver's report would.
   */
  report(key: string): CallReport {
    if (this.reportFaults > 0) {
      this.reportFaults--;
      if (this.reportFaults % 2 === 0) throw new Error('reading the Job failed: connect ECONNREFUSED');
      return { kind: 'unknown', message: 'reading the Job failed: HTTP 503' };
    }
    const op = this.ops.find((o) => o.key === key);
    if (!op) return { kind: 'unknown', message: `no Job for ${short(key)}` };
    if (op.stage === 'superseded') return { kind: 'failed', message: `superseded by a newer call for ${op.server}` };
    if (op.reportFailed) return { kind: 'failed', message: op.fate === 'pullFail' ? `ErrImagePull: ${op.target} not found` : 'the new static Pod never got ready; the backup manifest is restored' };
    return op.stage === 'finished' ? { kind: 'succeeded', message: 'the agent Job succeeded' } : { kind: 'running', message: 'the agent Job runs' };
  }

  reported(s: Server): string {
    return `${s.version}${this.p.suffix}`;
  }

  /** A server on the target emulating the from-version writes what the from-version does (phase one's promise). */
  storageOf(version: string, emulation?: string): Record<string, string> {
    if (release(version) === release(this.p.fromVersion) || (emulation !== undefined && emulation === minor(this.p.fromVersion))) return storageHashes('base');
    return storageHashes(this.p.storageSafe ? 'safe' : 'unsafe');
  }

  /** The group/version/resources a server serves itself: the from-version's, or the target's own (one more). */
  resourcesOf(s: Server): string[] {
    const old = ['/v1/pods', 'apps/v1/deployments', 'example.dev/v1beta1/widgets'];
    const own = release(s.version) === release(this.p.fromVersion) || s.emulation === minor(this.p.fromVersion);
    return own ? old : [...old, 'newgroup.dev/v1/things'];
  }

  /** The latest analysis check at or before now: one per interval. */
  analysis(): ObservedAnalysis {
    const t = Math.floor(this.now / this.p.analysisIntervalMs) * this.p.analysisIntervalMs;
    const w = this.windows.find((x) => x.from <= t && t < x.to);
    const verdict = w?.verdict ?? 'Healthy';
    return {
      time: new Date(t).toISOString(),
      verdict,
      signals: verdict === 'Breach' ? { proxyErrorRatio: 0.4 } : verdict === 'Healthy' ? { proxyErrorRatio: 0 } : {},
      breaches: verdict === 'Breach' ? [{ signal: 'proxyErrorRatio', observed: '0.4', threshold: '0.01' }] : [],
    };
  }

  /** A fresh observation, as the real observer makes it (no memory across reconciles). */
  observe(): Observation {
    const peers: ObservedPeer[] = [];
    const up: Server[] = [];
    for (const s of [...this.servers.values()].sort((a, b) => a.index - b.index)) {
      const identity = `apiserver-${s.hostname}`;
      const address = `10.0.0.${s.index}:6443`;
      if (s.running) {
        const ready = !this.blips.has(s.hostname);
        peers.push({ identity, hostname: s.hostname, address, version: this.reported(s), ready, proxyGate: s.gate ? 'on' : 'off', holderIdentity: s.holder, lastRenew: new Date(s.lastRenew).toISOString(), stale: false, ...(s.emulation === undefined ? {} : { emulation: s.emulation }) });
        if (ready) up.push(s);
      } else if (this.p.staleOnStop) {
        peers.push({ identity, hostname: s.hostname, address, ready: false, proxyGate: 'unknown', holderIdentity: s.holder, lastRenew: new Date(s.lastRenew).toISOString(), stale: true });
      }
    }
    this.blips.clear();
    const own = this.p.twoPhase ? { own: up.map((s) => ({ server: s.hostname, version: this.reported(s), ...(s.emulation === undefined ? {} : { emulation: s.emulation }), resources: this.resourcesOf(s) })) } : {};
    const obs: Observation = {
      peers,
      discovery: this.now < this.stuckUntil ? { converged: false, message: 'cp-1 peer-aggregated /apis misses newgroup.dev/v1/things', ...own } : { converged: true, message: 'converged', ...own },
      analysis: this.analysis(),
      // Nobody creates objects of the target-only resource here: a phase-two rollback orphans nothing.
      ...(this.p.twoPhase ? { orphans: [] } : {}),
      // spec.gates' query gate, as the gates' Prometheus answers it (read whether or not the spec has gates).
      gates: { queries: [this.health === 'unknown' ? { name: 'health', error: 'GET http://prometheus:9090/api/v1/query: connect ECONNREFUSED' } : { name: 'health', samples: this.health === 'fail' ? [{ labels: { alertname: 'EtcdMembersDown', severity: 'critical' }, value: 1 }] : [] }] },
    };
    obs.components = {
      pods: [...this.components].map(([node, v]) => ({
        component: 'kube-controller-manager' as const, pod: `kube-system/kube-controller-manager-${node}`, node,
        ...(v === undefined ? { unknown: 'its image has no tag' } : { version: v, image: `registry.k8s.io/kube-controller-manager:${v}` }),
      })),
    };
    if (this.flakyStorage > 0) {
      this.flakyStorage--;
    } else {
      const storage: ObservedStorage[] = [];
      for (const s of up) {
        const version = this.reported(s);
        if (storage.some((x) => x.version === version && x.emulation === s.emulation)) continue;
        storage.push({ version, ...(s.emulation === undefined ? {} : { emulation: s.emulation }), server: s.hostname, hashes: { ...this.storageOf(s.version, s.emulation) }, kinds: {} });
      }
      obs.storage = storage;
    }
    return obs;
  }
}

/** The maintenance windows of a setup (UTC): open `openMin` minutes at 10:00, 10:04, ... 10:56 every day. */
export const WINDOW_STARTS = Array.from({ length: 15 }, (_, i) => `10:${String(i * 4).padStart(2, '0')}`);

/** The truth, computed apart from the planner's window code: whether a window is open at `t`. */
export function windowOpenAt(t: number, openMin: number): boolean {
  const ms = ((t % 86_400_000) + 86_400_000) % 86_400_000;
  const since = ms - 10 * 3_600_000;
  return since >= 0 && since < 60 * 60_000 && since % (4 * 60_000) < openMin * 60_000;
}

/** The next instant after `t` at which a window opens or closes. */
export function nextWindowEdge(t: number, openMin: number): number {
  const day = t - (((t % 86_400_000) + 86_400_000) % 86_400_000);
  const edges: number[] = [];
  for (const d of [0, 86_400_000]) for (const [i] of WINDOW_STARTS.entries()) {
    const start = day + d + 10 * 3_600_000 + i * 4 * 60_000;
    edges.push(start, start + openMin * 60_000);
  }
  return Math.min(...edges.filter((e) => e > t));
}
