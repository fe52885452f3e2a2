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
  /** How many files run at once (node --test --test-concurrency). */
  streams: number;
}

/**
 * Two files at once by default: most of an e2e test's time is waiting (soaks, intervals, servers starting), and
 * every cluster claims its own 10.77.<n>.0/24 and namespaces (e2e/cluster/netns.ts), so two streams do not meet.
 */
export const DEFAULT_STREAMS = 2;
const USAGE = `usage: npm run e2e -- [--tier ${TIERS.join('|')}] [--streams N] [path filter...]`;

/** `--tier X` (default core), `--streams N` (1–4) and plain words as path filters; anything else is an error. */
export function parseE2eArgs(argv: readonly string[]): E2eArgs {
  let tier: Tier = 'core';
  let streams = DEFAULT_STREAMS;
  const filters: string[] = [];
  const setTier = (v: string | undefined): void => {
    if (!TIERS.includes(v as Tier)) throw new Error(`--tier takes ${TIERS.join(', ')}; got ${JSON.stringify(v ?? '')}`);
    tier = v as Tier;
  };
  const setStreams = (v: string | undefined): void => {
    if (v === undefined || !/^[1-4]$/.test(v)) throw new Error(`--streams takes 1 to 4; got ${JSON.stringify(v ?? '')}`);
    streams = Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--tier') setTier(argv[++i]);
    else if (a.startsWith('--tier=')) setTier(a.slice('--tier='.length));
    else if (a === '--streams') setStreams(argv[++i]);
    else if (a.startsWith('--streams=')) setStreams(a.slice('--streams='.length));
    else if (a.startsWith('-')) throw new Error(`unknown option ${a}; ${USAGE}`);
    else filters.push(a);
  }
  return { tier, filters, streams };
}

/**
 * The files measured longest (docs/timings.md), started first so that two streams end close together (longest
 * first is the classic greedy schedule); every other file follows in name order.
 */
export const LONGEST_FIRST: readonly string[] = [
  'e2e/static-pod-nodes.e2e.ts',
  'e2e/campaign.e2e.ts',
  'e2e/helm-install.e2e.ts',
  'e2e/flag-proof-upgrade.e2e.ts',
  'e2e/rollback.e2e.ts',
  'e2e/two-phase.e2e.ts',
  'e2e/upgrade.e2e.ts',
  'e2e/dashboard.e2e.ts',
  'e2e/kubeadm-preflight.e2e.ts',
];

export function tierOf(file: string): Exclude<Tier, 'all'> {
  return file.replaceAll('\\', '/').startsWith(EXTENDED_DIR) ? 'extended' : 'core';
}

/** The files of the tier, filtered, the longest first and the rest by name (node --test starts them in this order). */
export function e2eFiles(all: readonly string[], args: Pick<E2eArgs, 'tier' | 'filters'>): string[] {
  const rank = (f: string): number => {
    const i = LONGEST_FIRST.indexOf(f.replaceAll('\\', '/'));
    return i < 0 ? LONGEST_FIRST.length : i;
  };
  return all
    .filter((f) => args.tier === 'all' || tierOf(f) === args.tier)
    .filter((f) => args.filters.length === 0 || args.filters.some((w) => f.includes(w)))
    .sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * The kube-apiserver versions a tier needs beyond what `setup.ts e2e` builds (the default old and new): the
 * extended tier's paths. Built before its files run, so the core tier and CI never build them.
 */
export function tierKubeVersions(tier: Tier): string[] {
  return tier === 'core' ? [] : extendedVersions();
}
