/**
 * Maintenance windows (spec.window), pure: whether one is open at an instant, when it closes and when the next
 * opens. The zone rules are the runtime's own (Intl, Node's ICU with its time zone database): wall-clock times
 * are turned into instants with the zone's offset at that moment, so a window keeps its wall-clock start across
 * a daylight-saving change. A start time the change skips (02:30 on a spring-forward night in Europe/Berlin) opens
 * at the same distance after the gap began (03:30 CEST: the offset before the change), as java.time and Temporal's
 * "compatible" do; a time that happens twice (the fall-back hour) opens at its first occurrence. A duration is
 * elapsed time.
 */
import type { ResolvedWindow } from '../api/defaults.ts';
import { WEEKDAYS } from '../api/vocabulary.ts';

/** How far ahead the next start is looked for. */
export const WINDOW_HORIZON_DAYS = 60;
const DAY_MS = 86_400_000;

export interface WindowState {
  open: boolean;
  /** When the open window closes (open only). */
  closesAt?: number;
  /** When the next window opens after `now` (within the horizon); absent: none found. */
  nextStart?: number;
  /** The exclusion that closes it now, if one does. */
  excludedBy?: string;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formatters.set(zone, f);
  }
  return f;
}

/** The zone's wall clock at `t`, as if it were UTC (ms). */
function wallClock(zone: string, t: number): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(zone).formatToParts(new Date(t))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour! % 24, parts.minute!, parts.second!);
}

/** The zone's offset from UTC at instant `t` (ms, east positive). */
export function offsetAt(zone: string, t: number): number {
  const whole = Math.floor(t / 1000) * 1000;
  return wallClock(zone, whole) - whole;
}

/**
 * The instant a wall-clock time (given as if UTC, ms) happens in `zone`: the earlier of two in a repeated hour;
 * in a skipped one, the offset before the change (so 02:30 in a gap of 02:00-03:00 is 03:30 after it).
 */
export function zonedInstant(zone: string, wall: number): number {
  const before = offsetAt(zone, wall - DAY_MS);
  const after = offsetAt(zone, wall + DAY_MS);
  const candidates = [...new Set([wall - before, wall - after])].filter((t) => wallClock(zone, t) === wall).sort((a, b) => a - b);
  if (candidates.length > 0) return candidates[0]!;
  // In a gap: the offset in force just before it.
  return wall - before;
}

/** The recurring windows as instants, from a few days before `now` to the horizon, before exclusions. */
function occurrences(w: ResolvedWindow, now: number): [number, number][] {
  const today = wallClock(w.timeZone, now);
  const base = Date.UTC(new Date(today).getUTCFullYear(), new Date(today).getUTCMonth(), new Date(today).getUTCDate());
  const out: [number, number][] = [];
  const longest = Math.max(...w.recurring.map((r) => r.durationMs));
  const back = Math.ceil(longest / DAY_MS) + 1;
  for (let d = -back; d <= WINDOW_HORIZON_DAYS; d++) {
    const day = base + d * DAY_MS;
    const weekday = WEEKDAYS[new Date(day).getUTCDay()]!;
    for (const r of w.recurring) {
      if (!r.days.includes(weekday)) continue;
      const [h, m] = r.start.split(':').map(Number) as [number, number];
      const start = zonedInstant(w.timeZone, day + h * 3_600_000 + m * 60_000);
      out.push([start, start + r.durationMs]);
    }
  }
  return out;
}

/** Intervals minus the exclusions, merged where they touch or overlap, sorted. */
function openIntervals(w: ResolvedWindow, now: number): [number, number][] {
  let pieces = occurrences(w, now);
  for (const e of w.exclusions) {
    pieces = pieces.flatMap(([a, b]): [number, number][] => {
      if (e.endMs <= a || e.startMs >= b) return [[a, b]];
      const keep: [number, number][] = [];
      if (e.startMs > a) keep.push([a, e.startMs]);
      if (e.endMs < b) keep.push([e.endMs, b]);
      return keep;
    });
  }
  pieces.sort((x, y) => x[0] - y[0]);
  const merged: [number, number][] = [];
  for (const p of pieces) {
    const last = merged.at(-1);
    if (last && p[0] <= last[1]) last[1] = Math.max(last[1], p[1]);
    else merged.push([p[0], p[1]]);
  }
  return merged;
}

/** The window at `now`: open or not, when it closes, when the next opens. */
export function windowAt(w: ResolvedWindow, now: number): WindowState {
  const intervals = openIntervals(w, now);
  const current = intervals.find(([a, b]) => a <= now && now < b);
  const next = intervals.find(([a]) => a > now);
  const excluded = w.exclusions.find((e) => e.startMs <= now && now < e.endMs);
  return {
    open: current !== undefined,
    ...(current ? { closesAt: current[1] } : {}),
    ...(next ? { nextStart: next[0] } : {}),
    ...(current === undefined && excluded ? { excludedBy: excluded.reason ?? `the exclusion ${new Date(excluded.startMs).toISOString()}..${new Date(excluded.endMs).toISOString()}` } : {}),
  };
}
