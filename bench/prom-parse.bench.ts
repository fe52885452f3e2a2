// Benchmark of the streaming /metrics parser (src/observe/prom-text.ts) over the captured kube-apiserver
// pages in test/fixtures/<version>/metrics.txt: throughput when keeping only SIGNAL_FAMILIES vs 'all', and
// the heap it needs. Method and results: bench/README.md.
//   npm run bench            (node --expose-gc bench/prom-parse.bench.ts)
//   BENCH_MS=5000 npm run bench   (longer timed runs)
import { readFileSync } from 'node:fs';
import { PromTextParser, type ParsedMetrics, type WantedFamilies } from '../src/observe/prom-text.ts';
import { SIGNAL_FAMILIES } from '../src/observe/signals.ts';
import { FIXTURES_DIR, fixtureFiles, fixtureVersions } from '../test/observe/fixtures.ts';

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
process.stdout.write(`node ${process.version}, ${TIMED_MS} ms timed per case after ${WARMUP_MS} ms warm-up, ${CHUNK / 1024} KiB chunks\n\n`);
for (const version of versions) {
  const bytes = readFileSync(`${FIXTURES_DIR}/${version}/metrics.txt`);
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
