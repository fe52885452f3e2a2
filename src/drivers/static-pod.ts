import { createHash } from 'node:crypto';
import { dirname } from 'node:path';
import type { StaticPodDriver as StaticPodSpec } from '../api/types.generated.ts';
import type { DriverRequest } from '../plan/actions.ts';
import { PROXY_GATE } from '../api/constants.ts';
import { KubeApiError, isTransient, type KubeClient } from '../runtime/kube.ts';
import type { Driver, DriverOutcome } from './driver.ts';
import { AGENT_SCRIPT } from './static-pod-script.ts';

/** The annotation that names the idempotency key a Job was created for; a 409 is ours only when it matches. */
export const KEY_ANNOTATION = 'upgrade.apiserver.dev/idempotency-key';
/** The annotation that names the emulated version a Job sets, when it sets one. */
export const EMULATED_VERSION_ANNOTATION = 'upgrade.apiserver.dev/emulated-version';

/** What `--emulated-version` takes from the operator: major.minor ("1.35"). */
const EMULATED_VERSION = /^\d+\.\d+$/;

/** Why a request's emulatedVersion cannot go into a manifest, or undefined when it can (or is absent). */
export function badEmulatedVersion(r: Pick<DriverRequest, 'emulatedVersion'>): string | undefined {
  if (r.emulatedVersion === undefined || EMULATED_VERSION.test(r.emulatedVersion)) return undefined;
  return `emulatedVersion ${JSON.stringify(r.emulatedVersion)} is not major.minor (e.g. "1.35")`;
}

const NAME_MAX = 63;
/** Hex digits of sha256(idempotency key) in a Job name: 64 bits, so distinct keys do not meet in practice. */
const NAME_HASH_HEX = 16;

/**
 * The agent Job's name: a DNS-1123 label (at most 63 characters of [a-z0-9-], starting and ending
 * alphanumeric) made of `auo-<action>-<readable prefix of the hostname>-<16 hex of sha256(key)>`. The hash
 * is of the whole idempotency key and is never cut, so distinct keys give distinct names however long or odd
 * (dots, capitals, underscores) the hostname is; the hostname part is only there for people.
 */
export function jobName(idempotencyKey: string, action: string, hostname: string): string {
  const hash = createHash('sha256').update(idempotencyKey).digest('hex').slice(0, NAME_HASH_HEX);
  const label = (s: string): string => s.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-{2,}/g, '-').replace(/^-+|-+$/g, '');
  const head = ['auo', label(action)].filter((x) => x !== '').join('-');
  const room = NAME_MAX - head.length - 1 - hash.length - 1;
  const host = label(label(hostname).slice(0, Math.max(0, room)));
  return [head, host, hash].filter((x) => x !== '').join('-');
}


/**
 * The kubeadm driver: one plain, inspectable Job per call (as Rancher's system-upgrade-controller does),
 * pinned to the server's node, that rewrites the static Pod manifest; the kubelet then restarts the
 * apiserver. The Job's name is derived from the idempotency key (jobName), so a repeated call finds the Job
 * it already created (409, and the Job's key annotation matches) and creates nothing.
 */
export function agentJob(spec: Required<StaticPodSpec>, r: DriverRequest, upgradeName: string): Record<string, unknown> {
  const bad = badEmulatedVersion(r);
  if (bad) throw new Error(bad);
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
    // Empty: the script removes any --emulated-version the manifest has.
    EMULATED_VERSION: r.emulatedVersion ?? '',
  };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: jobName(r.idempotencyKey, r.action, r.server.hostname),
      namespace: spec.namespace,
      labels: { 'app.kubernetes.io/managed-by': 'apiserver-upgrade-operator', 'upgrade.apiserver.dev/upgrade': upgradeName, 'upgrade.apiserver.dev/action': r.action.toLowerCase() },
      annotations: {
        [KEY_ANNOTATION]: r.idempotencyKey,
        'upgrade.apiserver.dev/server': r.server.hostname,
        'upgrade.apiserver.dev/target': r.targetVersion,
        ...(r.emulatedVersion ? { [EMULATED_VERSION_ANNOTATION]: r.emulatedVersion } : {}),
      },
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

/** The KubeClient calls the driver makes (a test passes a fake). */
export type JobClient = Pick<KubeClient, 'request'>;

/** Whether a Kubernetes API error will stay the same when the same call is made again. */
function permanent(err: unknown): err is KubeApiError {
  return err instanceof KubeApiError && err.statusCode >= 400 && err.statusCode < 500 && ![408, 409, 425, 429].includes(err.statusCode);
}

/**
 * Creates the agent Job. Never rejects: a Job created, or one that already exists for this key, is accepted;
 * a 4xx that retrying cannot change (forbidden, invalid, namespace missing) or a name held by a Job for
 * another key is rejected; everything else (5xx, 429, connection errors, after the client's own retries) is
 * transient.
 */
export class StaticPodDriver implements Driver {
  private readonly spec: Required<StaticPodSpec>;
  private readonly kube: JobClient;
  private readonly upgradeName: string;

  constructor(spec: Required<StaticPodSpec>, kube: JobClient, upgradeName: string) {
    this.spec = spec;
    this.kube = kube;
    this.upgradeName = upgradeName;
  }

  async call(r: DriverRequest): Promise<DriverOutcome> {
    const started = performance.now();
    const after = (): string => `after ${Math.round(performance.now() - started)} ms`;
    let name = '';
    const bad = badEmulatedVersion(r);
    if (bad) return { kind: 'rejected', message: `building the agent Job for node ${r.server.hostname}: ${bad}` };
    try {
      const job = agentJob(this.spec, r, this.upgradeName);
      name = (job.metadata as { name: string }).name;
      const jobs = `/apis/batch/v1/namespaces/${encodeURIComponent(this.spec.namespace)}/jobs`;
      try {
        await this.kube.request('POST', jobs, { body: job });
        return { kind: 'accepted', message: `created Job ${this.spec.namespace}/${name} on node ${r.server.hostname}` };
      } catch (err) {
        if (!(err instanceof KubeApiError && err.statusCode === 409)) throw err;
      }
      // 409: a Job of that name exists. It is this call's only when it was created for this key.
      let existing: { metadata?: { annotations?: Record<string, string> } };
      try {
        existing = await this.kube.request('GET', `${jobs}/${encodeURIComponent(name)}`);
      } catch (err) {
        if (err instanceof KubeApiError && err.statusCode === 404) {
          return { kind: 'transient', message: `Job ${this.spec.namespace}/${name} already existed but is gone now (deleted meanwhile); creating it again next time` };
        }
        throw err;
      }
      const theirs = existing.metadata?.annotations?.[KEY_ANNOTATION];
      if (theirs === r.idempotencyKey) {
        return { kind: 'accepted', message: `Job ${this.spec.namespace}/${name} already exists for this idempotency key (created by an earlier delivery)` };
      }
      return {
        kind: 'rejected',
        message: `Job ${this.spec.namespace}/${name} already exists and is not this call's: its ${KEY_ANNOTATION} is ${theirs === undefined ? 'missing' : `"${theirs}"`}, this call's key is "${r.idempotencyKey}" (a name collision with a foreign Job); delete or rename that Job, then resume`,
      };
    } catch (err) {
      const what = name ? `creating Job ${this.spec.namespace}/${name} on node ${r.server.hostname}` : `building the agent Job for node ${r.server.hostname}`;
      const msg = err instanceof Error ? err.message : String(err);
      if (permanent(err)) return { kind: 'rejected', message: `${what}: ${msg}` };
      const hint = isTransient(err) ? '' : ' (unexpected error; treated as transient)';
      return { kind: 'transient', message: `${what} failed ${after()}: ${msg}${hint}` };
    }
  }
}
