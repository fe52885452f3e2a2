import type { Schema } from '../schema-types.ts';
import { rootSchema } from '../schema.ts';
import { GENERATED_HEADER } from './crd.ts';
import { isInterface, namedTypes } from './walk.ts';

/**
 * Renders src/api/types.generated.ts: one interface per named object and one union per named enum,
 * with the descriptions, defaults and bounds as doc comments. Fields are optional unless `required`:
 * CRD defaults are applied by the API server, but the operator must not crash on an object that
 * predates a default (src/api/defaults.ts resolves effective values).
 */
export function renderTypes(): string {
  const imports = new Map<string, Set<string>>();
  const ref = (s: Schema): string => typeRef(s, imports);
  const blocks: string[] = [];
  for (const { name, schema } of namedTypes(rootSchema)) {
    if (schema.enum !== undefined) {
      blocks.push(`${docComment(schema, '')}export type ${name} = ${schema.enum.map((v) => `'${v}'`).join(' | ')};\n`);
    } else if (isInterface(schema)) {
      const required = new Set(schema.required ?? []);
      const fields = Object.entries(schema.properties ?? {}).map(
        ([field, child]) => `${docComment(child, '  ')}  ${field}${required.has(field) ? '' : '?'}: ${ref(child)};\n`,
      );
      blocks.push(`${docComment(schema, '')}export interface ${name} {\n${fields.join('')}}\n`);
    }
  }
  const importLines = [...imports].map(([from, names]) => `import type { ${[...names].sort().join(', ')} } from '${from}';\n`);
  return `// ${GENERATED_HEADER}\n${importLines.join('')}\n${blocks.join('\n')}`;
}

function typeRef(s: Schema, imports: Map<string, Set<string>>): string {
  if (s.tsExternal !== undefined) {
    const names = imports.get(s.tsExternal.from) ?? new Set<string>();
    names.add(s.tsExternal.name);
    imports.set(s.tsExternal.from, names);
    return s.tsExternal.name;
  }
  if (s.tsType !== undefined) return s.tsType;
  if (s['x-kubernetes-int-or-string'] === true) return 'number | string';
  if (s.enum !== undefined) return s.enum.map((v) => `'${v}'`).join(' | ');
  switch (s.type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array': {
      if (s.items === undefined) return 'unknown[]';
      const item = typeRef(s.items, imports);
      return item.includes(' ') ? `(${item})[]` : `${item}[]`;
    }
    case 'object':
      if (s.additionalProperties !== undefined) return `Record<string, ${typeRef(s.additionalProperties, imports)}>`;
      if (s.properties !== undefined) throw new Error(`object with properties needs a tsType: ${s.description ?? '(no description)'}`);
      return 'Record<string, unknown>';
    default:
      return 'unknown';
  }
}

/** The description plus the facts a caller needs (default, bounds), as a JSDoc block. */
function docComment(s: Schema, indent: string): string {
  const lines: string[] = [];
  if (s.description !== undefined) lines.push(s.description);
  if (s.default !== undefined && !(typeof s.default === 'object' && s.default !== null && Object.keys(s.default).length === 0)) {
    lines.push(`Default: \`${JSON.stringify(s.default)}\`.`);
  }
  if (s.minimum !== undefined || s.maximum !== undefined) lines.push(`Range: ${s.minimum ?? '-∞'} to ${s.maximum ?? '∞'}.`);
  if (lines.length === 0) return '';
  const body = lines.join(' ').replaceAll('*/', '*\\/');
  const oneLine = `${indent}/** ${body} */`;
  if (oneLine.length <= WIDTH) return `${oneLine}\n`;
  return `${indent}/**\n${wrap(body, WIDTH - indent.length - 3).map((l) => `${indent} * ${l}\n`).join('')}${indent} */\n`;
}

const WIDTH = 110;

/** Greedy word wrap; a word longer than the width gets a line of its own. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}
