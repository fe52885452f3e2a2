import type { Schema } from '../schema-types.ts';

/** Keys of Schema that exist only for code generation and must never reach the API server. */
const AUTHORING_KEYS = new Set(['tsType', 'tsExternal']);

/** A deep copy of a schema without the authoring-only keys, as plain JSON for the CRD. */
export function toOpenApi(schema: Schema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (AUTHORING_KEYS.has(key) || value === undefined) continue;
    if (key === 'properties') {
      out[key] = Object.fromEntries(Object.entries(value as Record<string, Schema>).map(([k, v]) => [k, toOpenApi(v)]));
    } else if (key === 'items' || key === 'additionalProperties') {
      out[key] = toOpenApi(value as Schema);
    } else if (key === 'anyOf') {
      out[key] = (value as Schema[]).map(toOpenApi);
    } else {
      out[key] = structuredClone(value);
    }
  }
  return out;
}
