import type { Schema } from '../schema-types.ts';
import { API_VERSION, KIND, PLURAL, SHORT_NAMES } from '../constants.ts';
import { printerColumns, rootSchema } from '../schema.ts';
import { GENERATED_HEADER } from './crd.ts';
import { isInterface, namedTypes } from './walk.ts';

/**
 * Renders docs/api.md: one table per object type (the same names as the TypeScript types), each field
 * with its type, default, description and every validation the API server applies to it.
 */
export function renderDocs(): string {
  const out: string[] = [
    `<!-- ${GENERATED_HEADER} -->`,
    '',
    `# ${KIND} API reference`,
    '',
    `\`apiVersion: ${API_VERSION}\`, \`kind: ${KIND}\`, cluster-scoped, plural \`${PLURAL}\`, short name${SHORT_NAMES.length > 1 ? 's' : ''} ${SHORT_NAMES.map((n) => `\`${n}\``).join(', ')}.`,
    '',
    'Validation that needs cluster state (skipping a minor, a downgrade, an unhealthy fleet) is done by the operator',
    'and reported as the `PreflightPassed` condition; everything below is enforced by the API server on admission.',
    '',
    '## Printer columns (`kubectl get asu`)',
    '',
    '| Column | JSONPath | Description |',
    '| --- | --- | --- |',
    ...printerColumns.map((c) => `| ${c.name} | \`${c.jsonPath}\` | ${cell(c.description)} |`),
    '',
  ];
  for (const { name, schema } of namedTypes(rootSchema)) {
    if (schema.enum !== undefined) {
      out.push(`## ${name}`, '', cell(schema.description ?? ''), '', `One of: ${schema.enum.map((v) => `\`${v}\``).join(', ')}.`, '');
    } else if (isInterface(schema)) {
      out.push(`## ${name}`, '', cell(schema.description ?? ''), '');
      const objectRules = validations(schema);
      if (objectRules.length > 0) out.push(`Validation: ${objectRules.join('; ')}.`, '');
      out.push('| Field | Type | Default | Description |', '| --- | --- | --- | --- |');
      const required = new Set(schema.required ?? []);
      for (const [field, child] of Object.entries(schema.properties ?? {})) {
        const facts = [child.description ?? '', ...constraints(child), ...validations(child).map((v) => `Validation: ${v}.`)];
        const dflt = child.default === undefined ? '' : `\`${JSON.stringify(child.default)}\``;
        out.push(`| \`${field}\`${required.has(field) ? ' (required)' : ''} | ${typeName(child)} | ${dflt} | ${cell(facts.filter((f) => f !== '').join(' '))} |`);
      }
      out.push('');
    }
  }
  return `${out.join('\n').trimEnd()}\n`;
}

function typeName(s: Schema): string {
  if (s.tsExternal !== undefined) return `ObjectMeta`;
  if (s.tsType !== undefined) return `[${s.tsType}](#${s.tsType.toLowerCase()})`;
  if (s['x-kubernetes-int-or-string'] === true) return 'integer or string';
  if (s.type === 'array' && s.items !== undefined) return `array of ${typeName(s.items)}`;
  if (s.enum !== undefined) return `string (${s.enum.join(' \\| ')})`;
  return s.format === undefined ? (s.type ?? 'any') : `${s.type ?? 'any'} (${s.format})`;
}

function constraints(s: Schema): string[] {
  const c: string[] = [];
  if (s.minimum !== undefined || s.maximum !== undefined) c.push(`Range: ${s.minimum ?? '-∞'} to ${s.maximum ?? '∞'}.`);
  if (s.minLength !== undefined) c.push(`Min length ${s.minLength}.`);
  if (s.maxLength !== undefined && s['x-kubernetes-int-or-string'] !== true) c.push(`Max length ${s.maxLength}.`);
  if (s.maxItems !== undefined) c.push(`At most ${s.maxItems} items.`);
  if (s['x-kubernetes-list-type'] === 'map') c.push(`Keyed by ${(s['x-kubernetes-list-map-keys'] ?? []).map((k) => `\`${k}\``).join(', ')}.`);
  if (s.pattern !== undefined) c.push(`Pattern \`${s.pattern}\`.`);
  return c;
}

function validations(s: Schema): string[] {
  return (s['x-kubernetes-validations'] ?? []).map((v) => `"${v.message}" unless \`${v.rule}\``);
}

/** Makes text safe inside a Markdown table cell. */
function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}
