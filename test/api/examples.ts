import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';

/** The manifests under examples/, parsed; shared by unit tests (and usable by e2e). */
export const EXAMPLES_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples');

export function loadExamples(): { file: string; object: ApiServerUpgrade }[] {
  return readdirSync(EXAMPLES_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((file) =>
      parseAllDocuments(readFileSync(join(EXAMPLES_DIR, file), 'utf8')).map((doc) => ({
        file,
        // Examples are ApiServerUpgrade manifests by construction; the tests below check the shape.
        object: doc.toJS() as ApiServerUpgrade,
      })),
    );
}
