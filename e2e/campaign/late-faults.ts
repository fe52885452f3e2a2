// The faults of the late draws (late-draws.ts), the same in both modes where they apply: an approval of a held phase
// two, a kube-controller-manager moved to the target (its mirror Pod, as a kubelet reports a changed static Pod), an
// operator rollout (rollout.ts). Also what a held phase two needs of the harness: faults timed from the hold's start,
// and the paged human who approves an approval-only hold once the faults healed, so the upgrade comes to rest.
import type { HttpResult } from '../cluster/http.ts';
import { OLD_VERSION, NEW_VERSION, sleep } from '../cluster/index.ts';
import { APPROVE_ANNOTATION } from '../../src/api/vocabulary.ts';
import type { History, Span } from './history-check.ts';
import { HUMAN_APPROVES_AFTER_S, PHASE_SOAK_SECONDS } from './late-draws.ts';
import type { Replicas } from './replicas.ts';
import { rollOut } from './rollout.ts';
import type { Fault, FaultKind, Schedule } from './schedule.ts';
import type { StatusRecorder } from './status-recorder.ts';

type Request = (path: string, o: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number; newConnection?: boolean }) => Promise<HttpResult>;

const PODS = '/api/v1/namespaces/kube-system/pods';
const KCM = 'kube-controller-manager';
const LATE = new Set<FaultKind>(['approve', 'component-newer', 'operator-rollout']);

export function isLate(kind: FaultKind): boolean {
  return LATE.has(kind);
}

/** spec.strategy's phase-two fields of a schedule (TwoPhase with its soak, and the hold when drawn). */
export function phasesStrategy(s: Schedule): Record<string, unknown> {
  if (!s.spec.twoPhase) return {};
  const h = s.spec.phaseTwo;
  const hold = h ? { phaseTwo: { start: h.start, ...(h.deadlineSeconds === undefined ? {} : { deadline: `${h.deadlineSeconds}s`, onDeadline: h.onDeadline }) } } : {};
  return { phases: 'TwoPhase', phaseSoakDuration: `${PHASE_SOAK_SECONDS}s`, ...hold };
}

/** The mirror Pod a kubelet registers for kubeadm's static Pod of kube-controller-manager on `node` at `version`. */
function mirrorPod(node: string, version: string): Record<string, unknown> {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: {
      name: `${KCM}-${node}`, namespace: 'kube-system', labels: { component: KCM, tier: 'control-plane' },
      annotations: { 'kubernetes.io/config.mirror': `hash-${KCM}-${version}`, 'kubernetes.io/config.source': 'file' },
    },
    spec: { nodeName: node, containers: [{ name: KCM, image: `registry.k8s.io/${KCM}:${version}`, command: [KCM] }] },
  };
}

/** What the late faults record, and what they act with. */
export class LateFaults {
  readonly approvals: number[] = [];
  readonly rollouts: Span[] = [];
  private readonly components: (Span & { component: string; node: string; version: string })[] = [];
  private readonly request: Request;
  private readonly upgradePath: string;
  private readonly replicas: Replicas;
  private readonly notes: string[];
  private readonly s: Schedule;
  private humanLoop: Promise<void> | undefined;
  private stopping = false;

  constructor(o: { request: Request; upgradePath: string; replicas: Replicas; notes: string[]; schedule: Schedule }) {
    this.request = o.request;
    this.upgradePath = o.upgradePath;
    this.replicas = o.replicas;
    this.notes = o.notes;
    this.s = o.schedule;
  }

  /** Whether the schedule moves a component: its mirror Pods must exist before the upgrade is created. */
  get movesComponents(): boolean {
    return this.s.faults.some((f) => f.kind === 'component-newer');
  }

  /** kube-controller-manager's mirror Pods on `nodes` at the from-version, as kubeadm's control plane has them. */
  async setUpComponents(nodes: string[]): Promise<void> {
    for (const node of nodes) await this.setComponent(node, OLD_VERSION);
  }

  /** A kubelet replaces a changed static Pod's mirror Pod: the old one deleted, the new one created. */
  private async setComponent(node: string, version: string): Promise<void> {
    // From the delete on, the old version is gone (no Pod, nothing newer); the new one holds from its creation.
    const open = this.components.find((c) => c.node === node && c.to === Infinity);
    if (open) open.to = Date.now();
    const del = await this.request(`${PODS}/${KCM}-${node}?gracePeriodSeconds=0`, { method: 'DELETE', newConnection: true, timeoutMs: 10_000 });
    if (del.status !== 200 && del.status !== 404) throw new Error(`DELETE ${KCM}-${node}: HTTP ${del.status}`);
    for (let n = 0; n < 100 && (await this.request(`${PODS}/${KCM}-${node}`, { newConnection: true, timeoutMs: 5_000 })).status !== 404; n++) await sleep(200);
    const r = await this.request(PODS, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(mirrorPod(node, version)), newConnection: true, timeoutMs: 10_000 });
    if (r.status !== 201) throw new Error(`POST ${KCM}-${node}: HTTP ${r.status} ${r.body.slice(0, 200)}`);
    this.components.push({ component: KCM, node, version, from: Date.now(), to: Infinity });
  }

  /** Sets a new value of the approve annotation, as `kubectl apiserver-upgrade approve` does; records when it was written. */
  async approve(): Promise<void> {
    // The same value on each try (a write whose answer was lost may have landed), up to 5 tries a second apart, as a
    // person would try again when the server is away (a killed server behind the balancer).
    const body = JSON.stringify({ metadata: { annotations: { [APPROVE_ANNOTATION]: `campaign-${Date.now()}` } } });
    let why = '';
    for (let n = 0; n < 5; n++) {
      if (n > 0) await sleep(1000);
      const r = await this.request(this.upgradePath, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body, timeoutMs: 10_000, newConnection: true }).catch((err: Error) => err);
      if (!(r instanceof Error) && r.status === 200) return void this.approvals.push(Date.now());
      why = r instanceof Error ? r.message.split('\n')[0]! : `HTTP ${r.status} ${r.body.slice(0, 200)}`;
    }
    throw new Error(`approve: ${why}`);
  }

  /** Injects one late fault and heals it after its duration. */
  async inject(f: Fault, nodes: string[]): Promise<void> {
    switch (f.kind) {
      case 'approve':
        return this.approve();
      case 'component-newer': {
        const node = nodes[f.server ?? 0]!;
        await this.setComponent(node, NEW_VERSION);
        await sleep(f.durationMs);
        return this.setComponent(node, OLD_VERSION);
      }
      case 'operator-rollout': {
        const span = await rollOut(this.replicas, this.notes);
        this.rollouts.push(span);
        return;
      }
      default:
        throw new Error(`${f.kind} is not a late fault`);
    }
  }

  /**
   * When to inject `f` (epoch ms): at its atMs, or, with holdMs, that long after the hold began as the status shows
   * it (status.phaseTwoHold.heldSince); undefined when the hold did not begin by `until`, the upgrade ended or rolled
   * back first, or it rested paused for a minute before it.
   */
  async when(f: Fault, createdAt: number, status: StatusRecorder, until: number): Promise<number | undefined> {
    if (f.holdMs === undefined) return createdAt + f.atMs;
    while (Date.now() < until && !this.stopping) {
      const held = status.statuses.find((x) => x.heldSince !== undefined)?.heldSince;
      if (held !== undefined) return held + f.holdMs;
      const last = status.last;
      if (last && ['Succeeded', 'RolledBack', 'Failed', 'RollingBack'].includes(last.phase)) return undefined;
      // A pause that rests a minute in phase one: the hold is not coming (the upgrade would otherwise wait its window).
      if (last?.phase === 'Paused' && Date.now() - last.t > 60_000) return undefined;
      await sleep(250);
    }
    return undefined;
  }

  /**
   * The paged human: once the faults healed, an approval-only hold still on (no deadline to end it) is approved
   * HUMAN_APPROVES_AFTER_S after the heal or the hold's start, whichever is later; once per hold.
   */
  startHuman(status: StatusRecorder, healedAt: () => number): void {
    if (!this.s.spec.phaseTwo || this.s.spec.phaseTwo.deadlineSeconds !== undefined) return;
    this.humanLoop = (async () => {
      while (!this.stopping) {
        await sleep(1000);
        const last = status.last;
        const healed = healedAt();
        if (!healed || !last || last.phase !== 'Upgrading' || last.heldSince === undefined || last.holdEndedBy !== undefined) continue;
        if (this.approvals.some((a) => a >= last.heldSince!)) continue;
        if (Date.now() - Math.max(healed, last.heldSince) < HUMAN_APPROVES_AFTER_S * 1000) continue;
        await this.approve().catch((err: Error) => this.notes.push(`the paged human's approval: ${err.message.split('\n')[0]}`));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.humanLoop;
  }

  /** The history's fields of these faults (the open component spans closed at `endedAt`). */
  recorded(endedAt: number): Pick<History, 'hold' | 'approvals' | 'components' | 'rollouts'> {
    const h = this.s.spec.phaseTwo;
    return {
      ...(h ? { hold: { ...(h.deadlineSeconds === undefined ? {} : { deadlineMs: h.deadlineSeconds * 1000, onDeadline: h.onDeadline! }) } } : {}),
      ...(this.approvals.length ? { approvals: [...this.approvals] } : {}),
      ...(this.components.length ? { components: this.components.map((c) => ({ ...c, to: c.to === Infinity ? endedAt : c.to })) } : {}),
      ...(this.rollouts.length ? { rollouts: [...this.rollouts] } : {}),
    };
  }
}
