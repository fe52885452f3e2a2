// The CRD compatibility policy of v1alpha1 (docs/chart.md "CRD compatibility"), as a check of a new CRD against
// an old one: what a new chart may change so that every object stored under the old CRD, and every status an older
// operator wrote, is still valid, keeps its meaning and is never pruned. test/api/crd-compat.test.ts runs it on the
// previous release's CRD and crds/, and on made-up breaches of each rule.
// Pure: two parsed CRD objects in, one line per breach out.

export interface OpenApiSchema {
  type?: string;
  properties?: Record<string, OpenApiSchema>;
  items?: OpenApiSchema;
  additionalProperties?: OpenApiSchema | boolean;
  required?: string[];
  enum?: unknown[];
  pattern?: string;
  format?: string;
  default?: unknown;
  nullable?: boolean;
  maxLength?: number;
  minLength?: number;
  maxItems?: number;
  minItems?: number;
  maxProperties?: number;
  minProperties?: number;
  maximum?: number;
  minimum?: number;
  exclusiveMaximum?: boolean;
  exclusiveMinimum?: boolean;
  anyOf?: OpenApiSchema[];
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: string;
  'x-kubernetes-validations'?: { rule: string; message?: string }[];
}

export interface Crd {
  spec: {
    group: string;
    scope: string;
    names: { kind: string; plural: string };
    versions: { name: string; served: boolean; storage: boolean; schema?: { openAPIV3Schema: OpenApiSchema } }[];
  };
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Upper bounds may stay or grow (or go); lower bounds may stay or shrink (or go); neither may appear on a field that had none. */
const UPPER = ['maxLength', 'maxItems', 'maxProperties', 'maximum'] as const;
const LOWER = ['minLength', 'minItems', 'minProperties', 'minimum'] as const;
/** Settings that change how a stored value is read or merged: never changed on a field that exists. */
const FIXED = ['type', 'format', 'x-kubernetes-int-or-string', 'x-kubernetes-list-type', 'x-kubernetes-list-map-keys', 'x-kubernetes-map-type', 'default'] as const;

function compareSchema(path: string, o: OpenApiSchema, n: OpenApiSchema, out: string[]): void {
  for (const k of FIXED) if (!same(o[k], n[k])) out.push(`${path}: ${k} changed from ${JSON.stringify(o[k])} to ${JSON.stringify(n[k])}`);
  for (const k of UPPER) {
    const a = o[k];
    const b = n[k];
    if (b !== undefined && (a === undefined || b < a)) out.push(`${path}: ${k} tightened from ${a ?? 'none'} to ${b}`);
  }
  for (const k of LOWER) {
    const a = o[k];
    const b = n[k];
    if (b !== undefined && (a === undefined || b > a)) out.push(`${path}: ${k} tightened from ${a ?? 'none'} to ${b}`);
  }
  if (n.exclusiveMaximum === true && o.exclusiveMaximum !== true) out.push(`${path}: exclusiveMaximum added`);
  if (n.exclusiveMinimum === true && o.exclusiveMinimum !== true) out.push(`${path}: exclusiveMinimum added`);
  if (n.pattern !== undefined && n.pattern !== o.pattern) out.push(`${path}: pattern changed from ${JSON.stringify(o.pattern ?? null)} to ${JSON.stringify(n.pattern)}`);
  if (n.enum !== undefined) {
    if (o.enum === undefined) out.push(`${path}: an enum added (${JSON.stringify(n.enum)})`);
    else for (const v of o.enum) if (!n.enum.some((w) => same(v, w))) out.push(`${path}: enum value ${JSON.stringify(v)} removed`);
  }
  if (o.nullable === true && n.nullable !== true) out.push(`${path}: no longer nullable`);
  if (o['x-kubernetes-preserve-unknown-fields'] === true && n['x-kubernetes-preserve-unknown-fields'] !== true) out.push(`${path}: unknown fields no longer preserved (stored ones would be pruned)`);
  for (const r of n.required ?? []) if (!(o.required ?? []).includes(r)) out.push(`${path}: ${r} newly required`);
  const oldRules = new Set((o['x-kubernetes-validations'] ?? []).map((v) => v.rule));
  for (const v of n['x-kubernetes-validations'] ?? []) if (!oldRules.has(v.rule)) out.push(`${path}: a validation rule added or changed: ${v.rule}`);
  for (const [name, os] of Object.entries(o.properties ?? {})) {
    const ns = n.properties?.[name];
    if (ns === undefined) {
      if (n['x-kubernetes-preserve-unknown-fields'] !== true) out.push(`${path}.${name}: removed (stored values would be pruned)`);
      continue;
    }
    compareSchema(`${path}.${name}`, os, ns, out);
  }
  if (o.items !== undefined) {
    if (n.items === undefined) out.push(`${path}[]: items schema removed`);
    else compareSchema(`${path}[]`, o.items, n.items, out);
  }
  if (typeof o.additionalProperties === 'object') {
    if (typeof n.additionalProperties !== 'object') out.push(`${path}: additionalProperties schema removed`);
    else compareSchema(`${path}{}`, o.additionalProperties, n.additionalProperties, out);
  }
  if (o.anyOf !== undefined && !same(o.anyOf, n.anyOf)) out.push(`${path}: anyOf changed`);
}

/** Every breach of the policy by `next` against `previous`; empty: compatible. */
export function crdCompatProblems(previous: Crd, next: Crd): string[] {
  const out: string[] = [];
  const p = previous.spec;
  const n = next.spec;
  if (p.group !== n.group) out.push(`group changed from ${p.group} to ${n.group}`);
  if (p.scope !== n.scope) out.push(`scope changed from ${p.scope} to ${n.scope}`);
  if (p.names.kind !== n.names.kind || p.names.plural !== n.names.plural) out.push(`names changed from ${p.names.kind}/${p.names.plural} to ${n.names.kind}/${n.names.plural}`);
  const storage = (c: Crd['spec']): string | undefined => c.versions.find((v) => v.storage)?.name;
  if (storage(p) !== storage(n)) out.push(`storage version changed from ${storage(p)} to ${storage(n)}`);
  for (const v of p.versions) {
    const w = n.versions.find((x) => x.name === v.name);
    if (w === undefined) {
      out.push(`version ${v.name} removed`);
      continue;
    }
    if (v.served && !w.served) out.push(`version ${v.name} no longer served`);
    const os = v.schema?.openAPIV3Schema;
    const ns = w.schema?.openAPIV3Schema;
    if (os !== undefined && ns !== undefined) compareSchema(v.name, os, ns, out);
    else if (os !== undefined) out.push(`version ${v.name}: schema removed`);
  }
  return out;
}

/**
 * What the schema's structural checks say of a value: a type, enum, bound or pattern it breaks, a required field it
 * lacks, a field the schema does not know (the apiserver would prune it). CEL rules are not evaluated here.
 */
export function schemaProblems(path: string, s: OpenApiSchema, v: unknown): string[] {
  const out: string[] = [];
  if (v === null) return s.nullable === true ? [] : [`${path}: null`];
  if (s['x-kubernetes-int-or-string'] === true) {
    if (!(typeof v === 'string' || Number.isInteger(v))) out.push(`${path}: not an int or a string`);
  } else if (s.type === 'object') {
    if (typeof v !== 'object' || Array.isArray(v)) return [`${path}: not an object`];
    const o = v as Record<string, unknown>;
    for (const r of s.required ?? []) if (!(r in o)) out.push(`${path}.${r}: required, missing`);
    for (const [k, x] of Object.entries(o)) {
      const ps = s.properties?.[k] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined);
      if (ps !== undefined) out.push(...schemaProblems(`${path}.${k}`, ps, x));
      else if (s.properties !== undefined && s['x-kubernetes-preserve-unknown-fields'] !== true && s.additionalProperties !== true) out.push(`${path}.${k}: unknown to the schema (pruned)`);
    }
    if (s.maxProperties !== undefined && Object.keys(o).length > s.maxProperties) out.push(`${path}: more than ${s.maxProperties} properties`);
  } else if (s.type === 'array') {
    if (!Array.isArray(v)) return [`${path}: not an array`];
    if (s.maxItems !== undefined && v.length > s.maxItems) out.push(`${path}: ${v.length} items, at most ${s.maxItems}`);
    if (s.minItems !== undefined && v.length < s.minItems) out.push(`${path}: ${v.length} items, at least ${s.minItems}`);
    v.forEach((x, i) => { if (s.items) out.push(...schemaProblems(`${path}[${i}]`, s.items, x)); });
  } else if (s.type === 'string') {
    if (typeof v !== 'string') return [`${path}: not a string`];
    if (s.maxLength !== undefined && [...v].length > s.maxLength) out.push(`${path}: longer than ${s.maxLength}`);
    if (s.minLength !== undefined && [...v].length < s.minLength) out.push(`${path}: shorter than ${s.minLength}`);
    if (s.pattern !== undefined && !new RegExp(s.pattern).test(v)) out.push(`${path}: does not match ${s.pattern}`);
    if (s.format === 'date-time' && Number.isNaN(Date.parse(v))) out.push(`${path}: not a date-time`);
  } else if (s.type === 'integer' || s.type === 'number') {
    if (typeof v !== 'number' || (s.type === 'integer' && !Number.isInteger(v))) return [`${path}: not an ${s.type}`];
    if (s.maximum !== undefined && v > s.maximum) out.push(`${path}: above ${s.maximum}`);
    if (s.minimum !== undefined && v < s.minimum) out.push(`${path}: below ${s.minimum}`);
  } else if (s.type === 'boolean') {
    if (typeof v !== 'boolean') out.push(`${path}: not a boolean`);
  }
  if (s.enum !== undefined && !s.enum.some((e) => same(e, v))) out.push(`${path}: ${JSON.stringify(v)} not one of ${JSON.stringify(s.enum)}`);
  return out;
}
