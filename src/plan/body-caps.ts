import type { Breach } from '../api/types.generated.ts';
import type { ObservedBodyCap } from './observation.ts';

/**
 * What a server whose answer exceeded a cap (src/runtime/body-limits.ts) means for an upgrade: a **breach** of
 * the signal `bodyCap`, named per server, in every check while it lasts. Not Inconclusive: an inconclusive check
 * neither counts nor resets, so a server that keeps answering too much would stay unjudged while the upgrade went
 * on around it — and a server whose discovery, metrics or storage versions cannot be read is unknown, and unknown
 * is unsafe. The breach counts towards `failureLimit` like any other: the upgrade pauses (or rolls back, as
 * `spec.analysis.onBreach` says) before its next step, and the pause message names the server and the cap.
 */
export const BODY_CAP_SIGNAL = 'bodyCap';

/** One breach per server (its first finding in the message, with how many more), sorted by server. */
export function bodyCapBreaches(found: readonly ObservedBodyCap[] | undefined): Breach[] {
  const byServer = new Map<string, ObservedBodyCap[]>();
  for (const f of found ?? []) byServer.set(f.server, [...(byServer.get(f.server) ?? []), f]);
  return [...byServer].sort(([a], [b]) => a.localeCompare(b)).map(([server, list]) => {
    const first = list[0]!;
    const more = list.length > 1 ? ` (and ${list.length - 1} more: ${[...new Set(list.slice(1).map((f) => f.body))].join(', ')})` : '';
    return { signal: BODY_CAP_SIGNAL, server, observed: `${first.body} over its cap`, threshold: 'within caps', message: `${server}: ${first.body}: ${first.message}${more}` };
  });
}
