import { DURATION_PATTERN, compile } from './patterns.ts';

/**
 * Go duration strings (as the CRD accepts them) <-> milliseconds.
 *
 * The grammar is DURATION_PATTERN, the same expression the CRD's CEL rule uses, so a value the API server
 * admitted always parses here. Values are summed like Go's time.ParseDuration ("1h30m" = 90 minutes).
 */

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const WHOLE = compile(DURATION_PATTERN);
const GROUP = /([0-9]+(?:\.[0-9]+)?)(ns|us|ms|s|m|h)/gu;

/** Go's time.Duration is an int64 of nanoseconds; CEL's duration() refuses anything longer. */
export const MAX_DURATION_MS = Number(2n ** 63n - 1n) / 1e6;

export class DurationError extends Error {
  override readonly name = 'DurationError';
}

/** True when `s` is a duration the CRD accepts. */
export function isDuration(s: string): boolean {
  return tryParseDuration(s) !== undefined;
}

/** Parses a Go duration string into milliseconds, or returns undefined. */
export function tryParseDuration(s: string): number | undefined {
  if (!WHOLE.test(s)) return undefined;
  let ms = 0;
  for (const m of s.matchAll(GROUP)) {
    const [, num, unit] = m;
    // Both groups are mandatory in GROUP, and WHOLE guarantees the units are known.
    ms += Number(num) * (UNIT_MS[unit as string] ?? Number.NaN);
  }
  return Number.isFinite(ms) && ms <= MAX_DURATION_MS ? ms : undefined;
}

/** Parses a Go duration string into milliseconds; throws DurationError on a malformed value. */
export function parseDuration(s: string): number {
  const ms = tryParseDuration(s);
  if (ms === undefined) throw new DurationError(`invalid duration ${JSON.stringify(s)}: must be a Go duration such as 10s, 2m or 1h30m`);
  return ms;
}

/**
 * Formats milliseconds the way Go's Duration.String() does for whole milliseconds and up
 * ("1h30m0s", "2m0s", "1.5s", "250ms"), so values written to status read like the spec's.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) throw new DurationError(`cannot format duration ${ms}`);
  if (ms === 0) return '0s';
  if (ms < 1000) return `${trim(ms)}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  if (h > 0) return `${h}h${m}m${trim(s)}s`;
  if (m > 0) return `${m}m${trim(s)}s`;
  return `${trim(s)}s`;
}

/** Up to millisecond precision, without trailing zeros. */
function trim(n: number): string {
  return String(Math.round(n * 1000) / 1000);
}
