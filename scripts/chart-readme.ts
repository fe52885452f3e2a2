/**
 * The values table of the chart's README.md, generated from values.yaml: each key's documentation is the
 * comment right above it, its type comes from values.schema.json (or, where the schema leaves a subtree
 * open, from the default), its default from values.yaml. Only the part of README.md between the two marker
 * comments is written; the prose around it is the README's own.
 *
 *   node scripts/chart-readme.ts           rewrite charts/apiserver-upgrade-operator/README.md
 *   node scripts/chart-readme.ts --check   exit 1 when the checked-in README differs from the generated one
 *
 * test/chart/values.test.ts fails when the README is stale, and when a value has no schema or no comment.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

export const CHART = join(import.meta.dirname, '..', 'charts', 'apiserver-upgrade-operator');
export const BEGIN = '<!-- BEGIN VALUES: generated from values.yaml by scripts/chart-readme.ts; do not edit -->';
export const END = '<!-- END VALUES -->';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  $ref?: string;
  definitions?: Record<string, Schema>;
  enum?: Json[];
}

export interface ValueDoc {
  /** Dotted path, e.g. metrics.auth.enabled. */
  key: string;
  path: string[];
  value: Json;
  comment: string;
  /** A map whose keys are documented one by one below it. */
  section: boolean;
}

const isMap = (v: unknown): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);

function at(v: Json, path: string[]): Json | undefined {
  let cur: Json | undefined = v;
  for (const k of path) cur = isMap(cur) ? cur[k] : undefined;
  return cur;
}

/**
 * Every key of values.yaml, in file order, with the comment lines right above it (a blank line ends a
 * comment, so the file's header and commented-out examples belong to no key). Keys inside lists are part of
 * their list's default, not keys of their own.
 */
export function documentedValues(text: string): ValueDoc[] {
  const values = (parse(text) ?? {}) as Json;
  const docs: ValueDoc[] = [];
  const stack: { indent: number; key: string }[] = [];
  let comment: string[] = [];
  // Below a key whose value is not a map (a list, a block scalar), deeper lines are part of that value.
  let valueIndent = Infinity;
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      comment = [];
      continue;
    }
    const c = /^\s*#\s?(.*)$/u.exec(line);
    if (c) {
      comment.push(c[1]!.trimEnd());
      continue;
    }
    const m = /^( *)("[^"]+"|'[^']+'|[^\s#'"-][^:#]*?):(?:\s|$)/u.exec(line);
    if (!m) {
      comment = [];
      continue;
    }
    const indent = m[1]!.length;
    if (indent > valueIndent) {
      comment = [];
      continue;
    }
    valueIndent = Infinity;
    const key = m[2]!.replace(/^["']|["']$/gu, '');
    while (stack.length > 0 && stack[stack.length - 1]!.indent >= indent) stack.pop();
    const parent = stack.map((s) => s.key);
    if (!isMap(at(values, parent))) {
      comment = [];
      continue;
    }
    const path = [...parent, key];
    const value = at(values, path) ?? null;
    docs.push({ key: path.join('.'), path, value, comment: comment.join(' ').trim(), section: false });
    comment = [];
    if (isMap(value) && Object.keys(value).length > 0) stack.push({ indent, key });
    else valueIndent = indent;
  }
  // A map is a section when some key below it is documented; otherwise it is one value (its default is the map).
  const byKey = new Map(docs.map((d) => [d.key, d]));
  for (const d of docs) {
    if (d.path.length > 1 && d.comment) {
      for (let i = 1; i < d.path.length; i++) byKey.get(d.path.slice(0, i).join('.'))!.section = true;
    }
  }
  return docs.filter((d) => !d.path.slice(0, -1).some((_, i) => !byKey.get(d.path.slice(0, i + 1).join('.'))!.section));
}

function resolve(s: Schema | undefined, root: Schema): Schema | undefined {
  let cur = s;
  for (let i = 0; cur?.$ref && i < 10; i++) {
    const name = /^#\/definitions\/(.+)$/u.exec(cur.$ref)?.[1];
    cur = name ? root.definitions?.[name] : undefined;
  }
  return cur;
}

/** The schema of a value, `open` when an object schema above it leaves its keys free, undefined when it has none. */
export function schemaAt(root: Schema, path: string[]): Schema | 'open' | undefined {
  let cur = resolve(root, root);
  for (const k of path) {
    if (!cur) return undefined;
    const t = [cur.type ?? []].flat();
    if (cur.properties?.[k]) cur = resolve(cur.properties[k], root);
    else if (isMap(cur.additionalProperties as Json)) cur = resolve(cur.additionalProperties as Schema, root);
    else if (t.includes('object') && !cur.properties && cur.additionalProperties !== false) return 'open';
    else return undefined;
  }
  return cur;
}

function typeOf(v: Json): string {
  if (Array.isArray(v)) return 'list';
  if (v === null) return 'null';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v === 'object' ? 'object' : typeof v;
}

const cell = (s: string): string => s.replace(/\|/gu, '\\|');

/** The markdown table: key, type, default, description. */
export function valuesTable(valuesText: string, schema: Schema): string {
  const rows = documentedValues(valuesText).filter((d) => !d.section || d.comment).map((d) => {
    const s = schemaAt(schema, d.path);
    const type = s === undefined || s === 'open' || s.type === undefined ? typeOf(d.value) : [s.type].flat().map((t) => (t === 'array' ? 'list' : t)).join(' or ');
    const def = d.section ? '' : `\`${cell(JSON.stringify(d.value))}\``;
    return `| \`${d.key}\` | ${type} | ${def} | ${cell(d.comment)} |`;
  });
  return ['| Key | Type | Default | Description |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

/** The README with its generated part replaced. */
export function renderReadme(readme: string, valuesText: string, schema: Schema): string {
  const b = readme.indexOf(BEGIN);
  const e = readme.indexOf(END);
  if (b < 0 || e < b) throw new Error(`README.md lacks the markers ${BEGIN} ... ${END}`);
  return `${readme.slice(0, b)}${BEGIN}\n${valuesTable(valuesText, schema)}\n${readme.slice(e)}`;
}

/** Values that values.schema.json does not describe (every key must be typed there, or sit under an open object). */
export function untypedValues(valuesText: string, schema: Schema): string[] {
  return documentedValues(valuesText).filter((d) => schemaAt(schema, d.path) === undefined).map((d) => d.key);
}

export function readChart(): { readme: string; values: string; schema: Schema } {
  return {
    readme: readFileSync(join(CHART, 'README.md'), 'utf8'),
    values: readFileSync(join(CHART, 'values.yaml'), 'utf8'),
    schema: JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as Schema,
  };
}

if (import.meta.main) {
  const c = readChart();
  const next = renderReadme(c.readme, c.values, c.schema);
  if (process.argv.includes('--check')) {
    if (next !== c.readme) {
      console.error('charts/apiserver-upgrade-operator/README.md is stale: run node scripts/chart-readme.ts');
      process.exit(1);
    }
  } else if (next !== c.readme) {
    writeFileSync(join(CHART, 'README.md'), next);
    console.log('wrote charts/apiserver-upgrade-operator/README.md');
  }
}
