// One upgrade of the fault campaign (issue 26), process mode with the webhook driver: a fresh cluster (3 servers,
// etcd, haproxy), the hook behind a door the faults switch, the operator as processes, a client; the upgrade runs
// while the schedule's faults are injected and healed; the history is recorded from the harness's own sources and
// judged by the offline checker.
import { NEW_VERSION, OLD_VERSION, sleep } from '../cluster/index.ts';
import { freePort } from '../cluster/cluster.ts';
import { createUpgrade, startOperator, type OperatorProcess } from '../support/operator.ts';
import { startRig, upgradeManifest, NEW_ONLY, type Rig } from '../support/rig.ts';
import { ReadWriteTraffic } from '../support/rw-traffic.ts';
import { ABORT_ANNOTATION, RESUME_ANNOTATION } from '../../src/api/vocabulary.ts';
import { checkHistory, type DriverOp, type History, type ServerRecord, type Span, type StatusSnapshot, type Verdict } from './history-check.ts';
import { HookDoor } from './hook-door.ts';
import { StatusWatch } from './status-watch.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';
import { describeFault, describeSpec, type Fault, type Schedule } from './schedule.ts';

const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';
const NAME = 'campaign';
const TERMINAL = new Set(['Succeeded', 'RolledBack', 'Failed']);

export interface UpgradeResult {
  schedule: Schedule;
  /** The last phase (and pause reason) seen. */
  outcome: string;
  durationMs: number;
  /** When the upgrade object was created (epoch ms): the history's times are absolute, the output's relative to this. */
  createdAt: number;
  verdict: Verdict;
  history: History;
  /** Faults that could not be injected as drawn (e.g. every server busy in a replacement), and why. */
  skipped: string[];
  /** Leader SIGKILL -> another replica leading, ms (only where a standby was running). */
  takeoverMs: number[];
  /** The harness failed (not the operator): the run proves nothing. */
  harnessError?: string;
}

/** The recorder: polls the harness's process table and the upgrade object, keeping each change. */
class Recorder {
  readonly servers: ServerRecord[] = [];
  readonly statuses: StatusSnapshot[] = [];
  readonly stopped = new Set<number>();
  private last = new Map<string, string>();
  private lastStatus = '';
  private running = true;
  private readonly loops: Promise<void>[];
  private readonly rig: Rig;
  private readonly watch: StatusWatch;

  constructor(rig: Rig) {
    this.rig = rig;
    this.loops = [this.serverLoop()];
    this.watch = new StatusWatch(rig.cluster, NAME, (u, at) => this.take(u, at));
  }

  private sampleServers(): void {
    for (const s of this.rig.cluster.servers) {
      const emulation = s.config.extraFlags.find((f) => f.startsWith('--emulated-version='))?.split('=')[1];
      const rec: ServerRecord = { t: Date.now(), server: s.hostname, up: s.running && !this.stopped.has(s.index), version: s.config.version, ...(emulation ? { emulation } : {}) };
      const key = `${rec.up}|${rec.version}|${rec.emulation ?? ''}`;
      if (this.last.get(s.hostname) !== key) {
        this.last.set(s.hostname, key);
        this.servers.push(rec);
      }
    }
  }

  private async serverLoop(): Promise<void> {
    while (this.running) {
      this.sampleServers();
      await sleep(200);
    }
  }

  /** Keeps a snapshot of the object's status when it differs from the last one kept. */
  private take(u: ApiServerUpgrade, at: number): void {
    const st = u.status;
    if (!st?.phase) return;
    const snap: StatusSnapshot = {
      t: at, phase: st.phase,
      ...(st.pause?.reason ? { pauseReason: st.pause.reason } : {}),
      ...(st.pause?.message ? { pauseMessage: st.pause.message } : {}),
      targetStorageKnown: (st.plan?.targetStorage?.length ?? 0) > 0,
      finishedBatches: (st.batch?.history ?? []).map((b) => b.index),
    };
    const key = JSON.stringify({ ...snap, t: 0 });
    if (key !== this.lastStatus) {
      this.lastStatus = key;
      this.statuses.push(snap);
    }
  }

  get phase(): StatusSnapshot | undefined {
    return this.statuses.at(-1);
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all([...this.loops, this.watch.stop()]);
    this.sampleServers();
  }
}

/** The hook's log as driver operations: from the call's acceptance to its end (done, failed). */
function driverOps(rig: Rig): DriverOp[] {
  const ops = new Map<string, DriverOp>();
  for (const e of rig.hook.log) {
    if (!e.key || !e.hostname || !e.action) continue;
    if (e.event === 'accepted') {
      const call = rig.hook.calls.get(e.key);
      ops.set(e.key, { key: e.key, server: e.hostname, action: e.action as DriverOp['action'], start: e.at, landed: false, ...(call?.emulatedVersion ? { emulated: true } : {}) });
    } else if (e.event === 'done' || e.event === 'failed') {
      const op = ops.get(e.key);
      if (op) {
        op.end = e.at;
        op.landed = e.event === 'done';
      }
    }
  }
  return [...ops.values()];
}

const leads = (op: OperatorProcess): number | undefined => {
  try {
    const l = op.logLines().filter((x) => x.message === 'started leading').at(-1);
    return l ? Date.parse(String(l.timestamp)) : undefined;
  } catch {
    return undefined;
  }
};
const alive = (op: OperatorProcess): boolean => op.child.exitCode === null && op.child.signalCode === null;

async function patch(rig: Rig, body: object): Promise<void> {
  const r = await rig.cluster.request('lb', `${UPGRADES}/${NAME}`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify(body), timeoutMs: 10_000 });
  if (r.status !== 200) throw new Error(`patch ${JSON.stringify(body)}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
}

/** Runs one scheduled upgrade and judges its history. */
export async function runUpgrade(s: Schedule, log: (m: string) => void = () => undefined): Promise<UpgradeResult> {
  const t0 = Date.now();
  const skipped: string[] = [];
  const takeoverMs: number[] = [];
  const faultDown: (Span & { server: string })[] = [];
  const breaches: Span[] = [];
  const blind: Span[] = [];
  let healedAt = 0;
  const rig = await startRig({ gate: s.spec.gate, healthPort: await freePort() });
  const ops: OperatorProcess[] = [rig.op];
  // The cluster's own teardown runs on SIGINT/SIGTERM; the operator replicas are this run's children and go with it.
  const killOps = (): void => {
    for (const op of ops) op.child.kill('SIGKILL');
  };
  process.on('exit', killOps);
  let rw: ReadWriteTraffic | undefined;
  let door: HookDoor | undefined;
  let rec: Recorder | undefined;
  let createdAt = Date.now();
  let harnessError: string | undefined;
  let batchMax: number = s.spec.batchSize;
  try {
    const { cluster, hook } = rig;
    door = await HookDoor.start(Number(new URL(hook.url).port));
    rw = await ReadWriteTraffic.start((p, o) => cluster.request('lb', p, o), 'campaign-rw', { intervalMs: 200 });
    rec = new Recorder(rig);
    const manifest = upgradeManifest(NAME, hook, {
      strategy: { batchSize: s.spec.batchSize, soakDuration: `${s.spec.soakSeconds}s`, batchTimeout: '60s', ...(s.spec.twoPhase ? { phases: 'TwoPhase', phaseSoakDuration: '5s' } : {}) },
      analysis: { interval: `${s.spec.intervalSeconds}s`, failureLimit: s.spec.failureLimit, onBreach: s.spec.onBreach },
    });
    const spec = manifest.spec as { driver: { webhook: { url: string } } };
    spec.driver.webhook.url = `https://127.0.0.1:${door.port}/replace`;
    await createUpgrade(cluster, manifest);
    createdAt = Date.now();
    if (s.spec.standby) ops.push(await startOperator(cluster, { healthPort: await freePort() }));
    const recorder = rec;
    const doorRef = door;

    /** Servers a fault is working on: one fault at a time per server (a kill's restart never races a binary restart). */
    const held = new Set<number>();
    const heldBy = new Map<Fault, number>();
    const busy = (i: number): boolean => [...hook.calls.values()].some((c) => c.hostname === cluster.server(i).hostname && (c.outcome === 'pending' || c.outcome === 'running'));
    /** The drawn server, or the next one not in a replacement (the harness never races the hook on one server). */
    const free = (f: Fault): number | undefined => {
      const want = f.server ?? 0;
      const i = [0, 1, 2].map((k) => (want + k) % 3).find((x) => !busy(x) && !held.has(x));
      if (i !== undefined) {
        held.add(i);
        heldBy.set(f, i);
      }
      if (i !== undefined && i !== want) skipped.push(`${f.kind}: cp-${want + 1} busy, hit cp-${i + 1}`);
      return i;
    };
    const newReplica = async (): Promise<OperatorProcess> => {
      const op = await startOperator(cluster, { healthPort: await freePort() });
      ops.push(op);
      return op;
    };
    /** Waits until a live replica leads after `since` (bounded), and records the blind span. */
    const watchLeader = async (since: number): Promise<number | undefined> => {
      const until = Date.now() + 90_000;
      while (Date.now() < until) {
        const t = ops.filter(alive).map(leads).find((x) => x !== undefined && x >= since);
        if (t !== undefined) {
          blind.push({ from: since, to: t });
          return t;
        }
        await sleep(200);
      }
      blind.push({ from: since, to: Date.now() });
      return undefined;
    };
    const restartServer = async (i: number, version: string): Promise<void> => {
      const srv = cluster.server(i);
      const flags = srv.config.extraFlags.filter((f) => !f.startsWith('--emulated-version='));
      const from = Date.now();
      await cluster.replace(i, { version, extraFlags: flags });
      faultDown.push({ server: srv.hostname, from, to: Date.now() });
      breaches.push({ from, to: Date.now() });
    };

    const inject = async (f: Fault): Promise<void> => {
      await sleep(Math.max(0, createdAt + f.atMs - Date.now()));
      log(`[campaign +${((Date.now() - createdAt) / 1000).toFixed(1)}s] inject ${describeFault(f)}`);
      const heal = (): Promise<void> => sleep(f.durationMs);
      switch (f.kind) {
        case 'apiserver-kill': {
          const i = free(f);
          if (i === undefined) return void skipped.push(`${f.kind}: every server busy`);
          const host = cluster.server(i).hostname;
          const from = Date.now();
          await cluster.kill(i);
          await heal();
          // Back up unless the hook took it over meanwhile (a replacement starts it itself).
          for (let n = 0; n < 300 && busy(i); n++) await sleep(200);
          if (!cluster.server(i).running) await cluster.start(i);
          faultDown.push({ server: host, from, to: Date.now() });
          breaches.push({ from, to: Date.now() });
          return;
        }
        case 'apiserver-stop': {
          const i = free(f);
          if (i === undefined) return void skipped.push(`${f.kind}: every server busy`);
          const from = Date.now();
          recorder.stopped.add(i);
          cluster.signal(i, 'SIGSTOP');
          await heal();
          cluster.signal(i, 'SIGCONT');
          recorder.stopped.delete(i);
          faultDown.push({ server: cluster.server(i).hostname, from, to: Date.now() });
          return;
        }
        case 'apiserver-restart-old':
        case 'apiserver-restart-new': {
          const i = free(f);
          if (i === undefined) return void skipped.push(`${f.kind}: every server busy`);
          await restartServer(i, f.kind === 'apiserver-restart-old' ? OLD_VERSION : NEW_VERSION);
          return;
        }
        case 'operator-leader-kill': {
          const leader = ops.filter(alive).map((op) => ({ op, t: leads(op) })).filter((x) => x.t !== undefined).sort((a, b) => b.t! - a.t!)[0];
          if (!leader) return void skipped.push(`${f.kind}: no replica led`);
          const standby = ops.some((op) => alive(op) && op !== leader.op);
          const from = Date.now();
          leader.op.child.kill('SIGKILL');
          const watch = watchLeader(from);
          await heal();
          await newReplica();
          const t = await watch;
          if (standby && t !== undefined) takeoverMs.push(t - from);
          return;
        }
        case 'operator-both-kill': {
          const from = Date.now();
          for (const op of ops.filter(alive)) op.child.kill('SIGKILL');
          const watch = watchLeader(from);
          await heal();
          await newReplica();
          await newReplica();
          await watch;
          return;
        }
        case 'operator-late-standby':
          await newReplica();
          return;
        case 'hook-slow':
        case 'hook-refuse':
          doorRef.mode = f.kind === 'hook-slow' ? 'slow' : 'refuse';
          await heal();
          doorRef.mode = 'pass';
          return;
        case 'hook-lose':
          hook.loseAnswers = true;
          await heal();
          hook.loseAnswers = false;
          return;
        case 'hook-fail':
          hook.failNext();
          return;
        case 'client-errors': {
          // Answers the client got wrong (404 for a missing object, 403 for an anonymous request): not a breach.
          const until = Date.now() + f.durationMs;
          for (let n = 0; Date.now() < until; n++) {
            await cluster.request('lb', `/api/v1/namespaces/default/configmaps/missing-${n}`, { timeoutMs: 2000, newConnection: true }).catch(() => undefined);
            await sleep(50);
          }
          return;
        }
        case 'spec-edit': {
          const next = s.spec.batchSize === 1 ? 2 : 1;
          batchMax = Math.max(batchMax, next);
          await patch(rig, { spec: { strategy: { batchSize: next, soakDuration: `${s.spec.soakSeconds + 3}s` } } }).catch((err: Error) => skipped.push(`${f.kind}: ${err.message}`));
          return;
        }
        case 'pause':
          await patch(rig, { spec: { paused: true } });
          await heal();
          await patch(rig, { spec: { paused: false } });
          return;
        case 'resume':
          await patch(rig, { metadata: { annotations: { [RESUME_ANNOTATION]: `campaign-${Date.now()}` } } });
          return;
        case 'abort':
          await patch(rig, { metadata: { annotations: { [ABORT_ANNOTATION]: `campaign-${Date.now()}` } } });
          return;
      }
    };
    const release = (f: Fault): void => {
      const i = heldBy.get(f);
      if (i !== undefined) held.delete(i);
    };
    const injected = Promise.all(s.faults.map((f) => inject(f).finally(() => release(f)).then(() => log(`[campaign +${((Date.now() - createdAt) / 1000).toFixed(1)}s] healed ${describeFault(f)}`), (err: Error) => {
      skipped.push(`${f.kind}: ${err.message.split('\n')[0]}`);
    }))).then(() => {
      healedAt = Date.now();
    });

    // Until the faults healed and the upgrade rests (a terminal phase, or paused 20 s with nothing moving), or the window ends.
    // A loaded machine slows every replacement: while the driver still made progress in the last minute, the window
    // stretches (up to twice its length) rather than calling a slow upgrade stuck (seed 7 #8: 30 s per replacement).
    const progressed = (): boolean => (hook.log.at(-1)?.at ?? 0) > Date.now() - 60_000;
    const end = (): number => createdAt + (progressed() ? 2 : 1) * s.windowMs;
    while (Date.now() < end()) {
      await sleep(1000);
      if (healedAt === 0) continue;
      const p = recorder.phase;
      if (p && TERMINAL.has(p.phase) && Date.now() - p.t > 3000) break;
      if (p?.phase === 'Paused' && Date.now() - Math.max(p.t, healedAt) > 20_000 && [...hook.calls.values()].every((c) => c.outcome === 'done' || c.outcome === 'failed')) break;
    }
    await injected;
  } catch (err) {
    harnessError = (err as Error).message.split('\n').slice(0, 3).join(' ');
  }
  const endedAt = Date.now();
  await rec?.stop();
  await rw?.stop();
  await Promise.all(ops.map((op) => op.stop().catch(() => undefined)));
  process.off('exit', killOps);
  const ops2 = driverOps(rig);
  const history: History = {
    spec: { fromVersion: OLD_VERSION, targetVersion: NEW_VERSION, batchSize: batchMax, failureLimit: s.spec.failureLimit, intervalMs: s.spec.intervalSeconds * 1000, targetOnlyResources: [NEW_ONLY] },
    ops: ops2,
    servers: rec?.servers ?? [],
    statuses: rec?.statuses ?? [],
    breaches,
    faultDown,
    operatorBlind: blind,
    healedAt: healedAt || endedAt,
    endedAt,
    // A server a fault took down may take the only copy of the target's API with it: those answers are the fault's.
    client: rig.traffic.samples
      .filter((x) => !faultDown.some((f) => x.at >= f.from - 1000 && x.at <= f.to + 5000))
      .map((x) => ({ t: x.at, resource: NEW_ONLY, code: x.status === 'error' ? 0 : x.status })),
  };
  await door?.close().catch(() => undefined);
  await rig.teardown();
  const last = history.statuses.at(-1);
  const verdict = checkHistory(history);
  return {
    schedule: s,
    outcome: last ? `${last.phase}${last.pauseReason ? `(${last.pauseReason})` : ''}` : 'none',
    durationMs: endedAt - t0,
    createdAt,
    verdict, history, skipped, takeoverMs,
    ...(harnessError ? { harnessError } : {}),
  };
}

/** One line per upgrade: seed, spec, faults, outcome, verdict. */
export function line(r: UpgradeResult): string {
  const s = r.schedule;
  // The checker speaks in epoch ms: shown as seconds after the upgrade was created.
  const rel = (m: string): string => m.replace(/\b1\d{12}\b/g, (x) => `+${((Number(x) - r.createdAt) / 1000).toFixed(1)}s`);
  const verdict = r.harnessError ? `HARNESS-ERROR ${r.harnessError}` : r.verdict.violations.length === 0 ? 'ok' : `VIOLATION ${r.verdict.violations.map((v) => `${v.rule}: ${rel(v.message)}`).join('; ')}`;
  const skipped = r.skipped.length ? ` notes=[${r.skipped.join('; ')}]` : '';
  return `#${s.index} seed=${s.seed} ${describeSpec(s.spec)} faults=[${s.faults.map(describeFault).join(', ')}] outcome=${r.outcome} ${(r.durationMs / 1000).toFixed(0)}s${skipped} verdict=${verdict}`;
}
