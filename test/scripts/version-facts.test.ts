// scripts/version-facts.ts's parsing, on snippets copied from the k8s.io/kubernetes and k8s.io/apiserver sources.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { builtinResources, diffFacts, emulationFloor, emulationRule, gateAt, gateSpecs, markdown, storageHashes, type VersionFacts } from '../../scripts/version-facts.ts';

// test/compatibility_lifecycle/reference/versioned_feature_list.yaml of v1.37.2 (two neighbours kept).
const FEATURE_LIST = `- name: TopologyManagerPolicyOptions
  versionedSpecs:
  - default: true
    lockToDefault: false
    preRelease: Beta
    version: "1.28"
- name: UnknownVersionInteroperabilityProxy
  versionedSpecs:
  - default: false
    lockToDefault: false
    preRelease: Alpha
    version: "1.28"
  - default: true
    lockToDefault: false
    preRelease: Beta
    version: "1.36"
- name: UserNamespacesHostNetworkSupport
  versionedSpecs:
  - default: false
    lockToDefault: false
    preRelease: Alpha
    version: "1.35"
`;

// k8s.io/apiserver@v0.37.2 pkg/util/compatibility/version.go, the parts the rule is read from.
const COMPAT_GO = `// minimumKubeEmulationVersion is the first release emulation version is introduced,
// so the emulation version cannot go lower than that.
var minimumKubeEmulationVersion *version.Version = version.MajorMinor(1, 31)

func kubeEffectiveVersionFloors(binaryVersion *version.Version) *version.Version {
	// both emulationVersion and minCompatibilityVersion can be set to binaryVersion - 3
	versionFloor := binaryVersion.WithPatch(0).SubtractMinor(3)
	if versionFloor.LessThan(minimumKubeEmulationVersion) {
		versionFloor = minimumKubeEmulationVersion
	}
	return versionFloor
}
`;

test('the gate spec is read from the feature list, and the spec in force per minor', () => {
  const specs = gateSpecs(FEATURE_LIST);
  assert.deepEqual(specs, [
    { version: '1.28', default: false, preRelease: 'Alpha', lockToDefault: false },
    { version: '1.36', default: true, preRelease: 'Beta', lockToDefault: false },
  ]);
  assert.equal(gateAt(specs, '1.27'), undefined);
  assert.equal(gateAt(specs, '1.35')?.preRelease, 'Alpha');
  assert.equal(gateAt(specs, '1.36')?.default, true);
  assert.equal(gateAt(specs, '1.37')?.preRelease, 'Beta');
  assert.throws(() => gateSpecs(FEATURE_LIST, 'NoSuchGate'), /has no NoSuchGate/);
  assert.throws(() => gateSpecs('- name: UnknownVersionInteroperabilityProxy\n  versionedSpecs:\n  - default: maybe\n    version: "1.28"\n'), /unexpected spec/);
});

test('the emulation floor: N-3, never below 1.31; a changed shape fails loudly', () => {
  const rule = emulationRule(COMPAT_GO);
  assert.deepEqual(rule, { minorsBack: 3, minimum: '1.31' });
  assert.deepEqual([33, 34, 35, 36, 37].map((m) => emulationFloor(m, rule)), ['1.31', '1.31', '1.32', '1.33', '1.34']);
  assert.throws(() => emulationRule(COMPAT_GO.replace('SubtractMinor(3)', 'Floor()')), /changed shape/);
});

// api/discovery/aggregated_v2.json and api__v1.json / apis__apps__v1.json, trimmed.
const AGGREGATED = {
  items: [
    { metadata: { name: 'apps' }, versions: [{ version: 'v1', resources: [{ resource: 'deployments', responseKind: { kind: 'Deployment' } }] }] },
    { metadata: { name: 'resource.k8s.io' }, versions: [
      { version: 'v1', resources: [{ resource: 'devicetaintrules', responseKind: { kind: 'DeviceTaintRule' } }] },
      { version: 'v1beta2', resources: [{ resource: 'resourceclaims', responseKind: { kind: 'ResourceClaim' } }] },
    ] },
  ],
};
const CORE = { groupVersion: 'v1', resources: [
  { name: 'pods', kind: 'Pod', storageVersionHash: 'xPOwRZ+Yhw8=' },
  { name: 'pods/status', kind: 'Pod' },
  { name: 'bindings', kind: 'Binding' },
] };
const APPS = { groupVersion: 'apps/v1', resources: [{ name: 'deployments', kind: 'Deployment', storageVersionHash: '8aSe+NMegvE=' }] };
const BETA = { groupVersion: 'resource.k8s.io/v1beta2', resources: [{ name: 'resourceclaims', kind: 'ResourceClaim', storageVersionHash: 'beta' }] };

test('built-in resources: stable versions only, no subresources, with kinds; hashes likewise', () => {
  assert.deepEqual(builtinResources(AGGREGATED, CORE), {
    '/v1/bindings': 'Binding',
    '/v1/pods': 'Pod',
    'apps/v1/deployments': 'Deployment',
    'resource.k8s.io/v1/devicetaintrules': 'DeviceTaintRule',
  });
  assert.deepEqual(storageHashes([CORE, APPS, BETA]), { '/v1/pods': 'xPOwRZ+Yhw8=', 'apps/v1/deployments': '8aSe+NMegvE=' });
});

function facts(version: string, over: Partial<VersionFacts> = {}): VersionFacts {
  return { version, gate: gateSpecs(FEATURE_LIST), emulationFloor: '1.33', emulationMinorsBack: 3, emulationMinimum: '1.31', resources: { '/v1/pods': 'Pod' }, storageHashes: { '/v1/pods': 'a' }, peerProxy: 'p1', ...over };
}

test('a step: added, removed, changed hashes, same proxy code; the Markdown has one row per version and per step', () => {
  const a = facts('v1.36.3', { resources: { '/v1/pods': 'Pod', 'x/v1/gone': 'Gone' }, storageHashes: { '/v1/pods': 'a', 'x/v1/gone': 'g' } });
  const b = facts('v1.37.2', { emulationFloor: '1.34', resources: { '/v1/pods': 'Pod', 'y/v1/new': 'New' }, storageHashes: { '/v1/pods': 'b', 'y/v1/new': 'n' } });
  assert.deepEqual(diffFacts(a, b), { from: 'v1.36.3', to: 'v1.37.2', added: ['y/v1/new'], removed: ['x/v1/gone'], hashChanged: ['/v1/pods'], samePeerProxy: true });
  const md = markdown([a, b]);
  assert.match(md, /\| v1\.37\.2 \| Beta, default on \| 1\.28 Alpha off, 1\.36 Beta on \| 1\.34\.\.1\.37 \(N-3, never below 1\.31\) \| 2 \|/);
  assert.match(md, /\| v1\.36\.3 -> v1\.37\.2 \| `y\/v1\/new` \| `x\/v1\/gone` \| `\/v1\/pods` \| identical \| `node scripts\/version-facts\.ts v1\.36\.3 v1\.37\.2` \|/);
});
