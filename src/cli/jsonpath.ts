// `-o jsonpath=TEMPLATE`, the subset of kubectl's JSONPath its users type: text with `{…}` expressions; a field path
// `.a.b`, `['a.b']`, `[n]`, `[*]`, `..name` is not supported; filters `[?(@.x=="v")]` (==, !=); `{range PATH}…{end}`;
// `{"literal"}` with \n and \t; `{@}` the current value. Pure; a template it cannot read is a JsonPathError.
export class JsonPathError extends Error {
  override readonly name = 'JsonPathError';
}

type Step = { kind: 'field'; name: string } | { kind: 'index'; n: number } | { kind: 'all' } | { kind: 'filter'; path: Step[]; op: '==' | '!='; value: string };
type Node = { kind: 'text'; text: string } | { kind: 'path'; steps: Step[] } | { kind: 'range'; steps: Step[]; body: Node[] };

const FIELD = /^[A-Za-z_$][\w$-]*/;

function parsePath(expr: string, where: string): Step[] {
  let s = expr.trim();
  if (s === '@' || s === '$' || s === '.') return [];
  if (s.startsWith('@') || s.startsWith('$')) s = s.slice(1);
  const steps: Step[] = [];
  while (s.length > 0) {
    if (s.startsWith('..')) throw new JsonPathError(`${where}: recursive descent (..) is not supported`);
    if (s.startsWith('.')) {
      const m = FIELD.exec(s.slice(1));
      if (!m) throw new JsonPathError(`${where}: a field name after "." expected in "${expr}"`);
      steps.push({ kind: 'field', name: m[0] });
      s = s.slice(1 + m[0].length);
      continue;
    }
    if (s.startsWith('[')) {
      const end = s.indexOf(']');
      if (end < 0) throw new JsonPathError(`${where}: unclosed [ in "${expr}"`);
      const inner = s.slice(1, end).trim();
      s = s.slice(end + 1);
      if (inner === '*') steps.push({ kind: 'all' });
      else if (/^-?\d+$/.test(inner)) steps.push({ kind: 'index', n: Number(inner) });
      else if (/^'[^']*'$/.test(inner) || /^"[^"]*"$/.test(inner)) steps.push({ kind: 'field', name: inner.slice(1, -1) });
      else {
        const f = /^\?\(\s*@((?:\.[A-Za-z_$][\w$-]*)+)\s*(==|!=)\s*(?:"([^"]*)"|'([^']*)'|(-?[\w.]+))\s*\)$/.exec(inner);
        if (!f) throw new JsonPathError(`${where}: cannot read [${inner}] (supported: [n], [*], ['name'], [?(@.path=="value")])`);
        steps.push({ kind: 'filter', path: parsePath(f[1]!, where), op: f[2] as '==' | '!=', value: f[3] ?? f[4] ?? f[5]! });
      }
      continue;
    }
    throw new JsonPathError(`${where}: unexpected "${s}" in "${expr}"`);
  }
  return steps;
}

function unquote(lit: string): string {
  return lit.slice(1, -1).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : c === 'r' ? '\r' : c));
}

/** The template as a tree. */
export function parseJsonPath(template: string): Node[] {
  const root: Node[] = [];
  const stack: { body: Node[] }[] = [{ body: root }];
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{', i);
    if (open < 0) {
      stack.at(-1)!.body.push({ kind: 'text', text: template.slice(i) });
      break;
    }
    if (open > i) stack.at(-1)!.body.push({ kind: 'text', text: template.slice(i, open) });
    // The closing brace: the first } outside a quoted literal.
    let j = open + 1;
    let quote: string | undefined;
    for (; j < template.length; j++) {
      const c = template[j]!;
      if (quote) {
        if (c === '\\') j++;
        else if (c === quote) quote = undefined;
      } else if (c === '"' || c === "'") quote = c;
      else if (c === '}') break;
    }
    if (j >= template.length) throw new JsonPathError(`unclosed { at ${open}`);
    const expr = template.slice(open + 1, j).trim();
    const where = `{${expr}}`;
    if (/^"(?:[^"\\]|\\.)*"$/.test(expr) || /^'(?:[^'\\]|\\.)*'$/.test(expr)) stack.at(-1)!.body.push({ kind: 'text', text: unquote(expr) });
    else if (expr.startsWith('range ')) {
      const r: Node = { kind: 'range', steps: parsePath(expr.slice(6), where), body: [] };
      stack.at(-1)!.body.push(r);
      stack.push(r);
    } else if (expr === 'end') {
      if (stack.length === 1) throw new JsonPathError('{end} without {range}');
      stack.pop();
    } else stack.at(-1)!.body.push({ kind: 'path', steps: parsePath(expr, where) });
    i = j + 1;
  }
  if (stack.length > 1) throw new JsonPathError('{range} without {end}');
  return root;
}

function select(values: unknown[], steps: Step[]): unknown[] {
  let cur = values;
  for (const st of steps) {
    const next: unknown[] = [];
    for (const v of cur) {
      if (st.kind === 'field') {
        if (v !== null && typeof v === 'object' && !Array.isArray(v) && st.name in v) next.push((v as Record<string, unknown>)[st.name]);
      } else if (st.kind === 'index') {
        if (Array.isArray(v)) {
          const x = v[st.n < 0 ? v.length + st.n : st.n];
          if (x !== undefined) next.push(x);
        }
      } else if (st.kind === 'all') {
        if (Array.isArray(v)) next.push(...v);
        else if (v !== null && typeof v === 'object') next.push(...Object.values(v));
      } else if (Array.isArray(v)) {
        for (const x of v) {
          const got = select([x], st.path);
          const match = got.length > 0 && text(got[0]) === st.value;
          if (match === (st.op === '==')) next.push(x);
        }
      }
    }
    cur = next;
  }
  return cur;
}

/** How kubectl prints a value: strings bare, other scalars as JSON, objects and arrays as compact JSON. */
function text(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function render(nodes: Node[], current: unknown): string {
  let out = '';
  for (const n of nodes) {
    if (n.kind === 'text') out += n.text;
    else if (n.kind === 'path') out += select([current], n.steps).map(text).join(' ');
    else for (const item of select([current], n.steps).flatMap((x) => (Array.isArray(x) ? x : [x]))) out += render(n.body, item);
  }
  return out;
}

/** The template applied to `value`. */
export function jsonPath(template: string, value: unknown): string {
  return render(parseJsonPath(template), value);
}
