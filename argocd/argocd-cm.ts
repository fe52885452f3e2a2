// Prints the argocd-cm entries for upgrade.apiserver.dev/ApiServerUpgrade, built from
// resource_customizations/upgrade.apiserver.dev/ApiServerUpgrade/ (Argo CD's own layout for its built-in
// customizations; a running Argo CD reads custom ones only from argocd-cm, never from a directory):
//
//   npx node argocd/argocd-cm.ts          a merge patch:  kubectl -n argocd patch configmap argocd-cm --type merge --patch-file <(...)
//   npx node argocd/argocd-cm.ts --helm   the same entries under configs.cm, for the argo-cd Helm chart's values
//
// See docs/argocd.md. test/argocd/argocd-cm.test.ts checks the entries carry the tested scripts unchanged.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';

export const GROUP_KIND = 'upgrade.apiserver.dev_ApiServerUpgrade';
export const HEALTH_KEY = `resource.customizations.health.${GROUP_KIND}`;
export const ACTIONS_KEY = `resource.customizations.actions.${GROUP_KIND}`;
export const DIR = join(import.meta.dirname, 'resource_customizations', 'upgrade.apiserver.dev', 'ApiServerUpgrade');

const YAML = { blockQuote: 'literal', lineWidth: 0 } as const;

/** The argocd-cm data entries: the health check, and the actions in Argo CD's ResourceActions format. */
export function argocdCmData(dir: string = DIR): Record<string, string> {
  const read = (...p: string[]): string => readFileSync(join(dir, ...p), 'utf8');
  const names = readdirSync(join(dir, 'actions')).filter((d) => existsSync(join(dir, 'actions', d, 'action.lua'))).sort();
  const actions = {
    'discovery.lua': read('actions', 'discovery.lua'),
    definitions: names.map((name) => ({ name, 'action.lua': read('actions', name, 'action.lua') })),
  };
  return { [HEALTH_KEY]: read('health.lua'), [ACTIONS_KEY]: stringify(actions, YAML) };
}

if (import.meta.main) {
  const data = argocdCmData();
  const helm = process.argv.includes('--helm');
  process.stdout.write(stringify(helm ? { configs: { cm: data } } : { data }, YAML));
}
