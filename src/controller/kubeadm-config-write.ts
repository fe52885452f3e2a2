import type { ApiServerUpgrade } from '../api/types.generated.ts';
import { editClusterConfiguration, recordKubeadmConfig, KUBEADM_CONFIG_KEY, type KubeadmConfigOutcome, type KubeadmIntent } from '../plan/kubeadm-config.ts';
import { KUBEADM_CONFIG_PATH } from '../observe/kubeadm.ts';
import { KubeApiError } from '../runtime/kube.ts';
import type { Logger } from '../runtime/logger.ts';
import type { ReconcilerConfig } from './reconciler-config.ts';
import { recordEvent, writeStatus } from './status-writes.ts';

interface ConfigMapLike {
  metadata?: { resourceVersion?: string };
  data?: Record<string, string>;
}

/**
 * kube-system/kubeadm-config brought in line with what the ended upgrade changed (src/plan/kubeadm-config.ts
 * decides): read and edited; written back with the resourceVersion read (a 409 is thrown to the work queue, whose
 * retry reads it again) only when the operator's write is on (`c.writeKubeadmConfig`: the chart's
 * kubeadmConfig.write, off by default, docs/security.md) — off, nothing is written and the edit is recorded as the
 * admin's to make. The outcome is recorded in status with the KubeadmConfigUpdated condition and an Event. Not
 * there: not a kubeadm cluster. Forbidden or refused as invalid (the chart's admission policy on kubeadm-config):
 * recorded, with what to set by hand. Other errors are thrown and retried: status records nothing until it is done.
 */
export async function syncKubeadmConfig(c: ReconcilerConfig, u: ApiServerUpgrade, intent: KubeadmIntent, now: Date, log: Logger): Promise<ApiServerUpgrade> {
  let outcome: KubeadmConfigOutcome;
  try {
    const cm = await c.kube.request<ConfigMapLike>('GET', KUBEADM_CONFIG_PATH);
    const text = cm.data?.[KUBEADM_CONFIG_KEY];
    if (text === undefined) {
      outcome = { kind: 'noKey' };
    } else {
      const edit = editClusterConfiguration(text, intent);
      const readVersion = cm.metadata?.resourceVersion ? { resourceVersion: cm.metadata.resourceVersion } : {};
      if (edit.kind === 'updated' && !c.writeKubeadmConfig) {
        log.info('kubeadm-config differs from what the upgrade left; not written (the operator\'s write is off): reported', { changes: edit.changes });
        outcome = { kind: 'notWritten', edit, ...readVersion };
      } else if (edit.kind === 'updated') {
        // The object as read, resourceVersion included: a concurrent writer makes this a 409, never a lost update.
        const body = { ...cm, data: { ...cm.data, [KUBEADM_CONFIG_KEY]: edit.text } };
        const put = await c.kube.request<ConfigMapLike>('PUT', KUBEADM_CONFIG_PATH, { body });
        log.info('kubeadm-config updated', { changes: edit.changes, resourceVersion: put.metadata?.resourceVersion });
        outcome = { kind: 'edited', edit, ...(put.metadata?.resourceVersion ? { resourceVersion: put.metadata.resourceVersion } : {}) };
      } else {
        outcome = { kind: 'edited', edit, ...readVersion };
      }
    }
  } catch (err) {
    if (err instanceof KubeApiError && err.statusCode === 404) outcome = { kind: 'absent' };
    // 403: RBAC, or the admission policy's denial (reason Forbidden); 422: a denial with reason Invalid. Neither changes on a retry.
    else if (err instanceof KubeApiError && (err.statusCode === 403 || err.statusCode === 422)) outcome = { kind: 'forbidden', message: err.message };
    else throw err;
  }
  const { status, events } = recordKubeadmConfig(u.status ?? {}, intent, outcome, now, u.metadata?.generation ?? 0);
  const updated = await writeStatus(c, u, status, log);
  for (const e of events) await recordEvent(c, updated, e, log);
  return updated;
}
