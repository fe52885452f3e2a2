// A large kube-apiserver /metrics page, built from a captured one the way a big cluster grows it: the families
// stay the same, every series labelled with a `resource` is repeated for more resources (`widgets` becomes
// `widgets-1`, `widgets-2`, ... with its group `<n>.<group>`), as many served resources (CRDs) do. Series
// without a resource label (Go runtime, process, feature gates, ...) appear once, as on a real page.
// Deterministic: the same captured page and target size give the same bytes. Used by bench/prom-parse.bench.ts.
import { readFileSync } from 'node:fs';

/** One family's block: its comment lines, then its samples. */
interface Block {
  comments: string[];
  samples: string[];
}

function blocks(text: string): Block[] {
  const out: Block[] = [];
  let cur: Block | undefined;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      if (!cur || cur.samples.length > 0) out.push((cur = { comments: [], samples: [] }));
      cur.comments.push(line);
    } else {
      if (!cur) out.push((cur = { comments: [], samples: [] }));
      cur.samples.push(line);
    }
  }
  return out;
}

/** The line for the n-th added resource: `resource="x"` -> `resource="x-n"`, `group="g"` -> `group="n.g"` (core: `n.example.com`). */
function renamed(line: string, n: number): string {
  return line
    .replace(/\bresource="([^"]*)"/, (_m, r: string) => `resource="${r}-${n}"`)
    .replace(/\bgroup="([^"]*)"/, (_m, g: string) => `group="${n}.${g === '' ? 'example.com' : g}"`);
}

/**
 * The captured page at `fixture` grown to about `targetBytes`: per family, its captured samples, then the
 * samples with a `resource` label once more for each added resource, as many resources as bring the page
 * nearest the target (one resource adds ~1.3 MB to the v1.36.3 page).
 */
export function bigPage(fixture: string, targetBytes: number): Buffer {
  const parsed = blocks(readFileSync(fixture, 'utf8'));
  const base = parsed.reduce((a, b) => a + [...b.comments, ...b.samples].reduce((x, l) => x + l.length + 1, 0), 0);
  const withResource = parsed.flatMap((b) => b.samples.filter((l) => l.includes('resource="')));
  // The number of copies whose page comes nearest the target.
  let copies = 0;
  let size = base;
  while (withResource.length > 0) {
    const next = size + withResource.reduce((x, l) => x + renamed(l, copies + 1).length + 1, 0);
    if (Math.abs(next - targetBytes) >= Math.abs(size - targetBytes)) break;
    size = next;
    copies++;
  }
  const parts: string[] = [];
  for (const b of parsed) {
    parts.push(...b.comments, ...b.samples);
    const withResource = b.samples.filter((l) => l.includes('resource="'));
    for (let n = 1; n <= copies; n++) for (const l of withResource) parts.push(renamed(l, n));
  }
  return Buffer.from(`${parts.join('\n')}\n`);
}
