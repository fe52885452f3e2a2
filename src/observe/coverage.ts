/**
 * The coverage report's input (src/plan/coverage.ts): the APIServices, listed through the balancer with the
 * labels that tell a CRD's group/version (`kube-aggregator.kubernetes.io/automanaged: true`) from a built-in one
 * (`onstart`), and an aggregated API (`spec.service` set) from both. The same list the storage read makes
 * (`list apiservices`, already granted by the chart).
 */
import type { ObservedAPIService, ObservedCoverage } from '../plan/coverage.ts';
import { APISERVICES_PATH } from './fleet.ts';

export const AUTOMANAGED_LABEL = 'kube-aggregator.kubernetes.io/automanaged';

interface APIServiceItem {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: { group?: string; version?: string; service?: { namespace?: string; name?: string } | null };
}

/** An APIServiceList into the report's rows; throws on any other body. Pure. */
export function apiServicesFrom(list: { kind?: string; items?: APIServiceItem[] }): ObservedAPIService[] {
  if (list?.kind !== 'APIServiceList' || !Array.isArray(list.items)) throw new Error(`expected an APIServiceList, got ${String(list?.kind)}`);
  return list.items.map((s) => {
    const svc = s.spec?.service;
    const automanaged = s.metadata?.labels?.[AUTOMANAGED_LABEL];
    return {
      name: s.metadata?.name ?? '',
      group: s.spec?.group ?? '',
      version: s.spec?.version ?? '',
      ...(svc ? { service: `${svc.namespace ?? ''}/${svc.name ?? ''}` } : {}),
      ...(automanaged ? { automanaged } : {}),
    };
  });
}

/** Lists the APIServices; a failure is the report's "unknown", with why. */
export async function observeCoverage(list: <T>(path: string) => Promise<T>): Promise<ObservedCoverage> {
  try {
    return { apiServices: apiServicesFrom(await list(APISERVICES_PATH)) };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}
