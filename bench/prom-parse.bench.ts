// Benchmark of the streaming /metrics parser (src/observe/prom-text.ts) over the captured kube-apiserver
// pages in test/fixtures/<version>/metrics.txt: throughput when keeping only SIGNAL_FAMILIES vs 'all', and
// the heap it needs; then side by side with the npm parsers parse-prometheus-text-format and prom2javascript
// (dev dependencies), interleaved rounds, CPU time. Method and results: bench/README.md.
//   npm run bench            (node --expose-gc bench/prom-parse.bench.ts)
//   BENCH_MS=5000 npm run bench   (longer timed runs)
//   BENCH_ROUNDS=60 ...            (rounds of the side-by-side comparison; 30 by default)
//   BENCH_BIG_MB=20.8 ...          (the grown page, bench/big-page.ts: 0 leaves it out; BENCH_BIG_ROUNDS, 15 by default)
//   BENCH_COLD=1 ...               (side by side: a forced GC, not timed, before every timed parse: each parse starts
//                                   from a collected heap, as a look's parse does between scrapes; needs --expose-gc)
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { getMetricsFromStream } from 'prom2javascript';
import { PromTextParser, type ParsedMetrics, type WantedFamilies } from '../src/observe/prom-text.ts';
import { SIGNAL_FAMILIES } from '../src/observe/signals.ts';
import { FIXTURES_DIR, fixtureFiles, fixtureVersions } from '../test/observe/fixtures.ts';
import { bigPage } from './big-page.ts';

const TIMED_MS = Number(process.env.BENCH_MS ?? 2000);
const WARMUP_MS = Math.min(1000, TIMED_MS / 2);
/** Chunk size of the streamed input: node's HTTP response chunks are at most 64 KiB. */
const CHUNK = 64 * 1024;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  process.stderr.write('run with --expose-gc (npm run bench) for the memory figures\n');
}
function collect(): void {
  gc?.();
  gc?.();
}

function chunks(bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += CHUNK) out.push(bytes.subarray(at, at + CHUNK));
  return out;
}

/** The streaming path the observer takes: bytes in HTTP-sized chunks, decoded and split by the parser. */
function parseChunks(parts: readonly Buffer[], wanted: WantedFamilies): ParsedMetrics {
  const parser = new PromTextParser(wanted);
  for (const part of parts) parser.feed(part);
  return parser.end();
}

function seriesOf(m: ParsedMetrics): number {
  let n = 0;
  for (const f of m.values()) n += f.samples.length;
  return n;
}

interface Timing {
  runs: number;
  meanMs: number;
  medianMs: number;
  mbPerS: number;
}

function time(bytes: number, fn: () => unknown): Timing {
  const warmEnd = performance.now() + WARMUP_MS;
  while (performance.now() < warmEnd) fn();
  collect();
  const samples: number[] = [];
  const end = performance.now() + TIMED_MS;
  while (performance.now() < end || samples.length < 5) {
    const t0 = performance.now();
    fn();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  const median = samples[Math.floor(samples.length / 2)] ?? mean;
  return { runs: samples.length, meanMs: mean, medianMs: median, mbPerS: bytes / 1e6 / (median / 1000) };
}

interface Memory {
  /** Highest heapUsed above the baseline, sampled after every chunk (GC may run in between: a lower bound of the true peak). */
  peakHeapMiB: number;
  /** heapUsed above the baseline after a full GC with the result still referenced. */
  retainedHeapMiB: number;
  /** rss growth over the whole measurement (the process' high-water mark is only ever reported, never reset). */
  rssGrowthMiB: number;
}

const MiB = 1024 * 1024;

function memory(parts: readonly Buffer[], wanted: WantedFamilies): Memory {
  collect();
  const rss0 = process.memoryUsage().rss;
  const base = process.memoryUsage().heapUsed;
  let peak = 0;
  const parser = new PromTextParser(wanted);
  for (const part of parts) {
    parser.feed(part);
    peak = Math.max(peak, process.memoryUsage().heapUsed - base);
  }
  const result = parser.end();
  peak = Math.max(peak, process.memoryUsage().heapUsed - base);
  collect();
  const retained = process.memoryUsage().heapUsed - base;
  const rss = process.memoryUsage().rss - rss0;
  // Keep `result` alive until after the measurement above.
  if (result.size < 0) process.stdout.write('');
  return { peakHeapMiB: peak / MiB, retainedHeapMiB: retained / MiB, rssGrowthMiB: rss / MiB };
}

const rows: string[] = [];
const versions = fixtureVersions().filter((v) => fixtureFiles(v, /^metrics\.txt$/).length > 0);
if (versions.length === 0) throw new Error(`no ${FIXTURES_DIR}/<version>/metrics.txt fixtures`);
/** The grown page: v1.36.3's (else the last captured version's), its `resource` series repeated for more resources (bench/big-page.ts). */
const BIG_MB = Number(process.env.BENCH_BIG_MB ?? 20.8);
const grownFrom = versions.includes('v1.36.3') ? 'v1.36.3' : versions.at(-1)!;
const PAGES: { name: string; bytes: Buffer; rounds?: number }[] = [
  ...versions.map((v) => ({ name: v, bytes: readFileSync(`${FIXTURES_DIR}/${v}/metrics.txt`) })),
  ...(BIG_MB > 0 ? [{ name: `${grownFrom} grown`, bytes: bigPage(`${FIXTURES_DIR}/${grownFrom}/metrics.txt`, BIG_MB * 1e6), rounds: Number(process.env.BENCH_BIG_ROUNDS ?? 15) }] : []),
];
process.stdout.write(`node ${process.version}, ${TIMED_MS} ms timed per case after ${WARMUP_MS} ms warm-up, ${CHUNK / 1024} KiB chunks\n\n`);
for (const { name: version, bytes } of PAGES) {
  const parts = chunks(bytes);
  for (const [label, wanted] of [['signal families', SIGNAL_FAMILIES], ['all', 'all']] as const) {
    const once = parseChunks(parts, wanted);
    const mem = memory(parts, wanted);
    const t = time(bytes.length, () => parseChunks(parts, wanted));
    rows.push(`| ${version} | ${(bytes.length / 1e6).toFixed(2)} MB | ${label} | ${once.size} | ${seriesOf(once)} | ${t.medianMs.toFixed(2)} | ${t.mbPerS.toFixed(0)} | ${mem.peakHeapMiB.toFixed(1)} | ${mem.retainedHeapMiB.toFixed(2)} | ${t.runs} |`);
    process.stdout.write(`${rows.at(-1)}\n`);
  }
}
process.stdout.write(`\n| page | size | families kept | families | series | median ms | MB/s | peak heap MiB | retained heap MiB | runs |\n|---|---|---|---|---|---|---|---|---|---|\n${rows.join('\n')}\n`);

// ---- Side by side with the npm parsers --------------------------------------------------------------------
// Every parser gets the page as the same 64 KiB Buffer chunks. parse-prometheus-text-format only takes one
// string: the chunks are decoded (streaming TextDecoder) and joined first, which is part of its time.
// prom2javascript streams: its getMetricsFromStream reads them through readline. Neither can skip families,
// so both parse everything; ours is timed asking for the signal families and for 'all'.
// Rounds are interleaved (each round runs every case once, in a rotating order), so load from other work on
// the machine falls on every case alike; each parse is timed in CPU time (process.cpuUsage, user + system:
// GC included), and the median per case is compared.

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);
/** Each parse from a collected heap (BENCH_COLD=1): no parse pays for the garbage of the one before it. */
const COLD = process.env.BENCH_COLD === '1';
if (COLD && !gc) {
  process.stderr.write('BENCH_COLD=1 needs --expose-gc (npm run bench)\n');
  process.exit(2);
}

interface Case {
  name: string;
  run(parts: readonly Buffer[]): unknown;
}

function joined(parts: readonly Buffer[]): string {
  const d = new TextDecoder();
  let s = '';
  for (const p of parts) s += d.decode(p, { stream: true });
  return s + d.decode();
}

const CASES: readonly Case[] = [
  { name: 'ours, signal families', run: (parts) => parseChunks(parts, SIGNAL_FAMILIES) },
  { name: 'ours, all', run: (parts) => parseChunks(parts, 'all') },
  { name: 'parse-prometheus-text-format 1.1.1', run: (parts) => parsePrometheusTextFormat(joined(parts)) },
  { name: 'prom2javascript 0.2.0', run: (parts) => getMetricsFromStream(Readable.from(parts)) },
];

async function cpuMs(fn: () => unknown): Promise<number> {
  const c0 = process.cpuUsage();
  await fn();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const peerRows: string[] = [];
const ratioRows: string[] = [];
process.stdout.write(`\nside by side: ${ROUNDS} interleaved rounds (the grown page: ${PAGES.at(-1)?.rounds ?? ROUNDS}), CPU time per parse, median${COLD ? ', each parse from a collected heap' : ''}\n`);
for (const { name: version, bytes, rounds } of PAGES) {
  const parts = chunks(bytes);
  const failed = new Map<string, string>();
  const samples = new Map<string, number[]>(CASES.map((c) => [c.name, []]));
  // Warm-up: a few runs of each (JIT), and each peer's failure, if any, found before timing.
  for (const c of CASES) {
    for (let i = 0; i < 5 && !failed.has(c.name); i++) {
      try {
        await c.run(parts);
      } catch (err) {
        failed.set(c.name, err instanceof Error ? err.message.slice(0, 80) : String(err));
      }
    }
  }
  for (let r = 0; r < (rounds ?? ROUNDS); r++) {
    for (let i = 0; i < CASES.length; i++) {
      const c = CASES[(i + r) % CASES.length]!;
      if (failed.has(c.name)) continue;
      // The forced GC leaves sweeping to helper threads, whose CPU time the next parse would count: let it finish.
      if (COLD) {
        collect();
        await new Promise((r) => setTimeout(r, 50));
      }
      samples.get(c.name)!.push(await cpuMs(() => c.run(parts)));
    }
  }
  const med = new Map([...samples].filter(([n]) => !failed.has(n)).map(([n, xs]) => [n, median(xs)]));
  for (const c of CASES) {
    const m = med.get(c.name);
    peerRows.push(`| ${version}, ${(bytes.length / 1e6).toFixed(2)} MB | ${c.name} | ${m === undefined ? `throws: ${failed.get(c.name)}` : m.toFixed(2)} | ${m === undefined ? '–' : (bytes.length / 1e6 / (m / 1000)).toFixed(0)} |`);
    process.stdout.write(`${peerRows.at(-1)}\n`);
  }
  const peers = CASES.slice(2).flatMap((c) => (med.has(c.name) ? [{ name: c.name, ms: med.get(c.name)! }] : []));
  const fastest = peers.sort((a, b) => a.ms - b.ms)[0];
  if (fastest) {
    const sig = fastest.ms / med.get(CASES[0]!.name)!;
    const all = fastest.ms / med.get(CASES[1]!.name)!;
    ratioRows.push(`| ${version}, ${(bytes.length / 1e6).toFixed(2)} MB | ${fastest.name} | ${sig.toFixed(1)}x | ${all.toFixed(1)}x |`);
    process.stdout.write(`${ratioRows.at(-1)}\n`);
  }
}
process.stdout.write(`\n| page | parser | median CPU ms per parse | MB/s (CPU) |\n|---|---|---|---|\n${peerRows.join('\n')}\n`);
process.stdout.write(`\n| page | faster peer | ours (signal families) vs it | ours (all) vs it |\n|---|---|---|---|\n${ratioRows.join('\n')}\n`);
