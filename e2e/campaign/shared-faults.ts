// The faults both modes inject the same way: on the operator replicas, and through the API as a user or a client
// would (a burst of client errors, a spec edit, a pause, a resume, an abort). Mode-specific faults (servers, the
// driver, kubelets) live with each mode's runner.
import type { HttpResult } from '../cluster/http.ts';
import { sleep } from '../cluster/index.ts';
import { ABORT_ANNOTATION, RESUME_ANNOTATION } from '../../src/api/vocabulary.ts';
import type { Replicas } from './replicas.ts';
import type { Fault, FaultKind, UpgradeSpecDraw } from './schedule.ts';

type Request = (path: string, o: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number; newConnection?: boolean }) => Promise<HttpResult>;

export interface SharedFaultContext {
  /** A request through the balancer. */
  request: Request;
  /** The upgrade object's path. */
  upgradePath: string;
  spec: UpgradeSpecDraw;
  replicas: Replicas;
  /** Faults that could not be injected as drawn, and why. */
  notes: string[];
  /** The largest batch size the upgrade was given (a spec edit may raise it). */
  raiseBatch: (n: number) => void;
}

const SHARED = new Set<FaultKind>(['operator-leader-kill', 'operator-both-kill', 'operator-late-standby', 'client-errors', 'spec-edit', 'pause', 'resume', 'abort']);

export function isShared(kind: FaultKind): boolean {
  return SHARED.has(kind);
}

async function patch(ctx: SharedFaultContext, body: object): Promise<void> {
  const r = await ctx.request(ctx.upgradePath, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify(body), timeoutMs: 10_000 });
  if (r.status !== 200) throw new Error(`patch ${JSON.stringify(body)}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
}

/** Sets a new value of the resume annotation, as `kubectl apiserver-upgrade resume` does. */
export function resumeUpgrade(ctx: SharedFaultContext): Promise<void> {
  return patch(ctx, { metadata: { annotations: { [RESUME_ANNOTATION]: `campaign-${Date.now()}` } } });
}

/** Injects one shared fault and heals it after its duration (one-shot faults return at once). */
export async function injectShared(f: Fault, ctx: SharedFaultContext): Promise<void> {
  const heal = (): Promise<void> => sleep(f.durationMs);
  switch (f.kind) {
    case 'operator-leader-kill': {
      const note = await ctx.replicas.killLeader(heal);
      if (note) ctx.notes.push(`${f.kind}: ${note}`);
      return;
    }
    case 'operator-both-kill':
      return ctx.replicas.killAllReplicas(heal);
    case 'operator-late-standby':
      await ctx.replicas.add();
      return;
    case 'client-errors': {
      // Answers the client got wrong (404 for a missing object): errors that are no breach.
      const until = Date.now() + f.durationMs;
      for (let n = 0; Date.now() < until; n++) {
        await ctx.request(`/api/v1/namespaces/default/configmaps/missing-${n}`, { timeoutMs: 2000, newConnection: true }).catch(() => undefined);
        await sleep(50);
      }
      return;
    }
    case 'spec-edit': {
      const next = ctx.spec.batchSize === 1 ? 2 : 1;
      ctx.raiseBatch(next);
      await patch(ctx, { spec: { strategy: { batchSize: next, soakDuration: `${ctx.spec.soakSeconds + 3}s` } } }).catch((err: Error) => ctx.notes.push(`${f.kind}: ${err.message}`));
      return;
    }
    case 'pause':
      await patch(ctx, { spec: { paused: true } });
      await heal();
      await patch(ctx, { spec: { paused: false } });
      return;
    case 'resume':
      return resumeUpgrade(ctx);
    case 'abort':
      return patch(ctx, { metadata: { annotations: { [ABORT_ANNOTATION]: `campaign-${Date.now()}` } } });
    default:
      throw new Error(`${f.kind} is not a shared fault`);
  }
}
