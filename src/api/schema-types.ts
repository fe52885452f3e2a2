/**
 * The subset of the CRD's OpenAPI v3 schema (apiextensions.k8s.io/v1 JSONSchemaProps) that our schema uses,
 * plus one authoring-only key, `tsType`, that names the TypeScript type generated for a node. The code
 * generator strips `tsType` before it writes the CRD, so the API server never sees it.
 */
export type SchemaType = 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';

/** One CEL rule (x-kubernetes-validations). `message` is what the user sees when the rule fails. */
export interface ValidationRule {
  rule: string;
  message: string;
  /** Path (relative to the node) to report the error at, e.g. `.webhook`. */
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

export interface Schema {
  /** Authoring only: the name of the generated TypeScript interface or type alias for this node. */
  tsType?: string;
  /** Authoring only: use an existing TypeScript type instead of generating one (e.g. V1ObjectMeta). */
  tsExternal?: { name: string; from: string };
  type?: SchemaType;
  description?: string;
  format?: 'int32' | 'int64' | 'double' | 'date-time' | 'byte';
  default?: unknown;
  enum?: readonly string[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  required?: readonly string[];
  properties?: Readonly<Record<string, Schema>>;
  items?: Schema;
  additionalProperties?: Schema;
  anyOf?: readonly Schema[];
  'x-kubernetes-int-or-string'?: true;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: readonly string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-validations'?: readonly ValidationRule[];
}

/** A CRD printer column (additionalPrinterColumns). */
export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description: string;
  priority?: number;
}
