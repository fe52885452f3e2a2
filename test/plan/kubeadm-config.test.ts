// kubeadm kept consistent (src/plan/kubeadm-config.ts): what kubeadm-config must say after a run, the edit of
// both kubeadm API versions with comments and other content kept, and every refusal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parse } from 'yaml';
import type { ApiServerUpgradeStatus, DriverCall } from '../../src/api/types.generated.ts';
import { resolveSpec } from '../../src/api/defaults.ts';
import { editClusterConfiguration, kubeadmConfigDue, kubeadmIntent, markKubeadmConfigPending, mergeFeatureGates, recordKubeadmConfig, type KubeadmIntent } from '../../src/plan/kubeadm-config.ts';
import { NEW, OLD, Sim, peer, spec } from './fleet.ts';

const STATIC_POD = spec({ driver: { staticPod: { agentImage: 'registry.example/agent:1', peerCAFile: '/etc/kubernetes/pki/ca.crt' } } });
const WEBHOOK = spec();

function call(server: string, action: DriverCall['action'], gate: boolean | undefined, result: DriverCall['result'], time: string): DriverCall {
  return { key: `${server}-${action}-${time}`, server, action, batch: 0, target: NEW, ...(gate === undefined ? {} : { gate }), time, attempts: 1, result };
}

const SUCCEEDED: ApiServerUpgradeStatus = {
  phase: 'Succeeded', fromVersion: OLD, targetVersion: NEW,
  driverCalls: [
    call('cp-1', 'EnableProxy', true, 'Done', '2026-01-01T00:00:01Z'),
    call('cp-2', 'EnableProxy', true, 'Done', '2026-01-01T00:00:02Z'),
    call('cp-1', 'Upgrade', true, 'Done', '2026-01-01T00:00:03Z'),
    call('cp-2', 'Upgrade', true, 'Done', '2026-01-01T00:00:04Z'),
  ],
};

const V1BETA3 = `# kept: a comment at the top
apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
kubernetesVersion: v1.35.4 # the version kubeadm init installed
controlPlaneEndpoint: cp.example:6443
apiServer:
  # audit settings, kept
  extraArgs:
    audit-log-path: /var/log/audit.log
    feature-gates: SomeGate=true,OtherGate=false
    authorization-mode: Node,RBAC
  certSANs:
  - cp.example
networking:
  podSubnet: 10.244.0.0/16
`;

const V1BETA4 = `apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.35.4
apiServer:
  extraArgs:
  # the audit log, kept
  - name: audit-log-path
    value: /var/log/audit.log
  - name: feature-gates
    value: SomeGate=true
  - name: authorization-mode
    value: Node,RBAC
etcd:
  local:
    dataDir: /var/lib/etcd
`;

test('the intent after Succeeded with the static Pod driver: target version, the gate, --peer-ca-file (never the per-server peer flags)', () => {
  const i = kubeadmIntent(resolveSpec(STATIC_POD), SUCCEEDED)!;
  assert.equal(i.phase, 'Succeeded');
  assert.equal(i.kubernetesVersion, NEW);
  assert.deepEqual(i.featureGates, { UnknownVersionInteroperabilityProxy: true });
  assert.deepEqual(i.extraArgs, { 'peer-ca-file': '/etc/kubernetes/pki/ca.crt' });
  assert.match(i.notes.join(), /peer-advertise-ip and --peer-advertise-port are per server/);
});

test('the intent with the webhook driver: version and gate, no flag the operator does not know', () => {
  const i = kubeadmIntent(resolveSpec(WEBHOOK), SUCCEEDED)!;
  assert.deepEqual(i.extraArgs, {});
  assert.deepEqual(i.featureGates, { UnknownVersionInteroperabilityProxy: true });
});

test('the intent after RolledBack: the from-version, and the gate the rollback left on', () => {
  const status: ApiServerUpgradeStatus = { ...SUCCEEDED, phase: 'RolledBack', driverCalls: [...SUCCEEDED.driverCalls!, call('cp-1', 'Rollback', true, 'Done', '2026-01-01T00:00:05Z')] };
  const i = kubeadmIntent(resolveSpec(STATIC_POD), status)!;
  assert.equal(i.kubernetesVersion, OLD);
  assert.deepEqual(i.featureGates, { UnknownVersionInteroperabilityProxy: true });
});

test('the intent leaves the gates alone when the gate was set back off somewhere, or never set (Unmanaged)', () => {
  const off: ApiServerUpgradeStatus = { ...SUCCEEDED, driverCalls: [...SUCCEEDED.driverCalls!, call('cp-2', 'RevertProxy', false, 'Done', '2026-01-01T00:00:09Z')] };
  const i = kubeadmIntent(resolveSpec(STATIC_POD), off)!;
  assert.deepEqual(i.featureGates, {});
  assert.deepEqual(i.extraArgs, {});
  assert.match(i.notes.join(), /set back off on cp-2/);
  const unmanaged: ApiServerUpgradeStatus = { ...SUCCEEDED, driverCalls: [call('cp-1', 'Upgrade', undefined, 'Done', '2026-01-01T00:00:03Z')] };
  assert.deepEqual(kubeadmIntent(resolveSpec(STATIC_POD), unmanaged)!.featureGates, {});
  // A call that did not end Done does not count.
  const failed: ApiServerUpgradeStatus = { ...SUCCEEDED, driverCalls: [call('cp-1', 'Upgrade', true, 'TimedOut', '2026-01-01T00:00:03Z')] };
  assert.deepEqual(kubeadmIntent(resolveSpec(STATIC_POD), failed)!.featureGates, {});
});

test('due once per ending: the planner marks Pending when a step ends Succeeded or RolledBack; recorded outcomes, Failed and old endings never', () => {
  for (const phase of ['Succeeded', 'RolledBack'] as const) {
    const status: ApiServerUpgradeStatus = { phase };
    markKubeadmConfigPending(status);
    assert.deepEqual(status.kubeadmConfig, { phase, result: 'Pending' });
    assert.equal(kubeadmConfigDue(status), true);
  }
  const failed: ApiServerUpgradeStatus = { phase: 'Failed' };
  markKubeadmConfigPending(failed);
  assert.equal(failed.kubeadmConfig, undefined);
  assert.equal(kubeadmConfigDue(failed), false);
  assert.equal(kubeadmConfigDue({ phase: 'Upgrading', kubeadmConfig: { phase: 'Succeeded', result: 'Pending' } }), false);
  assert.equal(kubeadmConfigDue(undefined), false);
  // An upgrade that ended before the field existed has no record: never touched.
  assert.equal(kubeadmConfigDue({ phase: 'Succeeded' }), false);
  assert.equal(kubeadmConfigDue({ phase: 'Succeeded', kubeadmConfig: { phase: 'Succeeded', result: 'Updated' } }), false);
  assert.equal(kubeadmConfigDue({ phase: 'Succeeded', kubeadmConfig: { phase: 'RolledBack', result: 'Pending' } }), false);
  assert.equal(kubeadmIntent(resolveSpec(STATIC_POD), { phase: 'Failed' }), undefined);
});

test('the planner: the step that ends the upgrade marks kubeadm-config Pending, later steps leave the record alone', () => {
  const s = new Sim([peer('cp-1', NEW, 'on'), peer('cp-2', NEW, 'on')]);
  s.step();
  assert.equal(s.status?.phase, 'Succeeded', JSON.stringify(s.status?.conditions));
  assert.deepEqual(s.status?.kubeadmConfig, { phase: 'Succeeded', result: 'Pending' });
  s.status = { ...s.status!, kubeadmConfig: { phase: 'Succeeded', result: 'Updated' } };
  s.step();
  assert.equal(s.status?.kubeadmConfig?.result, 'Updated');
});

test('mergeFeatureGates: keeps the other gates in place, replaces the gate, appends it when new', () => {
  assert.equal(mergeFeatureGates('', { G: true }), 'G=true');
  assert.equal(mergeFeatureGates('A=true,B=false', { G: true }), 'A=true,B=false,G=true');
  assert.equal(mergeFeatureGates('A=true, G=false ,B=false', { G: true }), 'A=true,G=true,B=false');
  assert.equal(mergeFeatureGates('A=true,,', { G: true }), 'A=true,,,G=true', 'the other items kept as written: the manifest kubeadm renders from it has them so');
  assert.equal(mergeFeatureGates('B=true', { G: true, A: false }), 'B=true,G=true,A=false');
});

const INTENT: KubeadmIntent = { phase: 'Succeeded', kubernetesVersion: NEW, featureGates: { UnknownVersionInteroperabilityProxy: true }, extraArgs: { 'peer-ca-file': '/etc/kubernetes/pki/ca.crt' }, notes: [] };

test('v1beta3: the version, the gate merged into the map, the flag added; every other line and comment kept', () => {
  const e = editClusterConfiguration(V1BETA3, INTENT);
  assert.equal(e.kind, 'updated');
  if (e.kind !== 'updated') return;
  const out = parse(e.text) as { kubernetesVersion: string; apiServer: { extraArgs: Record<string, string>; certSANs: string[] }; networking: unknown };
  assert.equal(out.kubernetesVersion, NEW);
  assert.equal(out.apiServer.extraArgs['feature-gates'], 'SomeGate=true,OtherGate=false,UnknownVersionInteroperabilityProxy=true');
  assert.equal(out.apiServer.extraArgs['peer-ca-file'], '/etc/kubernetes/pki/ca.crt');
  assert.equal(out.apiServer.extraArgs['audit-log-path'], '/var/log/audit.log');
  assert.deepEqual(out.apiServer.certSANs, ['cp.example']);
  assert.deepEqual(out.networking, { podSubnet: '10.244.0.0/16' });
  for (const comment of ['# kept: a comment at the top', '# the version kubeadm init installed', '# audit settings, kept']) assert.ok(e.text.includes(comment), `${comment} lost:\n${e.text}`);
  // Only the edited lines differ: the others are byte for byte the same, in order.
  const before = V1BETA3.split('\n');
  const after = e.text.split('\n');
  assert.deepEqual(after.filter((l) => !before.includes(l)), ['kubernetesVersion: v1.36.3 # the version kubeadm init installed', '    feature-gates: SomeGate=true,OtherGate=false,UnknownVersionInteroperabilityProxy=true', '    peer-ca-file: /etc/kubernetes/pki/ca.crt']);
  assert.deepEqual(e.changes, [
    'kubernetesVersion v1.35.4 -> v1.36.3',
    'apiServer.extraArgs feature-gates SomeGate=true,OtherGate=false -> SomeGate=true,OtherGate=false,UnknownVersionInteroperabilityProxy=true',
    'apiServer.extraArgs peer-ca-file=/etc/kubernetes/pki/ca.crt (added)',
  ]);
  // Applied twice: nothing more to do.
  assert.deepEqual(editClusterConfiguration(e.text, INTENT), { kind: 'unchanged' });
});

test('v1beta4: the list of {name, value} edited in place, the new flag appended, comments kept', () => {
  const e = editClusterConfiguration(V1BETA4, INTENT);
  assert.equal(e.kind, 'updated');
  if (e.kind !== 'updated') return;
  const out = parse(e.text) as { kubernetesVersion: string; apiServer: { extraArgs: { name: string; value: string }[] }; etcd: unknown };
  assert.equal(out.kubernetesVersion, NEW);
  assert.deepEqual(out.apiServer.extraArgs, [
    { name: 'audit-log-path', value: '/var/log/audit.log' },
    { name: 'feature-gates', value: 'SomeGate=true,UnknownVersionInteroperabilityProxy=true' },
    { name: 'authorization-mode', value: 'Node,RBAC' },
    { name: 'peer-ca-file', value: '/etc/kubernetes/pki/ca.crt' },
  ]);
  assert.deepEqual(out.etcd, { local: { dataDir: '/var/lib/etcd' } });
  assert.ok(e.text.includes('# the audit log, kept'));
  assert.deepEqual(editClusterConfiguration(e.text, INTENT), { kind: 'unchanged' });
});

test('no apiServer or no extraArgs yet: created in the shape of the API version', () => {
  for (const [v, shape] of [['v1beta3', {}], ['v1beta4', []]] as const) {
    const e = editClusterConfiguration(`apiVersion: kubeadm.k8s.io/${v}\nkind: ClusterConfiguration\nkubernetesVersion: v1.35.4\n`, INTENT);
    assert.equal(e.kind, 'updated', v);
    if (e.kind !== 'updated') continue;
    const args = (parse(e.text) as { apiServer: { extraArgs: unknown } }).apiServer.extraArgs;
    assert.equal(Array.isArray(args), Array.isArray(shape), v);
    const flat = Array.isArray(args) ? Object.fromEntries((args as { name: string; value: string }[]).map((a) => [a.name, a.value])) : args;
    assert.deepEqual(flat, { 'feature-gates': 'UnknownVersionInteroperabilityProxy=true', 'peer-ca-file': '/etc/kubernetes/pki/ca.crt' }, v);
  }
  // With nothing but the version to write, apiServer is not created.
  const e = editClusterConfiguration('apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.3\n', { ...INTENT, featureGates: {}, extraArgs: {} });
  assert.deepEqual(e, { kind: 'unchanged' });
});

test('kubeadm\'s own empty `apiServer: {}` (and an empty extraArgs): what is added is written in block style, one line per entry; no other line changes', () => {
  const kubeadmDefault = ['apiServer: {}', 'apiVersion: kubeadm.k8s.io/v1beta4', 'certificatesDir: /etc/kubernetes/pki', 'controllerManager: {}', 'etcd:', '  local:', '    dataDir: /var/lib/etcd',
    'imageRepository: registry.k8s.io', 'kind: ClusterConfiguration', 'kubernetesVersion: v1.35.4', 'scheduler: {}', ''].join('\n');
  const e = editClusterConfiguration(kubeadmDefault, INTENT);
  assert.equal(e.kind, 'updated');
  if (e.kind !== 'updated') return;
  assert.equal(e.text, kubeadmDefault
    .replace('apiServer: {}\n', 'apiServer:\n  extraArgs:\n  - name: feature-gates\n    value: UnknownVersionInteroperabilityProxy=true\n  - name: peer-ca-file\n    value: /etc/kubernetes/pki/ca.crt\n')
    .replace('kubernetesVersion: v1.35.4', 'kubernetesVersion: v1.36.3'));
  const v1beta3 = editClusterConfiguration('apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nkubernetesVersion: v1.35.4\napiServer:\n  extraArgs: {}\n', INTENT);
  assert.equal(v1beta3.kind === 'updated' && v1beta3.text, 'apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.3\napiServer:\n  extraArgs:\n    feature-gates: UnknownVersionInteroperabilityProxy=true\n    peer-ca-file: /etc/kubernetes/pki/ca.crt\n');
});

test('a value that must stay a string (a gate list, a version) is written as one', () => {
  const e = editClusterConfiguration('apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nkubernetesVersion: v1.35.4\napiServer:\n  extraArgs:\n    feature-gates: ""\n', { ...INTENT, extraArgs: { 'peer-ca-file': 'true' } });
  assert.equal(e.kind, 'updated');
  if (e.kind !== 'updated') return;
  assert.equal((parse(e.text) as { apiServer: { extraArgs: Record<string, unknown> } }).apiServer.extraArgs['peer-ca-file'], 'true');
});

test('every field the edit leaves alone reads back as written, whatever string it holds and however it is quoted', () => {
  const config = (name: string, style: 'double' | 'single' | 'block'): string => {
    const value = style === 'double' ? JSON.stringify(name) : style === 'single' ? `'${name.replaceAll("'", "''")}'` : `|-\n${name.split('\n').map((l) => `  ${l}`).join('\n')}`;
    return `apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nkubernetesVersion: v1.35.4\nclusterName: ${value}\napiServer:\n  extraArgs:\n    audit-log-path: ${JSON.stringify(name)}\n`;
  };
  // What the yaml package alone writes back wrong: a line of one space between two line breaks in a long string.
  const folded = '\n \nsome cluster name long enough to be folded';
  const piece = fc.constantFrom('\n', ' ', '\\', '"', "'", ':', '#', 'é', '😀', 'x', 'a long piece of text ');
  const name = fc.array(piece, { minLength: 1, maxLength: 20 }).map((a) => a.join(''));
  const cases = fc.oneof(fc.constant(folded), name);
  fc.assert(fc.property(cases, fc.constantFrom('double', 'single', 'block'), (n, style) => {
    // A single-quoted or block scalar cannot hold every string as written here (a line break, edge spaces): skipped.
    fc.pre(style === 'double' || (style === 'single' ? !n.includes('\n') : !/^\s|\s$|\n |\n\n/.test(n)));
    const text = config(n, style);
    const before = parse(text) as Record<string, unknown>;
    fc.pre(before.clusterName === n);
    const e = editClusterConfiguration(text, INTENT);
    assert.equal(e.kind, 'updated', JSON.stringify(e));
    if (e.kind !== 'updated') return;
    const after = parse(e.text) as { clusterName: string; apiServer: { extraArgs: Record<string, string> } };
    assert.equal(after.clusterName, n);
    assert.equal(after.apiServer.extraArgs['audit-log-path'], n);
  }), { numRuns: 1500 });
  const e = editClusterConfiguration(config(folded, 'double'), INTENT);
  assert.equal(e.kind === 'updated' && (parse(e.text) as { clusterName: string }).clusterName, folded);
});

test('refusals: not YAML, not a ClusterConfiguration, an unknown apiVersion, the wrong extraArgs shape, a flag listed twice', () => {
  const cases: [string, string, RegExp][] = [
    ['apiVersion: [kubeadm', 'KubeadmConfigUnparseable', /not YAML/],
    ['- a\n- b\n', 'KubeadmConfigUnparseable', /not a YAML mapping/],
    ['apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n', 'KubeadmConfigUnknownAPIVersion', /kind is "InitConfiguration"/],
    ['apiVersion: kubeadm.k8s.io/v1beta2\nkind: ClusterConfiguration\n', 'KubeadmConfigUnknownAPIVersion', /"kubeadm.k8s.io\/v1beta2" is not one the operator edits/],
    ['apiVersion: kubeadm.k8s.io/v1beta5\nkind: ClusterConfiguration\n', 'KubeadmConfigUnknownAPIVersion', /v1beta5/],
    ['apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\napiServer:\n  extraArgs:\n    feature-gates: A=true\n', 'KubeadmConfigUnparseable', /not a list of \{name, value\}/],
    ['apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\napiServer:\n  extraArgs:\n  - name: feature-gates\n    value: A=true\n', 'KubeadmConfigUnparseable', /not a map of flag to value/],
    ['apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\napiServer: cp\n', 'KubeadmConfigUnparseable', /apiServer is not a mapping/],
    ['apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\napiServer:\n  extraArgs:\n  - name: feature-gates\n    value: A=true\n  - name: feature-gates\n    value: B=true\n', 'KubeadmConfigAmbiguous', /lists feature-gates 2 times/],
  ];
  for (const [text, reason, message] of cases) {
    const e = editClusterConfiguration(text, INTENT);
    assert.equal(e.kind, 'refused', text);
    if (e.kind !== 'refused') continue;
    assert.equal(e.reason, reason, text);
    assert.match(e.message, message, text);
  }
});

test('recordKubeadmConfig: the status record, the condition and the event of each outcome', () => {
  const now = new Date('2026-01-01T01:00:00Z');
  const base: ApiServerUpgradeStatus = { phase: 'Succeeded' };
  const updated = recordKubeadmConfig(base, INTENT, { kind: 'edited', edit: { kind: 'updated', text: 'x', changes: ['kubernetesVersion v1.35.4 -> v1.36.3'] }, resourceVersion: '42' }, now, 3);
  assert.deepEqual(updated.status.kubeadmConfig, { phase: 'Succeeded', result: 'Updated', kubernetesVersion: NEW, time: now.toISOString(), changes: ['kubernetesVersion v1.35.4 -> v1.36.3'], resourceVersion: '42', message: 'kube-system/kubeadm-config updated: kubernetesVersion v1.35.4 -> v1.36.3' });
  const c = updated.status.conditions?.find((x) => x.type === 'KubeadmConfigUpdated');
  assert.equal(c?.status, 'True');
  assert.equal(c?.reason, 'KubeadmConfigUpdated');
  assert.equal(c?.observedGeneration, 3);
  assert.equal(updated.events[0]?.type, 'Normal');
  assert.equal(base.kubeadmConfig, undefined, 'the input is not mutated');

  const absent = recordKubeadmConfig(base, INTENT, { kind: 'absent' }, now, 3);
  assert.equal(absent.status.kubeadmConfig?.result, 'NotFound');
  assert.equal(absent.status.conditions?.[0]?.reason, 'NotKubeadmCluster');
  assert.equal(absent.status.conditions?.[0]?.status, 'True');

  const refused = recordKubeadmConfig(base, INTENT, { kind: 'edited', edit: { kind: 'refused', reason: 'KubeadmConfigUnknownAPIVersion', message: 'apiVersion "x"' } }, now, 3);
  assert.equal(refused.status.kubeadmConfig?.result, 'Refused');
  const rc = refused.status.conditions?.[0];
  assert.equal(rc?.status, 'False');
  assert.equal(rc?.reason, 'KubeadmConfigUnknownAPIVersion');
  assert.match(rc!.message, /set by hand: kubernetesVersion: v1\.36\.3, apiServer\.extraArgs feature-gates with UnknownVersionInteroperabilityProxy=true, apiServer\.extraArgs peer-ca-file=\/etc\/kubernetes\/pki\/ca\.crt/);
  assert.equal(refused.events[0]?.type, 'Warning');

  const forbidden = recordKubeadmConfig(base, INTENT, { kind: 'forbidden', message: '403' }, now, 3);
  assert.equal(forbidden.status.conditions?.[0]?.reason, 'KubeadmConfigForbidden');
  const noKey = recordKubeadmConfig(base, INTENT, { kind: 'noKey' }, now, 3);
  assert.match(noKey.status.conditions![0]!.message, /has no ClusterConfiguration key/);
  // The operator's write off: the edit is reported as the admin's to make, each change with its exact value.
  const notWritten = recordKubeadmConfig(base, INTENT, { kind: 'notWritten', edit: { kind: 'updated', text: 'x', changes: ['kubernetesVersion v1.35.4 -> v1.36.3', 'apiServer.extraArgs peer-ca-file=/etc/kubernetes/pki/ca.crt (added)'] }, resourceVersion: '41' }, now, 3);
  assert.equal(notWritten.status.kubeadmConfig?.result, 'NotWritten');
  assert.deepEqual(notWritten.status.kubeadmConfig?.changes, ['kubernetesVersion v1.35.4 -> v1.36.3', 'apiServer.extraArgs peer-ca-file=/etc/kubernetes/pki/ca.crt (added)']);
  assert.equal(notWritten.status.kubeadmConfig?.resourceVersion, '41');
  const nw = notWritten.status.conditions?.[0];
  assert.deepEqual([nw?.status, nw?.reason], ['False', 'KubeadmConfigNotWritten']);
  assert.match(nw!.message, /kubeadmConfig\.write .*set by hand in ClusterConfiguration: kubernetesVersion v1\.35\.4 -> v1\.36\.3; apiServer\.extraArgs peer-ca-file=\/etc\/kubernetes\/pki\/ca\.crt \(added\)/);
  assert.equal(notWritten.events[0]?.type, 'Warning');
  const same = recordKubeadmConfig(base, INTENT, { kind: 'edited', edit: { kind: 'unchanged' } }, now, 3);
  assert.equal(same.status.kubeadmConfig?.result, 'Unchanged');
  assert.equal(same.status.conditions?.[0]?.reason, 'KubeadmConfigConsistent');
});
