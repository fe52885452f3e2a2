// Benchmarks on real servers (issue 12): three kube-apiservers + etcd + haproxy of the e2e harness
// (e2e/cluster), every request audited, the operator as its own process under its own client certificate.
//
//   npm run bench:cluster                     (as root; ~10 min; method and results: bench/README.md)
//   BENCH_PARTS=breach | BENCH_PARTS=audit    one part only
//   BENCH_BREACH_RUNS=10 BENCH_BREACH=kill|latency BENCH_INTERVAL=2s BENCH_FAILURE_LIMIT=3
//   BENCH_IDLE_S=60 BENCH_AFTER_S=60 BENCH_OUT=/tmp/cluster-bench.json
//
// One cluster for everything, in this order:
//  1. breach -> Paused (BENCH_BREACH_RUNS runs): a fresh ApiServerUpgrade per run whose first replacement a
//     no-op hook accepts and never performs, so the batch stays in flight (the operator waits on the driver
//     and analyses every interval) and no server changes version between runs. Once a healthy check was
//     recorded, after a random delay within one interval, the breach: cp-3 (not in the batch) is SIGKILLed, as
//     rollback.e2e.ts and `npm run demo -- --fault` do (serverReady: a member down with no call in flight),
//     or with BENCH_BREACH=latency the p99 threshold is set to 1ms (state-machine.e2e.ts). Every status write
//     is watched straight from cp-1. Then the upgrade is deleted and cp-3 started again.
//  2. API load: a fresh operator process; (a) idle for BENCH_IDLE_S after its informers synced; (b) a full
//     3-server upgrade v1.35.4 -> v1.36.3 through the e2e replacement webhook; (c) BENCH_AFTER_S after it
//     Succeeded. Counted from the three servers' audit logs, the operator's user only, by verb and resource.
//  3. Operator overhead per batch, from the status timestamps of the upgrade of part 2, the hook's own
//     timestamps and this process's polling of every server's discovery until the fleet converged.
import { request, createServer } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Cluster, ReplaceWebhook, OLD_VERSION, NEW_VERSION, PROXY_GATE, waitFor, sleep } from '../e2e/cluster/index.ts';
import { freePort } from '../e2e/cluster/cluster.ts';
import { createClientCert, createServingCert } from '../e2e/cluster/pki.ts';
import { writeKubeconfig } from '../e2e/cluster/kubeconfig.ts';
import { installCrd, createUpgrade, getUpgrade, startOperator, type OperatorProcess } from '../e2e/support/operator.ts';
import { auditEvents, type AuditEvent } from '../e2e/support/audit.ts';
import { parseCommandFlags } from '../src/observe/trust-flags.ts';
import { convergence, resourceSet, type APIGroupDiscoveryList, type ServerDiscovery } from '../src/observe/discovery.ts';
import { DISCOVERY_ACCEPT, DISCOVERY_ACCEPT_NOPEER } from '../src/observe/direct-client.ts';
import { parseDuration } from '../src/api/duration.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

const PARTS = new Set((process.env.BENCH_PARTS ?? 'breach,audit').split(','));
const RUNS = Number(process.env.BENCH_BREACH_RUNS ?? 10);
const BREACH = process.env.BENCH_BREACH === 'latency' ? 'latency' : 'kill';
const INTERVAL = process.env.BENCH_INTERVAL ?? '2s';
const INTERVAL_MS = parseDuration(INTERVAL);
const FAILURE_LIMIT = Number(process.env.BENCH_FAILURE_LIMIT ?? 3);
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 60);
const AFTER_S = Number(process.env.BENCH_AFTER_S ?? 60);
const SOAK_MS = 5000;
/** The operator's own user: CN of its client certificate (system:masters, so RBAC never answers 403). */
const OPERATOR_USER = 'apiserver-upgrade-operator';
const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';
/** Every request at Metadata level, one event per request (RequestReceived left out). */
const AUDIT_POLICY = JSON.stringify({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', omitStages: ['RequestReceived'], rules: [{ level: 'Metadata' }] });

const log = (m: string): void => void process.stderr.write(`[bench ${new Date().toISOString().slice(11, 23)}] ${m}\n`);
const iso = (t: string | undefined): number => (t === undefined ? NaN : Date.parse(t));
const s = (ms: number): string => (Number.isFinite(ms) ? (ms / 1000).toFixed(2) : '?');

// ------------------------------------------------------------------ load average, sampled all along
const loads: number[] = [];
const loadTimer = setInterval(() => loads.push(loadavg()[0]!), 10_000);
loadTimer.unref();
function loadSummary(): string {
  if (loads.length === 0) return `${loadavg()[0]!.toFixed(1)}`;
  const sorted = [...loads].sort((a, b) => a - b);
  return `min ${sorted[0]!.toFixed(1)}, median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)}, max ${sorted.at(-1)!.toFixed(1)} (1-min load average every 10 s, ${sorted.length} samples)`;
}

function percentile(xs: readonly number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  // Nearest rank: the smallest value with at least p% of the samples at or below it.
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

// ------------------------------------------------------------------ watching one upgrade's every write
interface Seen {
  at: number;
  obj: ApiServerUpgrade;
}

/** Watches one ApiServerUpgrade on one server directly (not the balancer: the breach may kill a server), resuming after a break. */
class UpgradeWatch {
  readonly seen: Seen[] = [];
  private closed = false;
  private res: IncomingMessage | undefined;
  private rv = '';
  private readonly material: { ca: Buffer; cert: Buffer; key: Buffer };
  private readonly cluster: Cluster;
  private readonly name: string;
  private readonly server: number;

  constructor(cluster: Cluster, name: string, server: number) {
    this.cluster = cluster;
    this.name = name;
    this.server = server;
    this.material = { ca: readFileSync(cluster.pki.caCert), cert: readFileSync(cluster.pki.adminCert), key: readFileSync(cluster.pki.adminKey) };
    void this.loop();
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      await this.once().catch(() => undefined);
      if (!this.closed) await sleep(100);
    }
  }

  private once(): Promise<void> {
    const q = `watch=true&fieldSelector=${encodeURIComponent(`metadata.name=${this.name}`)}${this.rv ? `&resourceVersion=${this.rv}` : ''}`;
    return new Promise((resolve, reject) => {
      const req = request(`${this.cluster.server(this.server).url}${UPGRADES}?${q}`, { ...this.material, servername: 'kubernetes.default.svc', agent: false }, (res) => {
        this.res = res;
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          const at = Date.now();
          buf += c;
          let nl: number;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            if (!line.trim()) continue;
            const ev = JSON.parse(line) as { type: string; object: ApiServerUpgrade };
            if (ev.type === 'ERROR') {
              this.rv = '';
              continue;
            }
            this.rv = ev.object.metadata?.resourceVersion ?? this.rv;
            this.seen.push({ at, obj: ev.object });
          }
        });
        res.on('end', resolve);
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
  }

  async until<T>(what: string, timeoutMs: number, pick: (s: Seen) => T | undefined): Promise<T> {
    return waitFor(what, timeoutMs, async () => {
      for (const x of this.seen) {
        const v = pick(x);
        if (v !== undefined) return v;
      }
      return undefined;
    }, 50);
  }

  close(): void {
    this.closed = true;
    this.res?.destroy();
  }
}

// ------------------------------------------------------------------ a hook that accepts every call and does nothing
/** A replacement webhook that answers Describe like the e2e hook and accepts every call (202) without replacing anything. */
async function startNoopHook(cluster: Cluster): Promise<{ url: string; caBundle: string; calls: string[]; close(): Promise<void> }> {
  const cert = await createServingCert(cluster.pki, 'bench-noop-hook', ['127.0.0.1'], []);
  const calls: string[] = [];
  const server = createServer({ cert: readFileSync(cert.cert), key: readFileSync(cert.key) }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const p = JSON.parse(body || '{}') as { kind?: string; action?: string; idempotencyKey?: string; server?: { hostname?: string } };
      const send = (status: number, obj: unknown): void => {
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(obj));
      };
      if (p.kind === 'DescribeServerRequest' || p.action === 'Describe') {
        const srv = cluster.servers.find((x) => x.hostname === p.server?.hostname);
        return srv ? send(200, { flags: parseCommandFlags(srv.flags) }) : send(404, { error: 'no such server' });
      }
      calls.push(`${p.action}:${p.server?.hostname}`);
      send(202, { key: p.idempotencyKey, accepted: true });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/replace`,
    caBundle: Buffer.from(readFileSync(cluster.pki.caCert)).toString('base64'),
    calls,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function manifest(name: string, hook: { url: string; caBundle: string }, o: { batchTimeout: string }): Record<string, unknown> {
  return {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name },
    spec: {
      targetVersion: NEW_VERSION,
      strategy: { batchSize: 1, soakDuration: `${SOAK_MS / 1000}s`, batchTimeout: o.batchTimeout },
      proxy: { allowAlphaGate: true },
      driver: { webhook: { url: hook.url, caBundle: hook.caBundle, timeout: '10s' } },
      analysis: { interval: INTERVAL, failureLimit: FAILURE_LIMIT, onBreach: 'Pause' },
    },
  };
}

async function deleteUpgrade(cluster: Cluster, name: string): Promise<void> {
  await cluster.request('lb', `${UPGRADES}/${name}`, { method: 'DELETE' });
  await waitFor(`${name} deleted`, 30_000, async () => ((await cluster.request('lb', `${UPGRADES}/${name}`)).status === 404 ? true : undefined), 200);
}

async function operatorKubeconfig(cluster: Cluster): Promise<string> {
  const c = await createClientCert(cluster.pki, 'bench-operator', OPERATOR_USER, ['system:masters']);
  return writeKubeconfig(join(cluster.dir, 'operator.kubeconfig'), cluster.lbUrl, cluster.pki.caCert, c.cert, c.key);
}

// ------------------------------------------------------------------ part 1: breach -> Paused
interface BreachRun {
  run: number;
  /** Injection (kill returned / patch answered) -> first breaching check's time, -> pause.since. */
  injectToFirstMs: number;
  firstToPausedMs: number;
  injectToPausedMs: number;
  /** When this process saw Paused through the watch, after pause.since. */
  pausedSeenLagMs: number;
  /** Times of the breaching checks after the first (ms after it). */
  checks: number[];
  reason: string;
  breaches: string;
}

async function breachRuns(cluster: Cluster, kubeconfig: string): Promise<BreachRun[]> {
  const hook = await startNoopHook(cluster);
  const op = await startOperator(cluster, { healthPort: await freePort(), extraArgs: ['--kubeconfig', kubeconfig] });
  const out: BreachRun[] = [];
  try {
    for (let run = 1; run <= RUNS; run++) {
      const name = `breach-${run}`;
      const watch = new UpgradeWatch(cluster, name, 0);
      try {
        await createUpgrade(cluster, manifest(name, hook, { batchTimeout: '10m' }));
        // The first replacement is accepted (and never performed), and a healthy check came after it.
        await watch.until('the first call accepted and a healthy check after it', 120_000, (x) => {
          const st = x.obj.status;
          const call = st?.driverCalls?.find((c) => c.action === 'Upgrade' && c.result === 'Accepted');
          const a = st?.lastAnalysis;
          return call?.acceptedAt && a?.verdict === 'Healthy' && iso(a.time) > iso(call.acceptedAt) ? true : undefined;
        });
        await sleep(Math.random() * INTERVAL_MS);
        if (BREACH === 'kill') {
          await cluster.kill(2);
        } else {
          const r = await cluster.request(0, `${UPGRADES}/${name}`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify({ spec: { analysis: { thresholds: { latencyP99: '1ms' } } } }) });
          if (r.status !== 200) throw new Error(`patch: HTTP ${r.status}: ${r.body}`);
        }
        const injectedAt = Date.now();
        const paused = await watch.until('Paused', 120_000, (x) => (x.obj.status?.phase === 'Paused' ? x : undefined));
        const st = paused.obj.status!;
        // Every breaching check after the injection, from every write seen (a check is one lastAnalysis.time).
        const checks = new Map<string, number>();
        for (const x of watch.seen) {
          const a = x.obj.status?.lastAnalysis;
          if (a?.verdict === 'Breach' && iso(a.time) >= injectedAt - INTERVAL_MS) checks.set(a.time!, a.consecutiveBreaches ?? 0);
        }
        const times = [...checks.keys()].map(iso).sort((a, b) => a - b);
        const first = times[0] ?? NaN;
        const pausedAt = iso(st.pause?.since);
        const r: BreachRun = {
          run, injectToFirstMs: first - injectedAt, firstToPausedMs: pausedAt - first, injectToPausedMs: pausedAt - injectedAt,
          pausedSeenLagMs: paused.at - pausedAt, checks: times.map((t) => t - first), reason: st.pause?.reason ?? '?',
          breaches: (st.lastAnalysis?.breaches ?? []).map((b) => `${b.signal}@${b.server ?? 'fleet'}`).join(','),
        };
        out.push(r);
        log(`breach run ${run}: inject -> first breaching check ${s(r.injectToFirstMs)} s, first -> Paused ${s(r.firstToPausedMs)} s (checks at +${r.checks.map(s).join(', +')} s), inject -> Paused ${s(r.injectToPausedMs)} s; ${r.reason} ${r.breaches}; ${checks.size} checks seen, consecutive ${[...checks.values()].join(',')}`);
      } finally {
        watch.close();
        await deleteUpgrade(cluster, name).catch((err: Error) => log(`delete ${name}: ${err.message}`));
        if (BREACH === 'kill' && !cluster.server(2).running) await cluster.start(2);
      }
      // The restarted server's Lease and readiness reach the operator before the next preflight.
      await sleep(1000);
    }
  } finally {
    await op.stop();
    await hook.close();
  }
  return out;
}

// ------------------------------------------------------------------ part 2: API load from the audit logs
interface AuditRecord extends AuditEvent {
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
  objectRef?: AuditEvent['objectRef'] & { namespace?: string; name?: string; subresource?: string };
}

/** One entry per request: a request proxied by the Mixed Version Proxy, or a watch (ResponseStarted, then ResponseComplete), has several events under one audit ID. */
async function operatorRequests(cluster: Cluster): Promise<{ at: number; e: AuditRecord }[]> {
  const byId = new Map<string, AuditRecord>();
  for (const srv of cluster.servers) {
    for (const e of (await auditEvents(srv.auditLogPath!)) as AuditRecord[]) {
      if (e.user.username !== OPERATOR_USER) continue;
      if (!byId.has(e.auditID)) byId.set(e.auditID, e);
    }
  }
  return [...byId.values()].map((e) => ({ at: iso(e.requestReceivedTimestamp), e })).sort((a, b) => a.at - b.at);
}

/** `verb resource` for a resource request (the leader Lease and the identity Leases apart), `verb /path` otherwise. */
function keyOf(e: AuditRecord): string {
  const o = e.objectRef;
  if (o?.resource) {
    let what = `${o.resource}${o.subresource ? `/${o.subresource}` : ''}${o.apiGroup ? `.${o.apiGroup}` : ''}`;
    if (o.resource === 'leases') what += o.name === 'apiserver-upgrade-operator' ? ' (leader)' : o.name ? ` (${o.name})` : ' (identity)';
    if (o.resource === 'endpointslices') what += ' (kubernetes)';
    return `${e.verb} ${what}`;
  }
  const path = e.requestURI.split('?')[0]!;
  return `${e.verb} ${/^\/apis\/[^/]+\/[^/]+$/.test(path) || /^\/api\/v1$/.test(path) ? 'legacy discovery /api(s)/<group>/<version>' : path}`;
}

interface WindowCount {
  window: string;
  minutes: number;
  total: number;
  byKey: { key: string; count: number; perMin: number; codes: string }[];
  lists: string[];
}

function countWindow(reqs: { at: number; e: AuditRecord }[], window: string, from: number, to: number): WindowCount {
  const inside = reqs.filter((r) => r.at >= from && r.at < to);
  const minutes = (to - from) / 60_000;
  const keys = new Map<string, { count: number; codes: Map<number, number> }>();
  for (const r of inside) {
    const k = keyOf(r.e);
    const v = keys.get(k) ?? { count: 0, codes: new Map() };
    v.count++;
    const code = r.e.responseStatus?.code ?? 0;
    v.codes.set(code, (v.codes.get(code) ?? 0) + 1);
    keys.set(k, v);
  }
  return {
    window, minutes, total: inside.length,
    byKey: [...keys].sort((a, b) => b[1].count - a[1].count).map(([key, v]) => ({ key, count: v.count, perMin: v.count / minutes, codes: [...v.codes].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c}×${n}`).join(' ') })),
    lists: inside.filter((r) => r.e.verb === 'list').map((r) => `+${s(r.at - from)} s ${r.e.requestURI} (${r.e.responseStatus?.code})`),
  };
}

// ------------------------------------------------------------------ part 3: physical convergence, polled
async function fleetConverged(cluster: Cluster): Promise<{ converged: boolean; versions: string[] }> {
  const servers: ServerDiscovery[] = await Promise.all(cluster.servers.map(async (srv) => {
    const version = await cluster.request(srv.index, '/version', { timeoutMs: 2000 }).then((r) => (JSON.parse(r.body) as { gitVersion: string }).gitVersion).catch(() => '?');
    const get = async (accept: string): Promise<Set<string> | undefined> => {
      try {
        const docs = await Promise.all(['/apis', '/api'].map(async (p) => {
          const r = await cluster.request(srv.index, p, { headers: { Accept: accept }, timeoutMs: 2000 });
          if (r.status !== 200) throw new Error(String(r.status));
          return JSON.parse(r.body) as APIGroupDiscoveryList;
        }));
        return resourceSet(...docs);
      } catch {
        return undefined;
      }
    };
    const [own, peerAggregated] = await Promise.all([get(DISCOVERY_ACCEPT_NOPEER), get(DISCOVERY_ACCEPT)]);
    return { server: srv.hostname, version, own, peerAggregated };
  }));
  return { converged: convergence(servers).converged, versions: servers.map((x) => x.version) };
}

interface BatchOverhead {
  index: number;
  server: string;
  durationMs: number;
  replacementMs: number;
  convergenceMs: number;
  overheadMs: number;
  /** Where the overhead went. */
  deliveryMs: number;
  doneSeenMs: number;
  convergedSeenMs: number;
  soakEndMs: number;
  gapToNextMs: number;
}

interface UpgradeResult {
  windows: WindowCount[];
  startup: WindowCount;
  userAgents: Map<string, number>;
  missingUserAgent: number;
  /** Requests after Succeeded other than the leader Lease's, with their time after it. */
  finishing: string[];
  batches: BatchOverhead[];
  preBatchMs: number;
  afterLastMs: number;
  totalMs: number;
}

async function upgradeRun(cluster: Cluster, kubeconfig: string): Promise<UpgradeResult> {
  const hook = await ReplaceWebhook.start(cluster);
  const opStart = Date.now();
  let op: OperatorProcess | undefined;
  try {
    op = await startOperator(cluster, { healthPort: await freePort(), extraArgs: ['--kubeconfig', kubeconfig] });
    const ready = Date.now();
    log(`operator ready (informers synced) in ${s(ready - opStart)} s; idle for ${IDLE_S} s`);
    await sleep(IDLE_S * 1000);
    const idleEnd = Date.now();

    const name = 'bench-upgrade';
    /** Per replaced server, from this process's own polling: first seen ready on the target, first seen so with the fleet converged. */
    const readyAt = new Map<string, number>();
    const convergedAt = new Map<string, number>();
    const soakUntil = new Map<number, string>();
    let finished = false;
    // Polls the replaced server's /readyz and every server's discovery while a replacement runs, until converged.
    const poller = (async () => {
      while (!finished) {
        const pending = [...hook.calls.values()].find((c) => c.action === 'Upgrade' && c.startedAt !== undefined && !convergedAt.has(c.hostname));
        if (pending) {
          const idx = cluster.servers.findIndex((x) => x.hostname === pending.hostname);
          const [f, ready] = await Promise.all([fleetConverged(cluster), cluster.request(idx, '/readyz', { timeoutMs: 2000 }).then((r) => r.status === 200, () => false)]);
          const at = Date.now();
          if (ready && f.versions[idx] === pending.targetVersion) {
            if (!readyAt.has(pending.hostname)) readyAt.set(pending.hostname, at);
            if (f.converged) convergedAt.set(pending.hostname, at);
          }
        }
        await sleep(100);
      }
    })();
    const statusPoll = (async () => {
      while (!finished) {
        const st = (await getUpgrade(cluster, name))?.status;
        if (st?.batch?.current && st.batch.soakUntil) soakUntil.set(st.batch.current, st.batch.soakUntil);
        await sleep(300);
      }
    })();
    const upStart = Date.now();
    await createUpgrade(cluster, manifest(name, hook, { batchTimeout: '5m' }));
    let last = '';
    const final = await waitFor('the upgrade to finish', 10 * 60_000, async () => {
      const u = await getUpgrade(cluster, name);
      const line = `${u?.status?.phase} ${u?.status?.batch?.progress ?? ''} ${u?.status?.pause?.message ?? ''}`;
      if (line !== last) log(`[${name}] ${(last = line)}`);
      const p = u?.status?.phase;
      return p === 'Succeeded' || p === 'Paused' || p === 'Failed' || p === 'RolledBack' ? u : undefined;
    }, 200);
    const upEnd = Date.now();
    finished = true;
    await Promise.all([poller, statusPoll]);
    if (final.status?.phase !== 'Succeeded') throw new Error(`the upgrade ended ${final.status?.phase}: ${JSON.stringify(final.status?.pause)}`);
    log(`Succeeded; ${AFTER_S} s more`);
    await sleep(AFTER_S * 1000);
    const afterEnd = Date.now();
    await op.stop();
    await sleep(2000); // the audit backend writes as requests complete

    const reqs = await operatorRequests(cluster);
    const mine = reqs.filter((r) => r.at >= opStart && r.at < afterEnd);
    const userAgents = new Map<string, number>();
    let missingUserAgent = 0;
    for (const r of mine) {
      if (!r.e.userAgent) missingUserAgent++;
      userAgents.set(r.e.userAgent ?? '(none)', (userAgents.get(r.e.userAgent ?? '(none)') ?? 0) + 1);
    }
    const succeededAt = iso(final.status?.completedAt);
    const windows = [
      countWindow(reqs, `(a) idle after sync, ${IDLE_S} s`, ready, idleEnd),
      countWindow(reqs, '(b) upgrade: created -> Succeeded', upStart, upEnd),
      countWindow(reqs, `(c) after Succeeded, ${AFTER_S} s`, upEnd, afterEnd),
      countWindow(reqs, `(c') after Succeeded, from +5 s to +${AFTER_S} s`, upEnd + 5000, afterEnd),
    ];
    const finishing = reqs.filter((r) => r.at >= upEnd && r.at < afterEnd && !keyOf(r.e).includes('(leader)')).map((r) => `+${s(r.at - upEnd)} s ${r.e.verb} ${r.e.requestURI} (${r.e.responseStatus?.code})`);
    const startup = countWindow(reqs, 'start -> informers synced', opStart, ready);

    // Per batch, from status (the operator's clock: the same machine), the hook and the poller.
    const st = final.status!;
    const history = [...(st.batch?.history ?? [])].sort((a, b) => a.index - b.index);
    const batches: BatchOverhead[] = history.map((h, i) => {
      const server = h.servers?.[0] ?? '?';
      const call = [...hook.calls.values()].find((c) => c.action === 'Upgrade' && c.hostname === server);
      const status = st.driverCalls?.find((c) => c.action === 'Upgrade' && c.server === server);
      const start = iso(h.startedAt);
      const end = iso(h.completedAt);
      const conv = convergedAt.get(server) ?? NaN;
      const ready = readyAt.get(server) ?? NaN;
      const began = call?.startedAt ?? NaN;
      const soakEnd = iso(soakUntil.get(h.index));
      const next = history[i + 1];
      return {
        index: h.index, server, durationMs: end - start, replacementMs: ready - began, convergenceMs: conv - ready,
        overheadMs: end - start - (conv - began) - SOAK_MS,
        deliveryMs: began - start,
        doneSeenMs: iso(status?.completedAt) - ready,
        convergedSeenMs: soakEnd - SOAK_MS - Math.max(conv, iso(status?.completedAt)),
        soakEndMs: end - soakEnd,
        gapToNextMs: next ? iso(next.startedAt) - end : succeededAt - end,
      };
    });
    return {
      windows, startup, userAgents, missingUserAgent, batches, finishing,
      preBatchMs: iso(history[0]?.startedAt) - iso(st.startedAt), afterLastMs: succeededAt - iso(history.at(-1)?.completedAt), totalMs: succeededAt - iso(st.startedAt),
    };
  } finally {
    await op?.stop();
    await hook.close();
  }
}

// ------------------------------------------------------------------ report
function printBreach(runs: BreachRun[]): void {
  const goal = FAILURE_LIMIT * INTERVAL_MS + 1000;
  const col = (f: (r: BreachRun) => number): string => `${s(percentile(runs.map(f), 50))} / ${s(percentile(runs.map(f), 95))} / ${s(Math.max(...runs.map(f)))}`;
  console.log(`\n## breach -> Paused (${runs.length} runs, breach: ${BREACH}, interval ${INTERVAL}, failureLimit ${FAILURE_LIMIT}; goal p95 <= ${s(goal)} s)\n`);
  console.log('| run | inject -> first breaching check s | first breaching check -> Paused s | inject -> Paused s | breaching checks at (s after the first) | pause |');
  console.log('|---|---|---|---|---|---|');
  for (const r of runs) console.log(`| ${r.run} | ${s(r.injectToFirstMs)} | ${s(r.firstToPausedMs)} | ${s(r.injectToPausedMs)} | ${r.checks.map(s).join(', ')} | ${r.reason} ${r.breaches} |`);
  console.log(`\n| measure | median / p95 / max s | goal met (p95 <= ${s(goal)} s) |\n|---|---|---|`);
  console.log(`| first breaching check -> Paused | ${col((r) => r.firstToPausedMs)} | ${percentile(runs.map((r) => r.firstToPausedMs), 95) <= goal ? 'yes' : 'no'} |`);
  console.log(`| injection -> Paused | ${col((r) => r.injectToPausedMs)} | ${percentile(runs.map((r) => r.injectToPausedMs), 95) <= goal ? 'yes' : 'no'} |`);
  console.log(`| injection -> first breaching check | ${col((r) => r.injectToFirstMs)} | |`);
  console.log(`| pause.since -> seen through a watch | ${col((r) => r.pausedSeenLagMs)} | |`);
}

function printUpgrade(u: UpgradeResult): void {
  console.log(`\n## API load of the operator's user (${OPERATOR_USER}), from the audit logs of the 3 servers\n`);
  for (const w of [u.startup, ...u.windows]) {
    console.log(`\n### ${w.window}: ${w.total} requests in ${w.minutes.toFixed(2)} min (${(w.total / w.minutes).toFixed(1)}/min)\n`);
    console.log('| verb resource | requests | per min | response codes |\n|---|---|---|---|');
    for (const k of w.byKey) console.log(`| ${k.key} | ${k.count} | ${k.perMin.toFixed(1)} | ${k.codes} |`);
    if (w !== u.startup) console.log(`\nLIST requests: ${w.lists.length}${w.lists.length ? `\n${w.lists.map((l) => `- ${l}`).join('\n')}` : ''}`);
  }
  console.log(`\nAfter Succeeded, every request but the leader Lease's (time after this process saw Succeeded):\n${u.finishing.map((l) => `- ${l}`).join('\n') || '- none'}`);
  console.log(`\nUser-Agents: ${[...u.userAgents].map(([k, v]) => `${k} ×${v}`).join('; ')}; requests without one: ${u.missingUserAgent}`);
  console.log(`\n## operator overhead per batch (soak ${SOAK_MS / 1000} s, interval ${INTERVAL}; goal <= 2 s)\n`);
  console.log('| batch | server | batch duration s | replacement (call -> ready) s | convergence after ready s | soak s | overhead s | of which: call started after batch start | Done recorded after ready | soak start after converged and Done | soak end -> batch end | then: gap to the next batch (or Succeeded) |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const b of u.batches) console.log(`| ${b.index} | ${b.server} | ${s(b.durationMs)} | ${s(b.replacementMs)} | ${s(b.convergenceMs)} | ${SOAK_MS / 1000} | **${s(b.overheadMs)}** | ${s(b.deliveryMs)} | ${s(b.doneSeenMs)} | ${s(b.convergedSeenMs)} | ${s(b.soakEndMs)} | ${s(b.gapToNextMs)} |`);
  console.log(`\nupgrade started -> batch 1: ${s(u.preBatchMs)} s; last batch -> Succeeded: ${s(u.afterLastMs)} s; whole upgrade ${s(u.totalMs)} s`);
}

async function main(): Promise<void> {
  loads.push(loadavg()[0]!);
  const t0 = Date.now();
  const cluster = await Cluster.start({ servers: 3, version: OLD_VERSION, featureGates: { [PROXY_GATE]: true }, audit: { policy: AUDIT_POLICY }, verbose: true });
  const results: Record<string, unknown> = {};
  try {
    await installCrd(cluster);
    const kubeconfig = await operatorKubeconfig(cluster);
    log(`cluster ready in ${s(Date.now() - t0)} s: ${cluster.dir}`);
    if (PARTS.has('breach')) {
      const runs = await breachRuns(cluster, kubeconfig);
      results.breach = runs;
      printBreach(runs);
    }
    if (PARTS.has('audit')) {
      const u = await upgradeRun(cluster, kubeconfig);
      results.upgrade = { ...u, userAgents: Object.fromEntries(u.userAgents) };
      printUpgrade(u);
    }
  } finally {
    await cluster.teardown();
  }
  console.log(`\nmachine load during the run: ${loadSummary()}; wall time ${s(Date.now() - t0)} s`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, JSON.stringify({ ...results, loads, at: new Date().toISOString() }, null, 2));
}

await main();
