// Just enough of a Lua 5.1 lexer to read what the Argo CD scripts name: string literals (short and long),
// names, and punctuation, with comments dropped. Used to check the scripts against src/api/vocabulary.ts.

export type Token = { kind: 'string'; value: string } | { kind: 'name'; value: string } | { kind: 'punct'; value: string };

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', a: '\x07', b: '\b', f: '\f', v: '\v', '\\': '\\', '"': '"', "'": "'", '\n': '\n' };

/** `[[`, `[==[` at i: the closing bracket, else undefined. */
function longBracket(src: string, i: number): string | undefined {
  const m = /^\[(=*)\[/.exec(src.slice(i, i + 64));
  return m ? `]${m[1]}]` : undefined;
}

export function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (src.startsWith('--', i)) {
      const close = longBracket(src, i + 2);
      if (close) {
        const end = src.indexOf(close, i + 2);
        if (end < 0) throw new Error(`unfinished long comment at ${i}`);
        i = end + close.length;
      } else {
        const nl = src.indexOf('\n', i);
        i = nl < 0 ? src.length : nl + 1;
      }
    } else if (c === '"' || c === "'") {
      let value = '';
      let j = i + 1;
      for (;;) {
        const d = src[j];
        if (d === undefined || d === '\n') throw new Error(`unfinished string at ${i}`);
        if (d === c) break;
        if (d === '\\') {
          const e = src[j + 1] ?? '';
          const digits = /^\d{1,3}/.exec(src.slice(j + 1, j + 4));
          if (digits) {
            value += String.fromCharCode(Number(digits[0]));
            j += 1 + digits[0].length;
            continue;
          }
          if (!(e in ESCAPES)) throw new Error(`invalid escape \\${e} at ${j}`);
          value += ESCAPES[e];
          j += 2;
          continue;
        }
        value += d;
        j++;
      }
      tokens.push({ kind: 'string', value });
      i = j + 1;
    } else if (c === '[' && longBracket(src, i)) {
      const close = longBracket(src, i)!;
      const open = close.length;
      const end = src.indexOf(close, i + open);
      if (end < 0) throw new Error(`unfinished long string at ${i}`);
      tokens.push({ kind: 'string', value: src.slice(i + open, end).replace(/^\r?\n/, '') });
      i = end + close.length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i))!;
      tokens.push({ kind: 'name', value: m[0] });
      i += m[0].length;
    } else if (/\d/.test(c) || (c === '.' && /\d/.test(src[i + 1] ?? ''))) {
      const m = /^(0[xX][0-9a-fA-F]+|\d*\.?\d+([eE][+-]?\d+)?)/.exec(src.slice(i))!;
      i += m[0].length;
    } else {
      const m = /^(\.\.\.|\.\.|==|~=|<=|>=|.)/s.exec(src.slice(i))!;
      tokens.push({ kind: 'punct', value: m[0] });
      i += m[0].length;
    }
  }
  return tokens;
}

/** String literals, comments excluded. */
export const stringLiterals = (src: string): string[] => tokenize(src).flatMap((t) => (t.kind === 'string' ? [t.value] : []));

/**
 * The `["key"]` keys of the table constructor assigned to `name` (`local NAME = { ["a"] = ..., ["b"] = ... }`),
 * top level only, in order. Throws when there is no such table.
 */
export function tableKeys(src: string, name: string): string[] {
  const t = tokenize(src);
  const start = t.findIndex((x, i) => x.kind === 'name' && x.value === name && t[i + 1]?.value === '=' && t[i + 2]?.value === '{');
  if (start < 0) throw new Error(`no table constructor assigned to ${name}`);
  const keys: string[] = [];
  let depth = 0;
  for (let i = start + 2; i < t.length; i++) {
    const x = t[i]!;
    if (x.kind === 'punct' && x.value === '{') depth++;
    else if (x.kind === 'punct' && x.value === '}') {
      if (--depth === 0) return keys;
    } else if (depth === 1 && x.kind === 'string' && t[i - 1]?.value === '[' && t[i + 1]?.value === ']' && t[i + 2]?.value === '=') keys.push(x.value);
  }
  throw new Error(`unfinished table constructor for ${name}`);
}

/** Names used as globals: not a field (`a.name`, `a:name`) and not a table key (`{ name = ... }`). */
export function globalNames(src: string): Set<string> {
  const t = tokenize(src);
  const locals = new Set<string>();
  const names = new Set<string>();
  t.forEach((x, i) => {
    if (x.kind !== 'name') return;
    const prev = t[i - 1];
    if (prev?.value === '.' || prev?.value === ':') return;
    if (prev?.kind === 'name' && prev.value === 'local') locals.add(x.value);
    if (t[i + 1]?.value === '=' && (prev?.value === '{' || prev?.value === ',')) return;
    names.add(x.value);
  });
  for (const l of locals) names.delete(l);
  return names;
}
