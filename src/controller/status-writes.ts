import type { ApiServerUpgrade, ApiServerUpgradeStatus } from '../api/types.generated.ts';
import { KubeApiError, upgradeRef } from '../runtime/kube.ts';
import type { Logger } from '../runtime/logger.ts';
import { createMergePatch } from './merge-patch.ts';
import type { ReconcilerConfig } from './reconciler-config.ts';

/** Writes the status when it changed, as a merge patch guarded by resourceVersion (409 -> re-read and re-plan). */
export async function writeStatus(c: ReconcilerConfig, u: ApiServerUpgrade, status: ApiServerUpgradeStatus, log: Logger): Promise<ApiServerUpgrade> {
  const patch = createMergePatch(u.status ?? {}, status);
  if (patch === undefined) return u;
  const before = u.status?.phase;
  let updated: ApiServerUpgrade;
  try {
    updated = await c.kube.patchUpgradeStatus(u.metadata!.name!, patch as Partial<ApiServerUpgradeStatus>, { resourceVersion: u.metadata!.resourceVersion! });
  } catch (err) {
    // Gone from the API while our reads still hold it, or changed since: those reads are behind (their watch may be stuck).
    if (err instanceof KubeApiError && err.statusCode === 404) c.upgrades.gone?.(u.metadata!.name!);
    if (err instanceof KubeApiError && err.statusCode === 409) c.upgrades.conflicted?.(u.metadata!.name!);
    throw err;
  }
  c.upgrades.written?.(u, updated);
  if (before !== status.phase) log.info('phase changed', { from: before ?? 'none', to: status.phase, batch: status.batch?.current });
  return updated;
}

export interface EventAction {
  type: 'Normal' | 'Warning';
  reason: string;
  note: string;
  server?: string;
}

/** An Event on the upgrade, and the same words in the log. */
export async function recordEvent(c: ReconcilerConfig, u: ApiServerUpgrade, a: EventAction, log: Logger): Promise<void> {
  try {
    await c.kube.createEvent(c.events, { regarding: upgradeRef(u), type: a.type, reason: a.reason, action: a.reason, note: a.server ? `${a.server}: ${a.note}` : a.note });
  } catch (err) {
    // An event is a courtesy: losing one must not fail or repeat the step that produced it.
    log.warn('event not recorded', { reason: a.reason, err: err instanceof KubeApiError ? err.message : String(err) });
  }
  log.info(a.note, { event: a.reason, type: a.type, ...(a.server ? { server: a.server } : {}) });
}
