// The install and upgrade blocks of the docs agree with each other and with what the chart needs: the quickstart's
// upgrade names the agent image its install allowed (else NotAllowedByPolicy) and is the example it says it is; the
// webhook quickstart's install lists the hook its upgrade names, and that upgrade is examples/webhook.yaml; the
// kube-prometheus-stack install of docs/monitoring.md labels for its selectors and relies on the ServiceMonitor's own
// scraper token (no metrics.reader.subjects to guess). e2e/helm-install.e2e.ts runs the quickstart's blocks for real;
// this catches the same contradictions in seconds, and the ones no e2e covers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { docBlock } from '../../e2e/support/doc-blocks.ts';
import { resolveSpec } from '../../src/api/defaults.ts';
import { checkSpec, parsePolicy } from '../../src/plan/policy.ts';
import type { ApiServerUpgradeSpec } from '../../src/api/types.generated.ts';

const root = join(import.meta.dirname, '..', '..');
const QUICKSTART = join(root, 'docs', 'quickstart.md');
const MONITORING = join(root, 'docs', 'monitoring.md');
const WEBHOOK = join(root, 'docs', 'webhook-quickstart.md');
const CHART = join(root, 'charts', 'apiserver-upgrade-operator');

/** The `--set k=v` and `--set-json 'k=json'` pairs of a helm command (continuation lines joined). */
function helmSets(block: string): Map<string, unknown> {
  const text = block.replace(/\\\n/g, ' ');
  const out = new Map<string, unknown>();
  for (const m of text.matchAll(/--set\s+([^=\s]+)=(\S+)/g)) out.set(m[1]!, m[2]!);
  for (const m of text.matchAll(/--set-json\s+'([^=]+)=([^']*)'/g)) out.set(m[1]!, JSON.parse(m[2]!));
  return out;
}

interface Upgrade { metadata: { name: string }; spec: { paused?: boolean; proxy?: { allowAlphaGate?: boolean }; driver: { staticPod: { agentImage: string } } } }

test('helmSets reads --set and --set-json across continuation lines', () => {
  const s = helmSets("helm install x y \\\n  --set a.b=1 --set-json 'c=[{\"d\":2}]' \\\n  --set e=f\n");
  assert.deepEqual([...s.entries()], [['a.b', '1'], ['e', 'f'], ['c', [{ d: 2 }]]]);
});

test('quickstart: the upgrade runs an agent image its install allows, and is the example (paused, consenting to the alpha gate)', () => {
  const install = helmSets(docBlock(QUICKSTART, 'e2e/helm-install.e2e.ts', 'helm-install.sh').text);
  const allowed = install.get('policy.agentImages') as { image: string }[] | undefined;
  const doc = parse(docBlock(QUICKSTART, 'e2e/helm-install.e2e.ts', 'kubeadm-to-v1-36-3.yaml').text) as Upgrade;
  const agent = doc.spec.driver.staticPod.agentImage as string | undefined;
  // No agentImage: the operator's own image, which the chart's policy always allows; else the install must list it.
  if (agent !== undefined) assert.ok(allowed?.some((a) => a.image === agent), `agentImage ${agent} is among the install's policy.agentImages ${JSON.stringify(allowed)}`);
  const example = parse(readFileSync(join(root, 'examples', 'kubeadm-static-pod.yaml'), 'utf8')) as Upgrade;
  assert.equal(example.spec.paused, true, 'the example starts paused (the runbook and operations.md apply it as it is)');
  assert.equal(example.spec.proxy?.allowAlphaGate, true);
  // The page's copy differs from the example at most in the agent image.
  const noAgent = (u: Upgrade): unknown => ({ ...u, spec: { ...u.spec, driver: { staticPod: { ...u.spec.driver.staticPod, agentImage: undefined } } } });
  assert.deepEqual(noAgent(doc), noAgent(example));
});

test('monitoring: the kube-prometheus-stack install labels for its selectors, and the chart\'s ServiceMonitor sends its own scraper token', () => {
  const sets = helmSets(docBlock(MONITORING, 'test/docs/install-blocks.test.ts', 'kube-prometheus-stack.sh').text);
  assert.equal(sets.get('serviceMonitor.enabled'), 'true');
  assert.equal(sets.get('prometheusRule.enabled'), 'true');
  const release = sets.get('serviceMonitor.labels.release');
  assert.equal(release, 'kube-prometheus-stack', 'kube-prometheus-stack\'s default selectors want release: <its release name>');
  assert.equal(sets.get('prometheusRule.labels.release'), release, 'the rules carry the same release label as the ServiceMonitor');
  // No subjects to name: with metrics.auth on (the default) and no serviceMonitor.authorization, the ServiceMonitor
  // sends the token of the chart's own scraper ServiceAccount, which the chart binds to the metrics-reader role.
  assert.equal(sets.has('metrics.reader.subjects'), false, 'no metrics.reader.subjects: the ServiceMonitor brings its own identity');
  const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as { metrics: { auth: { enabled: boolean } }; serviceMonitor: { authorization: Record<string, unknown> } };
  assert.equal(values.metrics.auth.enabled, true);
  assert.deepEqual(values.serviceMonitor.authorization, {});
  const template = readFileSync(join(CHART, 'templates', 'servicemonitor.yaml'), 'utf8');
  assert.match(template, /name: \{\{ include "auo\.fullname" \. \}\}-metrics-scraper-token/, 'the ServiceMonitor names the scraper\'s token Secret');
  assert.match(template, /kind: ClusterRoleBinding[\s\S]*name: \{\{ include "auo\.fullname" \. \}\}-metrics-reader[\s\S]*name: \{\{ include "auo\.fullname" \. \}\}-metrics-scraper\n/, 'the scraper is bound to the metrics-reader role');
});

test('webhook quickstart: the install lists the hook for its token, which admits the upgrade, and the upgrade is examples/webhook.yaml', () => {
  const install = helmSets(docBlock(WEBHOOK, 'test/docs/install-blocks.test.ts', 'webhook-install.sh').text);
  const doc = parse(docBlock(WEBHOOK, 'test/docs/install-blocks.test.ts', 'webhook-to-v1-36-3.yaml').text) as { spec: ApiServerUpgradeSpec };
  const example = parse(readFileSync(join(root, 'examples', 'webhook.yaml'), 'utf8')) as { spec: ApiServerUpgradeSpec };
  assert.deepEqual(doc, example, 'the page\'s upgrade is the example');
  assert.equal(doc.spec.paused, true);
  assert.equal(doc.spec.proxy?.allowAlphaGate, true, 'consents to the alpha gate: on v1.35 preflight waits without it');
  const defaults = (parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as { policy: Record<string, unknown> }).policy;
  assert.notDeepEqual(checkSpec(parsePolicy(defaults, 'defaults'), resolveSpec(doc.spec)), [], 'the default policy refuses it: the install must list the hook');
  const policy = parsePolicy({ ...defaults, webhookTokens: install.get('policy.webhookTokens') }, 'the page\'s install');
  assert.deepEqual(checkSpec(policy, resolveSpec(doc.spec)), [], 'the page\'s install admits the page\'s upgrade');
});
