import { Cluster, ReplaceWebhook, OLD_VERSION, NEW_VERSION, PROXY_GATE } from '../cluster/index.ts';
import { installCrd, startOperator, type OperatorProcess } from './operator.ts';
import { TrafficRecorder } from './traffic.ts';

/** A resource only v1.36 serves: what a client asks for throughout an upgrade. */
export const NEW_ONLY = '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies';

export interface Rig {
  cluster: Cluster;
  hook: ReplaceWebhook;
  op: OperatorProcess;
  traffic: TrafficRecorder;
  /** Stops the traffic, the operator and the hook, then tears the cluster down. Idempotent. */
  teardown(): Promise<void>;
}

/**
 * What an upgrade scenario needs: 3 servers (or `servers`) on the old version with the proxy gate as given (undefined: the
 * version's default), the CRD, the replacement webhook, the operator as its own process through the balancer,
 * and a client asking for NEW_ONLY. `from`, `to` and `probe` change the path (e2e/extended/): the servers start
 * on `from`, `to`'s binary is built and checked first, and the client asks for `probe`.
 */
export async function startRig(o: { gate: boolean | undefined; healthPort: number; trafficMaxMs?: number; operatorEnv?: Record<string, string>; operatorArgs?: string[]; from?: string; to?: string; probe?: string; servers?: number; servingCertDays?: (number | undefined)[] }): Promise<Rig> {
  const featureGates: Record<string, boolean> = o.gate === undefined ? {} : { [PROXY_GATE]: o.gate };
  const cluster = await Cluster.start({ servers: o.servers ?? 3, version: o.from ?? OLD_VERSION, featureGates, verbose: true, replaceVersions: [o.to ?? NEW_VERSION], ...(o.servingCertDays ? { servingCertDays: o.servingCertDays } : {}) });
  const parts: (() => Promise<void>)[] = [() => cluster.teardown()];
  let done = false;
  const teardown = async (): Promise<void> => {
    if (done) return;
    done = true;
    for (const p of parts.reverse()) await p().catch(() => undefined);
  };
  try {
    await installCrd(cluster);
    const hook = await ReplaceWebhook.start(cluster);
    parts.push(() => hook.close());
    const op = await startOperator(cluster, { healthPort: o.healthPort, ...(o.operatorEnv ? { env: o.operatorEnv } : {}), ...(o.operatorArgs ? { extraArgs: o.operatorArgs } : {}) });
    parts.push(() => op.stop());
    const traffic = new TrafficRecorder(cluster, o.probe ?? NEW_ONLY, { intervalMs: 100, maxMs: o.trafficMaxMs ?? 10 * 60_000 });
    parts.push(() => traffic.stop());
    return { cluster, hook, op, traffic, teardown };
  } catch (err) {
    await teardown();
    throw err;
  }
}

/**
 * An ApiServerUpgrade to `target` (NEW_VERSION) through the rig's webhook, one server per batch: `spec` adds to
 * or overrides the strategy, proxy and analysis of each scenario.
 */
export function upgradeManifest(name: string, hook: ReplaceWebhook, spec: { strategy?: object; proxy?: object; analysis?: object } = {}, target = NEW_VERSION): Record<string, unknown> {
  return {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1',
    kind: 'ApiServerUpgrade',
    metadata: { name },
    spec: {
      targetVersion: target,
      strategy: { batchSize: 1, soakDuration: '5s', batchTimeout: '3m', ...spec.strategy },
      // The rig's servers run v1.35, where the proxy gate is alpha: the scenarios consent to turning it on (docs/versions.md).
      proxy: { allowAlphaGate: true, ...spec.proxy },
      // The rig's hook answers status requests (docs/drivers.md "Status"): no call for a server until the hook ended the last.
      driver: { webhook: { url: hook.url, caBundle: hook.caBundle, timeout: '10s', reportsStatus: true } },
      analysis: { interval: '2s', failureLimit: 3, ...spec.analysis },
    },
  };
}
