// Small pure helpers for the plugin's human output: tables, ages, a progress bar, machine output, and the one
// place where text from the cluster is made safe to print.
import { Document, visit } from 'yaml';

/** human: the default view; wide: list/get with more columns; name: resource/name lines; jsonpath: -o jsonpath=TEMPLATE. */
export type OutputFormat = 'human' | 'wide' | 'name' | 'json' | 'yaml' | 'jsonpath';

/**
 * What must not reach a terminal as itself: controls (C0, DEL, C1: ESC starts CSI and OSC sequences, CR moves back
 * over what was printed), format characters (zero-width characters, bidirectional overrides and isolates, the BOM,
 * tags), line and paragraph separators, and every other default-ignorable (variation selectors, Hangul fillers).
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/gu;
/** Of those, the ones that only break or space a line: a space shows them well enough. */
const SPACING = new Set(['\t', '\n', '\v', '\f', '\r', '\u0085', '\u2028', '\u2029']);

/** `\u001b`, `\u202e`, or `\u{e0041}` beyond the BMP: how an unprintable character is shown. */
function escaped(c: string): string {
  const cp = c.codePointAt(0)!;
  return cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, '0')}`;
}

/**
 * A string from the cluster (status, Events, names, errors: anyone who can write them chose them) as the plugin
 * prints it: on one line, every unprintable character shown as its escape (so an escape sequence cannot act on the
 * terminal, nor an override reorder or hide text, and a reader sees that something was there), a break or tab as a
 * space, a lone surrogate as U+FFFD. Printable text, emoji and all, stays as it is.
 */
export function terminalText(s: string): string {
  return s.toWellFormed().replace(UNPRINTABLE, (c) => (SPACING.has(c) ? ' ' : escaped(c)));
}

/** `v` with every string in it, object keys too, through terminalText: what a human view or a jsonpath result prints. */
export function printable<T>(v: T): T {
  if (typeof v === 'string') return terminalText(v) as T;
  if (Array.isArray(v)) return v.map((x: unknown) => printable(x)) as T;
  if (typeof v === 'object' && v !== null && !(v instanceof Date)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [terminalText(k), printable(x)])) as T;
  return v;
}

/** The escape of an unprintable character inside a JSON or YAML double-quoted string (UTF-16 units, so also beyond the BMP). */
function quotedEscape(c: string): string {
  let out = '';
  for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}
/** UNPRINTABLE but the line breaks and tabs JSON and YAML lay their text out with (inside a string they are escaped already). */
const UNPRINTABLE_IN_STRING = /(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;
const UNPRINTABLE_IN_LAYOUT = new RegExp(UNPRINTABLE_IN_STRING.source, 'gu');

/**
 * A multi-line string with a line that starts with a space or a tab: as a block scalar (`|`) its indentation is
 * ambiguous (` \n` reads back as `\n`, and some such strings are not even valid YAML), so it is double-quoted.
 */
const BLOCK_AMBIGUOUS = /\n[ \t]|^[ \t][^\n]*\n/u;

/**
 * JSON (2-space indented) or YAML of any view; both end with a newline. Unlike the human views, the values are kept
 * as they are, but written so that no unprintable character reaches the terminal as itself: JSON escapes them
 * (`\u202e`), and in YAML a string that holds one is double-quoted, where it is escaped the same way.
 */
export function machine(value: unknown, format: 'json' | 'yaml'): string {
  if (format === 'json') return `${JSON.stringify(value, null, 2).replace(UNPRINTABLE_IN_LAYOUT, quotedEscape)}\n`;
  const doc = new Document(value);
  visit(doc, {
    Scalar(_key, node) {
      const text = node.value;
      if (typeof text !== 'string') return;
      node.value = text.toWellFormed();
      if (UNPRINTABLE_IN_STRING.test(text) || BLOCK_AMBIGUOUS.test(text)) node.type = 'QUOTE_DOUBLE';
    },
  });
  // A double-quoted string is written as JSON writes it (JSON is valid YAML there): the yaml package's own folding of
  // a long one escapes a space that starts a line between two line breaks twice ("\n \n" reads back as "\n\\\n").
  return doc.toString({ lineWidth: 0, doubleQuotedAsJSON: true }).replace(UNPRINTABLE_IN_LAYOUT, quotedEscape);
}

/**
 * A kubectl-style table: upper-case headers, columns separated by three spaces, no trailing blanks.
 * Cells are single-line (newlines become spaces); empty cells show as `-` unless `blank` is set.
 */
export function table(headers: readonly string[], rows: readonly (readonly (string | number | boolean | undefined)[])[], indent = ''): string {
  const cells = rows.map((r) => headers.map((_, i) => cell(r[i])));
  const widths = headers.map((h, i) => Math.max(width(h), ...cells.map((r) => width(r[i]!))));
  const line = (r: readonly string[]): string => indent + r.map((c, i) => (i === r.length - 1 ? c : pad(c, widths[i]!))).join('   ').trimEnd();
  return [line(headers), ...cells.map(line)].join('\n') + '\n';
}

function cell(v: string | number | boolean | undefined): string {
  if (v === undefined || v === '') return '-';
  return String(v).replace(/\s*\n\s*/g, ' ');
}

/** Display width: counts code points, so the bar's block characters and the marks align. */
function width(s: string): number {
  return [...s].length;
}

function pad(s: string, w: number): string {
  return s + ' '.repeat(Math.max(0, w - width(s)));
}

/** Cuts a long message for a table cell; the full text is in `-o json`. */
export function truncate(s: string | undefined, max = 100): string | undefined {
  if (s === undefined) return undefined;
  const one = s.replace(/\s*\n\s*/g, ' ');
  return width(one) <= max ? one : `${[...one].slice(0, max - 1).join('')}…`;
}

/** kubectl's age format: 45s, 3m12s, 2h5m, 3d4h, 400d. */
export function age(fromIso: string | undefined, now: Date): string | undefined {
  if (!fromIso) return undefined;
  const t = Date.parse(fromIso);
  if (Number.isNaN(t)) return undefined;
  return shortDuration(Math.max(0, now.getTime() - t));
}

export function shortDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  return d < 8 && h % 24 !== 0 ? `${d}d${h % 24}h` : `${d}d`;
}

/** `2025-11-29T10:00:00Z (3m12s ago)`, or `in 40s` for a time still ahead. */
export function when(iso: string | undefined, now: Date): string | undefined {
  if (!iso) return undefined;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const d = now.getTime() - t;
  return d >= 0 ? `${iso} (${shortDuration(d)} ago)` : `${iso} (in ${shortDuration(-d)})`;
}

export const BAR_DONE = '█';
export const BAR_CURRENT = '▒';
export const BAR_TODO = '░';

/** A progress bar of `size` cells: finished parts full, the part in progress shaded, the rest light. */
export function bar(done: number, current: number, total: number, size = 30): string {
  if (total <= 0) return `[${BAR_TODO.repeat(size)}]`;
  const full = Math.min(size, Math.round((done / total) * size));
  const shaded = Math.min(size - full, Math.round(((done + current) / total) * size) - full);
  return `[${BAR_DONE.repeat(full)}${BAR_CURRENT.repeat(Math.max(0, shaded))}${BAR_TODO.repeat(Math.max(0, size - full - Math.max(0, shaded)))}]`;
}

/** A signal value for a table: ratios with 4 decimals, seconds with ms precision. */
export function num(v: number | undefined, unit: 'ratio' | 'seconds' | 'count'): string | undefined {
  if (v === undefined || !Number.isFinite(v)) return undefined;
  if (unit === 'ratio') return v.toFixed(4);
  if (unit === 'seconds') return `${Number(v.toFixed(3))}s`;
  return String(v);
}

/** A timestamp as ISO text, whether it came as JSON text or as a Date (client-node's typed models). */
export function iso(v: unknown): string | undefined {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? undefined : v.toISOString();
  return typeof v === 'string' && v !== '' ? v : undefined;
}
