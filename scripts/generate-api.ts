/**
 * `npm run generate`: writes the CRD, the TypeScript types and docs/api.md from src/api/schema*.ts.
 * test/api/generated.test.ts fails when the checked-in files differ from what this would write.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHART_DIR, generatedFiles } from '../src/api/codegen/outputs.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
for (const file of generatedFiles({ chartExists: existsSync(join(root, CHART_DIR)) })) {
  const target = join(root, file.path);
  const before = existsSync(target) ? readFileSync(target, 'utf8') : undefined;
  if (before === file.content) continue;
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, file.content);
  console.log(`wrote ${file.path}`);
}
