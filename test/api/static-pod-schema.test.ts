// The generated CRD (crds/ and the chart's copy) refuses what must not reach the node agent (issue 21): the
// static Pod driver's paths and agent image carry a pattern and a length bound, checked by the API server itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { IMAGE_REF_PATTERN, NODE_PATH_PATTERN } from '../../src/api/patterns.ts';

const root = new URL('../../', import.meta.url);
const CRD = 'crds/apiserverupgrades.upgrade.apiserver.dev.yaml';
const CHART_CRD = 'charts/apiserver-upgrade-operator/crds/apiserverupgrades.upgrade.apiserver.dev.yaml';

interface Prop { type: string; pattern?: string; maxLength?: number; default?: string }
function staticPodSchema(file: string): { properties: Record<string, Prop>; required?: string[] } {
  const crd = parse(readFileSync(new URL(file, root), 'utf8')) as { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: { driver: { properties: { staticPod: { properties: Record<string, Prop>; required?: string[] } } } } } } } } }[] } };
  return crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.driver.properties.staticPod;
}

test('the generated CRD: paths and the agent image have a pattern and a length bound; agentImage is optional', () => {
  for (const file of [CRD, CHART_CRD]) {
    const s = staticPodSchema(file);
    for (const f of ['manifestPath', 'backupDir', 'peerCAFile']) {
      assert.equal(s.properties[f]!.pattern, NODE_PATH_PATTERN, `${file} ${f}`);
      assert.equal(s.properties[f]!.maxLength, 1024);
      assert.match(s.properties[f]!.default!, new RegExp(NODE_PATH_PATTERN, 'u'), `${f}'s default fits its own pattern`);
    }
    assert.equal(s.properties.agentImage!.pattern, IMAGE_REF_PATTERN);
    assert.equal(s.properties.agentImage!.maxLength, 512);
    assert.ok(!(s.required ?? []).includes('agentImage'), 'the operator\'s own image when unset');
  }
});

test('the CRD\'s patterns refuse the injection and its relatives, and take what kubeadm uses', () => {
  const path = new RegExp(staticPodSchema(CRD).properties.peerCAFile!.pattern!, 'u');
  for (const bad of ['/etc/kubernetes/pki/ca.crt\n    - --authorization-mode=AlwaysAllow', '/etc/kubernetes/pki/ca.crt\n', 'etc/kubernetes/pki/ca.crt', '/etc/kubernetes/../ca.crt',
    '/etc/./ca.crt', '/', '//ca.crt', '/ca.crt/', '/ca crt', '/ca.crt;id', '/$(id)', '/ca.crt#', '/é', '/ca"crt', '/ca:crt']) {
    assert.doesNotMatch(bad, path, JSON.stringify(bad));
  }
  for (const good of ['/etc/kubernetes/pki/ca.crt', '/etc/kubernetes/manifests/kube-apiserver.yaml', '/var/lib/x_y-z/.hidden', '/a/..b', '/a/b..']) {
    assert.match(good, path);
  }
  const image = new RegExp(staticPodSchema(CRD).properties.agentImage!.pattern!, 'u');
  for (const bad of ['busybox; sh', 'busybox\n', 'Busybox', 'x/-y', 'a//b', 'a:b:c', 'a@sha256:12']) assert.doesNotMatch(bad, image, JSON.stringify(bad));
  for (const good of ['ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:0.1.0', 'busybox', 'localhost:5000/a/b:1', `r.example/a@sha256:${'0'.repeat(64)}`]) assert.match(good, image);
});
