// The node agent's input: its environment, checked again on the node against the same patterns the CRD and the
// driver use (src/api/patterns.ts). The driver refuses anything off before it builds a Job; this is the second
// side, for a Job made by hand or by an older operator: a value that does not fit stops the agent (exit 2)
// before it reads or writes anything. Only the variables of AGENT_ENV_NAMES are read; anything else in the
// environment (TERMINATION_LOG or POLL_INTERVAL included: where the message goes and how often the agent asks
// are not the environment's to say) is ignored.
import { compile, EMULATED_VERSION_PATTERN, IDEMPOTENCY_KEY_PATTERN, IMAGE_REF_MAX_LENGTH, IMAGE_REF_PATTERN, NODE_PATH_MAX_LENGTH, NODE_PATH_PATTERN, VERSION_PATTERN } from '../api/patterns.ts';
import { dirname } from 'node:path';
import { ipLiteral, portNumber } from '../api/ip-port.ts';
import { shownValue } from '../api/shown.ts';
import { AGENT_READY_TIMEOUT_MAX_SECONDS, AGENT_READY_TIMEOUT_MIN_SECONDS } from '../api/constants.ts';

export interface AgentInput {
  /** The kube-apiserver static Pod manifest. */
  manifest: string;
  /** Where the manifest as found is kept, once per key. */
  backupDir: string;
  key: string;
  /** The full target image reference. */
  image: string;
  /** The target version, as /version's gitVersion reports it. */
  version: string;
  /** The proxy gate to set; undefined: leave the gate and the peer flags alone. */
  gate: boolean | undefined;
  peerCA: string;
  peerIP: string;
  peerPort: number;
  /** major.minor; undefined: no --emulated-version. */
  emulatedVersion: string | undefined;
  /** READY_TIMEOUT, within AGENT_READY_TIMEOUT_MIN_SECONDS..AGENT_READY_TIMEOUT_MAX_SECONDS. */
  readyTimeoutSeconds: number;
}

const PATH = compile(NODE_PATH_PATTERN);
const KEY = compile(IDEMPOTENCY_KEY_PATTERN);
const IMAGE = compile(IMAGE_REF_PATTERN);
const VERSION = compile(VERSION_PATTERN);
const EMULATED = compile(EMULATED_VERSION_PATTERN);
/** A whole number as the driver writes one (String of an integer): digits, no sign, no leading zero, at most 4. */
const WHOLE = /^[1-9][0-9]{0,3}$/;

class InputError extends Error {}

/** Reads and checks the agent's environment: the input, or why not (a message naming the variable). */
export function readInput(env: NodeJS.ProcessEnv): AgentInput | { error: string } {
  const get = (name: string): string => {
    const v = env[name];
    if (v === undefined || v === '') throw new InputError(`${name} is empty`);
    return v;
  };
  const must = (name: string, ok: boolean, what: string, value: string): void => {
    if (!ok) throw new InputError(`${name} must be ${what}, got: ${shownValue(value)}`);
  };
  const path = (name: string): string => {
    const v = get(name);
    must(name, v.length <= NODE_PATH_MAX_LENGTH && PATH.test(v), `an absolute path of [A-Za-z0-9._-] segments without . or .. (at most ${NODE_PATH_MAX_LENGTH} characters)`, v);
    return v;
  };
  try {
    const manifest = path('MANIFEST');
    const backupDir = path('BACKUP_DIR');
    must('BACKUP_DIR', backupDir !== dirname(manifest), 'a folder other than the manifest\'s (the kubelet would run a backup kept there as a static Pod)', backupDir);
    const key = get('KEY');
    must('KEY', KEY.test(key), 'an idempotency key (<action>-<hostname>-<16 hex>)', key);
    const image = get('IMAGE');
    must('IMAGE', image.length <= IMAGE_REF_MAX_LENGTH && IMAGE.test(image), 'an image reference', image);
    const version = get('VERSION');
    must('VERSION', VERSION.test(version), 'a Kubernetes version such as v1.36.3', version);
    const gateText = env.GATE ?? '';
    must('GATE', ['', 'true', 'false'].includes(gateText), 'true, false or empty', gateText);
    const gate = gateText === '' ? undefined : gateText === 'true';
    const peerIP = get('PEER_IP');
    must('PEER_IP', ipLiteral(peerIP) !== undefined, 'an IPv4 or IPv6 address', peerIP);
    const portText = get('PEER_PORT');
    const peerPort = portNumber(portText);
    must('PEER_PORT', peerPort !== undefined, 'a port 1-65535', portText);
    // The CA only reaches the manifest when the gate is turned on; a value is checked whenever there is one.
    const peerCA = gate === true ? path('PEER_CA') : (env.PEER_CA ?? '') === '' ? '' : path('PEER_CA');
    const emulatedText = env.EMULATED_VERSION ?? '';
    must('EMULATED_VERSION', emulatedText === '' || EMULATED.test(emulatedText), 'major.minor (e.g. 1.35) or empty', emulatedText);
    const ready = get('READY_TIMEOUT');
    const readyTimeoutSeconds = WHOLE.test(ready) ? Number(ready) : Number.NaN;
    must('READY_TIMEOUT', readyTimeoutSeconds >= AGENT_READY_TIMEOUT_MIN_SECONDS && readyTimeoutSeconds <= AGENT_READY_TIMEOUT_MAX_SECONDS,
      `a whole number of seconds from ${AGENT_READY_TIMEOUT_MIN_SECONDS} to ${AGENT_READY_TIMEOUT_MAX_SECONDS}`, ready);
    return {
      manifest, backupDir, key, image, version, gate, peerCA, peerIP, peerPort: peerPort!,
      emulatedVersion: emulatedText === '' ? undefined : emulatedText,
      readyTimeoutSeconds,
    };
  } catch (err) {
    if (err instanceof InputError) return { error: err.message };
    throw err;
  }
}
