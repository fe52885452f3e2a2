// The demo's live view: the plugin's own `get` view (src/cli/get-view.ts: buildGetView + renderGet), so the
// demo shows what `kubectl apiserver-upgrade get -w` shows. On a terminal it is redrawn in place; otherwise
// (a pipe, a CI log) one line is printed per change of the view, plus one line per new Event.
import type { Cluster } from '../cluster/index.ts';
import type { TrafficRecorder } from '../support/traffic.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';
import { buildGetView, renderGet, type GetView } from '../../src/cli/get-view.ts';
import { EVENTS_PATH, eventsFieldSelector, type KubeEvent } from '../../src/cli/events.ts';
import { bar } from '../../src/cli/format.ts';

const CLEAR = '\x1b[H\x1b[2J';

/** The Events about one upgrade, as the plugin lists them (through the balancer); [] while it cannot. */
export async function upgradeEvents(cluster: Cluster, name: string): Promise<KubeEvent[]> {
  try {
    const r = await cluster.request('lb', `${EVENTS_PATH}?fieldSelector=${encodeURIComponent(eventsFieldSelector(name))}`, { timeoutMs: 5000 });
    return r.status === 200 ? ((JSON.parse(r.body) as { items?: KubeEvent[] }).items ?? []) : [];
  } catch {
    return [];
  }
}

/** One line of the view: phase, batch bar, each server, the last analysis against its thresholds, the client's answers. */
export function viewLine(v: GetView, t: TrafficRecorder): string {
  const p = v.progress;
  const current = p.batches.some((b) => b.state === 'current') ? 1 : 0;
  const progress = p.total > 0 ? `batch ${p.current}/${p.total} ${bar(p.done, current, p.total, 12)}` : 'no plan yet';
  const servers = v.servers.map((s) => `${s.hostname}=${s.version ?? '?'}${s.gate === 'Enabled' ? '+proxy' : ''}${s.ready === false ? '(down)' : ''}${s.state && s.state !== 'Done' && s.state !== 'Pending' ? `[${s.state}]` : ''}`).join(' ');
  const a = v.analysis;
  const signals = a
    ? `analysis ${a.verdict ?? '?'} ${a.consecutiveBreaches}/${a.failureLimit ?? '?'}: ${a.signals.filter((r) => r.value !== undefined).map((r) => `${r.signal} ${r.value}${r.ok === false ? '✖' : r.ok ? '✔' : ''}`).join(', ')}${a.breaches.length ? `; breach ${a.breaches.map((b) => `${b.signal}${b.server ? `@${b.server}` : ''}`).join(', ')}` : ''}`
    : 'analysis: none yet';
  const client = `client 200:${t.count((x) => x.status === 200)} 404:${t.count((x) => x.status === 404)}`;
  return `${new Date().toISOString().slice(11, 19)} ${v.phase.padEnd(13)} ${progress}  ${servers}  | ${signals} | ${client}${v.pause ? `  PAUSED ${v.pause.reason}` : ''}`;
}

export class LiveView {
  private last = '';
  private lastLine = '';
  private seenEvents = new Set<string>();
  readonly tty: boolean;
  private readonly header: string;
  private readonly cluster: Cluster;
  private readonly traffic: TrafficRecorder;

  constructor(cluster: Cluster, traffic: TrafficRecorder, header: string, tty = process.stdout.isTTY === true) {
    this.cluster = cluster;
    this.traffic = traffic;
    this.tty = tty;
    this.header = header;
  }

  /** Draws the upgrade as it is now; returns the view it drew. */
  async draw(u: ApiServerUpgrade, note?: string): Promise<GetView> {
    const events = await upgradeEvents(this.cluster, u.metadata?.name ?? '');
    const v = buildGetView(u, events, 8);
    if (this.tty) {
      const client = `client asking for a v1.36-only resource: 200:${this.traffic.count((x) => x.status === 200)} 404:${this.traffic.count((x) => x.status === 404)} errors:${this.traffic.count((x) => x.status === 'error')}`;
      const text = `${this.header}\n${client}${note ? `\n${note}` : ''}\n\n${renderGet(v, new Date())}`;
      if (text !== this.last) process.stdout.write(CLEAR + text);
      this.last = text;
      return v;
    }
    const line = viewLine(v, this.traffic);
    // The time and the client's counts change every second: a line is printed when the rest changes.
    const key = line.slice(9).replace(/\| client 200:\d+ 404:\d+/, '');
    if (key !== this.lastLine) process.stdout.write(`${line}\n`);
    this.lastLine = key;
    if (note && note !== this.last) process.stdout.write(`${note}\n`);
    if (note) this.last = note;
    for (const e of v.events) {
      const key = `${e.time}/${e.reason}/${e.note}`;
      if (this.seenEvents.has(key)) continue;
      this.seenEvents.add(key);
      process.stdout.write(`         event ${e.type} ${e.reason}${e.count > 1 ? ` (x${e.count})` : ''}: ${e.note}\n`);
    }
    return v;
  }
}
