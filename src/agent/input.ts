// The node agent's input: its environment, checked again on the node against the same patterns the CRD and the
// driver use (src/api/patterns.ts). The driver refuses anything off before it builds a Job; this is the second
// side, for a Job made by hand or by an older operator: a value that does not fit stops the agent (exit 2)
// before it reads or writes anything.
import { compile, EMULATED_VERSION_PATTERN, IDEMPOTENCY_KEY_PATTERN, IMAGE_REF_MAX_LENGTH, IMAGE_REF_PATTERN, NODE_PATH_MAX_LENGTH, NODE_PATH_PATTERN, VERSION_PATTERN } from '../api/patterns.ts';
import { ipLiteral, portNumber } from '../api/ip-port.ts';
import { shownValue } from '../api/shown.ts';

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
  readyTimeoutMs: number;
  pollIntervalMs: number;
  terminationLog: string;
}

const PATH = compile(NODE_PATH_PATTERN);
const KEY = compile(IDEMPOTENCY_KEY_PATTERN);
const IMAGE = compile(IMAGE_REF_PATTERN);
const VERSION = compile(VERSION_PATTERN);
const EMULATED = compile(EMULATED_VERSION_PATTERN);
const SECONDS = /^[0-9]{1,6}$/;
const INTERVAL = /^[0-9]{1,4}(\.[0-9]{1,3})?$/;

export const DEFAULT_TERMINATION_LOG = '/dev/termination-log';
export const DEFAULT_POLL_SECONDS = '2';

class InputError extends Error {}

/** Reads and checks the agent's environment: the input, or why not (a message naming the variable). */
export function readInput(env: NodeJS.ProcessEnv): AgentInput | { error: string } {
  const get = (name: string, dflt?: string): string => {
    const v = env[name];
    if (v === undefined || v === '') {
      if (dflt !== undefined) return dflt;
      throw new InputError(`${name} is empty`);
    }
    return v;
  };
  const must = (name: string, ok: boolean, what: string, value: string): void => {
    if (!ok) throw new InputError(`${name} must be ${what}, got: ${shownValue(value)}`);
  };
  const path = (name: string, dflt?: string): string => {
    const v = get(name, dflt);
    must(name, v.length <= NODE_PATH_MAX_LENGTH && PATH.test(v), `an absolute path of [A-Za-z0-9._-] segments without . or .. (at most ${NODE_PATH_MAX_LENGTH} characters)`, v);
    return v;
  };
  try {
    const manifest = path('MANIFEST');
    const backupDir = path('BACKUP_DIR');
    const terminationLog = path('TERMINATION_LOG', DEFAULT_TERMINATION_LOG);
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
    must('READY_TIMEOUT', SECONDS.test(ready), 'a number of seconds', ready);
    const poll = get('POLL_INTERVAL', DEFAULT_POLL_SECONDS);
    must('POLL_INTERVAL', INTERVAL.test(poll) && Number(poll) > 0, 'a number of seconds above 0', poll);
    return {
      manifest, backupDir, key, image, version, gate, peerCA, peerIP, peerPort: peerPort!,
      emulatedVersion: emulatedText === '' ? undefined : emulatedText,
      readyTimeoutMs: Number(ready) * 1000,
      pollIntervalMs: Math.round(Number(poll) * 1000),
      terminationLog,
    };
  } catch (err) {
    if (err instanceof InputError) return { error: err.message };
    throw err;
  }
}
