// The fields of the batch/v1 Job API and every type inside it, as a real kube-apiserver publishes them
// (/openapi/v3/apis/batch/v1), kept in test/fixtures/job-api-fields.json: the generated attacks on the admission
// policy add fields the API really has, at every depth. `sudo node scripts/capture-job-api-fields.ts` captures it
// again from a real server.
import { readFileSync } from 'node:fs';

/** Type name -> field -> its type: 'string' | 'integer' | 'number' | 'boolean' | 'map' | 'object' | a type name | '[]<item type>'. */
export type ApiFields = Record<string, Record<string, string>>;

const FIXTURE = new URL('../fixtures/job-api-fields.json', import.meta.url);
const loaded = JSON.parse(readFileSync(FIXTURE, 'utf8')) as { capturedFrom: string; root: string; types: ApiFields };

export const API_FIELDS: ApiFields = loaded.types;
export const API_ROOT = loaded.root;

/** The API type of the value at a path from the Job, or undefined (a map's entries, a primitive, unknown). */
export function typeAt(path: (string | number)[]): string | undefined {
  let type: string | undefined = API_ROOT;
  for (const p of path) {
    if (type === undefined) return undefined;
    if (type.startsWith('[]')) {
      if (typeof p !== 'number') return undefined;
      type = type.slice(2);
      continue;
    }
    if (typeof p !== 'string') return undefined;
    type = API_FIELDS[type]?.[p];
  }
  return type !== undefined && API_FIELDS[type] !== undefined ? type : undefined;
}

/** Reduces an OpenAPI v3 document to the types reachable from `root` (scripts/capture-job-api-fields.ts). */
export function reduceOpenApi(doc: { components: { schemas: Record<string, OpenApiSchema> } }, root: string): ApiFields {
  const out: ApiFields = {};
  const schemas = doc.components.schemas;
  const refName = (s: OpenApiSchema): string | undefined => {
    const ref = s.$ref ?? s.allOf?.find((x) => x.$ref)?.$ref;
    return ref?.replace('#/components/schemas/', '');
  };
  const typeOf = (s: OpenApiSchema): string => {
    const ref = refName(s);
    if (ref !== undefined) return schemas[ref]?.properties ? ref : (schemas[ref]?.type ?? 'string');
    if (s.type === 'array') return `[]${s.items ? typeOf(s.items) : 'string'}`;
    if (s.type === 'object') return s.additionalProperties ? 'map' : 'object';
    return s.type ?? 'string';
  };
  const visit = (name: string): void => {
    if (out[name] !== undefined) return;
    const s = schemas[name];
    if (!s?.properties) return;
    out[name] = {};
    for (const [field, fs] of Object.entries(s.properties)) {
      const t = typeOf(fs);
      out[name][field] = t;
      const inner = t.replace(/^(\[\])+/, '');
      if (schemas[inner]?.properties) visit(inner);
    }
  };
  visit(root);
  return out;
}

export interface OpenApiSchema {
  $ref?: string;
  allOf?: OpenApiSchema[];
  type?: string;
  items?: OpenApiSchema;
  additionalProperties?: unknown;
  properties?: Record<string, OpenApiSchema>;
}
