// Objects for the plugin's unit tests: an upgrade in the middle of batch 2 of 3, its Events, and a fleet.
import type { ApiServerUpgrade, ApiServerUpgradeSpec, PauseReasonName } from '../../src/api/types.generated.ts';
import type { Observation, ObservedPeer } from '../../src/plan/index.ts';
import type { KubeEvent } from '../../src/cli/events.ts';

export const NOW = new Date('2026-03-01T12:00:00Z');
export const OLD = 'v1.35.4';
export const NEW = 'v1.36.3';

export function ago(seconds: number): string {
  return new Date(NOW.getTime() - seconds * 1000).toISOString();
}

export function spec(over: Partial<ApiServerUpgradeSpec> = {}): ApiServerUpgradeSpec {
  return {
    targetVersion: NEW,
    strategy: { batchSize: 1, soakDuration: '30s', batchTimeout: '5m' },
    driver: { webhook: { url: 'https://hook.example/replace', timeout: '10s' } },
    analysis: { interval: '10s', failureLimit: 3, onBreach: 'Pause' },
    ...over,
    // OLD (v1.35) has the proxy gate alpha: consent to turning it on unless a test says otherwise.
    proxy: { allowAlphaGate: true, ...over.proxy },
  };
}

/** Batch 1 done, batch 2 (cp-2) replaced and soaking, batch 3 to come; the last check breached once. */
export function upgrading(): ApiServerUpgrade {
  return {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1',
    kind: 'ApiServerUpgrade',
    metadata: { name: 'to-v1-36', uid: 'uid-1', generation: 1, resourceVersion: '4242', creationTimestamp: ago(300) as unknown as Date },
    spec: spec(),
    status: {
      phase: 'Upgrading',
      fromVersion: OLD,
      targetVersion: NEW,
      startedAt: ago(290),
      conditions: [
        { type: 'Progressing', status: 'True', reason: 'Upgrading', message: 'batch 2: soaking until 2026-03-01T12:00:20.000Z', lastTransitionTime: ago(100) },
        { type: 'PreflightPassed', status: 'True', reason: 'Passed', message: '3 servers on v1.35.4; minor upgrade to v1.36.3', lastTransitionTime: ago(290) },
      ],
      plan: { fromVersion: OLD, members: ['cp-1', 'cp-2', 'cp-3'], batches: [{ index: 1, servers: ['cp-1'] }, { index: 2, servers: ['cp-2'] }, { index: 3, servers: ['cp-3'] }], batchSize: '1', gateTurnedOn: ['cp-1', 'cp-2', 'cp-3'] },
      batch: { current: 2, total: 3, progress: '2/3', servers: ['cp-2'], startedAt: ago(60), soakUntil: new Date(NOW.getTime() + 20_000).toISOString(), history: [{ index: 1, servers: ['cp-1'], startedAt: ago(200), completedAt: ago(61), result: 'Succeeded' }] },
      peers: [
        { identity: 'apiserver-a', hostname: 'cp-1', version: NEW, ready: true, proxyGate: 'Enabled', state: 'Upgraded', batch: 1 },
        { identity: 'apiserver-b', hostname: 'cp-2', version: NEW, ready: true, proxyGate: 'Enabled', state: 'Upgraded', batch: 2 },
        { identity: 'apiserver-c', hostname: 'cp-3', version: OLD, ready: true, proxyGate: 'Enabled', state: 'Pending' },
      ],
      lastAnalysis: {
        time: ago(4),
        verdict: 'Breach',
        consecutiveBreaches: 1,
        signals: { proxyErrorRatio: 0.02, errorRatio: 0.001, latencyP99Seconds: 0.0434, discoveryConverged: true, stalePeers: 0 },
        breaches: [{ signal: 'proxyErrorRatio', server: 'cp-3', observed: '0.02', threshold: '0.01' }],
      },
      driverCalls: [
        { key: 'upgrade-cp-1-aaaaaaaaaaaaaaaa', server: 'cp-1', batch: 1, action: 'Upgrade', target: NEW, gate: true, time: ago(200), attempts: 1, result: 'Done', message: 'cp-1 restarted and is up at v1.36.3: done' },
        { key: 'upgrade-cp-2-bbbbbbbbbbbbbbbb', server: 'cp-2', batch: 2, action: 'Upgrade', target: NEW, gate: true, time: ago(60), attempts: 1, result: 'Done', message: 'cp-2 restarted and is up at v1.36.3: done' },
      ],
    },
  };
}

export function paused(reason: PauseReasonName, specPaused = reason === 'PausedBySpec'): ApiServerUpgrade {
  const u = upgrading();
  u.spec.paused = specPaused;
  u.status!.phase = 'Paused';
  u.status!.pause = { reason, message: reason === 'PausedBySpec' ? 'spec.paused is true' : '3 consecutive breaching checks', since: ago(30), resumePhase: 'Upgrading' };
  return u;
}

export function withPhase(phase: NonNullable<ApiServerUpgrade['status']>['phase']): ApiServerUpgrade {
  const u = upgrading();
  u.status!.phase = phase;
  return u;
}

export function event(reason: string, note: string, secondsAgo: number, over: Partial<KubeEvent> = {}): KubeEvent {
  return {
    metadata: { name: `to-v1-36.${reason}${secondsAgo}`, resourceVersion: String(1000 - secondsAgo) },
    eventTime: ago(secondsAgo),
    type: reason === 'Paused' ? 'Warning' : 'Normal',
    reason,
    note,
    regarding: { apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', name: 'to-v1-36', uid: 'uid-1' },
    ...over,
  };
}

export function peer(hostname: string, version = OLD, gate: ObservedPeer['proxyGate'] = 'off'): ObservedPeer {
  const n = hostname.slice(-1);
  return { identity: `apiserver-${hostname}`, hostname, address: `10.0.0.${n}:6443`, version, ready: true, proxyGate: gate, holderIdentity: `apiserver-${hostname}_1`, stale: false };
}

/** Three healthy servers on OLD with the gate as given, storage hashes read, discovery converged. */
export function fleet(gate: ObservedPeer['proxyGate'] = 'off'): Observation {
  return {
    peers: ['cp-1', 'cp-2', 'cp-3'].map((h) => peer(h, OLD, gate)),
    discovery: { converged: true, message: '3 servers agree' },
    storage: [{ version: OLD, server: 'cp-1', hashes: { '/v1/pods': 'xPOwRZ+Yhw8=' }, kinds: { '/v1/pods': 'Pod' } }],
  };
}
