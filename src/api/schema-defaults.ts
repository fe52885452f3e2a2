import type { Schema } from './schema-types.ts';

/**
 * Applies the schema's `default`s to a value the way the API server's structural defaulting does:
 * an absent property with a default gets a copy of it, then defaulting recurses into objects and
 * array items. Returns a new value; the input is not changed.
 */
export function applySchemaDefaults(value: unknown, schema: Schema): unknown {
  if (Array.isArray(value)) {
    const items = schema.items;
    return items === undefined ? structuredClone(value) : value.map((v: unknown) => applySchemaDefaults(v, items));
  }
  if (!isPlainObject(value)) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    const childSchema = schema.properties?.[key] ?? schema.additionalProperties;
    out[key] = childSchema === undefined ? structuredClone(child) : applySchemaDefaults(child, childSchema);
  }
  for (const [key, childSchema] of Object.entries(schema.properties ?? {})) {
    if (out[key] === undefined && childSchema.default !== undefined) {
      out[key] = applySchemaDefaults(structuredClone(childSchema.default), childSchema);
    }
  }
  return out;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
