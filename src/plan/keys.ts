import { createHash } from 'node:crypto';
import type { DriverAction } from '../api/types.generated.ts';

/**
 * The idempotency key of one driver call: the same (upgrade, batch, server, action, target) always gives the
 * same key, so a call re-sent after a crash is recognised by the driver and never replaces a server twice.
 */
export function idempotencyKey(upgradeUid: string, batch: number, hostname: string, action: DriverAction, target: string): string {
  const h = createHash('sha256').update([upgradeUid, batch, hostname, action, target].join('\u0000')).digest('hex');
  return `${action.toLowerCase()}-${hostname}-${h.slice(0, 16)}`.slice(0, 253);
}
