// The upgrade object's status as the campaign records it: a snapshot from the watch whenever what the checker reads
// of it changed (phase, pause, whether the target's storage is known, the finished batches).
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';
import type { CheckRecord, StatusSnapshot } from './history-check.ts';
import type { CallSeen } from './rules-gates.ts';
import { StatusWatch, type WatchedCluster } from './status-watch.ts';

function rollbackSafe(u: ApiServerUpgrade): Pick<StatusSnapshot, 'rollbackSafe'> {
  const c = u.status?.conditions?.find((x) => x.type === 'RollbackSafe');
  return c?.status ? { rollbackSafe: c.status } : {};
}

/** status.phaseTwoHold: when it began (epoch ms) and how it ended. */
function holdOf(u: ApiServerUpgrade): Pick<StatusSnapshot, 'heldSince' | 'holdEndedBy'> {
  const h = u.status?.phaseTwoHold;
  const since = h?.heldSince ? Date.parse(h.heldSince) : NaN;
  return { ...(Number.isFinite(since) ? { heldSince: since } : {}), ...(h?.endedBy ? { holdEndedBy: h.endedBy } : {}) };
}

export class StatusRecorder {
  readonly statuses: StatusSnapshot[] = [];
  /** Each analysis check the operator wrote (kept apart: a paused upgrade keeps checking, and rest is judged from statuses). */
  readonly checks: CheckRecord[] = [];
  /** Each driver call when the watch first saw it recorded (a batch's start is decided then at the latest). */
  readonly callsSeen: CallSeen[] = [];
  private readonly keys = new Set<string>();
  private lastKey = '';
  private readonly watch: StatusWatch;

  constructor(cluster: WatchedCluster, name: string) {
    this.watch = new StatusWatch(cluster, name, (u, at) => this.take(u, at));
  }

  private take(u: ApiServerUpgrade, at: number): void {
    const st = u.status;
    if (!st?.phase) return;
    const snap: StatusSnapshot = {
      t: at, phase: st.phase,
      ...(st.pause?.reason ? { pauseReason: st.pause.reason } : {}),
      ...(st.pause?.message ? { pauseMessage: st.pause.message } : {}),
      targetStorageKnown: (st.plan?.targetStorage?.length ?? 0) > 0,
      finishedBatches: (st.batch?.history ?? []).map((b) => b.index),
      ...(st.stage ? { stage: st.stage } : {}),
      ...rollbackSafe(u),
      ...(st.resumedAt ? { resumedAt: st.resumedAt } : {}),
      ...(st.waiting?.reason ? { waiting: st.waiting.reason } : {}),
      ...(st.acceptedRisks?.length ? { acceptedRisks: st.acceptedRisks.map((a) => a.name) } : {}),
      ...holdOf(u),
    };
    for (const c of st.driverCalls ?? []) {
      if (this.keys.has(c.key)) continue;
      this.keys.add(c.key);
      this.callsSeen.push({ t: at, key: c.key, action: c.action, ...(c.batch === undefined ? {} : { batch: c.batch }) });
    }
    const a = st.lastAnalysis;
    if (a?.time && a.time !== this.checks.at(-1)?.time) {
      this.checks.push({
        t: at, time: a.time, verdict: a.verdict ?? '', consecutive: a.consecutiveBreaches ?? 0,
        breaches: (a.breaches ?? []).map((b) => `${b.signal}${b.server ? `@${b.server}` : ''}`),
      });
    }
    const key = JSON.stringify({ ...snap, t: 0 });
    if (key !== this.lastKey) {
      this.lastKey = key;
      this.statuses.push(snap);
    }
  }

  /** The last snapshot kept. */
  get last(): StatusSnapshot | undefined {
    return this.statuses.at(-1);
  }

  stop(): Promise<void> {
    return this.watch.stop();
  }
}
