// A small Dockerfile reader, for comparing the repository's Dockerfiles with the images the harness builds
// without Docker (test/e2e-cluster/dockerfiles.test.ts). It reads what those Dockerfiles use: comments, line
// continuations, FROM [--platform] image [AS name], and any other instruction with its arguments; JSON (exec) form
// of ENTRYPOINT and CMD; ENV in both forms; COPY with --from. No parser directives, heredocs or variable expansion.

export interface Instruction {
  /** Upper case: FROM, RUN, COPY, … */
  op: string;
  /** The rest of the line (continuations joined with a space). */
  args: string;
  line: number;
}

export interface Stage {
  /** FROM's image. */
  from: string;
  /** AS name, if any. */
  name?: string;
  instructions: Instruction[];
}

/** Instructions in order, with comments and blank lines dropped and `\` continuations joined. */
export function instructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  let buf = '';
  let start = 0;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!.replace(/\r$/, '');
    const t = raw.trim();
    // Comments and blank lines, also inside a continuation (as Docker reads them).
    if (t.startsWith('#') || t === '') continue;
    if (buf === '') start = i + 1;
    if (t.endsWith('\\')) {
      buf += `${t.slice(0, -1).trim()} `;
      continue;
    }
    buf += t;
    const m = /^(\S+)\s*(.*)$/.exec(buf.trim());
    if (m) out.push({ op: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start });
    buf = '';
  }
  if (buf.trim() !== '') throw new Error(`the Dockerfile ends in a continuation: ${buf.trim()}`);
  return out;
}

/** The stages: one per FROM, with the instructions after it. */
export function stages(text: string): Stage[] {
  const out: Stage[] = [];
  for (const ins of instructions(text)) {
    if (ins.op === 'FROM') {
      const words = ins.args.split(/\s+/).filter((w) => !w.startsWith('--'));
      const as = words.findIndex((w) => w.toUpperCase() === 'AS');
      out.push({ from: words[0]!, ...(as > 0 && words[as + 1] ? { name: words[as + 1]! } : {}), instructions: [] });
    } else if (ins.op === 'ARG' && out.length === 0) {
      continue; // an ARG before the first FROM belongs to no stage
    } else {
      const stage = out.at(-1);
      if (stage === undefined) throw new Error(`line ${ins.line}: ${ins.op} before any FROM`);
      stage.instructions.push(ins);
    }
  }
  return out;
}

/** An exec-form (JSON array) argument: ENTRYPOINT ["a", "b"]. The shell form is refused: it runs /bin/sh -c. */
export function execForm(ins: Instruction): string[] {
  let v: unknown;
  try {
    v = JSON.parse(ins.args);
  } catch {
    throw new Error(`line ${ins.line}: ${ins.op} is not in exec (JSON) form: ${ins.args}`);
  }
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`line ${ins.line}: ${ins.op} is not a JSON array of strings`);
  return v;
}

/** ENV's pairs: `ENV K=V K2="v 2"` or the old `ENV K V`. */
export function envPairs(ins: Instruction): [string, string][] {
  if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(ins.args)) {
    const m = /^(\S+)\s+(.*)$/.exec(ins.args);
    if (!m) throw new Error(`line ${ins.line}: cannot read ENV ${ins.args}`);
    return [[m[1]!, m[2]!]];
  }
  const out: [string, string][] = [];
  const re = /([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)\s*/gy;
  let m: RegExpExecArray | null;
  let at = 0;
  while ((m = re.exec(ins.args)) !== null && m[0] !== '') {
    const v = m[2]!;
    out.push([m[1]!, v.startsWith('"') ? v.slice(1, -1).replace(/\\(.)/g, '$1') : v.startsWith('\'') ? v.slice(1, -1) : v]);
    at = re.lastIndex;
  }
  if (at !== ins.args.length) throw new Error(`line ${ins.line}: cannot read ENV ${ins.args}`);
  return out;
}

/** COPY's flags (--from=wget → {from: 'wget'}), sources and destination (shell form only). */
export function copyArgs(ins: Instruction): { flags: Record<string, string>; sources: string[]; dest: string } {
  const words = ins.args.split(/\s+/).filter(Boolean);
  const flags: Record<string, string> = {};
  while (words[0]?.startsWith('--')) {
    const [k, v] = words.shift()!.slice(2).split('=', 2);
    flags[k!] = v ?? 'true';
  }
  if (words.length < 2) throw new Error(`line ${ins.line}: COPY needs a source and a destination`);
  return { flags, sources: words.slice(0, -1), dest: words.at(-1)! };
}
