/** Names of the ApiServerUpgrade API. Everything that builds a URL, a watch or a CRD reads them from here. */
export const GROUP = 'upgrade.apiserver.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'ApiServerUpgrade';
export const LIST_KIND = 'ApiServerUpgradeList';
export const PLURAL = 'apiserverupgrades';
export const SINGULAR = 'apiserverupgrade';
export const SHORT_NAMES: readonly string[] = ['asu'];
export const CATEGORIES: readonly string[] = ['upgrade'];
export const CRD_NAME = `${PLURAL}.${GROUP}`;

/** The Mixed Version Proxy's feature gate (KEP-4020). */
export const PROXY_GATE = 'UnknownVersionInteroperabilityProxy';

/**
 * The static Pod driver's node agent contract (src/agent/main.ts, docs/drivers.md): what its environment may
 * hold, and the bounds of its run. The CRD's spec.driver.staticPod.readyTimeout range, the driver's own check
 * and the agent's are all these numbers; the chart's admission policy pins the same.
 */
/** The environment variables the agent reads; it reads no other (anything else in its environment is ignored). */
export const AGENT_ENV_NAMES: readonly string[] = ['MANIFEST', 'BACKUP_DIR', 'KEY', 'IMAGE', 'VERSION', 'GATE', 'PEER_CA', 'PEER_IP', 'PEER_PORT', 'EMULATED_VERSION', 'READY_TIMEOUT'];
/** READY_TIMEOUT, whole seconds without sign or leading zero: at least this (readyTimeout's minimum, 10s)... */
export const AGENT_READY_TIMEOUT_MIN_SECONDS = 10;
/** ...and at most this (readyTimeout's maximum, 1h). The driver sends ceil(readyTimeout in seconds). */
export const AGENT_READY_TIMEOUT_MAX_SECONDS = 3600;
/** How often the agent asks /readyz while it waits: fixed, not taken from its environment. */
export const AGENT_POLL_INTERVAL_SECONDS = 2;
/**
 * The agent's whole run is bounded by READY_TIMEOUT plus this (its checks before the wait, the last probe of
 * the wait, a revert): it ends on its own, reverting when the manifest was replaced, well inside the Job's
 * deadline (READY_TIMEOUT + the pull allowance of src/drivers/static-pod.ts, 300 s).
 */
export const AGENT_RUN_ALLOWANCE_SECONDS = 60;
/**
 * Where the agent writes its termination message: the container's terminationMessagePath, which the Job leaves at
 * the API default. The only place it writes a message; never a path from its environment.
 */
export const AGENT_TERMINATION_MESSAGE_PATH = '/dev/termination-log';
