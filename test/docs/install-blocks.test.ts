// The install and upgrade blocks of the docs agree with each other and with what the chart needs (issue 23): the
// quickstart's upgrade names the agent image its install allowed (else NotAllowedByPolicy), is the example it says it
// is, and operations.md's prometheus-operator install binds the Prometheus it labels for (else every scrape is 403
// and ApiServerUpgradeOperatorDown fires). e2e/helm-install.e2e.ts runs the quickstart's blocks for real; this catches
// the same contradictions in seconds, and the ones no e2e covers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { docBlock } from '../../e2e/support/doc-blocks.ts';

const root = join(import.meta.dirname, '..', '..');
const QUICKSTART = join(root, 'docs', 'quickstart.md');
const OPERATIONS = join(root, 'docs', 'operations.md');

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

test('operations: the prometheus-operator install labels for kube-prometheus-stack and binds its Prometheus to the metrics reader', () => {
  const sets = helmSets(docBlock(OPERATIONS, 'test/docs/install-blocks.test.ts', 'operations-install.sh').text);
  assert.equal(sets.get('serviceMonitor.enabled'), 'true');
  const release = sets.get('serviceMonitor.labels.release');
  assert.equal(sets.get('prometheusRule.labels.release'), release, 'the rules carry the same release label as the ServiceMonitor');
  assert.deepEqual(sets.get('metrics.reader.subjects'), [{ kind: 'ServiceAccount', namespace: 'monitoring', name: `${String(release)}-prometheus` }], 'kube-prometheus-stack\'s Prometheus runs as <release>-prometheus');
});
