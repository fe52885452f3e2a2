import { dirname } from 'node:path';
import type { StaticPodDriver as StaticPodSpec } from '../api/types.generated.ts';
import type { DriverRequest } from '../plan/actions.ts';
import { PROXY_GATE } from '../api/constants.ts';
import { KubeApiError, type KubeClient } from '../runtime/kube.ts';
import type { Driver, DriverOutcome } from './driver.ts';
import { AGENT_SCRIPT } from './static-pod-script.ts';


/**
 * The kubeadm driver: one plain, inspectable Job per call (as Rancher's system-upgrade-controller does),
 * pinned to the server's node, that rewrites the static Pod manifest; the kubelet then restarts the
 * apiserver. The Job's name is derived from the idempotency key, so a repeated call finds the Job it
 * already created (409) and creates nothing.
 */
export function agentJob(spec: Required<StaticPodSpec>, r: DriverRequest, upgradeName: string): Record<string, unknown> {
  const gate = r.featureGates[PROXY_GATE];
  const [ip = '', port = '6443'] = (r.server.address ?? '').split(':');
  const manifestDir = dirname(spec.manifestPath);
  const env: Record<string, string> = {
    MANIFEST: spec.manifestPath,
    BACKUP_DIR: spec.backupDir,
    KEY: r.idempotencyKey,
    IMAGE: spec.image,
    VERSION: r.targetVersion,
    PEER_CA: spec.peerCAFile,
    PEER_IP: ip,
    PEER_PORT: port,
    GATE: gate === undefined ? '' : String(gate),
  };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: `auo-${r.idempotencyKey}`.slice(0, 63).replace(/-+$/, ''),
      namespace: spec.namespace,
      labels: { 'app.kubernetes.io/managed-by': 'apiserver-upgrade-operator', 'upgrade.apiserver.dev/upgrade': upgradeName, 'upgrade.apiserver.dev/action': r.action.toLowerCase() },
      annotations: { 'upgrade.apiserver.dev/idempotency-key': r.idempotencyKey, 'upgrade.apiserver.dev/server': r.server.hostname, 'upgrade.apiserver.dev/target': r.targetVersion },
    },
    spec: {
      backoffLimit: 0,
      ttlSecondsAfterFinished: 86400,
      template: {
        spec: {
          nodeName: r.server.hostname,
          restartPolicy: 'Never',
          hostNetwork: true,
          tolerations: [{ operator: 'Exists' }],
          priorityClassName: 'system-node-critical',
          containers: [{
            name: 'agent',
            image: spec.agentImage,
            command: ['/bin/sh', '-c', AGENT_SCRIPT],
            env: Object.entries(env).map(([name, value]) => ({ name, value })),
            securityContext: { runAsUser: 0 },
            volumeMounts: [
              { name: 'manifests', mountPath: manifestDir },
              { name: 'backup', mountPath: spec.backupDir },
            ],
          }],
          volumes: [
            { name: 'manifests', hostPath: { path: manifestDir, type: 'Directory' } },
            { name: 'backup', hostPath: { path: spec.backupDir, type: 'DirectoryOrCreate' } },
          ],
        },
      },
    },
  };
}

export class StaticPodDriver implements Driver {
  private readonly spec: Required<StaticPodSpec>;
  private readonly kube: KubeClient;
  private readonly upgradeName: string;

  constructor(spec: Required<StaticPodSpec>, kube: KubeClient, upgradeName: string) {
    this.spec = spec;
    this.kube = kube;
    this.upgradeName = upgradeName;
  }

  async call(r: DriverRequest): Promise<DriverOutcome> {
    const job = agentJob(this.spec, r, this.upgradeName);
    const name = (job.metadata as { name: string }).name;
    try {
      await this.kube.request('POST', `/apis/batch/v1/namespaces/${encodeURIComponent(this.spec.namespace)}/jobs`, { body: job });
      return { kind: 'accepted', message: `created Job ${this.spec.namespace}/${name} on node ${r.server.hostname}` };
    } catch (err) {
      if (err instanceof KubeApiError && err.statusCode === 409) return { kind: 'accepted', message: `Job ${this.spec.namespace}/${name} already exists (same idempotency key)` };
      if (err instanceof KubeApiError && err.statusCode >= 400 && err.statusCode < 500 && err.statusCode !== 429) return { kind: 'rejected', message: err.message };
      throw err;
    }
  }
}
