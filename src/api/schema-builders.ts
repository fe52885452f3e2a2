import type { Schema, ValidationRule } from './schema-types.ts';
import { DURATION_PATTERN, NODE_PATH_MAX_LENGTH, NODE_PATH_PATTERN, VERSION_PATTERN } from './patterns.ts';
import { parseDuration } from './duration.ts';

/**
 * Small builders for recurring field shapes, so each rule (and its message) is written once.
 * CEL string literals are raw (`r'...'`) so regex backslashes reach RE2 unchanged.
 */

/** Upper bound for short strings; CEL's cost estimator needs a maxLength on every string a rule reads. */
const DURATION_MAX_LENGTH = 32;

export const DURATION_FORMAT_MESSAGE = 'must be a Go duration such as 10s, 2m or 1h30m';
export const VERSION_FORMAT_MESSAGE = 'must be a Kubernetes release version such as v1.36.3';

function durationRules(min: string, max: string): ValidationRule[] {
  const ok = `self.matches(r'${DURATION_PATTERN}')`;
  return [
    { rule: ok, message: DURATION_FORMAT_MESSAGE },
    // `||` in CEL absorbs the error duration() would raise on a malformed string, so only one message shows.
    {
      rule: `!${ok} || (duration(self) >= duration('${min}') && duration(self) <= duration('${max}'))`,
      message: `must be between ${min} and ${max}`,
    },
  ];
}

/** A Go duration string with a default and an inclusive range. */
export function durationField(description: string, dflt: string | undefined, min: string, max: string): Schema {
  // Catch a builder mistake at generation time rather than in the API server.
  for (const d of [min, max, ...(dflt === undefined ? [] : [dflt])]) parseDuration(d);
  return {
    type: 'string',
    description: `${description} A Go duration (10s, 2m, 1h30m) between ${min} and ${max}.`,
    ...(dflt === undefined ? {} : { default: dflt }),
    maxLength: DURATION_MAX_LENGTH,
    'x-kubernetes-validations': durationRules(min, max),
  };
}

/** A Kubernetes release version string (v1.36.3). */
export function versionField(description: string, extraRules: readonly ValidationRule[] = []): Schema {
  return {
    type: 'string',
    description,
    maxLength: 64,
    'x-kubernetes-validations': [{ rule: `self.matches(r'${VERSION_PATTERN}')`, message: VERSION_FORMAT_MESSAGE }, ...extraRules],
  };
}

/** A plain string with a length bound. */
export function stringField(description: string, maxLength: number, extra: Partial<Schema> = {}): Schema {
  return { type: 'string', description, maxLength, ...extra };
}

/** An RFC 3339 timestamp, as Kubernetes writes them. */
export function timeField(description: string): Schema {
  return { type: 'string', format: 'date-time', description };
}

/**
 * An absolute path on a control-plane node, of a safe character set (NODE_PATH_PATTERN: no `.` or `..` segment,
 * no space, quote, newline or shell or YAML special): it becomes a hostPath and reaches the node agent.
 */
export function absolutePathField(description: string, dflt: string): Schema {
  return {
    type: 'string',
    description: `${description} An absolute path of [A-Za-z0-9._-] segments, none of them . or ..`,
    default: dflt,
    maxLength: NODE_PATH_MAX_LENGTH,
    pattern: NODE_PATH_PATTERN,
  };
}

/** A reference to a key of a Secret. */
export function secretKeyRefField(description: string, defaultKey: string): Schema {
  return {
    tsType: 'SecretKeyRef',
    type: 'object',
    description,
    required: ['namespace', 'name'],
    properties: {
      namespace: stringField('Namespace of the Secret.', 63, { minLength: 1 }),
      name: stringField('Name of the Secret.', 253, { minLength: 1 }),
      key: stringField('Key in the Secret.', 253, { default: defaultKey, minLength: 1 }),
    },
  };
}
