// The manifest the operator leaves equals the one `kubeadm upgrade` to the same version renders, so kubeadm skips the
// kube-apiserver (its "manifests are equal, skipping upgrade"). On real kubeadm renders (test/fixtures/kubeadm-render/,
// written and checked by e2e/extended/kubeadm-render.e2e.ts with kubeadm v1.35.4 and v1.36.3), and as a property on
// extraArgs values holding YAML and shell metacharacters, against kubeadm's own rule for the command (base flags, then
// `--name=value` for each extraArg in its order: cmd/kubeadm/app/util/arguments.go ArgumentsToCommand).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { parse, parseDocument, stringify } from 'yaml';
import { RENDER_CASES, clusterConfiguration, operatorClusterConfiguration, operatorManifest, type RenderCase } from '../../e2e/support/kubeadm-render.ts';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'kubeadm-render');
const fixture = (name: string): string => readFileSync(join(FIXTURES, name), 'utf8');
type Pod = { spec: { containers: { command: string[]; image: string }[] } };

test('real kubeadm renders: the manifest the operator leaves equals kubeadm v1.36.3\'s from the kubeadm-config it leaves, in every case', () => {
  assert.equal(RENDER_CASES.length, 3);
  for (const c of RENDER_CASES) {
    const left = operatorManifest(fixture(`${c.name}-v1.35.4.yaml`), c, 'v1.36.3');
    assert.deepEqual(parse(left), parse(fixture(`${c.name}-v1.36.3.yaml`)), c.name);
  }
});

test('the per-node peer flags: left out where the peer address is the advertise address, kept (for a kubeadm patch) where not', () => {
  const byName = (n: string): RenderCase => RENDER_CASES.find((c) => c.name === n)!;
  const cmd = (c: RenderCase): string[] => (parse(operatorManifest(fixture(`${c.name}-v1.35.4.yaml`), c, 'v1.36.3')) as Pod).spec.containers[0]!.command;
  assert.ok(!cmd(byName('plain')).some((f) => f.startsWith('--peer-advertise-')));
  assert.deepEqual(cmd(byName('peer-patch')).slice(-2), ['--peer-advertise-ip=10.0.1.11', '--peer-advertise-port=16443']);
});

/** kubeadm's command from ClusterConfiguration text (v1beta4): `base`, less the overridden, then each extraArg. */
function kubeadmCommand(base: string[], clusterConfiguration: string): string[] {
  const cfg = parseDocument(clusterConfiguration).toJS() as { apiServer?: { extraArgs?: { name: string; value: string }[] } };
  const extra = cfg.apiServer?.extraArgs ?? [];
  const overridden = new Set(extra.map((a) => `--${a.name}`));
  return ['kube-apiserver', ...base.filter((f) => !overridden.has(f.slice(0, f.indexOf('=')))), ...extra.map((a) => `--${a.name}=${a.value}`)];
}

test('property: extraArgs values with metacharacters round-trip: kubeadm\'s command from the edited kubeadm-config is the agent\'s command', () => {
  const old = fixture('plain-v1.35.4.yaml');
  const base = (parse(old) as Pod).spec.containers[0]!.command.slice(1);
  const specials = fc.constantFrom('\n', '"', "'", '\\', '&', '|', '>', '*', '!', '#', ': ', ' #', '- ', '{', '}', '[', ']', ',', '%', '@', '`', '$(id)', ';', '=', 'yes', '0755', '1:20', ' ', '~', 'null');
  const value = fc.array(fc.oneof(specials, fc.string({ maxLength: 5 })), { maxLength: 8 }).map((xs) => xs.join(''));
  const name = fc.constantFrom('audit-log-path', 'profiling', 'feature-gates', 'audit-policy-file', 'v', 'cors-allowed-origins');
  fc.assert(fc.property(fc.uniqueArray(fc.record({ name, value }), { selector: (a) => a.name, maxLength: 4 }), (extraArgs) => {
    const c: RenderCase = { name: 'property', extraArgs, peer: { ip: '10.0.0.11', port: 6443 } };
    // The node's manifest as kubeadm writes it from that kubeadm-config (sigs.k8s.io/yaml quotes what needs it).
    const doc = parse(old) as Pod;
    doc.spec.containers[0]!.command = kubeadmCommand(base, clusterConfiguration(c, 'v1.35.4'));
    const left = operatorManifest(stringify(doc), c, 'v1.36.3');
    const rendered = kubeadmCommand(base, operatorClusterConfiguration(clusterConfiguration(c, 'v1.35.4'), 'v1.36.3'));
    assert.deepEqual((parse(left) as Pod).spec.containers[0]!.command, rendered);
  }), { numRuns: 300 });
});
