// Which e2e files a tier runs, and which binaries only it needs (scripts/e2e.ts). Pure, so
// test/scripts/e2e-tiers.test.ts checks it.
import { extendedVersions } from '../e2e/extended/paths.ts';

export const TIERS = ['core', 'extended', 'all'] as const;
export type Tier = (typeof TIERS)[number];

/** The folder whose files make the extended tier; everything else under e2e/ is core. */
export const EXTENDED_DIR = 'e2e/extended/';

export interface E2eArgs {
  tier: Tier;
  filters: string[];
}

/** `--tier X` or `--tier=X` (default core) and plain words as path filters; anything else is an error. */
export function parseE2eArgs(argv: readonly string[]): E2eArgs {
  let tier: Tier = 'core';
  const filters: string[] = [];
  const setTier = (v: string | undefined): void => {
    if (!TIERS.includes(v as Tier)) throw new Error(`--tier takes ${TIERS.join(', ')}; got ${JSON.stringify(v ?? '')}`);
    tier = v as Tier;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--tier') setTier(argv[++i]);
    else if (a.startsWith('--tier=')) setTier(a.slice('--tier='.length));
    else if (a.startsWith('-')) throw new Error(`unknown option ${a}; usage: npm run e2e -- [--tier ${TIERS.join('|')}] [path filter...]`);
    else filters.push(a);
  }
  return { tier, filters };
}

export function tierOf(file: string): Exclude<Tier, 'all'> {
  return file.replaceAll('\\', '/').startsWith(EXTENDED_DIR) ? 'extended' : 'core';
}

/** The files of the tier, filtered, sorted (node --test runs them in this order). */
export function e2eFiles(all: readonly string[], args: E2eArgs): string[] {
  return all
    .filter((f) => args.tier === 'all' || tierOf(f) === args.tier)
    .filter((f) => args.filters.length === 0 || args.filters.some((w) => f.includes(w)))
    .sort();
}

/**
 * The kube-apiserver versions a tier needs beyond what `setup.ts e2e` builds (the default old and new): the
 * extended tier's paths. Built before its files run, so the core tier and CI never build them.
 */
export function tierKubeVersions(tier: Tier): string[] {
  return tier === 'core' ? [] : extendedVersions();
}
