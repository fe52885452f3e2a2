import type { ApiServerUpgradeStatus } from '../api/types.generated.ts';
import { isTerminal } from '../api/vocabulary.ts';
import type { StartTimeReads } from './observation.ts';
import { inFlight } from './calls.ts';

/**
 * Which servers' process start times a look reads (`process_start_time_seconds` on /metrics, a whole page:
 * ~76 KB gzipped). Only a server whose Lease holder survives a restart (before 1.35: version-facts.ts) needs it,
 * and only where a decision compares its process identity (process-identity.ts) with one recorded:
 *
 * - a call in flight on it: whether the call landed (calls.ts `landed`, `callPollMs`) is a restart to confirm;
 * - a call that may be requested this step: the call records the process it found (`holderBefore`). That is
 *   any server while no call is in flight in a phase that makes calls, or while rolling back (a Rollback call may
 *   go to any server while others are in flight), and the servers of the batch under way.
 *
 * Elsewhere the last read start time is kept (`processStartKept`): it still names the process it was read from,
 * and an analysis look reads it again with the signals. A call is never recorded against a kept or unread start
 * time: `startTimeFresh` (process-identity.ts) holds the call back (calls.ts `driveStep`) until a look has read it.
 */
export function startTimeReads(status: ApiServerUpgradeStatus | undefined): StartTimeReads {
  const calls = (status?.driverCalls ?? []).filter(inFlight);
  const phase = status?.phase;
  const mayCall = !isTerminal(phase) && phase !== 'Paused' && phase !== 'Pending';
  if ((calls.length === 0 && mayCall) || phase === 'RollingBack') return { all: true, servers: [] };
  const batch = mayCall ? (status?.batch?.servers ?? []) : [];
  return { all: false, servers: [...new Set([...calls.map((c) => c.server), ...batch])].sort() };
}
