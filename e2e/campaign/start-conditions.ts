// The start conditions of one campaign upgrade, for either mode's runner: the gate (a gauge the harness serves and
// flips, gate-source.ts), the maintenance window (window-draw.ts) and the accepted risk (a serving certificate
// expiring soon in a kubeadm cluster, and a hard finding the harness removes later) put into the cluster and the
// spec before the upgrade is created, their faults (`gate-fail`, `window-close`, `hard-finding`), and what the
// checker gets of them (rules-gates.ts).
import type { HttpResult } from '../cluster/http.ts';
import { NEW_VERSION, OLD_VERSION, sleep } from '../cluster/index.ts';
import { ACCEPTED_RISK, EXPIRING_CERT_DAYS } from './draw-gates.ts';
import { GATE_QUERY, GateSource } from './gate-source.ts';
import type { GateRecord, RiskRecord, WindowSpec } from './rules-gates.ts';
import type { Fault, FaultKind, Schedule } from './schedule.ts';
import { waitForAlignment, windowSpec } from './window-draw.ts';

const OWN = new Set<FaultKind>(['gate-fail', 'window-close', 'hard-finding']);
/** A Node whose kubelet is a minor newer than the target: KubeletNewerThanTarget, a hard safety rule no spec accepts. */
const HARD_NODE = 'campaign-kubelet-newer';
const NODE_KUBELET = (() => {
  const m = /^v(\d+)\.(\d+)\./.exec(NEW_VERSION)!;
  return `v${m[1]}.${Number(m[2]) + 1}.0`;
})();

type Request = (path: string, o: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number }) => Promise<HttpResult>;

async function must(r: Promise<HttpResult>, what: string, ok: number[]): Promise<void> {
  const res = await r;
  if (!ok.includes(res.status)) throw new Error(`${what}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
}

export class StartConditions {
  private readonly s: Schedule;
  private readonly gate: GateSource | undefined;
  private window: WindowSpec | undefined;
  private request: Request | undefined;
  private prometheus: string | undefined;
  private readonly hard: { from: number; to?: number }[] = [];

  private constructor(s: Schedule, gate: GateSource | undefined) {
    this.s = s;
    this.gate = gate;
  }

  /** Serves the gate's gauge when the upgrade drew a gate (its target is written into the cluster's Prometheus config). */
  static async prepare(s: Schedule, clusterDir: string): Promise<StartConditions> {
    return new StartConditions(s, s.spec.startGate ? await GateSource.start(clusterDir) : undefined);
  }

  /** What the cluster must start with: the drawn server's serving certificate valid for EXPIRING_CERT_DAYS only. */
  static clusterOptions(s: Schedule): { servingCertDays?: (number | undefined)[] } {
    const i = s.spec.expiringCert;
    return i === undefined ? {} : { servingCertDays: [0, 1, 2].map((k) => (k === i ? EXPIRING_CERT_DAYS : undefined)) };
  }

  /** Whether the upgrade needs a Prometheus for its gate. */
  get needsPrometheus(): boolean {
    return this.gate !== undefined;
  }

  /**
   * Just before the upgrade is created: with a window, waits until the drawn closing falls on a minute, then puts
   * spec.window (and spec.gates, with a gate) into `spec`. Returns a note of the window's times.
   */
  async beforeCreate(spec: Record<string, unknown>, prometheus: string | undefined, request: Request): Promise<string | undefined> {
    this.request = request;
    if (this.s.spec.expiringCert !== undefined) {
      // A kubeadm cluster (the ConfigMap makes preflight's kubeadm checks apply): the short certificate blocks, unless accepted.
      await must(request('/api/v1/namespaces/kube-system/configmaps', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kubeadm-config', namespace: 'kube-system' }, data: { ClusterConfiguration: `apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: ${OLD_VERSION}\n` } }), timeoutMs: 10_000 }), 'create kube-system/kubeadm-config', [201, 409]);
      spec.acceptRisks = [ACCEPTED_RISK];
    }
    if (this.s.faults.some((f) => f.kind === 'hard-finding')) {
      this.hard.push({ from: Date.now() });
      await must(request('/api/v1/nodes', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: HARD_NODE } }), timeoutMs: 10_000 }), `create Node ${HARD_NODE}`, [201]);
      await must(request(`/api/v1/nodes/${HARD_NODE}/status`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify({ status: { nodeInfo: { kubeletVersion: NODE_KUBELET } } }), timeoutMs: 10_000 }), `set Node ${HARD_NODE}'s kubelet version`, [200]);
    }
    if (this.gate) {
      if (prometheus === undefined) throw new Error('a gate was drawn but no Prometheus runs');
      this.prometheus = prometheus;
      spec.gates = GateSource.specGates(prometheus);
    }
    const close = this.s.faults.find((f) => f.kind === 'window-close');
    if (!this.s.spec.window || !close) return undefined;
    await sleep(waitForAlignment(Date.now(), close.atMs));
    const w = windowSpec(Date.now(), close.atMs, close.durationMs);
    this.window = w.spec;
    spec.window = w.spec;
    return `window closes ${new Date(w.closesAt).toISOString()}, opens ${new Date(w.opensAt).toISOString()}`;
  }

  handles(kind: FaultKind): boolean {
    return OWN.has(kind);
  }

  /** `gate-fail`: the gauge fails for the fault's duration. `window-close`: the operator's clock does it; the fault only waits. */
  async inject(f: Fault): Promise<void> {
    if (f.kind === 'gate-fail') {
      if (!this.gate) throw new Error('gate-fail without a gate');
      return this.gate.fail(f.durationMs, sleep);
    }
    await sleep(f.durationMs);
    if (f.kind === 'hard-finding') {
      const span = this.hard.at(-1);
      if (!span || !this.request) throw new Error('hard-finding without its Node');
      await must(this.request(`/api/v1/nodes/${HARD_NODE}`, { method: 'DELETE', timeoutMs: 10_000 }), `delete Node ${HARD_NODE}`, [200, 404]);
      span.to = Date.now();
    }
  }

  /**
   * Runs a Prometheus fault, recording it as a span when the gate could not be evaluated: until `run` ends, or, when
   * `run` says Prometheus is starting again (`restarting`), until it first answers the gate's query with a sample (a
   * restarted Prometheus answers its first scrape of the gauge seconds before the harness's own wait for every
   * apiserver target ends: seed 4201 #0 started a batch on such an answer).
   */
  async prometheusOut(run: (restarting: () => void) => Promise<void>): Promise<void> {
    const from = Date.now();
    let answered: Promise<number | undefined> | undefined;
    try {
      await run(() => {
        answered = this.untilGateAnswers();
      });
    } finally {
      const to = answered ? await answered : undefined;
      this.gate?.unknownUntil(from, to ?? Date.now());
    }
  }

  /** When Prometheus first answers the gate's query with a sample (polled every 100 ms for at most 2 minutes). */
  private async untilGateAnswers(): Promise<number | undefined> {
    if (!this.gate || this.prometheus === undefined) return undefined;
    const url = `${this.prometheus}/api/v1/query?query=${encodeURIComponent(GATE_QUERY)}`;
    for (const end = Date.now() + 120_000; Date.now() < end; await sleep(100)) {
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
        const doc = (await res.json()) as { data?: { result?: unknown[] } };
        if (res.ok && (doc.data?.result?.length ?? 0) > 0) return Date.now();
      } catch {
        // Not answering yet.
      }
    }
    return undefined;
  }

  /** What the checker gets. */
  recorded(endedAt: number): { gate?: GateRecord; window?: WindowSpec; risks?: RiskRecord } {
    const risks: RiskRecord | undefined = this.s.spec.expiringCert === undefined && this.hard.length === 0 ? undefined : {
      accepted: this.s.spec.expiringCert === undefined ? [] : [ACCEPTED_RISK],
      made: this.s.spec.expiringCert === undefined ? [] : [ACCEPTED_RISK],
      hard: this.hard.map((h) => ({ from: h.from, to: h.to ?? endedAt })),
    };
    return { ...(this.gate ? { gate: this.gate.record(endedAt) } : {}), ...(this.window ? { window: this.window } : {}), ...(risks ? { risks } : {}) };
  }

  async close(): Promise<void> {
    await this.gate?.close();
  }
}
