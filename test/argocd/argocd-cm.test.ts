// argocd/argocd-cm.ts: the argocd-cm entries carry the scripts customizations.test.ts runs, unchanged, under the
// keys Argo CD reads (resource.customizations.{health,actions}.<group>_<kind>), the actions in Argo CD's
// ResourceActions format (discovery.lua, definitions[].name and action.lua).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ACTIONS_KEY, HEALTH_KEY, argocdCmData, committedFiles } from '../../argocd/argocd-cm.ts';
import { DIR } from './lua.ts';

const read = (...p: string[]): string => readFileSync(join(DIR, ...p), 'utf8');
const CLI = join(import.meta.dirname, '..', '..', 'argocd', 'argocd-cm.ts');

test('the argocd-cm keys are the ones Argo CD reads for upgrade.apiserver.dev/ApiServerUpgrade', () => {
  assert.equal(HEALTH_KEY, 'resource.customizations.health.upgrade.apiserver.dev_ApiServerUpgrade');
  assert.equal(ACTIONS_KEY, 'resource.customizations.actions.upgrade.apiserver.dev_ApiServerUpgrade');
});

test('the entries hold health.lua, discovery.lua and every action.lua unchanged', () => {
  const data = argocdCmData();
  assert.deepEqual(Object.keys(data).sort(), [ACTIONS_KEY, HEALTH_KEY].sort());
  assert.equal(data[HEALTH_KEY], read('health.lua'));
  const actions = parse(data[ACTIONS_KEY]!) as { 'discovery.lua': string; definitions: { name: string; 'action.lua': string }[] };
  assert.deepEqual(Object.keys(actions).sort(), ['definitions', 'discovery.lua']);
  assert.equal(actions['discovery.lua'], read('actions', 'discovery.lua'));
  assert.deepEqual(actions.definitions.map((d) => d.name), ['abort', 'pause', 'resume', 'retry']);
  for (const d of actions.definitions) assert.equal(d['action.lua'], read('actions', d.name, 'action.lua'), d.name);
});

test('the CLI prints a merge patch for argocd-cm, or the Helm chart values with --helm', () => {
  const node = process.execPath;
  const patch = parse(execFileSync(node, [CLI], { encoding: 'utf8' })) as { data: Record<string, string> };
  assert.deepEqual(patch, { data: argocdCmData() });
  const values = parse(execFileSync(node, [CLI, '--helm'], { encoding: 'utf8' })) as { configs: { cm: Record<string, string> } };
  assert.deepEqual(values, { configs: { cm: argocdCmData() } });
});

test('the committed argocd/argocd-cm.yaml and argocd-cm.helm-values.yaml are what the generator writes now (run npx node argocd/argocd-cm.ts --write)', () => {
  const root = join(import.meta.dirname, '..', '..');
  const files = committedFiles();
  assert.deepEqual(files.map((f) => f.path), ['argocd/argocd-cm.yaml', 'argocd/argocd-cm.helm-values.yaml']);
  for (const f of files) assert.equal(readFileSync(join(root, f.path), 'utf8'), f.content, `${f.path} is stale`);
  // Ready to paste: the patch is the CLI's output, the values too, each a YAML document (the header is a comment).
  assert.deepEqual(parse(files[0]!.content), { data: argocdCmData() });
  assert.deepEqual(parse(files[1]!.content), { configs: { cm: argocdCmData() } });
});
