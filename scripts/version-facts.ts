// The per-version facts of docs/versions.md, read from the Kubernetes sources in the Go module cache (no build):
//   node scripts/version-facts.ts v1.34.4 v1.35.4 v1.36.1 v1.36.3 v1.37.2          the tables, as Markdown
//   node scripts/version-facts.ts --json v1.34.4 ... > test/fixtures/version-facts.json   the same facts as JSON
// For each version it fetches k8s.io/kubernetes@vX.Y.Z and k8s.io/apiserver@v0.Y.Z with `go mod download -json`
// (the Go module proxy only) and reads:
//   gate        UnknownVersionInteroperabilityProxy's versioned spec: test/compatibility_lifecycle/reference/
//               versioned_feature_list.yaml (generated upstream from every gate's spec and checked by their CI)
//   emulation   the --emulated-version floor: k8s.io/apiserver pkg/util/compatibility/version.go
//               (kubeEffectiveVersionFloors: binary minor minus N, never below minimumKubeEmulationVersion)
//   resources   the built-in group/version/resources a default server serves, and their storageVersionHash:
//               api/discovery/ (upstream's own capture of a server's discovery, every API enabled), keeping the
//               stable versions (vN): since 1.24 no beta API is on by default. Checked against real servers'
//               captures in test/fixtures/<version>/ by test/plan/coverage.test.ts.
//   peerproxy   a digest of k8s.io/apiserver pkg/util/peerproxy (non-test Go files): equal digests, same proxy code
// The parsing is pure and tested on copied snippets (test/scripts/version-facts.test.ts).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export const GATE = 'UnknownVersionInteroperabilityProxy';
const VERSION = /^v1\.(\d{1,3})\.(\d{1,3})$/;

export interface GateSpec {
  version: string;
  default: boolean;
  preRelease: string;
  lockToDefault: boolean;
}

export interface VersionFacts {
  version: string;
  /** The gate's versioned spec as this version's source declares it, oldest first. */
  gate: GateSpec[];
  /** The oldest --emulated-version this binary accepts ("1.34"); it accepts up to its own minor. */
  emulationFloor: string;
  /** The floor's rule as the source writes it: the binary's minor minus this, but never below `emulationMinimum`. */
  emulationMinorsBack: number;
  emulationMinimum: string;
  /** group/version/resource ("/v1/pods", "apps/v1/deployments") -> kind. */
  resources: Record<string, string>;
  /** group/version/resource -> storageVersionHash. */
  storageHashes: Record<string, string>;
  /** sha256 (first 16 hex) of the peer proxy's non-test Go files. */
  peerProxy: string;
}

/** The versioned spec of one gate in versioned_feature_list.yaml; throws when the gate is not there. */
export function gateSpecs(yamlText: string, gate = GATE): GateSpec[] {
  const list = parse(yamlText) as unknown;
  if (!Array.isArray(list)) throw new Error('versioned_feature_list.yaml: expected a list of gates');
  const entry = list.find((g: { name?: unknown }) => g?.name === gate) as { versionedSpecs?: unknown } | undefined;
  if (!entry || !Array.isArray(entry.versionedSpecs)) throw new Error(`versioned_feature_list.yaml has no ${gate}`);
  return entry.versionedSpecs.map((s: Record<string, unknown>) => {
    if (typeof s.version !== 'string' || !/^1\.\d+$/.test(s.version) || typeof s.default !== 'boolean' || typeof s.preRelease !== 'string') {
      throw new Error(`${gate}: unexpected spec ${JSON.stringify(s)}`);
    }
    return { version: s.version, default: s.default, preRelease: s.preRelease, lockToDefault: s.lockToDefault === true };
  });
}

/** The spec in force at a minor ("1.36"): the last one whose version is not newer; undefined before the first. */
export function gateAt(specs: readonly GateSpec[], minor: string): GateSpec | undefined {
  const n = (v: string): number => Number(v.split('.')[1]);
  return specs.filter((s) => n(s.version) <= n(minor)).at(-1);
}

/** minimumKubeEmulationVersion and the N of SubtractMinor(N) in kubeEffectiveVersionFloors; throws when either moved. */
export function emulationRule(goSource: string): { minorsBack: number; minimum: string } {
  const min = /minimumKubeEmulationVersion\s*\*version\.Version\s*=\s*version\.MajorMinor\((\d+),\s*(\d+)\)/.exec(goSource);
  const floors = /func kubeEffectiveVersionFloors\([^)]*\)[^{]*\{([\s\S]*?)\n\}/.exec(goSource);
  const back = floors ? /SubtractMinor\((\d+)\)/.exec(floors[1]!) : null;
  if (!min || !back) throw new Error('compatibility/version.go: minimumKubeEmulationVersion or kubeEffectiveVersionFloors changed shape; read it by hand');
  return { minorsBack: Number(back[1]), minimum: `${min[1]}.${min[2]}` };
}

export function emulationFloor(minor: number, rule: { minorsBack: number; minimum: string }): string {
  const floor = Math.max(minor - rule.minorsBack, Number(rule.minimum.split('.')[1]));
  return `1.${floor}`;
}

interface AggregatedDiscovery {
  items?: { metadata?: { name?: string }; versions?: { version: string; resources?: { resource: string; responseKind?: { kind?: string } }[] }[] }[];
}
interface LegacyResourceList {
  groupVersion?: string;
  resources?: { name: string; kind?: string; storageVersionHash?: string }[];
}

const STABLE = /^v\d+$/;
const keyOf = (groupVersion: string, resource: string): string => (groupVersion.includes('/') ? `${groupVersion}/${resource}` : `/${groupVersion}/${resource}`);

/** The stable built-in resources (no subresources) of api/discovery/aggregated_v2.json and api__v1.json, with kinds. */
export function builtinResources(aggregated: AggregatedDiscovery, coreV1: LegacyResourceList): Record<string, string> {
  const out: Record<string, string> = {};
  for (const g of aggregated.items ?? []) {
    const group = g.metadata?.name ?? '';
    for (const v of g.versions ?? []) {
      if (!STABLE.test(v.version)) continue;
      for (const r of v.resources ?? []) out[keyOf(group === '' ? v.version : `${group}/${v.version}`, r.resource)] = r.responseKind?.kind ?? '';
    }
  }
  for (const r of coreV1.resources ?? []) if (!r.name.includes('/')) out[keyOf(coreV1.groupVersion ?? 'v1', r.name)] = r.kind ?? '';
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

/** group/version/resource -> storageVersionHash of legacy discovery lists (api__v1.json, apis__<group>__vN.json). */
export function storageHashes(lists: readonly LegacyResourceList[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of lists) {
    if (!l.groupVersion || !STABLE.test(l.groupVersion.split('/').at(-1)!)) continue;
    for (const r of l.resources ?? []) if (!r.name.includes('/') && r.storageVersionHash) out[keyOf(l.groupVersion, r.name)] = r.storageVersionHash;
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

export interface StepDiff {
  from: string;
  to: string;
  added: string[];
  removed: string[];
  /** Resources both serve whose storage version hash changed. */
  hashChanged: string[];
  samePeerProxy: boolean;
}

export function diffFacts(a: VersionFacts, b: VersionFacts): StepDiff {
  const added = Object.keys(b.resources).filter((k) => !(k in a.resources));
  const removed = Object.keys(a.resources).filter((k) => !(k in b.resources));
  const hashChanged = Object.keys(b.storageHashes).filter((k) => k in a.storageHashes && a.storageHashes[k] !== b.storageHashes[k]);
  return { from: a.version, to: b.version, added, removed, hashChanged, samePeerProxy: a.peerProxy === b.peerProxy };
}

const minorOfVersion = (v: string): string => v.replace(VERSION, '1.$1');
const CMD = 'node scripts/version-facts.ts';

/** docs/versions.md's tables: one row per version, one per step between consecutive versions. */
export function markdown(facts: readonly VersionFacts[]): string {
  const lines = [
    '| Version | Gate at this minor (own spec) | Gate spec history | `--emulated-version` accepted | Built-in resources | Reproduce |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const f of facts) {
    const at = gateAt(f.gate, minorOfVersion(f.version));
    const history = f.gate.map((s) => `${s.version} ${s.preRelease}${s.default ? ' on' : ' off'}${s.lockToDefault ? ' locked' : ''}`).join(', ');
    lines.push(`| ${f.version} | ${at ? `${at.preRelease}, default ${at.default ? 'on' : 'off'}` : 'absent'} | ${history} | ${f.emulationFloor}..${minorOfVersion(f.version)} (N-${f.emulationMinorsBack}, never below ${f.emulationMinimum}) | ${Object.keys(f.resources).length} | \`${CMD} ${f.version}\` |`);
  }
  lines.push('', '| Step | Built-in resources added | Removed | Storage version hash changed | Peer proxy code | Reproduce |', '| --- | --- | --- | --- | --- | --- |');
  for (let i = 1; i < facts.length; i++) {
    const d = diffFacts(facts[i - 1]!, facts[i]!);
    const list = (xs: string[]): string => (xs.length ? xs.map((x) => `\`${x}\``).join(', ') : 'none');
    lines.push(`| ${d.from} -> ${d.to} | ${list(d.added)} | ${list(d.removed)} | ${list(d.hashChanged)} | ${d.samePeerProxy ? 'identical' : 'changed'} | \`${CMD} ${d.from} ${d.to}\` |`);
  }
  return lines.join('\n') + '\n';
}

/** The module's folder in the module cache, fetched from the Go module proxy when missing. */
function moduleDir(path: string, version: string): string {
  const out = execFileSync('go', ['mod', 'download', '-json', `${path}@${version}`], { encoding: 'utf8', maxBuffer: 1 << 20 });
  const dir = (JSON.parse(out) as { Dir?: string; Error?: string }).Dir;
  if (!dir) throw new Error(`go mod download ${path}@${version}: ${out.slice(0, 500)}`);
  return dir;
}

function goFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.go') && !e.name.endsWith('_test.go'))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

export function readFacts(version: string): VersionFacts {
  const m = VERSION.exec(version);
  if (!m) throw new Error(`not a release version such as v1.37.2: ${JSON.stringify(version)}`);
  const kube = moduleDir('k8s.io/kubernetes', version);
  const apiserver = moduleDir('k8s.io/apiserver', `v0.${m[1]}.${m[2]}`);
  const json = (p: string): unknown => JSON.parse(readFileSync(join(kube, 'api', 'discovery', p), 'utf8'));
  const rule = emulationRule(readFileSync(join(apiserver, 'pkg', 'util', 'compatibility', 'version.go'), 'utf8'));
  const legacy = readdirSync(join(kube, 'api', 'discovery')).filter((f) => f === 'api__v1.json' || /^apis__[a-z0-9.-]+__v\d+\.json$/.test(f)).sort();
  const proxyDir = join(apiserver, 'pkg', 'util', 'peerproxy');
  const digest = createHash('sha256');
  for (const f of goFiles(proxyDir)) digest.update(relative(proxyDir, f)).update('\0').update(readFileSync(f)).update('\0');
  return {
    version,
    gate: gateSpecs(readFileSync(join(kube, 'test', 'compatibility_lifecycle', 'reference', 'versioned_feature_list.yaml'), 'utf8')),
    emulationFloor: emulationFloor(Number(m[1]), rule),
    emulationMinorsBack: rule.minorsBack,
    emulationMinimum: rule.minimum,
    resources: builtinResources(json('aggregated_v2.json') as AggregatedDiscovery, json('api__v1.json') as LegacyResourceList),
    storageHashes: storageHashes(legacy.map((f) => json(f) as LegacyResourceList)),
    peerProxy: digest.digest('hex').slice(0, 16),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const asJson = args.includes('--json');
  const versions = args.filter((a) => a !== '--json');
  const bad = versions.filter((v) => !VERSION.test(v));
  if (versions.length === 0 || bad.length > 0) {
    process.stderr.write(`usage: ${CMD} [--json] v1.34.4 v1.35.4 ...${bad.length ? ` (not a release version: ${bad.join(' ')})` : ''}\n`);
    process.exit(2);
  }
  const facts = versions.map(readFacts);
  process.stdout.write(asJson ? JSON.stringify({ gate: GATE, facts }, null, 1) + '\n' : markdown(facts));
}
