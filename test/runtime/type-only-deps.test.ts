// @kubernetes/client-node gives the operator and the plugin their types only (docs/adr/0002): it is a
// devDependency, so the image's `npm ci --omit=dev` leaves it (and undici, openid-client, ws, tar-fs) out. That
// holds only while every import of it is type-only, which TypeScript erases at compile.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const TYPES_ONLY = ['@kubernetes/client-node'];

/** Every import or re-export of `pkg` in `text` that is not `import type`/`export type` (line numbers, 1-based). */
function valueImports(text: string, pkg: string): number[] {
  const lines: number[] = [];
  const re = /^\s*(import|export)\s+(type\s+)?[^;]*?from\s+['"]([^'"]+)['"]/gm;
  for (const m of text.matchAll(re)) {
    if (m[3] !== pkg || m[2] !== undefined) continue;
    lines.push(text.slice(0, m.index).split('\n').length);
  }
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) if (m[1] === pkg) lines.push(text.slice(0, m.index).split('\n').length);
  return lines;
}

test('valueImports: finds a value import, a re-export and a dynamic import; leaves type-only ones', () => {
  const pkg = '@kubernetes/client-node';
  assert.deepEqual(valueImports(`import type { V1Pod } from '${pkg}';\nexport type { V1Node } from '${pkg}';`, pkg), []);
  assert.deepEqual(valueImports(`import { KubeConfig } from '${pkg}';\nimport type { X } from 'y';\nexport { Watch } from '${pkg}';\nawait import('${pkg}');`, pkg), [1, 3, 4]);
});

test('client-node is not a runtime dependency, and src/ imports only its types', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
  for (const name of TYPES_ONLY) {
    assert.equal(pkg.dependencies[name], undefined, `${name} is used for types only: a devDependency, not shipped in the image`);
    assert.ok(pkg.devDependencies[name], `${name} is a devDependency (the types come from it)`);
  }
  const files = readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && e.name.endsWith('.ts'));
  assert.ok(files.length > 50, 'the walk found the sources');
  const bad = files.flatMap((e) => {
    const file = join(e.parentPath, e.name);
    const text = readFileSync(file, 'utf8');
    return TYPES_ONLY.flatMap((name) => valueImports(text, name).map((l) => `${relative(root, file)}:${l} imports a value of ${name}`));
  });
  assert.deepEqual(bad, []);
});
