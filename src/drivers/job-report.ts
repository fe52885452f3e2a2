import { safeMessage } from '../plan/redact.ts';
import type { DriverReport } from './driver.ts';

/**
 * What the static Pod driver's agent Job says about its call, read from a batch/v1 Job and its Pods. Pure.
 *
 * `failed` only when the replacement will not happen and nothing of the Job runs any more: its Failed (or
 * FailureTarget) condition, or its suspension by the operator, and no Pod of it left that may still run a
 * container. A Pod that is being stopped keeps the call `running`: the agent stopped by the Job's deadline
 * restores the manifest in its grace period, and an agent whose pull came through as its Job was stopped may be
 * running — a call ended while either runs would let the next call for the server (its Rollback) run beside it
 * (fault campaign, nodes seed 421 #3). The message carries what the node said: the agent's termination message (e.g.
 * "reverted: the new kube-apiserver static Pod was not ready within 180s; restored …"), the container's
 * reason and exit code, or the Job's own reason (BackoffLimitExceeded, DeadlineExceeded).
 * `stop` when a container of its Pod waits for good before the agent ran (its image cannot be pulled, its config
 * cannot be made): the kubelet keeps trying, and the agent would run once the image is there, so the driver stops
 * the Job (spec.suspend) and the call fails once its Pod is gone.
 * `succeeded` on the Complete condition; `running` otherwise. A missing or malformed Job is `unknown`, never
 * `failed`: a guess must not end a call.
 */

/** The fields of a batch/v1 Job this reads; everything optional, as a partial object may lack any of them. */
export interface JobObject {
  metadata?: { name?: string; namespace?: string; uid?: string; annotations?: Record<string, string> };
  spec?: { suspend?: boolean };
  status?: {
    conditions?: readonly { type?: string; status?: string; reason?: string; message?: string }[];
    active?: number;
    ready?: number;
    succeeded?: number;
    failed?: number;
    terminating?: number;
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
  metadata?: { name?: string; labels?: Record<string, string>; ownerReferences?: readonly { uid?: string; kind?: string; controller?: boolean }[] };
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

/**
 * The annotation the driver sets on a Job it stopped (with spec.suspend), holding why: the Pod that said so is
 * deleted by the stop, and the call's failure is reported from here once it is gone.
 */
export const STOPPED_ANNOTATION = 'upgrade.apiserver.dev/stopped-because';

/** A report, or the driver's cue to stop the Job first (a container stuck for good before the agent ran). */
export type JobVerdict = DriverReport | { kind: 'stop'; reason: string; message: string };

/** The label the Job controller puts on its Pods (the older `job-name` is set too). */
export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const text = (x: unknown): string | undefined => (typeof x === 'string' && x.trim() !== '' ? x.trim() : undefined);
const list = <T>(x: unknown): T[] => (Array.isArray(x) ? (x.filter(isObject) as T[]) : []);

/** Termination messages can be up to 4 KiB (or a log tail); a report line keeps the last lines of it. */
const MESSAGE_MAX = 600;

/** One line of at most MESSAGE_MAX characters, its end kept: made plain and redacted before it is cut (src/plan/redact.ts). */
function short(s: string): string {
  const one = safeMessage(s.replace(/\s*\n\s*/g, ' | '), { maxChars: 64 * 1024 });
  return one.length <= MESSAGE_MAX ? one : `…${one.slice(one.length - MESSAGE_MAX)}`;
}

function condition(job: JobObject, type: string): { reason?: string; message?: string } | undefined {
  return list<{ type?: unknown; status?: unknown; reason?: unknown; message?: unknown }>(job.status?.conditions)
    .filter((c) => c.type === type && c.status === 'True')
    .map((c) => ({ ...(text(c.reason) ? { reason: text(c.reason) } : {}), ...(text(c.message) ? { message: text(c.message) } : {}) }))[0];
}

/**
 * The Job's own Pods: those whose controller reference is the Job (kind Job, the Job's uid), as the Job controller
 * sets it. Labels are only how they are listed: anyone who may create Pods in the namespace can copy the Job's
 * labels onto a Pod of theirs, and a Pod counted on its labels could make the driver stop a Job whose agent runs.
 * undefined when the Job's uid is not known: no Pod can then be told to be its, as when they could not be read.
 */
function podsOf(job: JobObject, pods: readonly unknown[]): PodObject[] | undefined {
  const uid = text(job.metadata?.uid);
  if (uid === undefined) return undefined;
  return list<PodObject>(pods).filter((p) =>
    list<{ uid?: unknown; kind?: unknown; controller?: unknown }>(p.metadata?.ownerReferences).some((o) => o.controller === true && o.kind === 'Job' && o.uid === uid));
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

/** Pods that may still run a container: not Succeeded or Failed (a Pod being deleted counts until it is gone). */
function live(pods: readonly PodObject[]): PodObject[] {
  return pods.filter((p) => { const phase = text(p.status?.phase); return phase !== 'Succeeded' && phase !== 'Failed'; });
}

const count = (x: unknown): number => (typeof x === 'number' && Number.isFinite(x) ? x : 0);
const describePods = (pods: readonly PodObject[]): string =>
  pods.map((p) => `${text(p.metadata?.name) ?? '(unnamed)'} ${text(p.status?.phase) ?? 'Unknown'}`).join(', ');

/**
 * The report of an agent Job from the Job and its Pods. `pods` undefined: they could not be read (a Job without a
 * uid is read the same: no Pod can be told to be its), so only the Job's own status decides (a stuck pull cannot
 * be seen: `unknown` instead of `running`; a failure is final only with the Failed condition, which Kubernetes
 * 1.31+ sets once every Pod ended, and no Pod counted active or terminating).
 */
export function jobReport(job: unknown, pods: readonly unknown[] | undefined): JobVerdict {
  if (!isObject(job) || !isObject(job.metadata) || text(job.metadata.name) === undefined) {
    return { kind: 'unknown', message: 'the agent Job could not be read (no object, or no name)' };
  }
  const j = job as JobObject;
  const ns = text(j.metadata?.namespace);
  const name = `Job ${ns ? `${ns}/` : ''}${text(j.metadata?.name)}`;
  // undefined: the Pods could not be read, or cannot be told to be the Job's.
  const owned = pods === undefined ? undefined : podsOf(j, pods);
  const own = owned ?? [];
  const running = live(own);
  const countedRunning = count(j.status?.active) + count(j.status?.terminating) > 0;
  const failedCond = condition(j, 'Failed') ?? condition(j, 'FailureTarget');
  if (failedCond !== undefined) {
    const jobSaid = [failedCond.reason, failedCond.message].filter((x) => x !== undefined).join(': ');
    const failing = `${name} failed${jobSaid ? ` (${jobSaid})` : ''}`;
    if (owned === undefined && (condition(j, 'Failed') === undefined || countedRunning)) {
      return { kind: 'unknown', message: `${failing}, and its Pods could not be read: whether its agent still runs (restoring the manifest) is not known` };
    }
    if (running.length > 0) {
      return { kind: 'running', message: `${failing}, but its Pod is still stopping (${describePods(running)}): its agent may be restoring the manifest` };
    }
    const said = terminations(own);
    const stuckNow = stuck(own);
    const details = [...said, ...(stuckNow ? [stuckNow] : [])];
    return { kind: 'failed', message: `${failing}${details.length > 0 ? `: ${details.join('; ')}` : ''}` };
  }
  if (condition(j, 'Complete') !== undefined) {
    return { kind: 'succeeded', message: `${name} completed` };
  }
  if (j.spec?.suspend === true) {
    const because = text(j.metadata?.annotations?.[STOPPED_ANNOTATION]);
    if (because === undefined) {
      return { kind: 'running', message: `${name} is suspended, not by the operator: its agent runs when someone resumes it` };
    }
    if (owned === undefined) return { kind: 'unknown', message: `${name} was stopped (${because}), and its Pods could not be read: whether its agent still runs is not known` };
    if (running.length > 0) return { kind: 'running', message: `${name} is being stopped (${because}); its Pod is still there (${describePods(running)})` };
    const said = terminations(own);
    return { kind: 'failed', message: `${name} was stopped by the operator (suspended) because its ${because}${said.length > 0 ? `; ${said.join('; ')}` : ''}; no Pod of it runs now` };
  }
  if (owned === undefined) {
    return { kind: 'unknown', message: `${name} has not finished, and its Pods could not be read` };
  }
  const stuckNow = stuck(own);
  if (stuckNow !== undefined) return { kind: 'stop', reason: stuckNow, message: `${name}: ${stuckNow}` };
  return { kind: 'running', message: `${name} is running (${own.length === 0 ? 'no Pod yet' : `Pod ${describePods(own)}`})` };
}
