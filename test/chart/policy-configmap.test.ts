// The operator's policy file as the chart renders it (templates/policy-configmap.yaml), read by the operator's own
// parser: "any kube-apiserver repository" is an explicit opt-in, off by default, and the same value the chart's
// admission policy reads (admissionPolicy.anyKubeApiserverRepository), so the two refuse the same node images.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { tool, runOk } from '../../e2e/support/tools.ts';
import { OLD_VERSION } from '../../e2e/cluster/binaries.ts';
import { parsePolicyText } from '../../src/controller/policy-file.ts';
import { nodeImageVerdict } from '../../src/plan/policy.ts';

const CHART = `${import.meta.dirname}/../../charts/apiserver-upgrade-operator`;

async function policyFile(set: string[] = []): Promise<string> {
  const out = await runOk(tool('helm'), ['template', 'apiserver-upgrade-operator', CHART, '--namespace', 'upgrade-system', '--kube-version', OLD_VERSION,
    '--show-only', 'templates/policy-configmap.yaml', ...set.flatMap((s) => ['--set', s])]);
  return (parse(out) as { data: Record<string, string> }).data['policy.yaml']!;
}

test('by default a node\'s own repository must be listed: anyKubeApiserverRepository false, only registry.k8s.io/kube-apiserver', async () => {
  const p = parsePolicyText(await policyFile(), 'policy.yaml');
  assert.equal(p.anyKubeApiserverRepository, false);
  assert.equal(nodeImageVerdict(p, 'registry.k8s.io/kube-apiserver:v1.35.4', 'v1.36.3').allowed, true);
  for (const image of ['evil.example/x/kube-apiserver:v1.35.4', 'registry.k8s.io.evil.example/kube-apiserver:v1.35.4', 'registry.example.com/k8s/kube-apiserver:v1.35.4']) {
    assert.equal(nodeImageVerdict(p, image, 'v1.36.3').allowed, false, image);
  }
  const values = parse(await runOk(tool('helm'), ['show', 'values', CHART])) as { admissionPolicy: { anyKubeApiserverRepository: boolean } };
  assert.equal(values.admissionPolicy.anyKubeApiserverRepository, false);
});

test('a mirror listed in policy.apiserverImages, or the explicit opt-in, reach the operator\'s policy', async () => {
  const listed = parsePolicyText(await policyFile(['policy.apiserverImages[0].repository=registry.example.com/k8s/kube-apiserver']), 'policy.yaml');
  assert.equal(nodeImageVerdict(listed, 'registry.example.com/k8s/kube-apiserver:v1.35.4', 'v1.36.3').allowed, true);
  assert.equal(nodeImageVerdict(listed, 'registry.k8s.io/kube-apiserver:v1.35.4', 'v1.36.3').allowed, false, 'the list replaces the default');
  const any = parsePolicyText(await policyFile(['admissionPolicy.anyKubeApiserverRepository=true']), 'policy.yaml');
  assert.equal(any.anyKubeApiserverRepository, true);
  assert.equal(nodeImageVerdict(any, 'evil.example/x/kube-apiserver:v1.35.4', 'v1.36.3').allowed, true);
  assert.equal(nodeImageVerdict(any, 'evil.example/x/shell:v1.35.4', 'v1.36.3').allowed, false);
});
