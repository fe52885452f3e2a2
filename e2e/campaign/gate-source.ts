// The campaign's gate: a gauge the harness serves on /metrics (`campaign_gate_ok`, 1 or 0), scraped by the cluster's
// Prometheus every second through a file_sd target, and the upgrade's PromQL gate on it (`campaign_gate_ok == 1`).
// The harness flips it (`gate-fail`) and records when it failed, and when Prometheus was down or hung (the gate is
// then unknown, which does not hold): the spans the checker judges batch starts by (rules-gates.ts).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { operatorTargetsDir } from '../cluster/prometheus.ts';
import type { Span } from './history-check.ts';
import type { GateRecord } from './rules-gates.ts';

export const GATE_NAME = 'campaign-gate';
export const GATE_QUERY = 'campaign_gate_ok';

export class GateSource {
  private ok = true;
  /** Flaps under way (they may overlap). */
  private flapping = 0;
  private failingSince: number | undefined;
  private readonly failing: Span[] = [];
  private readonly unknown: Span[] = [];
  private readonly server: Server;

  private constructor(server: Server) {
    this.server = server;
  }

  /** Serves the gauge and names it as a scrape target in the cluster's Prometheus config directory. */
  static async start(clusterDir: string): Promise<GateSource> {
    const holder: { gate?: GateSource } = {};
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
      res.end(`# TYPE ${GATE_QUERY} gauge\n${GATE_QUERY} ${holder.gate?.ok === false ? 0 : 1}\n`);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const self = new GateSource(server);
    holder.gate = self;
    const dir = operatorTargetsDir(clusterDir);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'campaign-gate.json.tmp'), JSON.stringify([{ targets: [`127.0.0.1:${(server.address() as AddressInfo).port}`], labels: { role: 'campaign-gate' } }]));
    renameSync(join(dir, 'campaign-gate.json.tmp'), join(dir, 'campaign-gate.json'));
    return self;
  }

  /** spec.gates for a Prometheus at `address`. */
  static specGates(address: string): object {
    return { prometheus: { address }, queries: [{ name: GATE_NAME, query: GATE_QUERY, op: '==', value: 1 }] };
  }

  /** The gauge fails for `ms`, then holds again (flaps overlapping one another make one failing span). */
  async fail(ms: number, sleep: (ms: number) => Promise<void>): Promise<void> {
    if (this.flapping === 0) this.failingSince = Date.now();
    this.flapping += 1;
    this.ok = false;
    try {
      await sleep(ms);
    } finally {
      this.flapping -= 1;
      if (this.flapping === 0) {
        this.ok = true;
        this.failing.push({ from: this.failingSince ?? Date.now(), to: Date.now() });
        this.failingSince = undefined;
      }
    }
  }

  /** Prometheus was down or hung from `from` to `to`: the gate could not be evaluated. */
  unknownUntil(from: number, to: number): void {
    this.unknown.push({ from, to });
  }

  /** What the harness knows of the gate; a flap still under way at the end counts up to `endedAt`. */
  record(endedAt: number): GateRecord {
    const failing = [...this.failing, ...(this.failingSince === undefined ? [] : [{ from: this.failingSince, to: endedAt }])];
    return { failing, unknown: [...this.unknown] };
  }

  close(): Promise<void> {
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}
