import type { Observation } from '../plan/index.ts';
import type { ReconcileContext, ReconcileReads } from '../plan/reconcile.ts';
import { observeTrust, type TrustObserverDeps } from '../observe/trust.ts';
import { observeCoverage } from '../observe/coverage.ts';
import type { ReconcilerConfig } from './reconciler-config.ts';

/**
 * Preflight's trust and coverage facts (src/observe/trust.ts, coverage.ts; docs/trust.md), read only before
 * the upgrade starts. The driver's Describe is called only for a spec the policy allows (as every call).
 */
export async function readPreflightFacts(c: ReconcilerConfig, rc: ReconcileContext, obs: Observation, what: NonNullable<ReconcileReads['preflight']>): Promise<Pick<Observation, 'trust' | 'coverage' | 'kubeadm'>> {
  if (!rc.spec.ok) return {};
  const spec = rc.spec.spec;
  const deps: TrustObserverDeps = { list: c.list };
  if (what.noDescribe !== undefined) {
    deps.noDescribe = what.noDescribe;
  } else {
    try {
      const driver = await c.driverFor(spec, rc.upgrade.metadata!.name!);
      if (driver.describe) deps.describe = (server) => driver.describe!(server);
      else deps.noDescribe = `the ${spec.driver.kind} driver has no Describe`;
    } catch (err) {
      deps.noDescribe = `the driver could not be built: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  const kubeadmFacts = c.kubeadmFacts;
  const [trust, coverage, kubeadm] = await Promise.all([
    observeTrust(obs.peers, c.observer.lastInventory, deps),
    observeCoverage(c.list),
    what.kubeadm && kubeadmFacts ? kubeadmFacts(obs.peers, what.kubeadm.always) : Promise.resolve(undefined),
  ]);
  return { trust, coverage, ...(kubeadm ? { kubeadm } : {}) };
}
