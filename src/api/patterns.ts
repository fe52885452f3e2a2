/**
 * Regular expressions shared by the CRD (CEL `matches`, RE2 syntax) and the operator's own parsers.
 * They are written in the common subset of RE2 and ECMAScript so one string serves both sides;
 * test/api/patterns.test.ts checks that the TypeScript parsers accept exactly what these accept.
 */

/**
 * A Kubernetes release version: `v<major>.<minor>.<patch>`, optionally with a pre-release or build
 * suffix (v1.36.0-rc.1, v1.36.3+k3s1). No leading zeros, so versions compare as numbers.
 */
export const VERSION_PATTERN = '^v(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\\+[0-9A-Za-z.-]+)?$';

/**
 * A non-negative Go duration string as `time.ParseDuration` reads it, restricted to what people write:
 * one or more `<number><unit>` groups (10s, 2m, 1h30m, 1.5h, 500ms); units ns, us, ms, s, m, h.
 * Stricter than Go in three ways (kept deliberately simple): no sign, no `µs`, and a bare `0` is refused.
 */
export const DURATION_PATTERN = '^([0-9]+(\\.[0-9]+)?(ns|us|ms|s|m|h))+$';

/** A batch size given as a percentage of the servers: 1% to 100%. */
export const PERCENT_PATTERN = '^([1-9][0-9]?|100)%$';

/** metav1.Condition `reason`: CamelCase, as upstream validates it. */
export const CONDITION_REASON_PATTERN = '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$';

/** metav1.Condition `type`: an optional DNS-subdomain prefix and a name, as upstream validates it. */
export const CONDITION_TYPE_PATTERN =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$';

/** Compiles one of the patterns above for use in TypeScript. */
export function compile(pattern: string): RegExp {
  return new RegExp(pattern, 'u');
}

// ---------------------------------------------------------------------------------------------------------
// What reaches the static Pod driver's node agent (src/agent/). Checked by the CRD, by the driver before any
// Job is built, and by the agent on its environment: nothing else may reach a node's kube-apiserver manifest.

/**
 * An absolute path on a node: `/` and segments of [A-Za-z0-9._-], none of them `.` or `..` (a segment may start
 * with at most two dots, then a character that is not one). No spaces, quotes, newlines or shell or YAML
 * specials: a path becomes a hostPath, a file the agent writes, or a flag's value in the manifest.
 */
export const NODE_PATH_PATTERN = '^(/\\.{0,2}[A-Za-z0-9_-][A-Za-z0-9._-]*)+$';
/** The longest path any of those fields may hold. */
export const NODE_PATH_MAX_LENGTH = 1024;

/**
 * An image reference `[registry[:port]/]path[:tag][@digest]` by the distribution grammar (the shape
 * src/plan/policy.ts parseImageRef reads; it also normalises and checks the name's length). The agent checks
 * its IMAGE with this, the CRD checks spec.driver.staticPod.agentImage with it.
 */
const DOMAIN_COMPONENT = '([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `(${DOMAIN_COMPONENT}(\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(:[0-9]{1,5})?`;
const PATH_COMPONENT = '[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*';
export const IMAGE_REF_PATTERN =
  `^(${DOMAIN}/)?${PATH_COMPONENT}(/${PATH_COMPONENT})*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128}))?$`;
/** The longest image reference accepted (the CRD's maxLength). */
export const IMAGE_REF_MAX_LENGTH = 512;

/**
 * An idempotency key as src/plan/keys.ts makes them: `<action in lower case>-<hostname, at most 200
 * characters>-<16 hex>`. The hostname part is a Lease label value's characters. The agent names files with it.
 */
export const IDEMPOTENCY_KEY_PATTERN = '^[a-z]+-[A-Za-z0-9._-]{0,200}-[0-9a-f]{16}$';

/** What `--emulated-version` takes from the operator: major.minor, e.g. 1.35. */
export const EMULATED_VERSION_PATTERN = '^(0|[1-9][0-9]{0,3})\\.(0|[1-9][0-9]{0,3})$';
