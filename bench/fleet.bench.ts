// Fleet benchmark: the real FleetObserver and DirectClient observing N local HTTPS servers that serve the
// captured kube-apiserver pages (test/fixtures/<version>/), as the operator does while it waits on a driver
// (one observation per requeue, an analysis due every `intervalMs`). Prints, per N: CPU per server per
// cycle, bytes fetched per server per cycle and per analysis interval, requests per cycle, errors, max RSS.
// Method and results: bench/README.md.
//
//   npm run bench                                  (all benchmarks)
//   node bench/fleet.bench.ts                      (N = 3, 10, 50)
//   BENCH_FLEET=3,10,50,100,200 node bench/fleet.bench.ts
//   BENCH_CYCLES=25 BENCH_REQUEUE_MS=2000 BENCH_INTERVAL_MS=10000 BENCH_KEEPALIVE_MS=5000 BENCH_WAIT_MS=0
//   BENCH_RSS_AT=26,60,120 BENCH_RETAINED=1        (memory after those cycles)
//   BENCH_SERVE_VERSION=v1.34.4 BENCH_START_TIMES=every,inflight,none   (start-time reads of a pre-1.35 fleet)
//
// Three processes: this one (the orchestrator) runs, for each N, one child that hosts the N servers
// (`--serve N`) and one child that runs the observer (`--observe N`), so the observer's CPU and max RSS are
// its own. The servers count the bytes they write (TLS records, headers and bodies: what crosses the wire).
// The observer runs compiled to JavaScript, as the operator's image runs it (no type stripping, whose compiler
// holds ~18 MiB); BENCH_OBSERVER=ts runs it from the TypeScript sources instead.
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The observer process's NODE_OPTIONS: the chart's `nodeOptions` (what the operator's Pod runs with) unless BENCH_NODE_OPTIONS says otherwise ('' for V8's defaults). */
const OBSERVER_NODE_OPTIONS = process.env.BENCH_NODE_OPTIONS ?? String((parseYaml(readFileSync(new URL('../charts/apiserver-upgrade-operator/values.yaml', import.meta.url), 'utf8')) as { nodeOptions?: string }).nodeOptions ?? '');
/** DirectClient's kept-alive connections per server; unset: its default. */
const MAX_SOCKETS = process.env.BENCH_MAX_SOCKETS;
import { fixtureFiles, fixtureVersions, readFixture } from '../test/observe/fixtures.ts';
import { tlsMaterial } from '../test/observe/fixture-server.ts';
import { FakeApi } from '../test/observe/fake-api.ts';
import { DirectClient } from '../src/observe/direct-client.ts';
import { FleetObserver, type AnalysisSettings } from '../src/observe/fleet.ts';
import { silentLogger } from '../src/runtime/logger.ts';
import type { APIGroupDiscoveryList } from '../src/observe/discovery.ts';

const env = (name: string, dflt: number): number => Number(process.env[name] ?? dflt);
const CYCLES = env('BENCH_CYCLES', 25);
const REQUEUE_MS = env('BENCH_REQUEUE_MS', 2000);
const INTERVAL_MS = env('BENCH_INTERVAL_MS', 10_000);
const KEEPALIVE_MS = env('BENCH_KEEPALIVE_MS', 5000);
/** Real time slept between cycles (0: back to back; 2000 reproduces the requeue cadence and keep-alive expiry). */
const WAIT_MS = env('BENCH_WAIT_MS', 0);
const FLEET = (process.env.BENCH_FLEET ?? '3,10,50').split(',').map(Number);
/** Timed cycles after which RSS and heap are recorded (the growth between them shows whether the process settles). */
const RSS_AT = new Set((process.env.BENCH_RSS_AT ?? '26,60,120').split(',').filter(Boolean).map(Number));
/** BENCH_RETAINED=1: also the heap retained at those cycles (two forced GCs there, which lower the RSS that follows). */
const RETAINED_AT = process.env.BENCH_RETAINED === '1';
/** Servers alternate between the captured versions, as a fleet mid-upgrade does. */
const CAPTURED = fixtureVersions().filter((v) => fixtureFiles(v, /^metrics\.txt$/).length > 0);
/**
 * BENCH_SERVE_VERSION=v1.34.4: every server serves the first captured version's pages with its `/version` saying this
 * version instead (a server whose Lease holder survives restarts, before 1.35: its start time is read from /metrics).
 */
const SERVE_VERSION = process.env.BENCH_SERVE_VERSION;
const VERSIONS = SERVE_VERSION ? CAPTURED.slice(0, 1) : CAPTURED;
/**
 * Which start times the planner asks for (AnalysisSettings.startTimes), one observer run per mode and N:
 * `every` (absent: every look, as before src/plan/start-time-reads.ts), `none`, `inflight` (cp-1, as while one
 * call is in flight), `all`.
 */
const START_MODES = (process.env.BENCH_START_TIMES ?? 'every').split(',');

/** 127.0.0.1 … 127.0.0.254, then 127.0.1.1 …: loopback answers on all of 127/8. */
const ipOf = (n: number): string => `127.0.${Math.floor((n - 1) / 254)}.${((n - 1) % 254) + 1}`;

interface ServerStats {
  bytes: number;
  requests: Record<string, number>;
}

// ---------------------------------------------------------------- the servers
interface Page {
  body: Buffer;
  gzip?: Buffer;
  etag?: string;
  type: string;
}

function pages(version: string): Map<string, Page> {
  const out = new Map<string, Page>();
  const legacy = new Map(fixtureFiles(version, /^legacy-.*\.json$/).map((f) => {
    const gv = f.slice('legacy-'.length, -'.json'.length);
    return [gv === 'v1' ? '/api/v1' : `/apis/${gv.replace(/_(v\d\w*)$/, '/$1').replaceAll('_', '.')}`, f] as const;
  }));
  // As test/observe/fixture-server.ts does: aggregated documents list only the group/versions whose legacy
  // document was captured, so a storage read is complete (and kept) as it is against a real server.
  const cutDown = (text: string, core: boolean): string => {
    const doc = JSON.parse(text) as APIGroupDiscoveryList;
    doc.items = (doc.items ?? [])
      .map((g) => ({ ...g, versions: (g.versions ?? []).filter((v) => legacy.has(core ? `/api/${v.version}` : `/apis/${g.metadata?.name ?? ''}/${v.version}`)) }))
      .filter((g) => g.versions.length > 0);
    return JSON.stringify(doc);
  };
  const json = (file: string, etag: boolean): Page => {
    const text = readFixture(version, file);
    const body = Buffer.from(file.startsWith('discovery-') ? cutDown(text, file.startsWith('discovery-api-')) : text);
    return { body, type: 'application/json', ...(etag ? { etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 32)}"` } : {}) };
  };
  const version_ = json('version.json', false);
  if (SERVE_VERSION) version_.body = Buffer.from(JSON.stringify({ ...(JSON.parse(version_.body.toString()) as object), gitVersion: SERVE_VERSION, minor: SERVE_VERSION.split('.')[1], emulationMinor: SERVE_VERSION.split('.')[1] }));
  out.set('/version', version_);
  out.set('/readyz', { body: Buffer.from('ok'), type: 'text/plain' });
  const metrics = Buffer.from(readFixture(version, 'metrics.txt'));
  // client_golang's promhttp gzips when asked; kube-apiserver's own compression only answers bodies >= 128 KiB.
  out.set('/metrics', { body: metrics, gzip: gzipSync(metrics), type: 'text/plain; version=0.0.4' });
  out.set('/apis peer', json('discovery-apis-peer.json', true));
  out.set('/apis nopeer', json('discovery-apis-nopeer.json', true));
  out.set('/api peer', json('discovery-api-nopeer.json', true));
  out.set('/api nopeer', json('discovery-api-nopeer.json', true));
  for (const [path, f] of legacy) out.set(path, json(f, false));
  return out;
}

async function serve(n: number): Promise<void> {
  const byVersion = new Map(VERSIONS.map((v) => [v, pages(v)]));
  const stats: ServerStats = { bytes: 0, requests: {} };
  const sockets = new Set<Socket>();
  let closedBytes = 0;
  const servers: Server[] = [];
  const addresses: string[] = [];
  for (let i = 1; i <= n; i++) {
    const p = byVersion.get(VERSIONS[(i - 1) % VERSIONS.length]!)!;
    const server = createServer({ ...tlsMaterial(1) }, (req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      const kind = path === '/api' || path === '/apis' ? `${path} ${(req.headers.accept ?? '').includes('profile=nopeer') ? 'nopeer' : 'peer'}` : path;
      const page = p.get(kind);
      const ua = req.headers['user-agent'] ?? '';
      stats.requests[`${path.startsWith('/apis/') || path.startsWith('/api/') ? 'legacy' : path}`] = (stats.requests[`${path.startsWith('/apis/') || path.startsWith('/api/') ? 'legacy' : path}`] ?? 0) + 1;
      if (!ua) stats.requests['no User-Agent'] = (stats.requests['no User-Agent'] ?? 0) + 1;
      if (!page) {
        res.writeHead(404, { 'Content-Type': 'application/json' });
        return res.end('{"kind":"Status","code":404}');
      }
      if (page.etag && req.headers['if-none-match'] === page.etag) {
        stats.requests['304'] = (stats.requests['304'] ?? 0) + 1;
        res.writeHead(304, { ETag: page.etag });
        return res.end();
      }
      const gzip = page.gzip && /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
      if (gzip) stats.requests['gzip'] = (stats.requests['gzip'] ?? 0) + 1;
      res.writeHead(200, { 'Content-Type': page.type, ...(page.etag ? { ETag: page.etag } : {}), ...(gzip ? { 'Content-Encoding': 'gzip' } : {}) });
      res.end(gzip ? page.gzip : page.body);
    });
    server.keepAliveTimeout = KEEPALIVE_MS;
    server.on('secureConnection', (s: Socket) => {
      sockets.add(s);
      s.on('close', () => {
        closedBytes += s.bytesWritten;
        sockets.delete(s);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, ipOf(i), resolve);
    });
    servers.push(server);
    addresses.push(`${ipOf(i)}:${(server.address() as AddressInfo).port}`);
  }
  process.send!({ addresses });
  process.on('message', (m: string) => {
    if (m === 'stats') {
      let open = 0;
      for (const s of sockets) open += s.bytesWritten;
      stats.bytes = closedBytes + open;
      process.send!({ stats });
    } else if (m === 'exit') {
      for (const s of servers) s.closeAllConnections();
      process.exit(0);
    }
  });
}

// ---------------------------------------------------------------- the observer
function ask<T>(child: ChildProcess, message: string, key: string): Promise<T> {
  return new Promise((resolve) => {
    const on = (m: Record<string, unknown>) => {
      if (key in m) {
        child.off('message', on);
        resolve(m[key] as T);
      }
    };
    child.on('message', on);
    if (message) child.send(message);
  });
}

interface Result {
  /** BENCH_START_TIMES mode of this run. */
  mode: string;
  n: number;
  cycles: number;
  analyses: number;
  cpuMsPerServerCycle: number;
  bytesPerServerCycle: number;
  bytesPerServerInterval: number;
  requestsPerCycle: number;
  requests: Record<string, number>;
  errors: number;
  coldCpuMsPerServer: number;
  /** Max RSS right after the cold cycle. */
  coldMaxRssMiB: number;
  maxRssMiB: number;
  /** RSS at the end of the timed cycles, before any forced GC: what the process holds in its steady state. */
  steadyRssMiB: number;
  /** process.memoryUsage() at that moment, MiB: where the RSS is (V8 heap reserved and used, buffers outside it). */
  steadyMemory: Record<string, number>;
  heapMiB: number;
  /** RSS and V8 heap used (MiB, no forced GC) after the timed cycles of BENCH_RSS_AT. */
  rssAt: Record<string, { rss: number; heapUsed: number; heapTotal: number; external: number; retained?: number }>;
}

function startTimesOf(mode: string): AnalysisSettings['startTimes'] {
  if (mode === 'every') return undefined;
  if (mode === 'none') return { all: false, servers: [] };
  if (mode === 'inflight') return { all: false, servers: ['cp-1'] };
  if (mode === 'all') return { all: true, servers: [] };
  throw new Error(`BENCH_START_TIMES: unknown mode ${mode}`);
}

async function observe(n: number, mode: string): Promise<void> {
  const startTimes = startTimesOf(mode);
  const servers = fork(import.meta.filename, ['--serve', String(n)], { stdio: 'inherit' });
  const addresses = await ask<string[]>(servers, '', 'addresses');
  const api = new FakeApi();
  addresses.forEach((address, i) => api.add({ hostname: `cp-${i + 1}`, address }));
  const direct = new DirectClient(async () => ({ headers: {}, ca: Buffer.from(tlsMaterial(1).cert), rejectUnauthorized: true }), { timeoutMs: 5000, serverName: 'localhost', ...(MAX_SOCKETS ? { maxSocketsPerServer: Number(MAX_SOCKETS) } : {}) });
  const observer = new FleetObserver(direct, api.list, silentLogger());
  let now = Date.parse('2026-11-29T10:00:00Z');
  let lastAnalysis: number | undefined;
  const settings = (): AnalysisSettings => ({
    intervalMs: INTERVAL_MS,
    // As src/plan/analysis.ts analysisDue does from status.lastAnalysis.
    due: lastAnalysis === undefined || now - lastAnalysis >= INTERVAL_MS,
    proxyErrorRatio: 0.01, errorRatio: 0.05, latencyP99Seconds: 1,
    ...(startTimes ? { startTimes } : {}),
  });
  let errors = 0;
  const cycle = async (): Promise<void> => {
    const s = settings();
    const obs = await observer.observe(s, now);
    if (s.due && obs.analysis) lastAnalysis = now;
    errors += obs.peers.filter((p) => !p.ready).length + (obs.discovery?.converged === false ? 1 : 0);
    for (const host of api.leases.keys()) api.renew(host);
    now += REQUEUE_MS;
  };
  // Cold cycle: TLS handshakes, storage reads, ETag cache filled. Measured apart.
  const c0 = process.cpuUsage();
  await cycle();
  const cold = process.cpuUsage(c0);
  const coldMaxRssMiB = process.resourceUsage().maxRSS / 1024;
  errors = 0;
  const before = await ask<ServerStats>(servers, 'stats', 'stats');
  const t0 = process.cpuUsage();
  let analyses = 0;
  const rssAt: Result['rssAt'] = {};
  const mib = (b: number): number => Math.round((b / 1024 / 1024) * 10) / 10;
  for (let i = 0; i < CYCLES; i++) {
    if (WAIT_MS > 0) await new Promise((r) => setTimeout(r, WAIT_MS));
    const was = lastAnalysis;
    await cycle();
    if (lastAnalysis !== was) analyses++;
    if (RSS_AT.has(i + 1)) {
      const m = process.memoryUsage();
      rssAt[String(i + 1)] = { rss: mib(m.rss), heapUsed: mib(m.heapUsed), heapTotal: mib(m.heapTotal), external: mib(m.external + m.arrayBuffers), ...(RETAINED_AT ? { retained: Math.round(retainedHeapMiB() * 10) / 10 } : {}) };
    }
  }
  const cpu = process.cpuUsage(t0);
  const mem = process.memoryUsage();
  const steadyRssMiB = mem.rss / 1024 / 1024;
  const steadyMemory = Object.fromEntries(Object.entries(mem).map(([k, v]) => [k, Math.round(v / 1024 / 1024)]));
  const after = await ask<ServerStats>(servers, 'stats', 'stats');
  const requests: Record<string, number> = {};
  for (const [k, v] of Object.entries(after.requests)) requests[k] = Math.round(((v - (before.requests[k] ?? 0)) / CYCLES) * 10) / 10;
  const total = Object.entries(requests).filter(([k]) => !['304', 'gzip', 'no User-Agent'].includes(k)).reduce((a, [, v]) => a + v, 0);
  const bytesPerServerCycle = (after.bytes - before.bytes) / CYCLES / n;
  const result: Result = {
    n,
    mode,
    cycles: CYCLES,
    analyses,
    cpuMsPerServerCycle: (cpu.user + cpu.system) / 1000 / CYCLES / n,
    bytesPerServerCycle,
    bytesPerServerInterval: bytesPerServerCycle * (INTERVAL_MS / REQUEUE_MS),
    requestsPerCycle: Math.round(total * 10) / 10,
    requests,
    errors,
    coldCpuMsPerServer: (cold.user + cold.system) / 1000 / n,
    coldMaxRssMiB,
    maxRssMiB: process.resourceUsage().maxRSS / 1024,
    steadyRssMiB,
    steadyMemory,
    heapMiB: retainedHeapMiB(),
    rssAt,
  };
  observer.close();
  servers.send('exit');
  process.send!({ result });
  process.exit(0);
}

/** heapUsed after two forced GCs (the observer's state kept between cycles), or without them when gc is not exposed. */
function retainedHeapMiB(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

// ---------------------------------------------------------------- the orchestrator
/**
 * This bench and everything it imports, compiled with the project's tsconfig into a temporary folder laid out as
 * the repository (the fixtures, the chart, package.json and node_modules beside it): the observer runs from there.
 */
function compiledBench(): { script: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'fleet-bench-js-'));
  const tsconfig = join(dir, 'tsconfig.json');
  writeFileSync(tsconfig, JSON.stringify({
    extends: join(ROOT, 'tsconfig.json'),
    compilerOptions: { noEmit: false, outDir: dir, rootDir: ROOT, sourceMap: false, declaration: false, typeRoots: [join(ROOT, 'node_modules/@types')] },
    include: [],
    files: ['bench/fleet.bench.ts', 'bench/peers.d.ts'].map((f) => join(ROOT, f)),
  }));
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', tsconfig], { stdio: 'inherit' });
  for (const link of ['test/fixtures', 'test/observe/tls', 'charts', 'node_modules']) {
    mkdirSync(dirname(join(dir, link)), { recursive: true });
    symlinkSync(join(ROOT, link), join(dir, link));
  }
  copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  return { script: join(dir, 'bench', 'fleet.bench.js'), dir };
}

async function main(): Promise<void> {
  const compiled = process.env.BENCH_OBSERVER === 'ts' ? undefined : compiledBench();
  process.stdout.write(`node ${process.version}; observer ${compiled ? 'compiled to JavaScript' : 'from the TypeScript sources'}, NODE_OPTIONS '${OBSERVER_NODE_OPTIONS}', ${MAX_SOCKETS ?? 'default'} sockets per server; ${CYCLES} cycles after a cold one, one every ${REQUEUE_MS} ms of observer time (real wait ${WAIT_MS} ms), analysis interval ${INTERVAL_MS} ms, server keep-alive ${KEEPALIVE_MS} ms; servers alternate ${VERSIONS.join(' / ')}${SERVE_VERSION ? ` with /version saying ${SERVE_VERSION}` : ''}\n\n`);
  const rows: string[] = [];
  for (const n of FLEET) for (const mode of START_MODES) {
    // The observer process runs as the operator's does: compiled, with the chart's heap flags.
    const child = fork(compiled?.script ?? import.meta.filename, ['--observe', String(n), mode], { stdio: 'inherit', execArgv: ['--expose-gc', '--disable-warning=ExperimentalWarning'], env: { ...process.env, NODE_OPTIONS: OBSERVER_NODE_OPTIONS } });
    const r = await ask<Result>(child, '', 'result');
    await new Promise((resolve) => child.once('exit', resolve));
    rows.push(`| ${r.n}${START_MODES.length > 1 || SERVE_VERSION ? ` (${SERVE_VERSION ?? 'captured'}, start times ${r.mode})` : ''} | ${r.cpuMsPerServerCycle.toFixed(1)} | ${(r.bytesPerServerCycle / 1e6).toFixed(3)} | ${(r.bytesPerServerInterval / 1e6).toFixed(3)} | ${r.requestsPerCycle} | ${r.errors} | ${r.coldCpuMsPerServer.toFixed(0)} | ${r.maxRssMiB.toFixed(0)} | ${r.steadyRssMiB.toFixed(0)} | ${r.heapMiB.toFixed(0)} |`);
    process.stdout.write(`N=${n}: ${JSON.stringify(r)}\n`);
  }
  process.stdout.write(`\n| servers | CPU ms / server / cycle | MB / server / cycle | MB / server / analysis interval | requests / cycle | not-ready or not-converged | cold cycle CPU ms / server | observer max RSS MiB | steady-state RSS MiB | retained heap MiB |\n|---|---|---|---|---|---|---|---|---|---|\n${rows.join('\n')}\n`);
  if (compiled) rmSync(compiled.dir, { recursive: true, force: true });
}

const [role, arg, mode] = process.argv.slice(2);
if (role === '--serve') await serve(Number(arg));
else if (role === '--observe') await observe(Number(arg), mode ?? 'every');
else await main();
