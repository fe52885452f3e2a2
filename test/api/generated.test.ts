import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHART_DIR, generatedFiles } from '../../src/api/codegen/outputs.ts';

// The checked-in CRD, types and docs must be exactly what `npm run generate` writes from the schema.
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

for (const file of generatedFiles({ chartExists: existsSync(join(root, CHART_DIR)) })) {
  test(`${file.path} is up to date (run npm run generate)`, () => {
    const path = join(root, file.path);
    assert.ok(existsSync(path), `${file.path} is missing: run npm run generate`);
    assert.equal(readFileSync(path, 'utf8'), file.content, `${file.path} drifted from src/api/schema*.ts: run npm run generate`);
  });
}

test('the Helm chart exists, so its crds/ copy of the CRD is among the files checked above', () => {
  assert.ok(existsSync(join(root, CHART_DIR, 'Chart.yaml')), `${CHART_DIR}/Chart.yaml is missing`);
  const paths = generatedFiles({ chartExists: true }).map((f) => f.path);
  assert.ok(paths.includes(`${CHART_DIR}/crds/apiserverupgrades.upgrade.apiserver.dev.yaml`), paths.join(', '));
});
