/**
 * The import graph of src/, read with the TypeScript compiler's own scanner of import specifiers
 * (ts.preProcessFile: `import`, `import type`, `export ... from`, dynamic `import()`), so a type-only import
 * counts as an edge too — a circle of types is still a knot to read.
 *
 * - No import circle anywhere in src/.
 * - src/plan/ (the pure decisions) imports from src/api/ and itself only, and src/api/ from itself only.
 * - src/plan/ is layered: the types and the planning context at the bottom (nothing they import reaches
 *   context.ts back), one file per phase above, the planner at the top (nothing but index.ts imports it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

const SRC = resolve(import.meta.dirname, '../src');

type Graph = Map<string, string[]>;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

/** file (relative to src/, `/`-separated) -> the src/ files it imports. Bare specifiers (packages, node:) are left out. */
function importGraph(): Graph {
  const g: Graph = new Map();
  for (const file of sourceFiles(SRC)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const deps = importedFiles
      .map((i) => i.fileName)
      .filter((s) => s.startsWith('.'))
      .map((s) => rel(resolve(dirname(file), s)));
    g.set(rel(file), [...new Set(deps)]);
  }
  return g;
}

function rel(abs: string): string {
  return relative(SRC, abs).split(sep).join('/');
}

/** The strongly connected components of more than one file (or a file importing itself): each one a circle. */
export function cycles(g: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of g.get(v) ?? []) {
      if (!g.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || (g.get(v) ?? []).includes(v)) out.push(scc.sort());
  };
  for (const v of [...g.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

/** Everything `from` reaches through imports (itself excluded). */
function reachable(g: Graph, from: string): Set<string> {
  const seen = new Set<string>();
  const todo = [...(g.get(from) ?? [])];
  while (todo.length > 0) {
    const f = todo.pop()!;
    if (seen.has(f)) continue;
    seen.add(f);
    todo.push(...(g.get(f) ?? []));
  }
  return seen;
}

const graph = importGraph();

test('the cycle finder finds a circle of three, a self-import, and nothing in a chain', () => {
  assert.deepEqual(cycles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]])), [['a', 'b', 'c']]);
  assert.deepEqual(cycles(new Map([['a', ['a']]])), [['a']]);
  assert.deepEqual(cycles(new Map([['a', ['b']], ['b', ['c']], ['c', []]])), []);
  // The scanner sees type-only imports and re-exports as edges.
  const { importedFiles } = ts.preProcessFile("import type { A } from './a.ts';\nexport { B } from './b.ts';\nconst c = await import('./c.ts');\n", true, true);
  assert.deepEqual(importedFiles.map((i) => i.fileName), ['./a.ts', './b.ts', './c.ts']);
});

test('the graph is read: src/plan/planner.ts imports src/plan/context.ts, and every relative import names a file in src/', () => {
  assert.ok(graph.get('plan/planner.ts')?.includes('plan/context.ts'));
  for (const [file, deps] of graph) {
    for (const d of deps) assert.ok(graph.has(d), `${file} imports ${d}, which is not a .ts file in src/`);
  }
});

test('no import circle in src/', () => {
  const found = cycles(graph);
  assert.deepEqual(found, [], `import circles: ${found.map((c) => c.join(' <-> ')).join('; ')}`);
});

test('src/plan/ imports from src/api/ and src/plan/ only; src/api/ from src/api/ only', () => {
  const bad: string[] = [];
  for (const [file, deps] of graph) {
    const allowed = file.startsWith('plan/') ? ['plan/', 'api/'] : file.startsWith('api/') ? ['api/'] : undefined;
    if (!allowed) continue;
    for (const d of deps) if (!allowed.some((a) => d.startsWith(a))) bad.push(`${file} -> ${d}`);
  }
  assert.deepEqual(bad, []);
});

test('src/plan/ is layered: the context below the phases, the planner on top', () => {
  // Nothing the context imports (the types, keys, redaction, the policy's rules) reaches back up to it.
  const belowContext = reachable(graph, 'plan/context.ts');
  assert.ok(!belowContext.has('plan/context.ts'));
  for (const f of belowContext) assert.ok(!reachable(graph, f).has('plan/context.ts'), `${f} is below the context and imports it back`);
  // The observation (what the shell hands the planner) is types at the bottom: it imports no phase.
  for (const f of reachable(graph, 'plan/observation.ts')) assert.ok(!f.startsWith('plan/') || !graph.get(f)!.some((d) => d === 'plan/context.ts'), `the observation reaches ${f}, a phase`);
  // The planner is the top of the step: only the package's index and the reconcile's decisions (reconcile.ts) import it.
  const importers = [...graph].filter(([, deps]) => deps.includes('plan/planner.ts')).map(([f]) => f).filter((f) => f.startsWith('plan/'));
  assert.deepEqual(importers, ['plan/index.ts', 'plan/reconcile.ts']);
});
