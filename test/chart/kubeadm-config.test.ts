// The operator's write of kube-system/kubeadm-config as the chart grants it (kubeadmConfig.write, docs/security.md):
// rendered by helm, off by default — no `update` on that ConfigMap, --kubeadm-config-write=false, no second admission
// policy — and on, the update by name, the flag, and templates/kubeadm-config-policy.yaml, evaluated as kube-apiserver
// evaluates it (test/support/cel-policy.ts): it admits every edit the operator makes (src/plan/kubeadm-config.ts, on
// generated texts and intents) and denies the rewrites a stolen token would make — another key, the metadata, any
// line of ClusterConfiguration but the operator's own, an owned line of another shape.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseAllDocuments } from 'yaml';
import { tool, runOk } from '../../e2e/support/tools.ts';
import { OLD_VERSION } from '../../e2e/cluster/binaries.ts';
import { compilePolicy, type PolicyObject, type PolicyVerdict } from '../support/cel-policy.ts';
import { editClusterConfiguration, type KubeadmIntent } from '../../src/plan/kubeadm-config.ts';
import { PROXY_GATE } from '../../src/api/constants.ts';

const CHART = `${import.meta.dirname}/../../charts/apiserver-upgrade-operator`;
const RELEASE = 'apiserver-upgrade-operator';
const NS = 'upgrade-system';
const SA = `system:serviceaccount:${NS}:${RELEASE}`;
const CONFIGMAPS = { group: '', resource: 'configmaps' };

interface K8sObject { kind: string; metadata: { name: string; namespace?: string }; [k: string]: unknown }
interface Rule { apiGroups?: string[]; resources?: string[]; resourceNames?: string[]; verbs: string[] }

async function render(set: string[] = []): Promise<K8sObject[]> {
  const out = await runOk(tool('helm'), ['template', RELEASE, CHART, '--namespace', NS, '--kube-version', OLD_VERSION, ...set.flatMap((s) => ['--set', s])]);
  return parseAllDocuments(out).map((d) => d.toJSON() as K8sObject | null).filter((o): o is K8sObject => o !== null);
}

/** Every rule of the chart's Roles and ClusterRoles that names ConfigMaps. */
function configMapRules(objs: K8sObject[]): { role: string; namespace?: string; rule: Rule }[] {
  return objs.filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole').flatMap((o) => ((o.rules as Rule[] | undefined) ?? [])
    .filter((r) => (r.resources ?? []).includes('configmaps') || (r.resources ?? []).includes('*'))
    .map((rule) => ({ role: o.metadata.name, ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}), rule })));
}

const args = (objs: K8sObject[]): string[] => (objs.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { spec: { containers: { args: string[] }[] } } } }).spec.template.spec.containers[0]!.args;
const kubeadmPolicies = (objs: K8sObject[]): K8sObject[] => objs.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy') && o.metadata.name.endsWith('-kubeadm-config'));

test('by default the operator may read kubeadm-config, not update it: RBAC get only (by name), --kubeadm-config-write=false, no policy for a write it cannot make', async () => {
  const objs = await render();
  assert.deepEqual(configMapRules(objs), [{ role: `${RELEASE}-fleet`, namespace: 'kube-system', rule: { apiGroups: [''], resources: ['configmaps'], resourceNames: ['kubeadm-config'], verbs: ['get'] } }]);
  assert.ok(args(objs).includes('--kubeadm-config-write=false'), args(objs).join(' '));
  assert.deepEqual(kubeadmPolicies(objs), []);
});

test('kubeadmConfig.write=true: update on kubeadm-config by name, the flag on, and the admission policy with its binding (not without admissionPolicy.enabled)', async () => {
  const objs = await render(['kubeadmConfig.write=true']);
  assert.deepEqual(configMapRules(objs).map((r) => [r.namespace, r.rule.resourceNames, r.rule.verbs]), [['kube-system', ['kubeadm-config'], ['get', 'update']]]);
  assert.ok(args(objs).includes('--kubeadm-config-write=true'));
  assert.deepEqual(kubeadmPolicies(objs).map((o) => o.kind).sort(), ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
  const binding = kubeadmPolicies(objs).find((o) => o.kind === 'ValidatingAdmissionPolicyBinding') as unknown as { spec: { policyName: string; validationActions: string[] } };
  assert.deepEqual(binding.spec, { policyName: `${RELEASE}-kubeadm-config`, validationActions: ['Deny'] });
  const off = await render(['kubeadmConfig.write=true', 'admissionPolicy.enabled=false']);
  assert.deepEqual(kubeadmPolicies(off), [], 'the admission policies are off together');
  assert.deepEqual(configMapRules(off).map((r) => r.rule.verbs), [['get', 'update']]);
});

// ---------------------------------------------------------------------------------------------------------
// The admission policy, evaluated

let evaluate: (o: { old?: unknown; new?: unknown; operation?: 'CREATE' | 'UPDATE'; username?: string }) => PolicyVerdict;

before(async () => {
  const vap = (await render(['kubeadmConfig.write=true'])).find((o) => o.kind === 'ValidatingAdmissionPolicy' && o.metadata.name.endsWith('-kubeadm-config')) as unknown as PolicyObject;
  const run = compilePolicy(vap);
  evaluate = (o) => run({ operation: o.operation ?? 'UPDATE', username: o.username ?? SA, resource: CONFIGMAPS, object: o.new ?? null, ...(o.old === undefined ? {} : { oldObject: o.old }) });
});

/** kube-system/kubeadm-config as the apiserver holds it, with another key, labels and annotations the write must keep. */
function configMap(text: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: { name: 'kubeadm-config', namespace: 'kube-system', uid: 'u-1', resourceVersion: '700', labels: { 'kubeadm.kubernetes.io/owner': 'kubeadm' }, annotations: { note: 'kept' } },
    data: { ClusterConfiguration: text, Other: 'kept' },
    ...over,
  };
}

/** The update of `text` to `next`, everything else of the ConfigMap as read (what the operator's PUT sends). */
const update = (text: string, next: string): PolicyVerdict => evaluate({ old: configMap(text), new: configMap(next) });
const explain = (v: PolicyVerdict): string => v.denials.join(' | ');

const KUBEADM_V1BETA4 = ['apiServer: {}', 'apiVersion: kubeadm.k8s.io/v1beta4', 'caCertificateValidityPeriod: 87600h0m0s', 'certificateValidityPeriod: 8760h0m0s', 'certificatesDir: /etc/kubernetes/pki',
  'clusterName: kubernetes', 'controllerManager: {}', 'dns: {}', 'encryptionAlgorithm: RSA-2048', 'etcd:', '  local:', '    dataDir: /var/lib/etcd', 'imageRepository: registry.k8s.io',
  'kind: ClusterConfiguration', 'kubernetesVersion: v1.35.4', 'networking:', '  dnsDomain: cluster.local', '  serviceSubnet: 10.96.0.0/12', 'proxy: {}', 'scheduler: {}', ''].join('\n');
const E2E_V1BETA4 = ['# kubeadm init', 'apiVersion: kubeadm.k8s.io/v1beta4', 'kind: ClusterConfiguration', 'kubernetesVersion: v1.35.4', 'controlPlaneEndpoint: cp.example:6443', 'apiServer:', '  extraArgs:',
  '  - name: authorization-mode', '    value: Node,RBAC', '  - name: feature-gates', '    value: SomeOtherGate=false', 'certificatesDir: /etc/kubernetes/pki', ''].join('\n');
const V1BETA3 = ['apiVersion: kubeadm.k8s.io/v1beta3', 'kind: ClusterConfiguration', 'kubernetesVersion: v1.35.4', 'imageRepository: registry.k8s.io', 'apiServer:', '  certSANs:', '  - cp.example',
  '  extraArgs:', '    authorization-mode: Node,RBAC', '    anonymous-auth: "false"', 'controllerManager:', '  extraArgs:', '    bind-address: 127.0.0.1', 'etcd:', '  local:', '    dataDir: /var/lib/etcd', ''].join('\n');
const BASES = { 'kubeadm v1beta4 default': KUBEADM_V1BETA4, 'e2e v1beta4': E2E_V1BETA4, v1beta3: V1BETA3 };

const INTENT: KubeadmIntent = { phase: 'Succeeded', kubernetesVersion: 'v1.36.3', featureGates: { [PROXY_GATE]: true }, extraArgs: { 'peer-ca-file': '/etc/kubernetes/pki/ca.crt' }, notes: [] };

function edited(text: string, intent: KubeadmIntent = INTENT): string {
  const e = editClusterConfiguration(text, intent);
  assert.equal(e.kind, 'updated', JSON.stringify(e));
  return e.kind === 'updated' ? e.text : '';
}

test('the operator\'s own edits are admitted: kubeadm\'s default, the e2e\'s and a v1beta3 text; Succeeded and RolledBack; gate and flag, or the version only', () => {
  for (const [name, text] of Object.entries(BASES)) {
    for (const intent of [INTENT, { ...INTENT, phase: 'RolledBack' as const, kubernetesVersion: 'v1.35.4', featureGates: {}, extraArgs: {} }, { ...INTENT, extraArgs: {} }, { ...INTENT, kubernetesVersion: 'v1.36.0-rc.1' }]) {
      const e = editClusterConfiguration(text, intent);
      if (e.kind !== 'updated') continue;
      const v = update(text, e.text);
      assert.ok(v.allowed, `${name} ${JSON.stringify(intent)}: ${explain(v)}\n${e.text}`);
    }
  }
});

const gateName = fc.stringMatching(/^[A-Z][A-Za-z0-9]{0,30}$/);
const intents = fc.record({
  phase: fc.constantFrom('Succeeded' as const, 'RolledBack' as const),
  kubernetesVersion: fc.tuple(fc.integer({ min: 1, max: 1 }), fc.integer({ min: 30, max: 40 }), fc.integer({ min: 0, max: 20 }), fc.option(fc.constantFrom('-rc.1', '-beta.0'), { nil: undefined }))
    .map(([a, b, c, pre]) => `v${a}.${b}.${c}${pre ?? ''}`),
  featureGates: fc.option(fc.boolean().map((on) => ({ [PROXY_GATE]: on })), { nil: undefined }).map((g) => g ?? {}),
  extraArgs: fc.option(fc.stringMatching(/^(\/[a-z0-9._-]{1,12}){1,4}$/).map((p) => ({ 'peer-ca-file': p })), { nil: undefined }).map((a) => a ?? {}),
  notes: fc.constant([] as string[]),
});
/** A text as kubeadm, or an admin, leaves it: either API version, existing gates, other flags, other sections, comments. */
const texts = fc.record({
  v1beta4: fc.boolean(),
  empty: fc.boolean(),
  gates: fc.array(fc.tuple(gateName, fc.boolean()), { maxLength: 3 }),
  comment: fc.boolean(),
  version: fc.constantFrom('v1.34.2', 'v1.35.4'),
}).map((t) => {
  const gates = t.gates.map(([n, on]) => `${n}=${on}`).join(',');
  const lines = [...(t.comment ? ['# written by kubeadm init'] : []), `apiVersion: kubeadm.k8s.io/${t.v1beta4 ? 'v1beta4' : 'v1beta3'}`, 'kind: ClusterConfiguration', `kubernetesVersion: ${t.version}`];
  if (t.empty) lines.push('apiServer: {}');
  else if (t.v1beta4) lines.push('apiServer:', '  extraArgs:', '  - name: authorization-mode', '    value: Node,RBAC', ...(gates ? ['  - name: feature-gates', `    value: ${gates}`] : []));
  else lines.push('apiServer:', '  extraArgs:', '    authorization-mode: Node,RBAC', ...(gates ? [`    feature-gates: ${gates}`] : []));
  lines.push('controllerManager:', '  extraArgs:', ...(t.v1beta4 ? ['  - name: bind-address', '    value: 127.0.0.1'] : ['    bind-address: 127.0.0.1']), 'etcd:', '  local:', '    dataDir: /var/lib/etcd', 'imageRepository: registry.k8s.io', '');
  return lines.join('\n');
});

test('generated: every edit the operator makes, on any such text, is admitted', () => {
  let edits = 0;
  fc.assert(fc.property(texts, intents, (text, intent) => {
    const e = editClusterConfiguration(text, intent);
    if (e.kind !== 'updated') return;
    edits++;
    const v = update(text, e.text);
    assert.ok(v.allowed, `${explain(v)}\n--- old\n${text}--- new\n${e.text}`);
  }), { numRuns: 300 });
  assert.ok(edits > 200, `most generated cases are edits (${edits})`);
});

/** A line-level rewrite of `text`: each is something a token that may update kubeadm-config could do, and the policy must deny. */
const ATTACKS: { what: string; base: string; next: (t: string) => string }[] = [
  { what: 'authorization-mode AlwaysAllow (v1beta4 value line)', base: E2E_V1BETA4, next: (t) => t.replace('    value: Node,RBAC', '    value: AlwaysAllow') },
  { what: 'authorization-mode AlwaysAllow (v1beta3)', base: V1BETA3, next: (t) => t.replace('authorization-mode: Node,RBAC', 'authorization-mode: AlwaysAllow') },
  { what: 'anonymous-auth removed', base: V1BETA3, next: (t) => t.replace('    anonymous-auth: "false"\n', '') },
  { what: 'a new flag (v1beta4)', base: E2E_V1BETA4, next: (t) => t.replace('certificatesDir:', '  - name: token-auth-file\n    value: /etc/kubernetes/tokens.csv\ncertificatesDir:') },
  { what: 'a new flag along with the operator\'s own edit', base: E2E_V1BETA4, next: (t) => edited(t).replace('certificatesDir:', '  - name: anonymous-auth\n    value: "true"\ncertificatesDir:') },
  { what: 'imageRepository', base: KUBEADM_V1BETA4, next: (t) => t.replace('imageRepository: registry.k8s.io', 'imageRepository: evil.example') },
  { what: 'imageRepository with the operator\'s own edit', base: KUBEADM_V1BETA4, next: (t) => edited(t).replace('imageRepository: registry.k8s.io', 'imageRepository: evil.example') },
  { what: 'feature-gates value of another shape (a flag smuggled after a comma)', base: V1BETA3, next: (t) => t.replace('    authorization-mode: Node,RBAC', '    authorization-mode: Node,RBAC\n    feature-gates: A=true --authorization-mode=AlwaysAllow') },
  { what: 'an owned line opening a quoted scalar that would swallow the next line', base: V1BETA3, next: (t) => t.replace('    authorization-mode: Node,RBAC\n    anonymous-auth: "false"', '    feature-gates: "A=true,\n    authorization-mode: Node,RBAC\n    anonymous-auth: "false"') },
  { what: 'a kubernetesVersion that is not a version', base: KUBEADM_V1BETA4, next: (t) => t.replace('kubernetesVersion: v1.35.4', 'kubernetesVersion: latest') },
  { what: 'two lines swapped (a block moved to another section)', base: V1BETA3, next: (t) => t.replace('apiServer:\n  certSANs:', 'controllerManager:\n  certSANs:').replace('controllerManager:\n  extraArgs:\n    bind-address', 'apiServer:\n  extraArgs:\n    bind-address') },
  { what: 'the apiServer block header removed (its flags move to the section above)', base: V1BETA3, next: (t) => t.replace('apiServer:\n', '') },
  { what: 'kubeadm\'s apiServer: {} moved under another section', base: KUBEADM_V1BETA4, next: (t) => t.replace('apiServer: {}\n', '').replace('controllerManager: {}', 'controllerManager:\napiServer:') },
  { what: 'a second extraArgs key added besides the operator\'s', base: KUBEADM_V1BETA4, next: (t) => edited(t).replace('etcd:\n  local:', 'etcd:\n  extraArgs:\n  local:') },
  { what: 'an extraArgs key removed', base: V1BETA3, next: (t) => t.replace('controllerManager:\n  extraArgs:\n', 'controllerManager:\n') },
  { what: 'the value line of a flag the operator does not own, with the feature-gates name moved onto it', base: E2E_V1BETA4, next: (t) => t.replace('  - name: authorization-mode\n    value: Node,RBAC', '  - name: feature-gates\n    value: A=true') },
  { what: 'everything replaced', base: E2E_V1BETA4, next: () => 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.3\n' },
  { what: 'ClusterConfiguration emptied', base: E2E_V1BETA4, next: () => '' },
];

test('each known rewrite of ClusterConfiguration is denied, by the line rule', () => {
  for (const a of ATTACKS) {
    const next = a.next(a.base);
    assert.notEqual(next, a.base, a.what);
    const v = update(a.base, next);
    assert.equal(v.allowed, false, `${a.what} was admitted:\n${next}`);
    assert.ok(v.denials.some((d) => /changes only its own lines|at most one extraArgs/.test(d)), `${a.what}: ${explain(v)}`);
  }
});

/** Lines that are not of an owned shape: each one, anywhere, is a change the policy must deny. */
const foreignLine = fc.oneof(
  fc.constantFrom('imageRepository: evil.example', '    authorization-mode: AlwaysAllow', '  - name: authorization-mode', '    value: AlwaysAllow', '    anonymous-auth: "true"', 'apiServer:', '    feature-gates: "A=true',
    '    feature-gates: A=true #', '  extraArgs: {foo: bar}', '    peer-ca-file: ../etc', 'kubernetesVersion: v1.36.3 ', ''),
  fc.stringMatching(/^ {0,6}[a-z][a-zA-Z-]{0,20}: [ -~]{0,30}$/).filter((l) => !/^(kubernetesVersion| {4}feature-gates| {4}peer-ca-file| {2}extraArgs)/.test(l)),
);

test('generated: a foreign line inserted anywhere, a line the operator does not own deleted or changed — each denied, with or without the operator\'s own edit', () => {
  fc.assert(fc.property(texts, fc.boolean(), fc.nat(), fc.constantFrom('insert', 'delete', 'change'), foreignLine, (text, withEdit, at, how, line) => {
    const base = withEdit ? (() => { const e = editClusterConfiguration(text, INTENT); return e.kind === 'updated' ? e.text : text; })() : text;
    const lines = base.split('\n');
    // The lines the operator does not own: kept lines (a value line of a v1beta4 pair counts with its name line).
    const foreign = lines.map((l, i) => ({ l, i })).filter(({ l, i }) => l !== '' && !/^(kubernetesVersion: | {4}feature-gates: | {4}peer-ca-file: | {2}extraArgs:$|apiServer: \{\}$)/.test(l)
      && !/^ {2,4}- name: (feature-gates|peer-ca-file)$/.test(l) && !(/^ {4,6}value: /.test(l) && /- name: (feature-gates|peer-ca-file)$/.test(lines[i - 1] ?? '')));
    const pick = foreign[at % foreign.length]!;
    const next = [...lines];
    if (how === 'insert') next.splice(at % (lines.length + 1), 0, line);
    else if (how === 'delete') next.splice(pick.i, 1);
    else if (line === pick.l) return;
    else next[pick.i] = line;
    const v = update(text, next.join('\n'));
    assert.equal(v.allowed, false, `${how} ${JSON.stringify(line)} at ${pick.i} was admitted:\n${next.join('\n')}`);
  }), { numRuns: 1500 });
});

test('everything but ClusterConfiguration is the operator\'s to leave alone: another key, binaryData, immutable, labels, annotations, finalizers, ownerReferences', () => {
  const text = E2E_V1BETA4;
  const next = edited(text);
  const old = configMap(text);
  const ok = configMap(next);
  assert.ok(evaluate({ old, new: ok }).allowed, explain(evaluate({ old, new: ok })));
  const cases: [string, Record<string, unknown>][] = [
    ['another key changed', configMap(next, { data: { ClusterConfiguration: next, Other: 'changed' } })],
    ['another key added', configMap(next, { data: { ClusterConfiguration: next, Other: 'kept', ClusterStatus: 'x' } })],
    ['another key removed', configMap(next, { data: { ClusterConfiguration: next } })],
    ['ClusterConfiguration removed', configMap(next, { data: { Other: 'kept' } })],
    ['binaryData added', configMap(next, { binaryData: { x: 'eA==' } })],
    ['made immutable', configMap(next, { immutable: true })],
    ['a label changed', { ...ok, metadata: { ...(ok.metadata as object), labels: { 'kubeadm.kubernetes.io/owner': 'someone' } } }],
    ['an annotation added', { ...ok, metadata: { ...(ok.metadata as object), annotations: { note: 'kept', x: 'y' } } }],
    ['a finalizer added', { ...ok, metadata: { ...(ok.metadata as object), finalizers: ['example.com/hold'] } }],
    ['an owner added', { ...ok, metadata: { ...(ok.metadata as object), ownerReferences: [{ apiVersion: 'v1', kind: 'Namespace', name: 'x', uid: 'u' }] } }],
  ];
  for (const [what, obj] of cases) {
    const v = evaluate({ old, new: obj });
    assert.equal(v.allowed, false, what);
  }
});

test('any other ConfigMap, a create, and an update by anyone else', () => {
  const text = E2E_V1BETA4;
  const other = (name: string, namespace: string): Record<string, unknown> => ({ ...configMap(text), metadata: { name, namespace } });
  const denied = (v: PolicyVerdict, what: string): void => {
    assert.equal(v.allowed, false, what);
    assert.match(v.denials[0] ?? '', /writes only ConfigMap kube-system\/kubeadm-config, and only by update/, what);
  };
  denied(evaluate({ old: other('coredns', 'kube-system'), new: other('coredns', 'kube-system') }), 'coredns');
  denied(evaluate({ old: other('kubeadm-config', 'default'), new: other('kubeadm-config', 'default') }), 'kubeadm-config in another namespace');
  denied(evaluate({ operation: 'CREATE', new: other('anything', 'kube-system') }), 'a create');
  // kubeadm itself, or an admin: not this policy's (RBAC decides for them).
  const admin = evaluate({ old: configMap(text), new: configMap(text.replace('Node,RBAC', 'AlwaysAllow')), username: 'kubernetes-admin' });
  assert.deepEqual([admin.matched, admin.allowed], [false, true]);
});
