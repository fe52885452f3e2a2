// The start conditions of one campaign upgrade, for either mode's runner: the gate (a gauge the harness serves and
// flips, gate-source.ts) and the maintenance window (window-draw.ts) put into the spec before the upgrade is created,
// their faults (`gate-fail`, `window-close`), and what the checker gets of them (rules-gates.ts).
import { sleep } from '../cluster/index.ts';
import { GateSource } from './gate-source.ts';
import type { GateRecord, WindowSpec } from './rules-gates.ts';
import type { Fault, FaultKind, Schedule } from './schedule.ts';
import { waitForAlignment, windowSpec } from './window-draw.ts';

const OWN = new Set<FaultKind>(['gate-fail', 'window-close']);

export class StartConditions {
  private readonly s: Schedule;
  private readonly gate: GateSource | undefined;
  private window: WindowSpec | undefined;

  private constructor(s: Schedule, gate: GateSource | undefined) {
    this.s = s;
    this.gate = gate;
  }

  /** Serves the gate's gauge when the upgrade drew a gate (its target is written into the cluster's Prometheus config). */
  static async prepare(s: Schedule, clusterDir: string): Promise<StartConditions> {
    return new StartConditions(s, s.spec.startGate ? await GateSource.start(clusterDir) : undefined);
  }

  /** Whether the upgrade needs a Prometheus for its gate. */
  get needsPrometheus(): boolean {
    return this.gate !== undefined;
  }

  /**
   * Just before the upgrade is created: with a window, waits until the drawn closing falls on a minute, then puts
   * spec.window (and spec.gates, with a gate) into `spec`. Returns a note of the window's times.
   */
  async beforeCreate(spec: Record<string, unknown>, prometheus: string | undefined): Promise<string | undefined> {
    if (this.gate) {
      if (prometheus === undefined) throw new Error('a gate was drawn but no Prometheus runs');
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
  }

  /** Runs a Prometheus fault, recording it as a span when the gate could not be evaluated. */
  async prometheusOut(run: () => Promise<void>): Promise<void> {
    const from = Date.now();
    try {
      await run();
    } finally {
      this.gate?.unknownUntilNow(from);
    }
  }

  /** What the checker gets. */
  recorded(endedAt: number): { gate?: GateRecord; window?: WindowSpec } {
    return { ...(this.gate ? { gate: this.gate.record(endedAt) } : {}), ...(this.window ? { window: this.window } : {}) };
  }

  async close(): Promise<void> {
    await this.gate?.close();
  }
}
