// Every example under examples/, and every ApiServerUpgrade a page of docs/ shows, starts paused and is admitted by
// the chart's default policy, or says why not: a comment "Not admitted by the chart's default policy" (a page: its
// install) and the `--set-json 'policy.<list>=<json>'` that admits it.
// The check is the operator's own (src/plan/policy.ts checkSpec on the resolved spec) against the policy the chart
// renders from values.yaml, so an example a reader applies as it is never waits in NotAllowedByPolicy unexplained.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { resolveSpec } from '../../src/api/defaults.ts';
import { checkSpec, parsePolicy, type PolicyViolation } from '../../src/plan/policy.ts';
import type { ApiServerUpgradeSpec } from '../../src/api/types.generated.ts';
import { loadExamples, EXAMPLES_DIR } from '../api/examples.ts';

const root = join(import.meta.dirname, '..', '..');
const NOT_ADMITTED = 'Not admitted by the chart\'s default policy';
/** The chart's default `policy` values, as its ConfigMap renders them into the operator's policy file. */
const defaults = (parse(readFileSync(join(root, 'charts', 'apiserver-upgrade-operator', 'values.yaml'), 'utf8')) as { policy: Record<string, unknown> }).policy;

/** The `--set-json 'policy.<key>=<json>'` settings a text gives (an example's comments, a page's install). */
export function policySettings(text: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const m of text.matchAll(/--set-json '(policy\.[A-Za-z]+)=([^']*)'/g)) out[m[1]!.slice('policy.'.length)] = JSON.parse(m[2]!) as unknown;
  return out;
}

/** The ApiServerUpgrades of a page's yaml blocks. */
function pageUpgrades(markdown: string): { name: string; spec: ApiServerUpgradeSpec }[] {
  return [...markdown.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].flatMap((m) => parseAllDocuments(m[1]!).flatMap((d) => {
    const o = d.toJS() as { kind?: string; metadata?: { name?: string }; spec?: ApiServerUpgradeSpec } | null;
    return o?.kind === 'ApiServerUpgrade' && o.spec ? [{ name: o.metadata?.name ?? '?', spec: o.spec }] : [];
  }));
}

/** The violations of a spec against the default policy with these settings put in. */
export function violations(spec: ApiServerUpgradeSpec, settings: Record<string, unknown> = {}): PolicyViolation[] {
  return checkSpec(parsePolicy({ ...defaults, ...settings }, 'chart defaults'), resolveSpec(spec));
}

/** What is wrong with one example, one line each. */
export function problems(file: string, text: string, spec: ApiServerUpgradeSpec): string[] {
  const out: string[] = [];
  if (spec.paused !== true) out.push(`${file}: does not start paused (spec.paused: true)`);
  const refused = violations(spec);
  const says = text.includes(NOT_ADMITTED);
  if (refused.length === 0) {
    if (says) out.push(`${file}: says "${NOT_ADMITTED}", but it is admitted`);
    return out;
  }
  if (!says) return [...out, `${file}: refused by the chart's default policy and says nothing: ${refused.map((v) => v.message).join('; ')}`];
  const settings = policySettings(text);
  if (Object.keys(settings).length === 0) return [...out, `${file}: gives no --set-json 'policy.<list>=<json>' that admits it`];
  const still = violations(spec, settings);
  if (still.length > 0) out.push(`${file}: still refused with the settings it gives: ${still.map((v) => v.message).join('; ')}`);
  return out;
}

test('problems: an unpaused example, a refusal left unexplained or not cured by its settings, a false claim', () => {
  const kubeadm = { targetVersion: 'v1.36.3', paused: true, driver: { staticPod: {} } } as ApiServerUpgradeSpec;
  const hook = { targetVersion: 'v1.36.3', paused: true, driver: { webhook: { url: 'https://hook.example.com/replace' } } } as ApiServerUpgradeSpec;
  assert.deepEqual(problems('a.yaml', '', kubeadm), []);
  assert.deepEqual(problems('a.yaml', '', { ...kubeadm, paused: false }), ['a.yaml: does not start paused (spec.paused: true)']);
  assert.match(problems('a.yaml', `# ${NOT_ADMITTED}`, kubeadm)[0]!, /but it is admitted/);
  assert.match(problems('b.yaml', '', hook)[0]!, /refused by the chart's default policy and says nothing: .*matches no entry of webhooks/);
  assert.match(problems('b.yaml', `# ${NOT_ADMITTED}`, hook)[0]!, /gives no --set-json/);
  const wrong = `# ${NOT_ADMITTED}\n#   --set-json 'policy.webhooks=[{"url":"https://other.example.com/replace"}]'\n`;
  assert.match(problems('b.yaml', wrong, hook)[0]!, /still refused/);
  const right = `# ${NOT_ADMITTED}\n#   --set-json 'policy.webhooks=[{"prefix":"https://hook.example.com/"}]'\n`;
  assert.deepEqual(problems('b.yaml', right, hook), []);
});

test('every example starts paused, and is admitted by the chart\'s default policy or says why and how', () => {
  const examples = loadExamples();
  assert.ok(examples.length >= 3, 'the examples were found');
  const found = examples.flatMap(({ file, object }) => problems(file, readFileSync(join(EXAMPLES_DIR, file), 'utf8'), object.spec));
  assert.deepEqual(found, []);
  // The kubeadm example, the quickstart's, is admitted as it is.
  const kubeadm = examples.find((e) => e.file === 'kubeadm-static-pod.yaml');
  assert.deepEqual(kubeadm && violations(kubeadm.object.spec), []);
});

test('every ApiServerUpgrade a page shows starts paused, and the default policy or the page\'s own install admits it', () => {
  const pages = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md'));
  const found: string[] = [];
  let seen = 0;
  for (const page of pages) {
    const text = readFileSync(join(root, 'docs', page), 'utf8');
    for (const u of pageUpgrades(text)) {
      seen++;
      if (u.spec.paused !== true) found.push(`docs/${page} ${u.name}: does not start paused`);
      if (violations(u.spec).length > 0 && violations(u.spec, policySettings(text)).length > 0) {
        found.push(`docs/${page} ${u.name}: refused by the chart's default policy, and the page installs nothing that admits it: ${violations(u.spec).map((v) => v.message).join('; ')}`);
      }
    }
  }
  assert.ok(seen >= 3, `the pages' upgrades were found (${seen})`);
  assert.deepEqual(found, []);
});
