// Fenced code blocks of a Markdown page, found by a marker comment on the line right above each:
//   <!-- e2e/alerting.e2e.ts: prometheus.yml -->
//   ```yaml
//   ...
//   ```
// A test that runs a page's configuration takes it from the page itself, so the page and the test cannot drift:
// a block that is renamed, moved away from its marker or left without one fails the test that needs it.
import { readFileSync } from 'node:fs';

export interface DocBlock {
  name: string;
  /** The fence's info string (yaml, sh, …). */
  lang: string;
  /** The block's lines, without the fences, ending in a newline. */
  text: string;
  /** 1-based line of the marker, for messages. */
  line: number;
}

const FENCE = /^```(\S*)\s*$/;

/** Every block marked `<!-- <tag>: <name> -->` in the page, by name; a name used twice or a marker without a block throws. */
export function docBlocks(markdown: string, tag: string): Map<string, DocBlock> {
  const lines = markdown.split('\n');
  const marker = new RegExp(`^<!--\\s*${tag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\s*(\\S+)\\s*-->\\s*$`);
  const out = new Map<string, DocBlock>();
  for (let i = 0; i < lines.length; i++) {
    const m = marker.exec(lines[i]!);
    if (!m) continue;
    const name = m[1]!;
    const open = FENCE.exec(lines[i + 1] ?? '');
    if (!open) throw new Error(`line ${i + 1}: the marker of ${name} is not right above a fenced code block`);
    const end = lines.findIndex((l, j) => j > i + 1 && /^```\s*$/.test(l));
    if (end < 0) throw new Error(`line ${i + 1}: the block ${name} is never closed`);
    if (out.has(name)) throw new Error(`line ${i + 1}: a second block named ${name} (the first is at line ${out.get(name)!.line})`);
    out.set(name, { name, lang: open[1] ?? '', text: `${lines.slice(i + 2, end).join('\n')}\n`, line: i + 1 });
    i = end;
  }
  return out;
}

/** The named block of a page file; throws naming the page and the blocks it has when it is missing. */
export function docBlock(file: string, tag: string, name: string): DocBlock {
  const blocks = docBlocks(readFileSync(file, 'utf8'), tag);
  const b = blocks.get(name);
  if (!b) throw new Error(`${file} has no block marked "<!-- ${tag}: ${name} -->" (it has: ${[...blocks.keys()].join(', ') || 'none'})`);
  return b;
}

/**
 * Replaces each `from` of a block by its `to`. Every `from` must occur: a page that no longer has the address a
 * test replaces would otherwise run unchanged against the wrong place.
 */
export function substitute(block: DocBlock, replacements: [from: string, to: string][]): string {
  let text = block.text;
  for (const [from, to] of replacements) {
    if (!text.includes(from)) throw new Error(`the block ${block.name} (line ${block.line}) no longer contains ${JSON.stringify(from)}`);
    text = text.split(from).join(to);
  }
  return text;
}
