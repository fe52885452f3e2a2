// What the static Pod driver hands its node agent, checked before any Job is built: every value that reaches the
// agent's environment (and so a node's kube-apiserver manifest, a file name or a hostPath) against the patterns
// the CRD and the agent use (src/api/patterns.ts). A refusal names the field it comes from.
import { dirname } from 'node:path';
import type { ResolvedStaticPod } from '../api/defaults.ts';
import type { DriverRequest } from '../plan/actions.ts';
import { compile, EMULATED_VERSION_PATTERN, IDEMPOTENCY_KEY_PATTERN, IMAGE_REF_MAX_LENGTH, IMAGE_REF_PATTERN, NODE_PATH_MAX_LENGTH, NODE_PATH_PATTERN, VERSION_PATTERN } from '../api/patterns.ts';
import { parseIpPort } from '../api/ip-port.ts';
import { parseImageRef } from '../plan/policy.ts';
import { shownValue as shown } from '../api/shown.ts';
import { AGENT_READY_TIMEOUT_MAX_SECONDS, AGENT_READY_TIMEOUT_MIN_SECONDS } from '../api/constants.ts';

const PATH = compile(NODE_PATH_PATTERN);
const KEY = compile(IDEMPOTENCY_KEY_PATTERN);
const IMAGE = compile(IMAGE_REF_PATTERN);
const VERSION = compile(VERSION_PATTERN);
const EMULATED = compile(EMULATED_VERSION_PATTERN);

export const PATH_RULE = `must be an absolute path of [A-Za-z0-9._-] segments without . or .. (at most ${NODE_PATH_MAX_LENGTH} characters)`;

/** Why `value` is not an image reference the agent takes, or undefined. */
export function badImage(value: string): string | undefined {
  if (value.length > IMAGE_REF_MAX_LENGTH) return `is longer than ${IMAGE_REF_MAX_LENGTH} characters`;
  try {
    parseImageRef(value, 'image');
  } catch (err) {
    return `is not an image reference (${(err as Error).message.replace(/^image: /, '')})`;
  }
  return IMAGE.test(value) ? undefined : 'is not an image reference';
}

/** Why `value` is not a node path the agent takes, or undefined. */
export function badPath(value: string): string | undefined {
  return value.length <= NODE_PATH_MAX_LENGTH && PATH.test(value) ? undefined : PATH_RULE;
}

/** The values one agent Job carries, each with the field it comes from. */
export interface AgentValues {
  spec: Pick<ResolvedStaticPod, 'manifestPath' | 'backupDir' | 'peerCAFile' | 'readyTimeout' | 'readyTimeoutMs'>;
  request: Pick<DriverRequest, 'idempotencyKey' | 'targetVersion' | 'emulatedVersion' | 'server'>;
  /** The target kube-apiserver image, and where it came from; undefined: a placeholder (a preview), not checked. */
  image?: { value: string; field: string };
  /** The agent's image, and where it came from; undefined: not checked (a preview). */
  agentImage?: { value: string; field: string };
}

/** The first value that must not reach the agent, as `<field> <value> <why>`; undefined when all are fine. */
export function agentInputProblem(v: AgentValues): string | undefined {
  const { spec, request: r } = v;
  for (const [field, value] of [['manifestPath', spec.manifestPath], ['backupDir', spec.backupDir], ['peerCAFile', spec.peerCAFile]] as const) {
    const bad = badPath(value);
    if (bad) return `spec.driver.staticPod.${field} ${shown(value)} ${bad}`;
  }
  if (spec.backupDir === dirname(spec.manifestPath)) return `spec.driver.staticPod.backupDir ${shown(spec.backupDir)} is the manifest's folder: the kubelet would run a backup kept there as a static Pod`;
  // The CRD's range, which is the agent's: READY_TIMEOUT = ceil(readyTimeout in seconds) is then within it too.
  const ms = spec.readyTimeoutMs;
  if (!(ms >= AGENT_READY_TIMEOUT_MIN_SECONDS * 1000 && ms <= AGENT_READY_TIMEOUT_MAX_SECONDS * 1000)) {
    return `spec.driver.staticPod.readyTimeout ${shown(spec.readyTimeout)} is not between ${AGENT_READY_TIMEOUT_MIN_SECONDS}s and ${AGENT_READY_TIMEOUT_MAX_SECONDS}s`;
  }
  if (!VERSION.test(r.targetVersion)) return `spec.targetVersion ${shown(r.targetVersion)} is not a Kubernetes version such as v1.36.3`;
  if (r.emulatedVersion !== undefined && !EMULATED.test(r.emulatedVersion)) return `the call's emulatedVersion ${shown(r.emulatedVersion)} is not major.minor (e.g. "1.35")`;
  if (!KEY.test(r.idempotencyKey)) return `the call's idempotency key ${shown(r.idempotencyKey)} is not <action>-<hostname of [A-Za-z0-9._-]>-<16 hex> (the server's hostname comes from its identity Lease)`;
  const address = r.server.address ?? '';
  if (address === '') return `the server ${shown(r.server.hostname)} has no address, so the agent could not check the new server's /readyz (nor revert)`;
  if (parseIpPort(address) === undefined) return `the address ${shown(address)} of server ${shown(r.server.hostname)} (from its identity Lease or the EndpointSlice) is not an IP address with a port 1-65535`;
  for (const img of [v.image, v.agentImage]) {
    if (img === undefined) continue;
    const bad = badImage(img.value);
    if (bad) return `${img.field} ${shown(img.value)} ${bad}`;
  }
  return undefined;
}
