import { createHash } from 'node:crypto';
import { dirname } from 'node:path';
import type { ResolvedStaticPod } from '../api/defaults.ts';
import type { DriverRequest } from '../plan/actions.ts';
import { PROXY_GATE } from '../api/constants.ts';
import { parseImageRef } from '../plan/policy.ts';
import { parseIpPort } from '../api/ip-port.ts';
import { shownValue } from '../api/shown.ts';
import { KubeApiError, MERGE_PATCH, isTransient, type KubeClient } from '../runtime/kube.ts';
import type { Driver, DriverOutcome, DriverReport, ReportRequest } from './driver.ts';
import { JOB_NAME_LABEL, STOPPED_ANNOTATION, jobReport } from './job-report.ts';
import { agentInputProblem, badImage } from './static-pod-input.ts';

/** The annotation that names the idempotency key a Job was created for; a 409 is ours only when it matches. */
export const KEY_ANNOTATION = 'upgrade.apiserver.dev/idempotency-key';
/** The annotation that names the emulated version a Job sets, when it sets one. */
export const EMULATED_VERSION_ANNOTATION = 'upgrade.apiserver.dev/emulated-version';

/**
 * The node agent's command in its image (the operator's own, or spec.driver.staticPod.agentImage): the compiled
 * src/agent/main.ts, with no arguments: everything it takes is in its environment, checked on both sides.
 * Part of the Job's contract (docs/drivers.md): the chart's admission policy allows exactly this command.
 */
export const AGENT_COMMAND: readonly string[] = ['node', '/app/dist/agent/main.js'];
/** The agent container's name. */
export const AGENT_CONTAINER = 'agent';

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


/** The namespace and name prefix of kubeadm's kube-apiserver mirror Pods (`kube-apiserver-<node name>`). */
export const MIRROR_POD_NAMESPACE = 'kube-system';
export const MIRROR_POD_PREFIX = 'kube-apiserver-';
/** The agent Pod's init container that pulls the target image (and runs its `kube-apiserver --version`). */
export const PULL_CONTAINER = 'pull-kube-apiserver';
/** The Job's deadline beyond the agent's ready timeout: the pull of the target image and the kubelet's own delays. */
export const PULL_ALLOWANCE_SECONDS = 300;

/** An image reference split as written (no normalisation: `busybox` stays `busybox`). */
export function splitImage(ref: string): { repository: string; tag?: string; digest?: string } {
  let rest = ref.trim();
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  return { repository: rest, ...(tag === undefined ? {} : { tag }), ...(digest === undefined ? {} : { digest }) };
}

/**
 * The image a call runs: `<spec.image>:<targetVersion>` when the spec names a repository, else the running
 * image's repository (registry and path as written, e.g. `registry.example.internal/k8s/kube-apiserver`)
 * with the target version as tag. A running image pinned by digest is replaced by the tag (the digest of
 * another version cannot be known), and the note says so. `error` when the result is not an image reference.
 */
export function targetImage(specImage: string, running: string | undefined, version: string): { image: string; note: string } | { error: string } {
  let image: string;
  let note: string;
  if (specImage !== '') {
    image = `${specImage}:${version}`;
    note = `image ${image} (spec.driver.staticPod.image)`;
  } else {
    if (running === undefined || running.trim() === '') return { error: 'the running kube-apiserver image is unknown' };
    const { repository, tag, digest } = splitImage(running);
    image = `${repository}:${version}`;
    note = `image ${image} (the repository the node runs, ${running}, at the target tag)`;
    if (digest !== undefined) {
      note += `; the running image is pinned by digest ${digest}${tag === undefined ? '' : ` (tag ${tag})`}: the target is pinned by tag ${version} instead`;
    }
  }
  try {
    parseImageRef(image, 'the target image');
  } catch (err) {
    return { error: `the target image ${shownValue(image)} is not an image reference: ${(err as Error).message}` };
  }
  const bad = badImage(image);
  if (bad) return { error: `the target image ${shownValue(image)} ${bad}` };
  return { image, note };
}

/** A node name as a message shows it: as it is when it is a label value's characters, else quoted and escaped. */
function nodeShown(hostname: string): string {
  return /^[A-Za-z0-9._-]{1,253}$/.test(hostname) ? hostname : shownValue(hostname);
}

/** Thrown by agentJob for a value that must not reach the agent; the message names the field. */
export class AgentInputError extends Error {
  override readonly name = 'AgentInputError';
}

/** The agent Job's image: spec.driver.staticPod.agentImage, or (empty) the operator's own image. */
export function agentImageOf(spec: Pick<ResolvedStaticPod, 'agentImage'>, operatorImage: string | undefined): { value: string; field: string } | undefined {
  if (spec.agentImage !== '') return { value: spec.agentImage, field: 'spec.driver.staticPod.agentImage' };
  if (operatorImage !== undefined && operatorImage !== '') return { value: operatorImage, field: 'the operator\'s --agent-image (its own image)' };
  return undefined;
}

/** How agentJob is asked for a Job. */
export interface AgentJobOptions {
  /** The operator's own image (--agent-image): the agent's image when the spec names none. */
  operatorImage?: string;
  /**
   * A Job shown, never created (`kubectl apiserver-upgrade plan`): the images may be placeholders (the
   * repository is read from the mirror Pod at call time) and are not checked; everything else is.
   */
  preview?: boolean;
}

/**
 * The kubeadm driver: one plain, inspectable Job per call (as Rancher's system-upgrade-controller does),
 * pinned to the server's node. Its Pod first runs `kube-apiserver --version` of the target image (an init
 * container, so the kubelet pulls the image before anything is touched: a registry failure fails the call
 * with the server still up), then the agent rewrites the static Pod manifest atomically, waits for the new
 * server's /readyz and restores the backup when it does not get ready within readyTimeout. The Job's name is
 * derived from the idempotency key (jobName), so a repeated call finds the Job it already created (409, and
 * the Job's key annotation matches) and creates nothing. `image` is the full target reference: targetImage's,
 * or plannedImage's placeholder in a preview. Throws AgentInputError (naming the field) for any value that must
 * not reach the agent (static-pod-input.ts); the agent checks its environment again on the node.
 *
 * The Job's shape is a contract the chart's admission policy checks: container `agent` running AGENT_COMMAND
 * with only the env below, as root; hostPath volumes `manifests` (the manifest's folder, Directory) and `backup`
 * (backupDir, DirectoryOrCreate); init container `pull-kube-apiserver` running `kube-apiserver --version` of
 * the target image; hostNetwork, nodeName, no service account token, restartPolicy Never.
 */
export function agentJob(spec: ResolvedStaticPod, r: DriverRequest, upgradeName: string, image: string, opts: AgentJobOptions = {}): Record<string, unknown> {
  const agent = agentImageOf(spec, opts.operatorImage);
  const agentImage = agent?.value ?? (opts.preview ? '<the operator\'s image>' : '');
  if (agent === undefined && !opts.preview) throw new AgentInputError('spec.driver.staticPod.agentImage is empty and the operator has no --agent-image (its own image) to run the agent with');
  const problem = agentInputProblem({
    spec, request: r,
    ...(opts.preview ? {} : { image: { value: image, field: 'the target image' }, ...(agent ? { agentImage: agent } : {}) }),
  });
  if (problem) throw new AgentInputError(problem);
  const gate = r.featureGates[PROXY_GATE];
  const { ip, port } = parseIpPort(r.server.address ?? '')!;
  const manifestDir = dirname(spec.manifestPath);
  const readySeconds = Math.max(1, Math.ceil(spec.readyTimeoutMs / 1000));
  const env: Record<string, string> = {
    MANIFEST: spec.manifestPath,
    BACKUP_DIR: spec.backupDir,
    KEY: r.idempotencyKey,
    IMAGE: image,
    VERSION: r.targetVersion,
    PEER_CA: spec.peerCAFile,
    PEER_IP: ip,
    PEER_PORT: String(port),
    GATE: gate === undefined ? '' : String(gate),
    // Empty: the agent removes any --emulated-version the manifest has.
    EMULATED_VERSION: r.emulatedVersion ?? '',
    READY_TIMEOUT: String(readySeconds),
  };
  const labels = { 'app.kubernetes.io/managed-by': 'apiserver-upgrade-operator', 'upgrade.apiserver.dev/upgrade': upgradeName, 'upgrade.apiserver.dev/action': r.action.toLowerCase() };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: jobName(r.idempotencyKey, r.action, r.server.hostname),
      namespace: spec.namespace,
      labels,
      annotations: {
        [KEY_ANNOTATION]: r.idempotencyKey,
        'upgrade.apiserver.dev/server': r.server.hostname,
        'upgrade.apiserver.dev/target': r.targetVersion,
        'upgrade.apiserver.dev/image': image,
        ...(r.emulatedVersion ? { [EMULATED_VERSION_ANNOTATION]: r.emulatedVersion } : {}),
      },
    },
    spec: {
      backoffLimit: 0,
      // Counted from the Job's start: the pull, then the agent's own wait (which reverts on its own first,
      // and reverts on the SIGTERM this deadline sends if it is still waiting).
      activeDeadlineSeconds: readySeconds + PULL_ALLOWANCE_SECONDS,
      ttlSecondsAfterFinished: 86400,
      template: {
        metadata: { labels },
        spec: {
          nodeName: r.server.hostname,
          restartPolicy: 'Never',
          hostNetwork: true,
          tolerations: [{ operator: 'Exists' }],
          priorityClassName: 'system-node-critical',
          // The agent needs no API access: it works on the node's files and the server's /readyz.
          automountServiceAccountToken: false,
          // Room for the agent to restore the backup when the deadline stops it mid-wait.
          terminationGracePeriodSeconds: 30,
          initContainers: [{
            name: PULL_CONTAINER,
            image,
            imagePullPolicy: 'IfNotPresent',
            command: ['kube-apiserver', '--version'],
            terminationMessagePolicy: 'FallbackToLogsOnError',
          }],
          containers: [{
            name: AGENT_CONTAINER,
            image: agentImage,
            command: [...AGENT_COMMAND],
            env: Object.entries(env).map(([name, value]) => ({ name, value })),
            securityContext: { runAsUser: 0 },
            terminationMessagePolicy: 'FallbackToLogsOnError',
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

/**
 * The image a `kubectl apiserver-upgrade plan` shows for a call: the real one when the spec names the
 * repository; otherwise the repository is read from the node's mirror Pod at call time, which a plan does
 * not do, so it shows a placeholder naming that.
 */
export function plannedImage(spec: Pick<ResolvedStaticPod, 'image'>, r: Pick<DriverRequest, 'targetVersion' | 'server'>): string {
  if (spec.image !== '') return `${spec.image}:${r.targetVersion}`;
  return `<repository of ${MIRROR_POD_NAMESPACE}/${MIRROR_POD_PREFIX}${r.server.hostname}>:${r.targetVersion}`;
}

/** The KubeClient calls the driver makes (a test passes a fake). */
export type JobClient = Pick<KubeClient, 'request'>;

/** Whether a Kubernetes API error will stay the same when the same call is made again. */
function permanent(err: unknown): err is KubeApiError {
  return err instanceof KubeApiError && err.statusCode >= 400 && err.statusCode < 500 && ![408, 409, 425, 429].includes(err.statusCode);
}

interface MirrorPod { metadata?: { name?: string }; spec?: { containers?: { name?: string; image?: string }[] } }

/**
 * Creates the agent Job. Never rejects: a Job created, or one that already exists for this key, is accepted;
 * a 4xx that retrying cannot change (forbidden, invalid, namespace missing) or a name held by a Job for
 * another key is rejected; everything else (5xx, 429, connection errors, after the client's own retries) is
 * transient. Without spec.image, it first reads the node's kube-apiserver mirror Pod for the repository
 * it runs (a list by name: the operator may list Pods in kube-system): not there (yet) or not readable is
 * transient, forbidden is rejected, a mirror Pod without a kube-apiserver image is rejected.
 *
 * `report` reads the call's Job and its Pods (jobReport).
 */
export class StaticPodDriver implements Driver {
  private readonly spec: ResolvedStaticPod;
  private readonly kube: JobClient;
  private readonly upgradeName: string;
  private readonly operatorImage: string | undefined;

  /** `operatorImage`: the operator's own image (--agent-image), the agent's when the spec names none. */
  constructor(spec: ResolvedStaticPod, kube: JobClient, upgradeName: string, operatorImage?: string) {
    this.spec = spec;
    this.kube = kube;
    this.upgradeName = upgradeName;
    this.operatorImage = operatorImage;
  }

  private jobsPath(): string {
    return `/apis/batch/v1/namespaces/${encodeURIComponent(this.spec.namespace)}/jobs`;
  }

  /** The image the node's mirror Pod runs, or an outcome that ends the call now. */
  private async runningImage(hostname: string, after: () => string): Promise<string | DriverOutcome> {
    const name = `${MIRROR_POD_PREFIX}${hostname}`;
    const where = `${MIRROR_POD_NAMESPACE}/${name}`;
    let pods: { items?: MirrorPod[] };
    try {
      pods = await this.kube.request('GET', `/api/v1/namespaces/${MIRROR_POD_NAMESPACE}/pods?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`);
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      if (permanent(err)) return { kind: 'rejected', message: `reading the mirror Pod ${where} (for the repository of the running image; set spec.driver.staticPod.image to skip this): ${msg}` };
      return { kind: 'transient', message: `reading the mirror Pod ${where} (for the repository of the running image) failed ${after()}: ${msg}` };
    }
    const pod = (pods.items ?? []).find((p) => p.metadata?.name === name);
    if (pod === undefined) {
      return { kind: 'transient', message: `the mirror Pod ${where} is not there (its kubelet recreates it while the server restarts; the node name must be the server's hostname ${hostname}); the repository of the running image is read from it, or set spec.driver.staticPod.image` };
    }
    const containers = pod.spec?.containers ?? [];
    const c = containers.find((x) => x.name === 'kube-apiserver') ?? (containers.length === 1 ? containers[0] : undefined);
    const image = c?.image?.trim();
    if (!image) {
      return { kind: 'rejected', message: `the mirror Pod ${where} has no kube-apiserver container with an image (containers: ${containers.map((x) => x.name ?? '?').join(', ') || 'none'}); set spec.driver.staticPod.image` };
    }
    return image;
  }

  async call(r: DriverRequest): Promise<DriverOutcome> {
    const started = performance.now();
    const after = (): string => `after ${Math.round(performance.now() - started)} ms`;
    let name = '';
    // Everything that reaches the agent but the target image (known after the mirror Pod is read), before anything else.
    const agent = agentImageOf(this.spec, this.operatorImage);
    const problem = agent === undefined
      ? 'spec.driver.staticPod.agentImage is empty and the operator has no --agent-image (its own image) to run the agent with'
      : agentInputProblem({ spec: this.spec, request: r, agentImage: agent });
    if (problem) return { kind: 'rejected', message: `building the agent Job for node ${nodeShown(r.server.hostname)}: ${problem}` };
    try {
      let running: string | undefined;
      if (this.spec.image === '') {
        const got = await this.runningImage(r.server.hostname, after);
        if (typeof got !== 'string') return got;
        running = got;
      }
      const target = targetImage(this.spec.image, running, r.targetVersion);
      if ('error' in target) return { kind: 'rejected', message: `building the agent Job for node ${nodeShown(r.server.hostname)}: ${target.error}` };
      const job = agentJob(this.spec, r, this.upgradeName, target.image, { ...(this.operatorImage ? { operatorImage: this.operatorImage } : {}) });
      name = (job.metadata as { name: string }).name;
      const jobs = this.jobsPath();
      try {
        await this.kube.request('POST', jobs, { body: job });
        return { kind: 'accepted', message: `created Job ${this.spec.namespace}/${name} on node ${r.server.hostname}: ${target.note}` };
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
      const what = name ? `creating Job ${this.spec.namespace}/${name} on node ${r.server.hostname}` : `building the agent Job for node ${nodeShown(r.server.hostname)}`;
      const msg = err instanceof Error ? err.message : String(err);
      if (permanent(err) || err instanceof AgentInputError) return { kind: 'rejected', message: `${what}: ${msg}` };
      const hint = isTransient(err) ? '' : ' (unexpected error; treated as transient)';
      return { kind: 'transient', message: `${what} failed ${after()}: ${msg}${hint}` };
    }
  }

  /**
   * What the call's Job says (jobReport). A Job that is not there is `gone`, not failed: it may have been
   * deleted by its TTL after success, or by a person; no agent runs for the call then. A Job made for another
   * key, or a failed read, is `unknown`. When its Pods cannot be read, the Job's own conditions still decide.
   * A Job whose Pod waits for good before its agent ran (an image that cannot be pulled) is stopped here: the
   * kubelet keeps pulling, and the agent would replace the server once the image is there, beside whatever the
   * planner does next with the call it saw fail (fault campaign, nodes seed 421 #3: the Upgrade ran beside its
   * Rollback). The call stays `running` until the Job's Pod is gone, then `failed`.
   */
  async report(call: ReportRequest): Promise<DriverReport> {
    const name = jobName(call.idempotencyKey, call.action, call.server.hostname);
    const where = `Job ${this.spec.namespace}/${name}`;
    const path = `${this.jobsPath()}/${encodeURIComponent(name)}`;
    let job: { metadata?: { annotations?: Record<string, string>; resourceVersion?: string } };
    try {
      job = await this.kube.request('GET', path);
    } catch (err) {
      if (err instanceof KubeApiError && err.statusCode === 404) {
        return { kind: 'gone', message: `${where} is not there (deleted after it finished — ttlSecondsAfterFinished is a day — or by someone): no agent runs for this call; the server's own state decides` };
      }
      return { kind: 'unknown', message: `reading ${where} failed: ${err instanceof Error ? err.message : String(err)}` };
    }
    const theirs = job.metadata?.annotations?.[KEY_ANNOTATION];
    if (theirs !== call.idempotencyKey) {
      return { kind: 'unknown', message: `${where} is not this call's (its ${KEY_ANNOTATION} is ${theirs === undefined ? 'missing' : `"${theirs}"`})` };
    }
    let pods: unknown[] | undefined;
    try {
      const got = await this.kube.request<{ items?: unknown[] }>('GET', `/api/v1/namespaces/${encodeURIComponent(this.spec.namespace)}/pods?labelSelector=${encodeURIComponent(`${JOB_NAME_LABEL}=${name}`)}`);
      pods = Array.isArray(got.items) ? got.items : undefined;
    } catch {
      // Without its Pods, the Job's conditions still tell failed and succeeded apart (jobReport).
      pods = undefined;
    }
    const verdict = jobReport(job, pods);
    return verdict.kind === 'stop' ? this.stop({ where, path }, job.metadata?.resourceVersion, verdict) : verdict;
  }

  /**
   * Suspends a Job whose Pod cannot start, with why in STOPPED_ANNOTATION: the Job controller deletes its Pod,
   * and the agent, if its pull came through meanwhile, gets SIGTERM and restores the manifest. Preconditioned on
   * the Job read, so a Job that finished meanwhile is not touched (409: read again at the next report).
   */
  private async stop({ where, path }: { where: string; path: string }, resourceVersion: string | undefined, verdict: { reason: string; message: string }): Promise<DriverReport> {
    const body = {
      metadata: { annotations: { [STOPPED_ANNOTATION]: verdict.reason }, ...(resourceVersion ? { resourceVersion } : {}) },
      spec: { suspend: true },
    };
    try {
      await this.kube.request('PATCH', path, { body, contentType: MERGE_PATCH, preconditioned: resourceVersion !== undefined });
    } catch (err) {
      return { kind: 'unknown', message: `${verdict.message}; stopping ${where} (spec.suspend) failed: ${err instanceof Error ? err.message : String(err)}` };
    }
    return { kind: 'running', message: `${verdict.message}; ${where} is stopped (spec.suspend) so that its agent never runs: the call fails once its Pod is gone` };
  }
}
