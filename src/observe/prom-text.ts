/**
 * A streaming parser for the Prometheus text exposition format 0.0.4, tolerant of the OpenMetrics
 * bits a scraper may meet (exemplars after a sample, `# EOF`).
 *
 * A kube-apiserver's /metrics page is several megabytes and we need a handful of families, so
 * the parser only builds objects for the families it is asked for: every other line is
 * recognised by its metric name and dropped. Lines of skipped families are therefore not
 * validated beyond their name; pass `'all'` to validate (and keep) everything.
 */

import { TextDecoder } from 'node:util';

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped' | 'gaugehistogram' | 'info' | 'stateset' | 'unknown';

export type Labels = Record<string, string>;

export interface Sample {
  /** The sample's own name, suffix included (`foo_bucket`, `foo_sum`, ...). */
  name: string;
  labels: Labels;
  value: number;
  /** As written: milliseconds in 0.0.4, seconds in OpenMetrics. */
  timestamp?: number;
}

export interface MetricFamily {
  name: string;
  type: MetricType;
  help: string;
  samples: Sample[];
}

/** Family name -> family, in the order families were first seen. */
export type ParsedMetrics = Map<string, MetricFamily>;

/** Which families to keep: a set of family names (as in `# TYPE <name>`), or all of them. */
export type WantedFamilies = ReadonlySet<string> | 'all';

export type ChunkSource = AsyncIterable<string | Uint8Array> | ReadableStream<string | Uint8Array>;

export class PromParseError extends Error {
  readonly line: number;
  constructor(line: number, message: string) {
    super(`metrics text line ${line}: ${message}`);
    this.name = 'PromParseError';
    this.line = line;
  }
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped', 'gaugehistogram', 'info', 'stateset', 'unknown']);

// Which sample-name suffixes belong to a family of each type (OpenMetrics adds _total/_created/_info).
const SUFFIXES: Readonly<Record<MetricType, readonly string[]>> = {
  counter: ['_total', '_created'],
  gauge: [],
  untyped: [],
  unknown: [],
  stateset: [],
  info: ['_info'],
  histogram: ['_bucket', '_sum', '_count', '_created'],
  gaugehistogram: ['_bucket', '_gsum', '_gcount'],
  summary: ['_sum', '_count', '_created'],
};

function isNameStart(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 58; // A-Z a-z _ :
}
function isNameChar(c: number): boolean {
  return isNameStart(c) || (c >= 48 && c <= 57);
}
function isLabelNameChar(c: number): boolean {
  return c !== 58 && isNameChar(c); // label names may not contain ':'
}
function isBlank(c: number): boolean {
  return c === 32 || c === 9;
}

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const HEX = /^[+-]?0[xX][0-9a-fA-F]+$/;

/** Parses a sample value or timestamp the way Go's strconv.ParseFloat reads what exporters write. */
export function parsePromNumber(token: string): number | undefined {
  if (DECIMAL.test(token)) return Number(token);
  const lower = token.toLowerCase();
  if (lower === 'nan' || lower === '+nan' || lower === '-nan') return NaN;
  if (lower === '+inf' || lower === 'inf' || lower === '+infinity' || lower === 'infinity') return Infinity;
  if (lower === '-inf' || lower === '-infinity') return -Infinity;
  if (HEX.test(token)) return Number.parseInt(token, 16);
  return undefined;
}

/**
 * The incremental parser: feed it complete lines (`line`), or raw chunks through
 * `PromTextParser.feed`/`end`, then read `result()`.
 */
export class PromTextParser {
  private readonly wanted: WantedFamilies;
  private readonly families: ParsedMetrics = new Map();
  /** Every family declared by a TYPE line, wanted or not: needed to attribute suffixed samples. */
  private readonly declared = new Map<string, MetricType>();
  private readonly helpSeen = new Set<string>();
  private readonly seenFamilies = new Set<string>();
  /** The family the last HELP/TYPE line opened, and whether it is kept (asked once, not per sample line). */
  private current: { name: string; type: MetricType; wanted: boolean } | undefined;
  private lineNo = 0;
  private eof = false;
  private pending = '';
  private decoder: TextDecoder | undefined;
  private sampleLines = 0;
  /** The label names of the last label set parsed, by position. */
  private readonly labelNames: string[] = [];

  constructor(wanted: WantedFamilies) {
    this.wanted = wanted;
  }

  /** Accepts a chunk of text or bytes; lines and UTF-8 sequences may be split across chunks. */
  feed(chunk: string | Uint8Array): void {
    let text: string;
    if (typeof chunk === 'string') {
      text = chunk;
    } else {
      this.decoder ??= new TextDecoder('utf-8');
      text = this.decoder.decode(chunk, { stream: true });
    }
    if (text.length === 0) return;
    let start = 0;
    let nl = text.indexOf('\n');
    if (nl === -1) {
      this.pending += text;
      return;
    }
    // The first line of this chunk completes whatever the previous chunk left over.
    this.line(this.pending + text.slice(0, nl));
    this.pending = '';
    start = nl + 1;
    while ((nl = text.indexOf('\n', start)) !== -1) {
      this.line(text.slice(start, nl));
      start = nl + 1;
    }
    this.pending = text.slice(start);
  }

  /** Flushes a last line that had no trailing newline. */
  end(): ParsedMetrics {
    if (this.decoder) this.pending += this.decoder.decode();
    if (this.pending.length > 0) {
      this.line(this.pending);
      this.pending = '';
    }
    return this.families;
  }

  result(): ParsedMetrics {
    return this.families;
  }

  /** How many sample lines were seen, kept or not (for cross-checking against other counts). */
  get sampleLineCount(): number {
    return this.sampleLines;
  }

  /** Names of every family seen (declared by HELP/TYPE or implied by a sample), kept or not. */
  get familyNamesSeen(): ReadonlySet<string> {
    return this.seenFamilies;
  }

  line(raw: string): void {
    this.lineNo++;
    if (this.eof) return;
    const line = raw.charCodeAt(raw.length - 1) === 13 ? raw.slice(0, -1) : raw;
    let i = 0;
    while (i < line.length && isBlank(line.charCodeAt(i))) i++;
    if (i === line.length) return;
    if (line.charCodeAt(i) === 35 /* # */) {
      this.comment(line, i + 1);
      return;
    }
    this.sample(line, i);
  }

  private wants(name: string): boolean {
    return this.wanted === 'all' || this.wanted.has(name);
  }

  private fail(message: string): never {
    throw new PromParseError(this.lineNo, message);
  }

  private comment(line: string, from: number): void {
    let i = from;
    while (i < line.length && isBlank(line.charCodeAt(i))) i++;
    const keywordEnd = scanUntilBlank(line, i);
    const keyword = line.slice(i, keywordEnd);
    if (keyword === 'EOF') {
      this.eof = true;
      return;
    }
    if (keyword !== 'HELP' && keyword !== 'TYPE') return; // any other comment is allowed
    i = keywordEnd;
    while (i < line.length && isBlank(line.charCodeAt(i))) i++;
    const nameEnd = scanName(line, i);
    if (nameEnd === i) this.fail(`${keyword} line without a metric name`);
    const name = line.slice(i, nameEnd);
    if (nameEnd < line.length && !isBlank(line.charCodeAt(nameEnd))) this.fail(`invalid metric name in ${keyword} line`);
    i = nameEnd;
    while (i < line.length && isBlank(line.charCodeAt(i))) i++;
    const rest = line.slice(i);
    this.seenFamilies.add(name);

    if (keyword === 'TYPE') {
      const type = rest.trimEnd().toLowerCase();
      if (!KNOWN_TYPES.has(type)) this.fail(`unknown metric type "${rest}" for ${name}`);
      const previous = this.declared.get(name);
      if (previous !== undefined) this.fail(`second TYPE line for ${name}`);
      this.declared.set(name, type as MetricType);
      this.current = { name, type: type as MetricType, wanted: this.wants(name) };
      if (this.wants(name)) {
        const family = this.family(name);
        if (family.samples.length > 0) this.fail(`TYPE line for ${name} after its samples`);
        family.type = type as MetricType;
      }
      return;
    }
    // HELP: also opens the family, since HELP conventionally precedes TYPE.
    if (this.helpSeen.has(name)) this.fail(`second HELP line for ${name}`);
    this.helpSeen.add(name);
    if (this.current?.name !== name) this.current = { name, type: this.declared.get(name) ?? 'untyped', wanted: this.wants(name) };
    if (this.wants(name)) this.family(name).help = unescapeHelp(rest);
  }

  private family(name: string): MetricFamily {
    let family = this.families.get(name);
    if (!family) {
      family = { name, type: this.declared.get(name) ?? 'untyped', help: '', samples: [] };
      this.families.set(name, family);
    }
    return family;
  }

  /** Which family a sample belongs to: the open family if the name fits it, else a declared one, else its own. */
  private familyOf(sampleName: string): string {
    const current = this.current;
    if (current && belongsTo(sampleName, current.name, current.type)) return current.name;
    if (this.declared.has(sampleName)) return sampleName;
    for (const suffix of ['_bucket', '_sum', '_count', '_total', '_created', '_gsum', '_gcount', '_info']) {
      if (!sampleName.endsWith(suffix)) continue;
      const base = sampleName.slice(0, -suffix.length);
      const type = this.declared.get(base);
      if (type !== undefined && SUFFIXES[type].includes(suffix)) return base;
    }
    return sampleName;
  }

  private sample(line: string, from: number): void {
    this.sampleLines++;
    const current = this.current;
    // The cheapest path, most lines of a page: a sample of the open family, which is not kept. Its name is
    // compared in place (no substring, no lookup); the family was recorded as seen by its HELP/TYPE line.
    let name: string | undefined;
    let nameEnd = from;
    let familyName: string | undefined;
    if (current !== undefined && line.startsWith(current.name, from)) {
      const after = from + current.name.length;
      if (after >= line.length || !isNameChar(line.charCodeAt(after))) {
        if (!current.wanted) return;
        name = familyName = current.name;
        nameEnd = after;
      } else {
        nameEnd = scanName(line, after);
        if (SUFFIXES[current.type].includes(line.slice(after, nameEnd))) {
          if (!current.wanted) return;
          name = line.slice(from, nameEnd);
          familyName = current.name;
        }
      }
    }
    if (name === undefined || familyName === undefined) {
      nameEnd = scanName(line, from);
      if (nameEnd === from) this.fail(`expected a metric name, got "${line.slice(from, from + 20)}"`);
      name = line.slice(from, nameEnd);
      familyName = this.familyOf(name);
      if (familyName !== current?.name) this.seenFamilies.add(familyName);
      if (!this.wants(familyName)) return; // the cheap path: nothing else is looked at
    }

    let i = nameEnd;
    const labels: Labels = {};
    // Label values rarely hold escapes: without a backslash on the line, each value is one indexOf and one slice.
    if (i < line.length && line.charCodeAt(i) === 123 /* { */) i = this.labels(line, i + 1, labels, line.indexOf('\\', i) === -1);
    if (i >= line.length || !isBlank(line.charCodeAt(i))) this.fail(`expected a space before the value of ${name}`);
    while (i < line.length && isBlank(line.charCodeAt(i))) i++;
    const valueEnd = scanUntilBlank(line, i);
    const value = parsePromNumber(line.slice(i, valueEnd));
    if (value === undefined) this.fail(`invalid value "${line.slice(i, valueEnd)}" for ${name}`);
    i = valueEnd;
    while (i < line.length && isBlank(line.charCodeAt(i))) i++;
    let timestamp: number | undefined;
    if (i < line.length && line.charCodeAt(i) !== 35) {
      const tsEnd = scanUntilBlank(line, i);
      timestamp = parsePromNumber(line.slice(i, tsEnd));
      if (timestamp === undefined || !Number.isFinite(timestamp)) this.fail(`invalid timestamp "${line.slice(i, tsEnd)}" for ${name}`);
      i = tsEnd;
      while (i < line.length && isBlank(line.charCodeAt(i))) i++;
    }
    if (i < line.length) {
      // Only an OpenMetrics exemplar may follow: ` # {labels} value [timestamp]`. Checked, then dropped.
      if (line.charCodeAt(i) !== 35) this.fail(`unexpected text after the value of ${name}`);
      i++;
      while (i < line.length && isBlank(line.charCodeAt(i))) i++;
      if (line.charCodeAt(i) !== 123) this.fail(`malformed exemplar after ${name}`);
      this.labels(line, i + 1, {});
    }

    const sample: Sample = { name, labels, value };
    if (timestamp !== undefined) sample.timestamp = timestamp;
    this.family(familyName).samples.push(sample);
  }

  /** Parses `name="value",...}` starting after `{`; returns the index after `}`. */
  private labels(line: string, from: number, into: Labels, noEscapes = false): number {
    let i = from;
    let k = 0; // labels stored so far
    for (;;) {
      while (i < line.length && isBlank(line.charCodeAt(i))) i++;
      if (i >= line.length) this.fail('unterminated label set');
      if (line.charCodeAt(i) === 125 /* } */) return i + 1;
      const nameStart = i;
      if (!isNameStart(line.charCodeAt(i)) || line.charCodeAt(i) === 58) this.fail(`invalid label name at column ${i + 1}`);
      while (i < line.length && isLabelNameChar(line.charCodeAt(i))) i++;
      // The k-th label name of a line is nearly always the previous line's: reuse that string (no new
      // substring to hash and internalize as a property key).
      const prev = this.labelNames[k];
      let labelName: string;
      if (prev !== undefined && prev.length === i - nameStart && line.startsWith(prev, nameStart)) labelName = prev;
      else this.labelNames[k] = labelName = line.slice(nameStart, i);
      while (i < line.length && isBlank(line.charCodeAt(i))) i++;
      if (line.charCodeAt(i) !== 61 /* = */) this.fail(`expected "=" after label ${labelName}`);
      i++;
      while (i < line.length && isBlank(line.charCodeAt(i))) i++;
      if (line.charCodeAt(i) !== 34 /* " */) this.fail(`expected a quoted value for label ${labelName}`);
      i++;
      let value = '';
      let chunkStart = i;
      if (noEscapes) {
        const q = line.indexOf('"', i);
        if (q === -1) this.fail(`unterminated value for label ${labelName}`);
        chunkStart = i;
        i = q;
      } else for (;;) {
        if (i >= line.length) this.fail(`unterminated value for label ${labelName}`);
        const c = line.charCodeAt(i);
        if (c === 34) break;
        if (c === 92 /* \ */) {
          value += line.slice(chunkStart, i);
          const next = line.charCodeAt(i + 1);
          if (next === 92) value += '\\';
          else if (next === 34) value += '"';
          else if (next === 110) value += '\n';
          else this.fail(`invalid escape "\\${line.charAt(i + 1)}" in label ${labelName}`);
          i += 2;
          chunkStart = i;
          continue;
        }
        i++;
      }
      value += line.slice(chunkStart, i);
      i++; // closing quote
      if (Object.hasOwn(into, labelName)) this.fail(`duplicate label ${labelName}`);
      into[labelName] = value;
      k++;
      while (i < line.length && isBlank(line.charCodeAt(i))) i++;
      const sep = line.charCodeAt(i);
      if (sep === 44 /* , */) {
        i++;
        continue;
      }
      if (sep === 125) return i + 1;
      this.fail(`expected "," or "}" after label ${labelName}`);
    }
  }
}

function belongsTo(sampleName: string, familyName: string, type: MetricType): boolean {
  if (sampleName === familyName) return true;
  if (!sampleName.startsWith(familyName)) return false;
  return SUFFIXES[type].includes(sampleName.slice(familyName.length));
}

function scanName(line: string, from: number): number {
  if (from >= line.length || !isNameStart(line.charCodeAt(from))) return from;
  let i = from + 1;
  while (i < line.length && isNameChar(line.charCodeAt(i))) i++;
  return i;
}

function scanUntilBlank(line: string, from: number): number {
  let i = from;
  while (i < line.length && !isBlank(line.charCodeAt(i))) i++;
  return i;
}

function unescapeHelp(text: string): string {
  return text.replace(/\\([\\n])/g, (_m, c: string) => (c === 'n' ? '\n' : '\\'));
}

/** Parses a whole page held in memory. */
export function parsePromText(text: string, wanted: WantedFamilies): ParsedMetrics {
  const parser = new PromTextParser(wanted);
  parser.feed(text);
  return parser.end();
}

/** Parses a page as it arrives: an HTTP response body, a web ReadableStream, any async chunk source. */
export async function parsePromStream(source: ChunkSource, wanted: WantedFamilies): Promise<ParsedMetrics> {
  const parser = new PromTextParser(wanted);
  // Node's web ReadableStream is async-iterable too, so one loop serves both kinds of source.
  for await (const chunk of source) parser.feed(chunk);
  return parser.end();
}

/**
 * Counts families (distinct names declared or implied) and sample lines over the whole text,
 * validating every line. Lets a test cross-check the parser against a plain line count.
 */
export function countFamiliesAndSeries(text: string): { families: number; series: number } {
  const parser = new PromTextParser('all');
  parser.feed(text);
  const families = parser.end();
  let series = 0;
  for (const family of families.values()) series += family.samples.length;
  return { families: parser.familyNamesSeen.size, series };
}

/** A canonical key for a label set (sorted, escaped), optionally leaving some labels out. */
export function labelKey(labels: Labels, exclude?: ReadonlySet<string>): string {
  const names = Object.keys(labels)
    .filter((n) => !exclude?.has(n))
    .sort();
  return names.map((n) => `${n}=${JSON.stringify(labels[n])}`).join(',');
}

export function withoutLabels(labels: Labels, exclude: ReadonlySet<string>): Labels {
  const out: Labels = {};
  for (const [k, v] of Object.entries(labels)) if (!exclude.has(k)) out[k] = v;
  return out;
}

export interface HistogramBucket {
  /** Upper bound, +Inf for the last bucket. */
  le: number;
  /** Cumulative count of observations <= le. */
  count: number;
}

export interface HistogramSeries {
  /** The series' labels without `le`. */
  labels: Labels;
  /** Sorted by `le`, ascending. */
  buckets: HistogramBucket[];
  /** NaN when the page carried no `_sum`. */
  sum: number;
  /** From `_count`; falls back to the +Inf bucket when `_count` is missing. */
  count: number;
}

const LE = new Set(['le']);

/** Groups a histogram family's samples into one series per label set (labelled histograms stay separate). */
export function histograms(family: MetricFamily): HistogramSeries[] {
  const byKey = new Map<string, HistogramSeries & { hasCount: boolean }>();
  const get = (labels: Labels) => {
    const key = labelKey(labels, LE);
    let series = byKey.get(key);
    if (!series) {
      series = { labels: withoutLabels(labels, LE), buckets: [], sum: NaN, count: NaN, hasCount: false };
      byKey.set(key, series);
    }
    return series;
  };
  for (const s of family.samples) {
    const suffix = s.name.slice(family.name.length);
    if (suffix === '_bucket') {
      const le = parsePromNumber(s.labels.le ?? '');
      if (le === undefined || Number.isNaN(le)) throw new Error(`histogram ${family.name}: bucket without a valid "le" label`);
      get(s.labels).buckets.push({ le, count: s.value });
    } else if (suffix === '_sum') {
      get(s.labels).sum = s.value;
    } else if (suffix === '_count') {
      const series = get(s.labels);
      series.count = s.value;
      series.hasCount = true;
    }
  }
  const out: HistogramSeries[] = [];
  for (const { hasCount, ...series } of byKey.values()) {
    series.buckets.sort((a, b) => a.le - b.le);
    if (!hasCount) series.count = series.buckets.at(-1)?.le === Infinity ? (series.buckets.at(-1)?.count ?? NaN) : NaN;
    out.push(series);
  }
  return out;
}
