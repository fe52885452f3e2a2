import { createHash } from 'node:crypto';
import type { DriverAction } from '../api/types.generated.ts';

/**
 * The idempotency key of one driver call: the same (upgrade, batch, server, action, target) always gives the
 * same key, so a call re-sent after a crash is recognised by the driver and never replaces a server twice.
 */
export function idempotencyKey(upgradeUid: string, batch: number, hostname: string, action: DriverAction, target: string, attempt = 0): string {
  // Attempt 0 keeps the original derivation; a retry after a resume is a new request, so it gets a new key.
  const parts = [upgradeUid, batch, hostname, action, target, ...(attempt > 0 ? [attempt] : [])];
  const h = createHash('sha256').update(parts.join('\u0000')).digest('hex');
  // The hash is never cut: a long hostname is shortened instead, so distinct steps never share a key.
  return `${action.toLowerCase()}-${hostname.slice(0, 200)}-${h.slice(0, 16)}`;
}

/**
 * The apiserver's storageVersionHash of a group/version/kind (k8s.io/apiserver endpoints/discovery:
 * base64 of the first 8 bytes of sha256("<group>/<version>/<kind>")). Checked against the real servers'
 * discovery in the unit tests: Pods are xPOwRZ+Yhw8=. Here, below observe/, because the rollback verdict
 * (src/plan/rollback-safety.ts) decodes hashes with it.
 */
export function storageVersionHash(group: string, version: string, kind: string): string {
  return createHash('sha256').update(`${group}/${version}/${kind}`).digest().subarray(0, 8).toString('base64');
}
