// Every relative link of the pages (docs/, the README, CONTRIBUTING.md, CHANGELOG.md, SECURITY.md, the chart's
// README) points at a file that exists, and every `#anchor` at a heading of that page, as GitHub names headings:
// lower case, punctuation dropped, spaces to hyphens, `-1`, `-2` … for repeats; headings inside code blocks are none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = join(import.meta.dirname, '..', '..');

/** GitHub's anchor of a heading's text (inline code and link syntax reduced to their text first). */
export function anchorOf(heading: string): string {
  const text = heading.replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
  return text.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** The anchors of a page's headings, outside fenced code blocks, repeats numbered. */
export function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let fence = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) {
      fence = !fence;
      continue;
    }
    const m = fence ? null : /^#{1,6} (.*)$/.exec(line);
    if (!m) continue;
    const a = anchorOf(m[1]!);
    const n = seen.get(a) ?? 0;
    seen.set(a, n + 1);
    out.add(n === 0 ? a : `${a}-${n}`);
  }
  return out;
}

/** The relative links of a page (outside code blocks and inline code), with their lines. */
export function links(markdown: string): { line: number; href: string }[] {
  const out: { line: number; href: string }[] = [];
  let fence = false;
  markdown.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) {
      fence = !fence;
      return;
    }
    if (fence) return;
    for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) if (!/^[a-z][a-z0-9+.-]*:/i.test(m[1]!)) out.push({ line: i + 1, href: m[1]! });
  });
  return out;
}

/** What is broken in one page's links, one line each; `read` gives a file's text, or undefined when it does not exist. */
export function broken(page: string, markdown: string, read: (file: string) => string | undefined): string[] {
  return links(markdown).flatMap(({ line, href }) => {
    const [file, anchor] = href.split('#') as [string, string | undefined];
    const target = file === '' ? page : relative(root, resolve(root, dirname(page), file));
    const text = read(target);
    if (text === undefined) return [`${page}:${line}: ${href}: no file ${target}`];
    if (anchor === undefined || anchor === '' || !target.endsWith('.md')) return [];
    return anchors(text).has(anchor) ? [] : [`${page}:${line}: ${href}: no heading #${anchor} in ${target}`];
  });
}

function pages(): string[] {
  const docs = (readdirSync(join(root, 'docs'), { recursive: true, withFileTypes: true }) as { isFile(): boolean; name: string; parentPath: string }[])
    .filter((e) => e.isFile() && e.name.endsWith('.md')).map((e) => relative(root, join(e.parentPath, e.name)));
  return ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', 'SECURITY.md', join('charts', 'apiserver-upgrade-operator', 'README.md'), ...docs].filter((p) => existsSync(join(root, p)));
}

const readRepo = (f: string): string | undefined => {
  const p = join(root, f);
  if (!existsSync(p)) return undefined;
  return f.endsWith('.md') ? readFileSync(p, 'utf8') : '';
};

test('anchors: GitHub\'s names, repeats numbered, code blocks skipped', () => {
  const page = ['# Install', '## What the image runs on', '## Who scrapes `/metrics`, with which identity', '```sh', '# not a heading', '```', '## Install', '### 1. The chart\'s values', '## [Link](x.md) text'].join('\n');
  assert.deepEqual([...anchors(page)], ['install', 'what-the-image-runs-on', 'who-scrapes-metrics-with-which-identity', 'install-1', '1-the-charts-values', 'link-text']);
});

test('broken: a missing file, a missing heading; an existing one, an external URL and inline code pass', () => {
  const files: Record<string, string> = { 'docs/a.md': '# A\n## Here\n', 'docs/b.md': '' };
  const page = ['[ok](a.md#here) [self](#top) [ext](https://x.example/#nope) `[code](nowhere.md)`', '[gone](c.md) [bad](a.md#there)', '# Top'].join('\n');
  assert.deepEqual(broken('docs/b.md', page, (f) => (f === 'docs/b.md' ? page : files[f])), [
    'docs/b.md:2: c.md: no file docs/c.md',
    'docs/b.md:2: a.md#there: no heading #there in docs/a.md',
  ]);
});

test('every relative link of the pages points at a file, and every anchor at a heading', () => {
  const all = pages();
  assert.ok(all.includes('docs/quickstart.md') && all.length > 20, 'the walk found the pages');
  assert.ok(all.flatMap((p) => links(readFileSync(join(root, p), 'utf8'))).length > 200, 'the pages\' links were found');
  assert.deepEqual(all.flatMap((p) => broken(p, readFileSync(join(root, p), 'utf8'), readRepo)), []);
});
