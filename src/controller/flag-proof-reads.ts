/**
 * The flag proof's shell (docs/flag-proof.md): reads what src/plan/flag-proof-gate.ts decides on — each node's command
 * line as its next Upgrade call would give it to the target binary (its mirror Pod's kube-apiserver command under the
 * call's flag edit, built by the driver's own code: proofCommand, callFlagEdit, targetImage) and the upgrade's proof
 * Jobs with the verdict their Pods give (proofOfPod) — and creates the proof Jobs the plan asks for. Nothing here
 * decides: a read that fails is the fact's `error` (the plan fails closed on it).
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { ApiServerUpgrade } from '../api/types.generated.ts';
import type { ResolvedSpec, ResolvedStaticPod } from '../api/defaults.ts';
import { PROXY_GATE } from '../api/constants.ts';
import type { Observation } from '../plan/observation.ts';
import type { ObservedFlagProof, ObservedProofJob, ObservedProofWant } from '../plan/observed-preflight.ts';
import type { ProofJobRequest } from '../plan/actions.ts';
import { proofJobsNeeded, proofRequests, type ProofRequest } from '../plan/flag-proof-gate.ts';
import { callFlagEdit, proofCommand } from '../drivers/flag-proof-command.ts';
import { PROOF_ACTION, PROOF_KEY_PATH, proofJob, proofKey, proofOfPod, type ProofPod } from '../drivers/flag-proof-job.ts';
import { KEY_ANNOTATION, MIRROR_POD_PREFIX, targetImage } from '../drivers/static-pod.ts';
import { JOB_NAME_LABEL } from '../drivers/job-report.ts';
import { MIRROR_ANNOTATION, mirrorPodFor } from '../observe/trust-flags.ts';
import { APISERVER_PODS_PATH } from '../observe/trust.ts';
import { KubeApiError } from '../runtime/kube.ts';
import type { Logger } from '../runtime/logger.ts';
import type { ReconcilerConfig } from './reconciler-config.ts';

const UPGRADE_LABEL = 'upgrade.apiserver.dev/upgrade';
const ACTION_LABEL = 'upgrade.apiserver.dev/action';
const SERVER_ANNOTATION = 'upgrade.apiserver.dev/server';
/** More proof Jobs than this in the namespace is not read (fail closed): a few per node and upgrade are expected. */
const MAX_JOBS = 2_048;

const text = (err: unknown): string => (err instanceof Error ? err.message : String(err));

interface ProofJobObject {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  status?: { conditions?: { type?: string; status?: string; reason?: string }[] };
}
type ProofPodObject = ProofPod & { metadata?: { labels?: Record<string, string>; creationTimestamp?: string } };

/** One node's want: its mirror Pod's command under the call's edit, the target image and the proof's key. */
export function proofWant(spec: ResolvedStaticPod, upgradeUid: string, r: ProofRequest, pods: readonly V1Pod[]): ObservedProofWant {
  const hostname = r.hostname;
  const pod = mirrorPodFor({ items: [...pods] }, hostname);
  if (pod === undefined) return { hostname, error: `no single kube-apiserver mirror Pod for ${hostname} in kube-system: its command line cannot be read` };
  const containers = pod.spec?.containers ?? [];
  const c = containers.find((x) => x.name === 'kube-apiserver') ?? (containers.length === 1 ? containers[0] : undefined);
  if (c === undefined) return { hostname, error: `the mirror Pod of ${hostname} has no kube-apiserver container` };
  if ((c.args ?? []).length > 0) return { hostname, error: `the kube-apiserver container of ${hostname} has args: the static Pod driver edits only its command` };
  const target = targetImage(spec.image, c.image, r.targetVersion);
  if ('error' in target) return { hostname, error: `${hostname}: ${target.error}` };
  // A server not seen up has no observed address: the one its command line advertises stands in (a call made later
  // to another address is another key, proven again before it).
  const address = r.address ?? advertised(c.command ?? []);
  const edit = callFlagEdit(spec, { featureGates: r.gate === undefined ? {} : { [PROXY_GATE]: r.gate }, server: { identity: '', hostname, ...(address === undefined ? {} : { address }) }, ...(r.emulatedVersion === undefined ? {} : { emulatedVersion: r.emulatedVersion }) });
  if (edit === undefined) return { hostname, error: `${hostname}'s address is not an ip:port: the command line of its call cannot be built` };
  const built = proofCommand(c.command ?? [], edit, { signingKeyPath: PROOF_KEY_PATH });
  if ('error' in built) return { hostname, error: `${hostname}: ${built.error}` };
  const key = proofKey({ upgradeUid, hostname, image: target.image, args: built.args });
  return { hostname, key, image: target.image, command: built.args, ...(r.gate === undefined ? {} : { gate: r.gate }), ...(r.emulatedVersion === undefined ? {} : { emulatedVersion: r.emulatedVersion }) };
}

/** `--advertise-address` and `--secure-port` (default 6443) of a command line, as ip:port; undefined without the address. */
export function advertised(command: readonly string[]): string | undefined {
  const value = (name: string): string | undefined => command.findLast((e) => e.startsWith(`${name}=`))?.slice(name.length + 1);
  const ip = value('--advertise-address');
  if (ip === undefined || ip === '') return undefined;
  const port = value('--secure-port') ?? '6443';
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** The newest Pod of a Job (a Job of backoffLimit 0 has one; a Pod deleted and made again: the last). */
function podOf(pods: readonly ProofPodObject[], job: string): ProofPodObject | undefined {
  return pods.filter((p) => p.metadata?.labels?.[JOB_NAME_LABEL] === job).sort((a, b) => (a.metadata?.creationTimestamp ?? '').localeCompare(b.metadata?.creationTimestamp ?? '')).at(-1);
}

/** The upgrade's proof Jobs and what their Pods say. */
export function proofJobsOf(upgradeName: string, jobs: readonly ProofJobObject[], pods: readonly ProofPodObject[]): ObservedProofJob[] {
  const out: ObservedProofJob[] = [];
  for (const j of jobs) {
    const name = j.metadata?.name;
    const key = j.metadata?.annotations?.[KEY_ANNOTATION];
    const hostname = j.metadata?.annotations?.[SERVER_ANNOTATION];
    if (name === undefined || key === undefined || hostname === undefined || j.metadata?.labels?.[UPGRADE_LABEL] !== upgradeName) continue;
    const deadline = (j.status?.conditions ?? []).some((c) => c.type === 'Failed' && c.status === 'True' && c.reason === 'DeadlineExceeded');
    const proof = proofOfPod(hostname, podOf(pods, name), deadline);
    out.push({ key, hostname, name, ...(proof === undefined ? {} : { proof }) });
  }
  return out;
}

/** Reads the flag proof's facts for the static Pod driver. Never rejects. */
export async function readFlagProof(c: ReconcilerConfig, u: ApiServerUpgrade, spec: ResolvedSpec, obs: Observation): Promise<ObservedFlagProof> {
  if (spec.driver.kind !== 'staticPod') return { error: 'not the static Pod driver' };
  const sp = spec.driver.staticPod;
  const name = u.metadata?.name ?? '';
  const uid = u.metadata?.uid ?? name;
  const ns = encodeURIComponent(sp.namespace);
  const selector = encodeURIComponent(`${ACTION_LABEL}=${PROOF_ACTION.toLowerCase()}`);
  try {
    // The mirror Pods come from the operator's informer; the proof Jobs are listed only while a verdict is missing.
    const mirrors = (await c.list<{ items?: V1Pod[] }>(APISERVER_PODS_PATH)).items ?? [];
    const mirrorNodes = mirrors.filter((p) => p.metadata?.annotations?.[MIRROR_ANNOTATION] !== undefined && p.metadata.name === `${MIRROR_POD_PREFIX}${p.spec?.nodeName ?? ''}`).flatMap((p) => (p.spec?.nodeName ? [p.spec.nodeName] : []));
    const wants = proofRequests(spec, u.status, obs.peers, mirrorNodes).map((r) => proofWant(sp, uid, r, mirrors));
    if (!proofJobsNeeded(u.status, wants)) return { wants, jobs: [] };
    const [jobs, pods] = await Promise.all([
      c.kube.request<{ items?: ProofJobObject[] }>('GET', `/apis/batch/v1/namespaces/${ns}/jobs?labelSelector=${selector}&limit=${MAX_JOBS}`),
      c.kube.request<{ items?: ProofPodObject[] }>('GET', `/api/v1/namespaces/${ns}/pods?labelSelector=${selector}&limit=${MAX_JOBS}`),
    ]);
    return { wants, jobs: proofJobsOf(name, jobs.items ?? [], pods.items ?? []) };
  } catch (err) {
    return { error: text(err) };
  }
}

/**
 * Creates one proof Job. A Job of that name that exists already is this proof's (its name is its key's hash). Any
 * other failure is an error for the caller's Event: the plan sees no Job and asks again.
 */
export async function createProofJob(c: ReconcilerConfig, u: ApiServerUpgrade, spec: ResolvedStaticPod, p: ProofJobRequest, log: Logger): Promise<string | undefined> {
  const name = u.metadata?.name ?? '';
  const input = { upgradeName: name, upgradeUid: u.metadata?.uid ?? name, hostname: p.hostname, image: p.image, targetVersion: p.targetVersion, args: p.command };
  if (proofKey(input) !== p.key) return `the proof of ${p.hostname} does not match its key ${p.key}: not created`;
  let job: Record<string, unknown>;
  try {
    job = proofJob(spec, input);
  } catch (err) {
    return `building the proof Job of ${p.hostname}: ${text(err)}`;
  }
  try {
    await c.kube.request('POST', `/apis/batch/v1/namespaces/${encodeURIComponent(spec.namespace)}/jobs`, { body: job });
    log.info('flag proof Job created', { server: p.hostname, job: (job.metadata as { name: string }).name, image: p.image });
    return undefined;
  } catch (err) {
    if (err instanceof KubeApiError && err.statusCode === 409) return undefined;
    return `creating the proof Job ${spec.namespace}/${(job.metadata as { name: string }).name} on ${p.hostname}: ${text(err)}`;
  }
}
