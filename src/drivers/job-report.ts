import type { DriverReport } from './driver.ts';

/**
 * What the static Pod driver's agent Job says about its call, read from a batch/v1 Job and its Pods. Pure.
 *
 * `failed` only on evidence that the replacement will not happen: the Job's Failed (or FailureTarget)
 * condition, or a container of its Pod waiting for good before it ran (its image cannot be pulled, its
 * config cannot be made). The message carries what the node said: the agent's termination message (e.g.
 * "reverted: the new kube-apiserver static Pod was not ready within 180s; restored …"), the container's
 * reason and exit code, or the Job's own reason (BackoffLimitExceeded, DeadlineExceeded).
 * `succeeded` on the Complete condition; `running` while the Job has neither. A missing or malformed Job is
 * `unknown`, never `failed`: a guess must not end a call.
 */

/** The fields of a batch/v1 Job this reads; everything optional, as a partial object may lack any of them. */
export interface JobObject {
  metadata?: { name?: string; namespace?: string; uid?: string };
  status?: {
    conditions?: readonly { type?: string; status?: string; reason?: string; message?: string }[];
    active?: number;
    ready?: number;
    succeeded?: number;
    failed?: number;
  };
}

interface ContainerState {
  waiting?: { reason?: string; message?: string };
  running?: { startedAt?: string };
  terminated?: { exitCode?: number; reason?: string; message?: string; signal?: number };
}

interface ContainerStatus {
  name?: string;
  image?: string;
  state?: ContainerState;
  lastState?: ContainerState;
}

/** The fields of a v1 Pod this reads. */
export interface PodObject {
  metadata?: { name?: string; labels?: Record<string, string>; ownerReferences?: readonly { uid?: string; kind?: string }[] };
  spec?: { initContainers?: readonly { name?: string; image?: string }[]; containers?: readonly { name?: string; image?: string }[] };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    initContainerStatuses?: readonly ContainerStatus[];
    containerStatuses?: readonly ContainerStatus[];
  };
}

/**
 * Waiting reasons after which the container never starts without a change on the cluster: the kubelet keeps
 * retrying a pull, but a call whose image is missing or unreachable must fail while its server is untouched
 * (the agent container runs after the pull init container, so nothing was replaced yet).
 */
export const STUCK_WAITING_REASONS: ReadonlySet<string> = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
]);

/** The label the Job controller puts on its Pods (the older `job-name` is set too). */
export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const text = (x: unknown): string | undefined => (typeof x === 'string' && x.trim() !== '' ? x.trim() : undefined);
const list = <T>(x: unknown): T[] => (Array.isArray(x) ? (x.filter(isObject) as T[]) : []);

/** Termination messages can be up to 4 KiB (or a log tail); a report line keeps the last lines of it. */
const MESSAGE_MAX = 600;

function short(s: string): string {
  const one = s.replace(/\s*\n\s*/g, ' | ');
  return one.length <= MESSAGE_MAX ? one : `…${one.slice(one.length - MESSAGE_MAX)}`;
}

function condition(job: JobObject, type: string): { reason?: string; message?: string } | undefined {
  return list<{ type?: unknown; status?: unknown; reason?: unknown; message?: unknown }>(job.status?.conditions)
    .filter((c) => c.type === type && c.status === 'True')
    .map((c) => ({ ...(text(c.reason) ? { reason: text(c.reason) } : {}), ...(text(c.message) ? { message: text(c.message) } : {}) }))[0];
}

/** The Job's own Pods: owned by its uid when both are known, else labelled with its name. */
function podsOf(job: JobObject, pods: readonly unknown[]): PodObject[] {
  const uid = text(job.metadata?.uid);
  const name = text(job.metadata?.name);
  return list<PodObject>(pods).filter((p) => {
    const owners = list<{ uid?: unknown }>(p.metadata?.ownerReferences);
    if (uid !== undefined && owners.length > 0) return owners.some((o) => o.uid === uid);
    const labels = isObject(p.metadata?.labels) ? p.metadata.labels : {};
    return name !== undefined && (labels[JOB_NAME_LABEL] === name || labels['job-name'] === name);
  });
}

interface Named { pod: string; container: string; kind: 'init container' | 'container'; image: string; status: ContainerStatus }

function containersOf(pod: PodObject): Named[] {
  const podName = text(pod.metadata?.name) ?? '(unnamed Pod)';
  const imageIn = (specs: unknown, name: string | undefined): string | undefined =>
    text(list<{ name?: unknown; image?: unknown }>(specs).find((c) => c.name === name)?.image);
  const of = (statuses: unknown, kind: Named['kind'], specs: unknown): Named[] =>
    list<ContainerStatus>(statuses).map((status) => {
      const container = text(status.name) ?? '(unnamed)';
      // The spec's image is the one asked for; the status may show a resolved or placeholder one.
      const image = imageIn(specs, status.name) ?? text(status.image) ?? '(image unknown)';
      return { pod: podName, container, kind, image, status };
    });
  return [...of(pod.status?.initContainerStatuses, 'init container', pod.spec?.initContainers), ...of(pod.status?.containerStatuses, 'container', pod.spec?.containers)];
}

/** A container waiting for a reason that does not pass by itself, described with its image. */
function stuck(pods: readonly PodObject[]): string | undefined {
  for (const pod of pods) {
    for (const c of containersOf(pod)) {
      const w = isObject(c.status.state) && isObject(c.status.state.waiting) ? c.status.state.waiting : undefined;
      const reason = text(w?.reason);
      if (reason === undefined || !STUCK_WAITING_REASONS.has(reason)) continue;
      const msg = text(w?.message);
      return `${c.kind} ${c.container} of Pod ${c.pod} is waiting: ${reason} for image ${c.image}${msg ? `: ${short(msg)}` : ''}`;
    }
  }
  return undefined;
}

/** What the containers that ended badly said: the termination message (the agent's line) or the reason and code. */
function terminations(pods: readonly PodObject[]): string[] {
  const out: string[] = [];
  for (const pod of pods) {
    for (const c of containersOf(pod)) {
      const t = isObject(c.status.state) && isObject(c.status.state.terminated) ? c.status.state.terminated : undefined;
      if (t === undefined) continue;
      const code = typeof t.exitCode === 'number' ? t.exitCode : undefined;
      if (code === 0) continue;
      const why = [text(t.reason), code === undefined ? undefined : `exit code ${code}`].filter((x) => x !== undefined).join(', ');
      const msg = text(t.message);
      out.push(`${c.kind} ${c.container} (${c.image}) of Pod ${c.pod} ${why ? `ended (${why})` : 'ended'}${msg ? `: ${short(msg)}` : ''}`);
    }
    const phase = text(pod.status?.phase);
    const reason = text(pod.status?.reason);
    if (phase === 'Failed' && reason !== undefined) {
      const msg = text(pod.status?.message);
      out.push(`Pod ${text(pod.metadata?.name) ?? '(unnamed)'} failed: ${reason}${msg ? `: ${short(msg)}` : ''}`);
    }
  }
  return out;
}

/**
 * The report of an agent Job from the Job and its Pods. `pods` undefined: they could not be read, so only the
 * Job's own conditions decide (a stuck pull cannot be seen: `unknown` instead of `running`).
 */
export function jobReport(job: unknown, pods: readonly unknown[] | undefined): DriverReport {
  if (!isObject(job) || !isObject(job.metadata) || text(job.metadata.name) === undefined) {
    return { kind: 'unknown', message: 'the agent Job could not be read (no object, or no name)' };
  }
  const j = job as JobObject;
  const ns = text(j.metadata?.namespace);
  const name = `Job ${ns ? `${ns}/` : ''}${text(j.metadata?.name)}`;
  const own = pods === undefined ? [] : podsOf(j, pods);
  const failedCond = condition(j, 'Failed') ?? condition(j, 'FailureTarget');
  if (failedCond !== undefined) {
    const said = terminations(own);
    const stuckNow = stuck(own);
    const job = [failedCond.reason, failedCond.message].filter((x) => x !== undefined).join(': ');
    const details = [...said, ...(stuckNow ? [stuckNow] : [])];
    return { kind: 'failed', message: `${name} failed${job ? ` (${job})` : ''}${details.length > 0 ? `: ${details.join('; ')}` : ''}` };
  }
  if (condition(j, 'Complete') !== undefined) {
    return { kind: 'succeeded', message: `${name} completed` };
  }
  if (pods === undefined) {
    return { kind: 'unknown', message: `${name} has not finished, and its Pods could not be read` };
  }
  const stuckNow = stuck(own);
  if (stuckNow !== undefined) return { kind: 'failed', message: `${name}: ${stuckNow}; the manifest was not touched` };
  const phases = own.map((p) => `${text(p.metadata?.name) ?? '(unnamed)'} ${text(p.status?.phase) ?? 'Unknown'}`);
  return { kind: 'running', message: `${name} is running (${phases.length === 0 ? 'no Pod yet' : `Pod ${phases.join(', ')}`})` };
}
