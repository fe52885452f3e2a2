// A simulated fleet for the pure planner's tests: driver calls apply to it when the test says so.
import type { ObservedKubeadm } from '../../src/plan/observed-preflight.ts';
import type { ApiServerUpgradeSpec, ApiServerUpgradeStatus } from '../../src/api/types.generated.ts';
import { leaseHolderSurvivesRestart } from '../../src/plan/version-facts.ts';
import { plan, recordCallOutcome, type Plan, type Observation, type ObservedPeer, type ObservedStorage, type UpgradeInput } from '../../src/plan/index.ts';
import { ProofSim } from './flag-proof-sim.ts';

export const OLD = 'v1.35.4';
export const NEW = 'v1.36.3';

export function peer(hostname: string, version: string, gate: ObservedPeer['proxyGate'] = 'off', extra: Partial<ObservedPeer> = {}): ObservedPeer {
  return { identity: `apiserver-${hostname}`, hostname, address: `10.0.0.${hostname.slice(-1)}`, version, ready: true, proxyGate: gate, stale: false, ...extra };
}

export function spec(over: Partial<ApiServerUpgradeSpec> = {}): ApiServerUpgradeSpec {
  return {
    targetVersion: NEW,
    driver: { webhook: { url: 'https://hook.example/replace' } },
    strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' },
    analysis: { interval: '10s', failureLimit: 3, onBreach: 'Pause' },
    ...over,
    // OLD (v1.35) has the proxy gate alpha: these tests consent to turning it on unless they say otherwise.
    proxy: { allowAlphaGate: true, ...over.proxy },
  };
}

/** Storage hashes as a complete read of a server of `version` gives them (the same for OLD and NEW here). */
export function storage(version: string, server = 'cp-1', hashes: Record<string, string> = { '/v1/pods': 'xPOwRZ+Yhw8=' }): ObservedStorage {
  return { version, server, hashes, kinds: Object.fromEntries(Object.keys(hashes).map((k) => [k, 'Pod'])) };
}

export const UPGRADE: UpgradeInput = { name: 'to-v1-36', uid: 'uid-1', generation: 1, annotations: {} };

/** Steps the planner the way the controller does, carrying status forward. */
export class Sim {
  status: ApiServerUpgradeStatus | undefined;
  peers: ObservedPeer[];
  now = new Date('2026-11-29T10:00:00Z');
  upgrade: UpgradeInput = { ...UPGRADE };
  extra: Partial<Observation> = { discovery: { converged: true, message: 'converged' }, storage: [storage(OLD), storage(NEW)] };
  last!: Plan;
  spec: ApiServerUpgradeSpec;

  constructor(peers: ObservedPeer[], s: ApiServerUpgradeSpec = spec()) {
    this.peers = peers;
    this.spec = s;
  }

  /** Whether each observation carries a fresh Healthy check when the test set no analysis of its own. */
  autoHealthy = true;
  /** The static Pod driver's flag proofs (test/plan/flag-proof-sim.ts): Jobs created by the plan, read at the next step. */
  readonly proofs = new ProofSim();
  /** When set, computes part of each observation from the fleet as it is at that step (e.g. own discovery). */
  derive: ((peers: ObservedPeer[]) => Partial<Observation>) | undefined;

  step(advanceMs = 1000): Plan {
    this.now = new Date(this.now.getTime() + advanceMs);
    // A healthy fleet's observer: a Healthy check at every step, unless the test set its own analysis.
    const healthy: Partial<Observation> = this.extra.analysis === undefined && this.autoHealthy ? { analysis: { time: this.now.toISOString(), verdict: 'Healthy', signals: {}, breaches: [] } } : {};
    const flagProof = this.proofs.observe(this.spec, this.status, this.peers, this.now);
    this.last = plan(this.upgrade, this.spec, this.status, { peers: this.peers, ...healthy, ...(flagProof ? { flagProof } : {}), ...this.extra, ...this.derive?.(this.peers) }, this.now);
    this.status = this.last.status;
    this.proofs.apply(this.last.actions, this.now);
    return this.last;
  }

  /** Carries out the driver calls of the last step on the simulated fleet at once, as an instant driver would. */
  applyDriverCalls(): number {
    let n = 0;
    for (const a of this.last.actions) {
      if (a.kind !== 'callDriver') continue;
      n++;
      const p = this.peers.find((x) => x.hostname === a.request.server.hostname);
      if (!p) continue; // a server no longer in the fleet: the call is never answered
      const before = p.version;
      p.version = a.request.targetVersion;
      if (a.request.emulatedVersion === undefined) delete p.emulation;
      else p.emulation = a.request.emulatedVersion;
      const g = a.request.featureGates.UnknownVersionInteroperabilityProxy;
      if (g !== undefined) p.proxyGate = g ? 'on' : 'off';
      // As real servers do: before 1.35 the identity Lease outlives the process and the next one renews the old
      // holder (only its start time is new); from 1.35 each process writes its own holder.
      if (p.holderIdentity !== undefined && leaseHolderSurvivesRestart(before) && leaseHolderSurvivesRestart(p.version)) p.processStart = (p.processStart ?? 0) + 1;
      else {
        p.holderIdentity = `${p.identity}_${n}-${this.now.getTime()}`;
        // A server before 1.35 with a Lease: its page gives the start time with the holder (process-identity.ts).
        if (leaseHolderSurvivesRestart(p.version)) p.processStart = (p.processStart ?? 0) + 1;
      }
      this.status = recordCallOutcome(this.status!, a.request.idempotencyKey, { kind: 'accepted', message: 'HTTP 200' }, this.now);
    }
    return n;
  }

  calls(): string[] {
    return this.last.actions.filter((a) => a.kind === 'callDriver').map((a) => (a.kind === 'callDriver' ? `${a.request.action}:${a.request.server.hostname}` : ''));
  }

  condition(type: string): { status: string; reason: string; message: string } | undefined {
    return this.status?.conditions?.find((c) => c.type === type);
  }
}

/** What the static Pod driver's preflight reads on a clean kubeadm cluster of `n` control-plane nodes cp-1..cp-n. */
export function kubeadmFacts(n: number): ObservedKubeadm {
  const nodes = Array.from({ length: n }, (_, i) => i + 1);
  return {
    configMap: 'present',
    nodes: nodes.map((i) => ({ name: `cp-${i}`, kubeletVersion: OLD, hostnameLabel: `cp-${i}` })),
    servers: nodes.map((i) => ({ hostname: `cp-${i}`, etcd: { status: 200, body: 'ok' }, certificate: { ok: true, dnsNames: ['kubernetes.default.svc'], notAfter: '2027-12-01T00:00:00Z' }, deprecated: [], mirrorPod: { name: `kube-apiserver-cp-${i}`, nodeName: `cp-${i}` } })),
  };
}
