// The ApiServerUpgrade the nodes-mode scenarios apply: the static Pod driver to NEW_VERSION, one node per batch.
import { NEW_VERSION } from '../cluster/index.ts';

/** `staticPod` adds to or overrides the driver's fields; `onBreach` defaults to Pause. */
export function staticPodUpgrade(name: string, staticPod: Record<string, unknown> = {}, extra: { onBreach?: string } = {}): Record<string, unknown> {
  return {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name },
    spec: {
      targetVersion: NEW_VERSION,
      strategy: { batchSize: 1, soakDuration: '5s', batchTimeout: '5m' },
      proxy: { gate: 'Auto', allowAlphaGate: true }, // the gate is alpha on v1.35: consent (docs/versions.md)
      // No agentImage: the agent runs from the operator's own image.
      driver: { staticPod: { readyTimeout: '2m', ...staticPod } },
      analysis: { interval: '5s', failureLimit: 3, onBreach: extra.onBreach ?? 'Pause' },
    },
  };
}
