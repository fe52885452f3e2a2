// The flag proof as the shell gives it to the planner (src/controller/flag-proof-reads.ts), simulated: each node's
// want (its key changes with the call's gate and emulated version, and with a hand edit of its manifest), and the
// proof Jobs the planner asked for, each giving its verdict `delayMs` after it was created. A node's mode says what
// its binary answers; `lose` deletes a node's Jobs (a person, the TTL).
import type { ApiServerUpgradeSpec, ApiServerUpgradeStatus } from '../../src/api/types.generated.ts';
import { resolveSpec } from '../../src/api/defaults.ts';
import type { Action } from '../../src/plan/actions.ts';
import type { ObservedPeer } from '../../src/plan/observation.ts';
import type { ObservedFlagProof } from '../../src/plan/observed-preflight.ts';
import { proofRequests } from '../../src/plan/flag-proof-gate.ts';
import { PROOF_SENTINEL, type NodeProof } from '../../src/plan/flag-proof.ts';

export type ProofMode = 'accept' | 'refuse' | 'inconclusive' | 'notRun';

interface SimJob { hostname: string; name: string; readyAt: number; mode: ProofMode }

export class ProofSim {
  readonly jobs = new Map<string, SimJob>();
  /** Every Job ever created, lost ones too: what the binary answered for each key (the truth the model judges by). */
  readonly history = new Map<string, SimJob>();
  /** What each node's binary answers (default accept). */
  readonly mode = new Map<string, ProofMode>();
  /** Hand edits of each node's manifest. */
  readonly rev = new Map<string, number>();
  /** How long a proof Job takes to its verdict. */
  delayMs = 0;
  /** Jobs created, in order (node:key). */
  readonly created: string[] = [];
  private seq = 0;

  /** The flag proof's facts at `now`; undefined when the spec is not the static Pod driver's. */
  observe(spec: ApiServerUpgradeSpec, status: ApiServerUpgradeStatus | undefined, peers: readonly ObservedPeer[], now: Date): ObservedFlagProof | undefined {
    let resolved;
    try {
      resolved = resolveSpec(spec);
    } catch {
      return undefined;
    }
    if (resolved.driver.kind !== 'staticPod') return undefined;
    const wants = proofRequests(resolved, status, peers).map((r) => ({
      hostname: r.hostname, key: this.keyOf(r.hostname, r.gate, r.emulatedVersion), image: `registry.k8s.io/kube-apiserver:${r.targetVersion}`,
      command: ['--etcd-servers=https://127.0.0.1:2379', `--audit-log-maxage=${this.rev.get(r.hostname) ?? 0}`, PROOF_SENTINEL],
      ...(r.gate === undefined ? {} : { gate: r.gate }), ...(r.emulatedVersion === undefined ? {} : { emulatedVersion: r.emulatedVersion }),
    }));
    const jobs = [...this.jobs].map(([key, j]) => {
      const proof = now.getTime() >= j.readyAt ? proofOf(j) : undefined;
      return { key, hostname: j.hostname, name: j.name, ...(proof === undefined ? {} : { proof }) };
    });
    return { wants, jobs };
  }

  /** The key of a node's want for a call with this gate and emulated version. */
  keyOf(hostname: string, gate: boolean | undefined, emulatedVersion: string | undefined): string {
    return `proveflags-${hostname}-${this.rev.get(hostname) ?? 0}-${String(gate)}-${emulatedVersion ?? 'none'}`;
  }

  /** The planner's proveFlags actions: a Job per key, once. */
  apply(actions: readonly Action[], now: Date): void {
    for (const a of actions) {
      if (a.kind !== 'proveFlags' || this.jobs.has(a.proof.key)) continue;
      const job = { hostname: a.proof.hostname, name: `auo-proveflags-${a.proof.hostname}-${++this.seq}`, readyAt: now.getTime() + this.delayMs, mode: this.mode.get(a.proof.hostname) ?? 'accept' };
      this.jobs.set(a.proof.key, job);
      if (!this.history.has(a.proof.key) || this.history.get(a.proof.key)!.mode !== 'accept') this.history.set(a.proof.key, job);
      this.created.push(`${a.proof.hostname}:${a.proof.key}`);
    }
  }

  /** A hand edit of the node's manifest: its command line changes. */
  edit(hostname: string): void {
    this.rev.set(hostname, (this.rev.get(hostname) ?? 0) + 1);
  }

  /** The node's proof Jobs are deleted. */
  lose(hostname: string): void {
    for (const [k, j] of this.jobs) if (j.hostname === hostname) this.jobs.delete(k);
  }
}

function proofOf(j: SimJob): NodeProof {
  const hostname = j.hostname;
  if (j.mode === 'notRun') return { hostname, notRun: `the proof's container cannot start on ${hostname}: ErrImagePull` };
  if (j.mode === 'inconclusive') return { hostname, verdict: { result: 'Inconclusive', message: 'kube-apiserver did not exit within 330 s' } };
  if (j.mode === 'refuse') return { hostname, verdict: { result: 'Refused', message: 'unrecognized feature gate: ServiceTrafficDistribution', flag: '--feature-gates', item: 'ServiceTrafficDistribution' } };
  return { hostname, verdict: { result: 'Accepted', warnings: [] } };
}

/** Every node's want with its proof Job already Accepted: a fleet whose command lines were proven. */
export function acceptedProofs(spec: ApiServerUpgradeSpec, status: ApiServerUpgradeStatus | undefined, peers: readonly ObservedPeer[]): ObservedFlagProof {
  const sim = new ProofSim();
  const now = new Date(0);
  const first = sim.observe(spec, status, peers, now);
  if (first === undefined || 'error' in first) return { error: 'not the static Pod driver' };
  sim.apply(first.wants.flatMap((w) => ('error' in w ? [] : [{ kind: 'proveFlags' as const, proof: { hostname: w.hostname, key: w.key, image: w.image, command: w.command, targetVersion: spec.targetVersion } }])), now);
  return sim.observe(spec, status, peers, now)!;
}
