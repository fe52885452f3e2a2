// The maintenance window of a campaign upgrade that drew `window-close` (draw-gates.ts): recurring windows in UTC,
// minute granularity (RecurringWindow: days, start HH:MM, a duration of at least 1m). The harness waits before
// creating the upgrade until `closeAtMs` after the creation falls on a minute, then gives it two windows: one open
// since the minute before the creation that closes there, and one that opens `closedMs` later and stays open for
// three hours. Every day of the week: an upgrade lasts minutes, so only today's (or yesterday's, across midnight) count.
import type { WindowSpec } from './rules-gates.ts';

const ALL_DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MINUTE = 60_000;

function hhmm(ms: number): string {
  const d = new Date(ms);
  return `${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')}`;
}

/** How long to wait from `now` so that `now + wait + closeAtMs` falls on a minute (ms). */
export function waitForAlignment(now: number, closeAtMs: number): number {
  return (MINUTE - ((now + closeAtMs) % MINUTE)) % MINUTE;
}

/**
 * The window for an upgrade created at `createdAt` that closes `closeAtMs` later, at the nearest minute (the harness
 * waited for it, and wakes a few ms past it), for `closedMs`.
 */
export function windowSpec(createdAt: number, closeAtMs: number, closedMs: number): { spec: WindowSpec; closesAt: number; opensAt: number } {
  const closesAt = Math.round((createdAt + closeAtMs) / MINUTE) * MINUTE;
  const opensFrom = Math.floor(createdAt / MINUTE) * MINUTE - MINUTE;
  const opensAt = closesAt + Math.ceil(closedMs / MINUTE) * MINUTE;
  return {
    spec: {
      timeZone: 'UTC',
      recurring: [
        { days: ALL_DAYS, start: hhmm(opensFrom), duration: `${(closesAt - opensFrom) / MINUTE}m` },
        { days: ALL_DAYS, start: hhmm(opensAt), duration: '180m' },
      ],
    },
    closesAt,
    opensAt,
  };
}
