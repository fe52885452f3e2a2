// Which operator a campaign upgrade ran: a digest of everything the operator is built from (its code, CRDs, chart and
// locked dependencies), read from the checkout the campaign runs in. Upgrades recorded on several days count towards
// one operator's total only when they carry the same digest (e2e/campaign/tally.ts).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** What the operator is built from, relative to the repository root. */
export const OPERATOR_SOURCES = ['src', 'crds', 'charts', 'package.json', 'package-lock.json'] as const;

function files(root: string, path: string): string[] {
  const full = join(root, path);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return [path];
  return readdirSync(full, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(root, join(path, e.name)) : e.isFile() ? [join(path, e.name)] : []));
}

/** sha256 over each source file's path and content, in path order: 16 hex digits. */
export function operatorIdentity(root: string): string {
  const h = createHash('sha256');
  const all = OPERATOR_SOURCES.flatMap((p) => files(root, p)).sort();
  for (const f of all) {
    h.update(relative(root, join(root, f)));
    h.update('\0');
    h.update(readFileSync(join(root, f)));
    h.update('\0');
  }
  return h.digest('hex').slice(0, 16);
}
