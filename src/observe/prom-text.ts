/**
 * A streaming parser for the Prometheus text exposition format 0.0.4, tolerant of the OpenMetrics
 * bits a scraper may meet (exemplars after a sample, `# EOF`).
 *
 * A kube-apiserver's /metrics page is several megabytes and we need a handful of families, so
 * the parser only builds objects for the families it is asked for: every other line is
 * recognised by its metric name and dropped. Lines of skipped families are therefore not
 * validated beyond their name; pass `'all'` to validate (and keep) everything.
 */

import { isAscii } from 'node:buffer';
import { TextDecoder } from 'node:util';
import { BodyCapExceeded } from '../runtime/body-limits.ts';

/**
 * Caps of one page (src/runtime/body-limits.ts gives the operator's): counted as the text arrives, so a page over
 * one throws a BodyCapExceeded before it fills memory. Absent: unbounded (tests, fixtures).
 */
export interface PromLimits {
  /** Bytes (or characters, for text chunks) of the whole page. */
  maxBytes?: number;
  /** One line, counted while it is still unfinished: a line split over many chunks is refused before it is joined. */
  maxLineBytes?: number;
  /** Samples kept (of the wanted families). */
  maxKeptSamples?: number;
  /** Characters of the kept sample lines (their label values stay in memory). */
  maxKeptBytes?: number;
}

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
 * `parsePromNumber(text.slice(from, to))`, without the substring for the common case: an optionally
 * signed integer of at most 15 digits (exact in a double, so the same number `Number()` gives). Anything
 * else (a fraction, an exponent, more digits, NaN, Inf, hex) goes to `parsePromNumber`.
 */
export function parsePromNumberAt(text: string, from: number, to: number): number | undefined {
  let i = from;
  const first = text.charCodeAt(i);
  if (first === 45 /* - */ || first === 43 /* + */) i++;
  if (i < to && to - i <= 15) {
    let n = 0;
    for (; i < to; i++) {
      const d = text.charCodeAt(i) - 48;
      if (d < 0 || d > 9) break;
      n = n * 10 + d;
    }
    if (i === to) return first === 45 ? -n : n;
  }
  return parsePromNumber(text.slice(from, to));
}

/** The family the last HELP/TYPE line named: its sample lines are recognised in place. */
interface OpenFamily {
  name: string;
  type: MetricType;
  wanted: boolean;
  /** The family's entry in the result when it is wanted. */
  family: MetricFamily | undefined;
  /** The sample-name suffixes of its type, and the full sample names they make (one string shared by every sample). */
  suffixes: readonly string[];
  sampleNames: readonly string[];
  /** The name's and the suffixes' bytes as words (`wordsOf`), to compare against an ASCII chunk's bytes. */
  nameWords: readonly number[];
  suffixWords: readonly (readonly number[])[];
}

/** Four characters of an ASCII string from `k`, as the little-endian int32 their bytes make. */
function wordAt(name: string, k: number): number {
  return name.charCodeAt(k) | (name.charCodeAt(k + 1) << 8) | (name.charCodeAt(k + 2) << 16) | (name.charCodeAt(k + 3) << 24);
}

/**
 * An ASCII name's bytes four at a time, as little-endian int32 (metric and label names are ASCII by the
 * grammar): every whole word, then, when the length is not a multiple of 4, the name's last four bytes
 * (overlapping the word before). Empty for names shorter than 4.
 */
function wordsOf(name: string): number[] {
  const words: number[] = [];
  const n = name.length;
  if (n < 4) return words;
  for (let k = 0; k + 4 <= n; k += 4) words.push(wordAt(name, k));
  if (n % 4 !== 0) words.push(wordAt(name, n - 4));
  return words;
}

/**
 * Whether the bytes at `at` spell `name` (`words`: `wordsOf(name)`): four bytes at a time. Several times
 * faster than `String.prototype.startsWith`, which V8 runs a character at a time, for the 30-70 character
 * metric names of a page.
 */
function nameAt(bytes: DataView, at: number, name: string, words: readonly number[]): boolean {
  const n = name.length;
  if (at + n > bytes.byteLength) return false;
  if (n < 4) {
    for (let k = 0; k < n; k++) if (bytes.getUint8(at + k) !== name.charCodeAt(k)) return false;
    return true;
  }
  const last = words.length - 1;
  for (let w = 0; w < last; w++) if (bytes.getInt32(at + 4 * w, true) !== words[w]) return false;
  return bytes.getInt32(at + n - 4, true) === words[last];
}

/**
 * The incremental parser: feed it complete lines (`line`), or raw chunks through
 * `PromTextParser.feed`/`end`, then read `result()`.
 *
 * Lines are parsed in place, as offsets into the decoded chunk: no substring per line. A line's metric
 * and label names are compared against the open family's and the previous line's: on the chunk's bytes
 * when the chunk is ASCII (a string index is then a byte index), else with `startsWith` on the text.
 */
export class PromTextParser {
  private readonly wanted: WantedFamilies;
  private readonly families: ParsedMetrics = new Map();
  /** Every family declared by a TYPE line, wanted or not: needed to attribute suffixed samples. */
  private readonly declared = new Map<string, MetricType>();
  private readonly helpSeen = new Set<string>();
  private readonly seenFamilies = new Set<string>();
  /** The family the last HELP/TYPE line opened, and whether it is kept (asked once, not per sample line). */
  private current: OpenFamily | undefined;
  private lineNo = 0;
  /** Where the line being parsed starts in its text (for columns in messages). */
  private lineStart = 0;
  private eof = false;
  private pending = '';
  private decoder: TextDecoder | undefined;
  private sampleLines = 0;
  /** The label names of the last label set parsed, by position, and their bytes. */
  private readonly labelNames: string[] = [];
  private readonly labelNameWords: number[][] = [];
  /** The values of the last label set parsed, by position: a value spelled the same is that string again. */
  private readonly labelValues: string[] = [];
  /** Where each of those values starts in the text they were read from (`valuesText`: its `textNo`); -1: not known. */
  private readonly labelValueStarts: number[] = [];
  private valuesText = -1;
  /** Counts the texts parsed (each run of lines, each line parsed on its own): tells whether two positions are in the same one. */
  private textNo = 0;
  /** How many labels the last label set parsed had, and whether its names were the label set's before it, in order. */
  private labelCount = 0;
  private sameNames = false;
  /** The positions whose value is not the previous label set's string, and how many (the first `changedCount`). */
  private readonly changed: number[] = [];
  private changedCount = 0;
  /**
   * The labels object of the last kept sample, while `labelNames`/`labelValues` are its: a line with the same
   * label names copies it (one allocation of the right size) and sets only the values that differ.
   */
  private lastLabels: Labels | undefined;
  /** The bytes of the text being parsed when they are all ASCII (index i of the text is byte i), else undefined. */
  private view: DataView | undefined;
  /**
   * The first backslash at or after the last position asked for, in the text being parsed (Infinity: none
   * left); -1 when not looked for yet in this text. Lets a line ask "any escape before my end?" without
   * searching past its end each time.
   */
  private backslash = -1;

  private readonly limits: PromLimits;
  private fed = 0;
  private kept = 0;
  private keptBytes = 0;
  /** The bytes of an unfinished last line, in pieces, and their length: joined once, when its newline arrives. */
  private pendingParts: Uint8Array[] = [];
  private pendingLength = 0;

  constructor(wanted: WantedFamilies, limits: PromLimits = {}) {
    this.wanted = wanted;
    this.limits = limits;
  }

  /** The unfinished line's bytes, joined (linear: each piece is copied once). */
  private takePendingBytes(): Uint8Array | undefined {
    if (this.pendingParts.length === 0) return undefined;
    const out = this.pendingParts.length === 1 ? this.pendingParts[0]! : concatAll(this.pendingParts, this.pendingLength);
    this.pendingParts = [];
    this.pendingLength = 0;
    return out;
  }

  private checkLine(length: number): void {
    const max = this.limits.maxLineBytes;
    if (max !== undefined && length > max) throw new BodyCapExceeded('lineBytes', max, 'metrics page');
  }

  /**
   * Accepts a chunk of text or bytes; lines and UTF-8 sequences may be split across chunks.
   *
   * Bytes are decoded a run of whole lines at a time: the line the previous chunk left unfinished, completed,
   * then every line up to the chunk's last newline (the rest waits for the next chunk). An ASCII run's
   * bytes then line up with its text. A newline byte is never part of a multi-byte sequence, and the
   * streaming decoder gives the same text however its input is cut.
   */
  feed(chunk: string | Uint8Array): void {
    this.fed += chunk.length;
    if (this.limits.maxBytes !== undefined && this.fed > this.limits.maxBytes) throw new BodyCapExceeded('bytes', this.limits.maxBytes, 'metrics page');
    if (typeof chunk === 'string') {
      const bytes = this.takePendingBytes();
      if (bytes !== undefined) this.pending += this.decode(bytes);
      this.view = undefined;
      this.text(chunk);
      return;
    }
    const firstNl = chunk.indexOf(10);
    if (firstNl === -1) {
      this.checkLine(this.pending.length + this.pendingLength + chunk.length);
      this.pendingParts.push(chunk.slice());
      this.pendingLength += chunk.length;
      return;
    }
    let from = 0;
    if (this.pendingParts.length > 0 || this.pending.length > 0) {
      this.checkLine(this.pending.length + this.pendingLength + firstNl);
      // Decoded with its newline, which ends any unfinished sequence before it, as it would in one piece.
      const head = chunk.subarray(0, firstNl + 1);
      if (this.pendingParts.length > 0) {
        this.pendingParts.push(head);
        this.pendingLength += head.length;
      }
      const text = this.pending + this.decode(this.takePendingBytes() ?? head);
      this.pending = '';
      this.line(text.slice(0, -1));
      from = firstNl + 1;
    }
    const lastNl = chunk.lastIndexOf(10);
    if (lastNl >= from) {
      const run = chunk.subarray(from, lastNl + 1);
      this.view = isAscii(run) ? new DataView(run.buffer, run.byteOffset, run.byteLength) : undefined;
      this.text(this.decode(run));
      this.view = undefined;
    }
    if (lastNl + 1 < chunk.length) {
      this.checkLine(chunk.length - lastNl - 1);
      this.pendingParts.push(chunk.slice(lastNl + 1));
      this.pendingLength = chunk.length - lastNl - 1;
    }
  }

  private decode(bytes: Uint8Array): string {
    this.decoder ??= new TextDecoder('utf-8');
    return this.decoder.decode(bytes, { stream: true });
  }

  /** Parses the complete lines of `text` (after what is pending), and keeps its unfinished last line. */
  private text(text: string): void {
    this.textNo++;
    if (text.length === 0) return;
    let nl = text.indexOf('\n');
    if (nl === -1) {
      this.checkLine(this.pending.length + text.length);
      this.pending += text;
      return;
    }
    this.backslash = -1;
    // The first line of this text completes whatever the previous chunk left over.
    if (this.pending.length > 0) {
      const first = this.pending + text.slice(0, nl);
      this.pending = '';
      this.line(first);
      this.backslash = -1;
    } else {
      this.lineAt(text, 0, nl);
    }
    let start = nl + 1;
    while ((nl = text.indexOf('\n', start)) !== -1) {
      this.lineAt(text, start, nl);
      start = nl + 1;
    }
    this.checkLine(text.length - start);
    this.pending = text.slice(start);
  }

  /** Flushes a last line that had no trailing newline. */
  end(): ParsedMetrics {
    const bytes = this.takePendingBytes();
    if (bytes !== undefined) this.pending += this.decode(bytes);
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

  /** One complete line, without its newline. */
  line(raw: string): void {
    const view = this.view;
    this.view = undefined;
    this.backslash = -1;
    this.textNo++;
    this.lineAt(raw, 0, raw.length);
    // Back in the text this line was cut from (if any): a position read in the line is none in it.
    this.textNo++;
    this.view = view;
  }

  /** The line `text.slice(start, end)`, parsed in place. */
  private lineAt(text: string, start: number, end: number): void {
    this.lineNo++;
    this.checkLine(end - start);
    this.lineStart = start;
    if (this.eof) return;
    if (end > start && text.charCodeAt(end - 1) === 13) end--;
    let i = start;
    while (i < end && isBlank(text.charCodeAt(i))) i++;
    if (i === end) return;
    if (text.charCodeAt(i) === 35 /* # */) {
      // Comments are few (two per family): they get a substring of their own.
      this.comment(text.slice(start, end), i - start + 1);
      return;
    }
    this.sample(text, i, end);
  }

  private wants(name: string): boolean {
    return this.wanted === 'all' || this.wanted.has(name);
  }

  private fail(message: string): never {
    throw new PromParseError(this.lineNo, message);
  }

  private open(name: string, type: MetricType): void {
    const wanted = this.wants(name);
    const same = this.current?.name === name ? this.current : undefined; // TYPE after HELP: same name
    const suffixes = SUFFIXES[type];
    this.current = {
      name,
      type,
      wanted,
      family: wanted ? this.family(name) : undefined,
      suffixes,
      sampleNames: suffixes.map((s) => name + s),
      nameWords: same?.nameWords ?? wordsOf(name),
      suffixWords: suffixes.map(wordsOf),
    };
  }

  private comment(line: string, from: number): void {
    let i = from;
    while (i < line.length && isBlank(line.charCodeAt(i))) i++;
    const keywordEnd = scanUntilBlank(line, i, line.length);
    const keyword = line.slice(i, keywordEnd);
    if (keyword === 'EOF') {
      this.eof = true;
      return;
    }
    if (keyword !== 'HELP' && keyword !== 'TYPE') return; // any other comment is allowed
    i = keywordEnd;
    while (i < line.length && isBlank(line.charCodeAt(i))) i++;
    const nameEnd = scanName(line, i, line.length);
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
      if (this.wants(name)) {
        const family = this.family(name);
        if (family.samples.length > 0) this.fail(`TYPE line for ${name} after its samples`);
        family.type = type as MetricType;
      }
      this.open(name, type as MetricType);
      return;
    }
    // HELP: also opens the family, since HELP conventionally precedes TYPE.
    if (this.helpSeen.has(name)) this.fail(`second HELP line for ${name}`);
    this.helpSeen.add(name);
    if (this.current?.name !== name) this.open(name, this.declared.get(name) ?? 'untyped');
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

  /** A sample line `text.slice(from, end)` (`from` at its first non-blank character). */
  private sample(text: string, from: number, end: number): void {
    this.sampleLines++;
    const current = this.current;
    // The cheapest path, most lines of a page: a sample of the open family, which is not kept. Its name is
    // compared in place (no substring, no lookup); the family was recorded as seen by its HELP/TYPE line.
    // The name cannot match past the line's end: names hold no line breaks.
    let name: string | undefined;
    let nameEnd = from;
    let family: MetricFamily | undefined;
    const view = this.view;
    if (current !== undefined && (view !== undefined ? nameAt(view, from, current.name, current.nameWords) : text.startsWith(current.name, from))) {
      const after = from + current.name.length;
      if (after >= end || !isNameChar(text.charCodeAt(after))) {
        if (!current.wanted) return;
        name = current.name;
        nameEnd = after;
        family = current.family;
      } else {
        // One of the type's suffixes, ending the name there?
        const suffixes = current.suffixes;
        for (let k = 0; k < suffixes.length; k++) {
          const suffix = suffixes[k]!;
          const suffixEnd = after + suffix.length;
          if (
            (view !== undefined ? nameAt(view, after, suffix, current.suffixWords[k]!) : text.startsWith(suffix, after)) &&
            (suffixEnd >= end || !isNameChar(text.charCodeAt(suffixEnd)))
          ) {
            if (!current.wanted) return;
            name = current.sampleNames[k];
            nameEnd = suffixEnd;
            family = current.family;
            break;
          }
        }
      }
    }
    if (name === undefined || family === undefined) {
      nameEnd = scanName(text, from, end);
      if (nameEnd === from) this.fail(`expected a metric name, got "${text.slice(from, Math.min(from + 20, end))}"`);
      name = text.slice(from, nameEnd);
      const familyName = this.familyOf(name);
      if (familyName !== current?.name) this.seenFamilies.add(familyName);
      if (!this.wants(familyName)) return; // the cheap path: nothing else is looked at
      family = this.family(familyName);
    }

    let i = nameEnd;
    let labels: Labels;
    // Label values rarely hold escapes: without a backslash on the line, each value is one indexOf and one slice.
    if (i < end && text.charCodeAt(i) === 123 /* { */) {
      i = this.labels(text, i + 1, end, this.backslashFrom(text, i) >= end);
      labels = this.labelsObject();
    } else {
      labels = {};
    }
    if (i >= end || !isBlank(text.charCodeAt(i))) this.fail(`expected a space before the value of ${name}`);
    while (i < end && isBlank(text.charCodeAt(i))) i++;
    const valueEnd = scanUntilBlank(text, i, end);
    const value = parsePromNumberAt(text, i, valueEnd);
    if (value === undefined) this.fail(`invalid value "${text.slice(i, valueEnd)}" for ${name}`);
    i = valueEnd;
    while (i < end && isBlank(text.charCodeAt(i))) i++;
    let timestamp: number | undefined;
    if (i < end && text.charCodeAt(i) !== 35) {
      const tsEnd = scanUntilBlank(text, i, end);
      timestamp = parsePromNumberAt(text, i, tsEnd);
      if (timestamp === undefined || !Number.isFinite(timestamp)) this.fail(`invalid timestamp "${text.slice(i, tsEnd)}" for ${name}`);
      i = tsEnd;
      while (i < end && isBlank(text.charCodeAt(i))) i++;
    }
    if (i < end) {
      // Only an OpenMetrics exemplar may follow: ` # {labels} value [timestamp]`. Checked, then dropped.
      if (text.charCodeAt(i) !== 35) this.fail(`unexpected text after the value of ${name}`);
      i++;
      while (i < end && isBlank(text.charCodeAt(i))) i++;
      if (i >= end || text.charCodeAt(i) !== 123) this.fail(`malformed exemplar after ${name}`);
      this.labels(text, i + 1, end);
      // The scratch arrays now hold the exemplar's labels, not the last kept sample's.
      this.lastLabels = undefined;
    }

    const sample: Sample = { name, labels, value };
    if (timestamp !== undefined) sample.timestamp = timestamp;
    const { maxKeptSamples, maxKeptBytes } = this.limits;
    if (maxKeptSamples !== undefined && ++this.kept > maxKeptSamples) throw new BodyCapExceeded('keptSamples', maxKeptSamples, 'metrics page');
    this.keptBytes += end - from;
    if (maxKeptBytes !== undefined && this.keptBytes > maxKeptBytes) throw new BodyCapExceeded('keptBytes', maxKeptBytes, 'metrics page');
    family.samples.push(sample);
  }

  /** The first backslash in `text` at or after `from` (Infinity if none); amortised over the lines of one text. */
  private backslashFrom(text: string, from: number): number {
    if (this.backslash < from) {
      const at = text.indexOf('\\', from);
      this.backslash = at === -1 ? Infinity : at;
    }
    return this.backslash;
  }

  /**
   * The labels object of the label set just parsed (`labels`). The same names as the last kept sample's, in the
   * same order (every histogram bucket line after the first of its series; most lines of a page): a copy of that
   * sample's object, which has the same shape and size from the start, with the values that differ set. Else a
   * new object built name by name.
   */
  private labelsObject(): Labels {
    const names = this.labelNames;
    const values = this.labelValues;
    const n = this.labelCount;
    const last = this.lastLabels;
    let out: Labels;
    if (this.sameNames && last !== undefined) {
      out = { ...last };
      const changed = this.changed;
      for (let c = 0; c < this.changedCount; c++) {
        const k = changed[c]!;
        out[names[k]!] = values[k]!;
      }
    } else {
      out = {};
      for (let k = 0; k < n; k++) out[names[k]!] = values[k]!;
    }
    this.lastLabels = out;
    return out;
  }

  /**
   * Parses `name="value",...}` starting after `{`, up to the line's `end`, into `labelNames`/`labelValues`
   * (`labelCount` of them); returns the index after `}`.
   */
  private labels(text: string, from: number, end: number, noEscapes = false): number {
    const names = this.labelNames;
    const values = this.labelValues;
    const view = this.view;
    const previousCount = this.labelCount;
    if (this.valuesText !== this.textNo) {
      // The starts recorded so far are in another text: none is a position in this one.
      this.labelValueStarts.fill(-1);
      this.valuesText = this.textNo;
    }
    // Until this label set is complete, nothing is known of the names held (a failed line leaves them half written).
    this.labelCount = 0;
    this.changedCount = 0;
    // Whether every name so far was the previous label set's at the same position: those are distinct (a label set
    // with a repeated name fails its line), so none can repeat until a name differs.
    let reused = true;
    let i = from;
    let k = 0; // labels stored so far
    for (;;) {
      while (i < end && isBlank(text.charCodeAt(i))) i++;
      if (i >= end) this.fail('unterminated label set');
      const c = text.charCodeAt(i);
      if (c === 125 /* } */) return this.labelsEnd(i + 1, k, reused && k === previousCount);
      if (!isNameStart(c) || c === 58) this.fail(`invalid label name at column ${i - this.lineStart + 1}`);
      // The k-th label name of a line is nearly always the previous line's: reuse that string (no new
      // substring to hash and internalize as a property key). It cannot match past the line's end.
      if (k >= previousCount) reused = false;
      const prev = names[k];
      let labelName: string;
      if (prev !== undefined && (view !== undefined ? nameAt(view, i, prev, this.labelNameWords[k]!) : text.startsWith(prev, i)) && !isLabelNameChar(text.charCodeAt(i + prev.length))) {
        labelName = prev;
        i += prev.length;
      } else {
        const nameStart = i;
        while (i < end && isLabelNameChar(text.charCodeAt(i))) i++;
        labelName = text.slice(nameStart, i);
        reused = false;
        names[k] = labelName;
        this.labelNameWords[k] = wordsOf(labelName);
      }
      while (i < end && isBlank(text.charCodeAt(i))) i++;
      if (i >= end || text.charCodeAt(i) !== 61 /* = */) this.fail(`expected "=" after label ${labelName}`);
      i++;
      while (i < end && isBlank(text.charCodeAt(i))) i++;
      if (i >= end || text.charCodeAt(i) !== 34 /* " */) this.fail(`expected a quoted value for label ${labelName}`);
      i++;
      let value: string;
      if (noEscapes) {
        const q = text.indexOf('"', i);
        if (q === -1 || q >= end) this.fail(`unterminated value for label ${labelName}`);
        // The previous label set's value at this position, when spelled the same, is kept as it is: no new string.
        // Read from this same ASCII text, both spellings are compared on its bytes, four at a time.
        const before = values[k];
        const length = q - i;
        let same = false;
        if (before !== undefined && before.length === length) {
          const at = this.labelValueStarts[k]!;
          same = view !== undefined && at >= 0 ? sameBytes(view, at, i, length) : sameText(text, i, before);
        }
        value = same ? before! : text.slice(i, q);
        if (!same) this.changed[this.changedCount++] = k;
        this.labelValueStarts[k] = i;
        i = q;
      } else {
        value = '';
        let chunkStart = i;
        for (;;) {
          if (i >= end) this.fail(`unterminated value for label ${labelName}`);
          const ch = text.charCodeAt(i);
          if (ch === 34) break;
          if (ch === 92 /* \ */) {
            value += text.slice(chunkStart, i);
            const next = i + 1 < end ? text.charCodeAt(i + 1) : NaN;
            if (next === 92) value += '\\';
            else if (next === 34) value += '"';
            else if (next === 110) value += '\n';
            else this.fail(`invalid escape "\\${text.slice(i + 1, Math.min(i + 2, end))}" in label ${labelName}`);
            i += 2;
            chunkStart = i;
            continue;
          }
          i++;
        }
        value += text.slice(chunkStart, i);
        this.labelValueStarts[k] = -1;
        this.changed[this.changedCount++] = k;
      }
      i++; // closing quote
      // names[0..k-1] are this label set's names so far.
      if (!reused) for (let j = 0; j < k; j++) if (names[j] === labelName) this.fail(`duplicate label ${labelName}`);
      values[k] = value;
      k++;
      while (i < end && isBlank(text.charCodeAt(i))) i++;
      const sep = i < end ? text.charCodeAt(i) : NaN;
      if (sep === 44 /* , */) {
        i++;
        continue;
      }
      if (sep === 125) return this.labelsEnd(i + 1, k, reused && k === previousCount);
      this.fail(`expected "," or "}" after label ${labelName}`);
    }
  }

  private labelsEnd(at: number, count: number, sameNames: boolean): number {
    this.labelCount = count;
    this.sameNames = sameNames;
    return at;
  }
}

/** Whether the `length` bytes at `a` and at `b` are the same (both within `bytes`), four at a time. */
function sameBytes(bytes: DataView, a: number, b: number, length: number): boolean {
  let k = 0;
  for (; k + 4 <= length; k += 4) if (bytes.getInt32(a + k, true) !== bytes.getInt32(b + k, true)) return false;
  for (; k < length; k++) if (bytes.getUint8(a + k) !== bytes.getUint8(b + k)) return false;
  return true;
}

/** Whether `text` holds `s` at `at` (the caller checked the length fits). */
function sameText(text: string, at: number, s: string): boolean {
  for (let j = 0; j < s.length; j++) if (text.charCodeAt(at + j) !== s.charCodeAt(j)) return false;
  return true;
}

function concatAll(parts: readonly Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function belongsTo(sampleName: string, familyName: string, type: MetricType): boolean {
  if (sampleName === familyName) return true;
  if (!sampleName.startsWith(familyName)) return false;
  return SUFFIXES[type].includes(sampleName.slice(familyName.length));
}

function scanName(text: string, from: number, end: number): number {
  if (from >= end || !isNameStart(text.charCodeAt(from))) return from;
  let i = from + 1;
  while (i < end && isNameChar(text.charCodeAt(i))) i++;
  return i;
}

function scanUntilBlank(text: string, from: number, end: number): number {
  let i = from;
  while (i < end && !isBlank(text.charCodeAt(i))) i++;
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
export async function parsePromStream(source: ChunkSource, wanted: WantedFamilies, limits?: PromLimits): Promise<ParsedMetrics> {
  const parser = new PromTextParser(wanted, limits);
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
