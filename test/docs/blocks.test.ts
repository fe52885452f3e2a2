// Every shell block a reader might paste, in docs/, the README and CONTRIBUTING.md, is either run by a test or says
// why it is not (issue 23: the docs contradicted themselves where nothing ran them). A block carries a marker on the
// line right above its fence, at the same indentation:
//   <!-- e2e/helm-install.e2e.ts: apply.sh -->     run by that test, which extracts it by name (e2e/support/doc-blocks.ts)
//   <!-- not-runnable: <why> -->                    a placeholder to fill, a node's shell, a tool the project lacks, …
// A test file named by a marker must exist and name both the page and the block, so a marker cannot point nowhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const SHELL = new Set(['sh', 'bash', 'shell', 'console', 'zsh']);

interface ShellBlock {
  line: number;
  marker: { kind: 'run'; by: string; name: string } | { kind: 'not-runnable'; why: string } | undefined;
}

/** The shell blocks of a page, each with the marker right above it (or undefined). */
function shellBlocks(markdown: string): ShellBlock[] {
  const lines = markdown.split('\n');
  const out: ShellBlock[] = [];
  let open = false;
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)```(\S*)\s*$/.exec(lines[i]!);
    if (!m) continue;
    if (open) {
      open = false;
      continue;
    }
    open = true;
    if (!SHELL.has(m[2]!)) continue;
    const above = (lines[i - 1] ?? '').trim();
    const nr = /^<!--\s*not-runnable:\s*(.*?)\s*-->$/.exec(above);
    const run = /^<!--\s*((?:e2e|test)\/\S+\.ts):\s*(\S+)\s*-->$/.exec(above);
    out.push({ line: i + 1, marker: nr ? { kind: 'not-runnable', why: nr[1]! } : run ? { kind: 'run', by: run[1]!, name: run[2]! } : undefined });
  }
  return out;
}

function pages(): string[] {
  const docs = readdirSync(join(root, 'docs'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && e.name.endsWith('.md')).map((e) => relative(root, join(e.parentPath, e.name)));
  return ['README.md', 'CONTRIBUTING.md', ...docs];
}

/** What is wrong with a page's blocks, one line each. */
function problems(page: string, markdown: string, read: (file: string) => string | undefined): string[] {
  return shellBlocks(markdown).flatMap((b) => {
    const at = `${page}:${b.line}`;
    if (!b.marker) return [`${at}: a shell block without a marker (<!-- <test file>: <name> --> or <!-- not-runnable: <why> -->) on the line above`];
    if (b.marker.kind === 'not-runnable') return b.marker.why.length >= 15 ? [] : [`${at}: not-runnable says too little why: "${b.marker.why}"`];
    const src = read(b.marker.by);
    if (src === undefined) return [`${at}: ${b.marker.by} does not exist`];
    const missing = [basename(page), b.marker.name].filter((s) => !src.includes(s));
    return missing.length ? [`${at}: ${b.marker.by} never names ${missing.join(' or ')}: nothing runs this block`] : [];
  });
}

const readRepo = (f: string): string | undefined => (existsSync(join(root, f)) ? readFileSync(join(root, f), 'utf8') : undefined);

test('shellBlocks and problems: a marked block passes; unmarked, a bare reason, a missing or silent test file fail', () => {
  const page = [
    '<!-- e2e/x.e2e.ts: a.sh -->', '```sh', 'ls', '```',
    '', '```sh', 'rm -rf /', '```',
    '<!-- not-runnable: x -->', '```bash', 'echo', '```',
    '  <!-- e2e/gone.e2e.ts: b.sh -->', '  ```sh', '  pwd', '  ```',
    '<!-- e2e/x.e2e.ts: c.sh -->', '```sh', 'id', '```',
    '```yaml', 'a: 1', '```',
  ].join('\n');
  const files: Record<string, string> = { 'e2e/x.e2e.ts': "docBlock('docs/p.md', TAG, 'a.sh')" };
  assert.deepEqual(problems('docs/p.md', page, (f) => files[f]), [
    'docs/p.md:6: a shell block without a marker (<!-- <test file>: <name> --> or <!-- not-runnable: <why> -->) on the line above',
    'docs/p.md:10: not-runnable says too little why: "x"',
    'docs/p.md:14: e2e/gone.e2e.ts does not exist',
    'docs/p.md:18: e2e/x.e2e.ts never names c.sh: nothing runs this block',
  ]);
});

test('every shell block of docs/, README.md and CONTRIBUTING.md is run by a test or says why not', () => {
  const all = pages();
  assert.ok(all.includes('docs/quickstart.md') && all.length > 15, 'the walk found the pages');
  const found = all.flatMap((p) => problems(p, readFileSync(join(root, p), 'utf8'), readRepo));
  assert.deepEqual(found, []);
  const run = all.flatMap((p) => shellBlocks(readFileSync(join(root, p), 'utf8')).filter((b) => b.marker?.kind === 'run'));
  assert.ok(run.length >= 6, `blocks run by tests: ${run.length}`);
});
