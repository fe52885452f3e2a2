// The Events about one upgrade (events.k8s.io/v1 in namespace default, where the operator records them,
// as client-go does for cluster-scoped objects), newest last.
import type { ApiServerUpgrade } from '../api/types.generated.ts';
import { KIND } from '../api/constants.ts';

/** The fields of an events.k8s.io/v1 Event the plugin reads (as JSON: times are strings). */
export interface KubeEvent {
  metadata?: { name?: string; creationTimestamp?: string; resourceVersion?: string };
  eventTime?: string;
  deprecatedLastTimestamp?: string;
  series?: { lastObservedTime?: string; count?: number };
  type?: string;
  reason?: string;
  action?: string;
  note?: string;
  reportingController?: string;
  regarding?: { apiVersion?: string; kind?: string; name?: string; uid?: string };
}

export interface EventRow {
  time: string | undefined;
  type: string;
  reason: string;
  note: string;
  count: number;
}

/** Where Events about cluster-scoped objects live. */
export const EVENTS_NAMESPACE = 'default';
export const EVENTS_PATH = `/apis/events.k8s.io/v1/namespaces/${EVENTS_NAMESPACE}/events`;

/** The field selector that asks the API server for the Events regarding one object by name. */
export function eventsFieldSelector(name: string): string {
  return `regarding.name=${name}`;
}

export function eventTime(e: KubeEvent): string | undefined {
  return e.series?.lastObservedTime ?? e.eventTime ?? e.deprecatedLastTimestamp ?? e.metadata?.creationTimestamp;
}

/**
 * The Events regarding `u`, oldest first, the last `limit` of them. An Event of an earlier object with the
 * same name (another uid) is left out.
 */
export function eventsAbout(u: Pick<ApiServerUpgrade, 'metadata'>, items: readonly KubeEvent[], limit = 10): EventRow[] {
  const name = u.metadata?.name;
  const uid = u.metadata?.uid;
  return items
    .filter((e) => e.regarding?.name === name && (e.regarding?.kind === undefined || e.regarding.kind === KIND) && (!uid || !e.regarding?.uid || e.regarding.uid === uid))
    .map((e) => ({ e, t: Date.parse(eventTime(e) ?? '') || 0, rv: Number(e.metadata?.resourceVersion ?? 0) || 0 }))
    // Several Events of one step share a millisecond; the resourceVersion keeps their order of creation.
    .sort((a, b) => a.t - b.t || a.rv - b.rv)
    .slice(-limit)
    .map(({ e }) => ({ time: eventTime(e), type: e.type ?? '', reason: e.reason ?? '', note: e.note ?? '', count: e.series?.count ?? 1 }));
}
