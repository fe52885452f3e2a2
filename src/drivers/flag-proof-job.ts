// The static Pod driver's flag proof Job (docs/flag-proof.md): one per control-plane node, pinned to it, whose one
// container is the target kube-apiserver image running `kube-apiserver <the node's edited command line>
// --max-requests-inflight=-1`. The kubelet pulls the target image on that node (a pull failure is found before any
// server is touched), the binary validates every flag and exits 1 within a second, and its own words come back as
// the container's termination message (FallbackToLogsOnError: the tail of its log). Nothing of the node is mounted:
// no hostPath, no host network, no ServiceAccount token, a non-root user, a read-only root file system.
//
// kube-apiserver reads one file before it validates its options, --service-account-signing-key-file; the proof
// points it at PROOF_THROWAWAY_KEY instead (a published key that signs nothing: the process exits at validation),
// given to the Pod as a downward API file of a Pod annotation, so the cluster's signing key never leaves the node.
//
// The Job's shape is a contract the chart's admission policy checks (charts/…/templates/admission-policy.yaml, the
// `proveflags` action): any command line of kube-apiserver, provided it ends in PROOF_SENTINEL and the entry before
// it is not a flag that would take the sentinel as its value, so the binary can never get past validation.
import { createHash } from 'node:crypto';
import type { ResolvedStaticPod } from '../api/defaults.ts';
import { PROOF_SENTINEL, readProof, type NodeProof } from '../plan/flag-proof.ts';
import { jobName, KEY_ANNOTATION } from './static-pod.ts';

/** The action label and name part of a proof Job (`auo-proveflags-<node>-<16 hex>`). */
export const PROOF_ACTION = 'ProveFlags';
export const PROOF_CONTAINER = 'kube-apiserver';
export const PROOF_KEY_VOLUME = 'proof-key';
export const PROOF_KEY_DIR = '/var/run/auo-flag-proof';
export const PROOF_KEY_PATH = `${PROOF_KEY_DIR}/sa.key`;
export const PROOF_KEY_ANNOTATION = 'upgrade.apiserver.dev/proof-signing-key';
/** The run's user: nobody. */
export const PROOF_RUN_AS_USER = 65534;
/** The pull of the target image, then a run that takes under a second (measured: docs/flag-proof.md). */
export const PROOF_DEADLINE_SECONDS = 330;
/**
 * A throwaway EC P-256 private key, published here: kube-apiserver only parses it (its options' completion) before it
 * exits at validation, so it never signs anything. It stands in for the cluster's service-account signing key.
 */
export const PROOF_THROWAWAY_KEY = [
  '-----BEGIN EC PRIVATE KEY-----',
  'MHcCAQEEIKqTgnf7jJa+pExhSx7/6zgvJVV8D5QyAJxZsj+y1PlDoAoGCCqGSM49',
  'AwEHoUQDQgAEoScMDMlxjbuXFEriPyvwZUcciJsbriyAlFaJELaD0wb+kfmnkgrD',
  'u0rTud8RNg7yzdzeAI6GYrCV4ENHHE8FZg==',
  '-----END EC PRIVATE KEY-----',
  '',
].join('\n');

/** What one proof Job is for. */
export interface ProofJobInput {
  upgradeName: string;
  /** The upgrade's uid: part of the key, so another upgrade proves again. */
  upgradeUid: string;
  hostname: string;
  /** The full target image reference (targetImage's). */
  image: string;
  targetVersion: string;
  /** The flags, PROOF_SENTINEL last (proofCommand's `args`, with the signing key at PROOF_KEY_PATH). */
  args: readonly string[];
}

/**
 * The proof's key: `proveflags-<node>-<16 hex>` of a hash of the upgrade, the node, the image and the exact flags,
 * so that a changed command line is a new proof (a new Job) and the same one finds the Job it made.
 */
export function proofKey(i: Pick<ProofJobInput, 'upgradeUid' | 'hostname' | 'image' | 'args'>): string {
  const h = createHash('sha256').update([i.upgradeUid, i.hostname, i.image, JSON.stringify(i.args)].join('\u0000')).digest('hex');
  return `${PROOF_ACTION.toLowerCase()}-${i.hostname.slice(0, 200)}-${h.slice(0, 16)}`;
}

/**
 * The proof Job for one node. Throws when `args` does not end in the sentinel, or the entry before it is a flag
 * without a value (proofCommand's output never does either).
 */
export function proofJob(spec: Pick<ResolvedStaticPod, 'namespace'>, i: ProofJobInput): Record<string, unknown> {
  if (i.args[i.args.length - 1] !== PROOF_SENTINEL) throw new Error(`the proof's flags must end in ${PROOF_SENTINEL}`);
  const before = i.args.length > 1 ? i.args[i.args.length - 2]! : undefined;
  if (before !== undefined && before.startsWith('-') && !before.includes('=')) throw new Error(`the flag before ${PROOF_SENTINEL} has no value: it would take the sentinel as its value`);
  const key = proofKey(i);
  const labels = { 'app.kubernetes.io/managed-by': 'apiserver-upgrade-operator', 'upgrade.apiserver.dev/upgrade': i.upgradeName, 'upgrade.apiserver.dev/action': PROOF_ACTION.toLowerCase() };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: jobName(key, PROOF_ACTION, i.hostname),
      namespace: spec.namespace,
      labels,
      annotations: {
        [KEY_ANNOTATION]: key,
        'upgrade.apiserver.dev/server': i.hostname,
        'upgrade.apiserver.dev/target': i.targetVersion,
        'upgrade.apiserver.dev/image': i.image,
      },
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: PROOF_DEADLINE_SECONDS,
      ttlSecondsAfterFinished: 86400,
      template: {
        metadata: { labels, annotations: { [PROOF_KEY_ANNOTATION]: PROOF_THROWAWAY_KEY } },
        spec: {
          nodeName: i.hostname,
          restartPolicy: 'Never',
          tolerations: [{ operator: 'Exists' }],
          priorityClassName: 'system-node-critical',
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 30,
          containers: [{
            name: PROOF_CONTAINER,
            image: i.image,
            imagePullPolicy: 'IfNotPresent',
            command: ['kube-apiserver', ...i.args],
            securityContext: {
              runAsUser: PROOF_RUN_AS_USER, runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true,
              capabilities: { drop: ['ALL'] },
            },
            terminationMessagePolicy: 'FallbackToLogsOnError',
            volumeMounts: [{ name: PROOF_KEY_VOLUME, mountPath: PROOF_KEY_DIR, readOnly: true }],
          }],
          volumes: [{
            name: PROOF_KEY_VOLUME,
            downwardAPI: { items: [{ path: 'sa.key', fieldRef: { fieldPath: `metadata.annotations['${PROOF_KEY_ANNOTATION}']` } }] },
          }],
        },
      },
    },
  };
}

/** The parts of a proof Job's Pod the verdict is read from. */
export interface ProofPod {
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    containerStatuses?: {
      name?: string;
      state?: {
        terminated?: { exitCode?: number; reason?: string; message?: string };
        waiting?: { reason?: string; message?: string };
        running?: { startedAt?: string };
      };
    }[];
  };
}

/** Waiting reasons that end a proof without a verdict: the image cannot be pulled, or the container cannot start. */
const STUCK = ['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull', 'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError'];

/**
 * A node's proof from its Job's Pod: the verdict once the container terminated (its exit code and termination
 * message, the tail of the binary's log), `notRun` when it cannot run (the image, the container), undefined while
 * it runs or waits. `deadlineExceeded`: the Job's deadline passed (a container still running is then Inconclusive:
 * the binary did not exit).
 */
export function proofOfPod(hostname: string, pod: ProofPod | undefined, deadlineExceeded = false): NodeProof | undefined {
  const status = pod?.status?.containerStatuses?.find((c) => c.name === PROOF_CONTAINER);
  const terminated = status?.state?.terminated;
  if (terminated !== undefined) {
    const exitCode = typeof terminated.exitCode === 'number' ? terminated.exitCode : null;
    return { hostname, verdict: readProof({ exitCode, timedOut: false, output: terminated.message ?? '' }, PROOF_DEADLINE_SECONDS) };
  }
  const waiting = status?.state?.waiting;
  if (waiting?.reason !== undefined && STUCK.includes(waiting.reason)) {
    return { hostname, notRun: `the proof's container cannot start on ${hostname}: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}` };
  }
  if (deadlineExceeded) {
    if (status?.state?.running !== undefined) {
      return { hostname, verdict: readProof({ exitCode: null, timedOut: true, output: '' }, PROOF_DEADLINE_SECONDS) };
    }
    return { hostname, notRun: `the proof Job on ${hostname} passed its ${PROOF_DEADLINE_SECONDS}s deadline before kube-apiserver ran${waiting?.reason ? ` (${waiting.reason})` : ''}` };
  }
  return undefined;
}
