// Counts kube-apiserver restarts on a static-Pod control plane while something else (the operator, kubeadm) works:
// each node's manifest file (a change is what makes the kubelet replace the Pod) and each mirror Pod (a new UID is a
// new static Pod; restartCount a container restart in the same Pod), polled every 500 ms.
import { createHash } from 'node:crypto';
import type { HttpResult } from '../cluster/http.ts';

interface MirrorPod { metadata: { name: string; uid: string }; spec: { nodeName?: string }; status?: { containerStatuses?: { restartCount: number }[] } }

export interface RestartCounts {
  /** Changes of the manifest file's content. */
  manifestChanges: number;
  /** New mirror Pods (UIDs) after the first one seen. */
  newPods: number;
  /** Container restarts within one Pod (restartCount growth). */
  containerRestarts: number;
}

export class ApiServerRestarts {
  private readonly perNode = new Map<string, { hash?: string; uids: Set<string>; restarts: Map<string, number>; counts: RestartCounts }>();
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(nodes: string[], manifest: (node: string) => Promise<string>, list: () => Promise<HttpResult>) {
    for (const n of nodes) this.perNode.set(n, { uids: new Set(), restarts: new Map(), counts: { manifestChanges: 0, newPods: 0, containerRestarts: 0 } });
    this.loop = (async () => {
      while (!this.stopped) {
        for (const [n, s] of this.perNode) {
          const text = await manifest(n).catch(() => undefined);
          if (text === undefined) continue; // kubeadm swaps it by rename: a read may fall between
          const h = createHash('sha256').update(text).digest('hex');
          if (s.hash !== undefined && h !== s.hash) s.counts.manifestChanges++;
          s.hash = h;
        }
        const r = await list().catch(() => undefined);
        if (r?.status === 200) {
          for (const p of (JSON.parse(r.body) as { items: MirrorPod[] }).items) {
            const s = this.perNode.get(p.spec.nodeName ?? '');
            if (!s) continue;
            if (!s.uids.has(p.metadata.uid)) {
              if (s.uids.size > 0) s.counts.newPods++;
              s.uids.add(p.metadata.uid);
            }
            const rc = p.status?.containerStatuses?.[0]?.restartCount ?? 0;
            const before = s.restarts.get(p.metadata.uid) ?? 0;
            if (rc > before) s.counts.containerRestarts += rc - before;
            s.restarts.set(p.metadata.uid, Math.max(rc, before));
          }
        }
        await new Promise((res) => setTimeout(res, 500));
      }
    })();
  }

  /** The counts so far, per node. */
  snapshot(): Record<string, RestartCounts> {
    return Object.fromEntries([...this.perNode].map(([n, s]) => [n, { ...s.counts }]));
  }

  /** What happened between two snapshots, per node. */
  static since(before: Record<string, RestartCounts>, after: Record<string, RestartCounts>): Record<string, RestartCounts> {
    return Object.fromEntries(Object.entries(after).map(([n, a]) => {
      const b = before[n] ?? { manifestChanges: 0, newPods: 0, containerRestarts: 0 };
      return [n, { manifestChanges: a.manifestChanges - b.manifestChanges, newPods: a.newPods - b.newPods, containerRestarts: a.containerRestarts - b.containerRestarts }];
    }));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}
