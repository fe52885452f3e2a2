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
