import type { Schema } from '../schema-types.ts';

/** A named type found in the schema: the node that carries `tsType`, in first-seen (depth-first) order. */
export interface NamedType {
  name: string;
  schema: Schema;
}

/**
 * Every node with a `tsType`, parents before children. The same name on two different nodes is an
 * authoring error (the generated types would silently merge), so it throws.
 */
export function namedTypes(root: Schema): NamedType[] {
  const found = new Map<string, Schema>();
  const visit = (s: Schema): void => {
    if (s.tsType !== undefined) {
      const seen = found.get(s.tsType);
      if (seen !== undefined && seen !== s && JSON.stringify(seen) !== JSON.stringify(s)) {
        throw new Error(`tsType ${s.tsType} names two different schemas`);
      }
      if (seen === undefined) found.set(s.tsType, s);
    }
    for (const child of Object.values(s.properties ?? {})) visit(child);
    if (s.items !== undefined) visit(s.items);
    if (s.additionalProperties !== undefined) visit(s.additionalProperties);
  };
  visit(root);
  return [...found].map(([name, schema]) => ({ name, schema }));
}

/** True for an object node that gets its own interface. */
export function isInterface(s: Schema): boolean {
  return s.type === 'object' && s.properties !== undefined;
}
