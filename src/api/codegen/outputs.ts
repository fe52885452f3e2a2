import { CRD_NAME } from '../constants.ts';
import { renderCrdYaml } from './crd.ts';
import { renderDocs } from './docs.ts';
import { renderTypes } from './typescript.ts';

/** A file the generator owns, by path relative to the repository root. */
export interface GeneratedFile {
  path: string;
  content: string;
}

export const CHART_DIR = 'charts/apiserver-upgrade-operator';

/**
 * Everything `npm run generate` writes. Pure, so the drift test can compare it with the checked-in files.
 * The chart gets a copy of the CRD only when the chart exists; the generator never creates it.
 */
export function generatedFiles(options: { chartExists: boolean }): GeneratedFile[] {
  const crd = renderCrdYaml();
  return [
    { path: `crds/${CRD_NAME}.yaml`, content: crd },
    ...(options.chartExists ? [{ path: `${CHART_DIR}/crds/${CRD_NAME}.yaml`, content: crd }] : []),
    { path: 'src/api/types.generated.ts', content: renderTypes() },
    { path: 'docs/api.md', content: renderDocs() },
  ];
}
