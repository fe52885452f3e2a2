// The coverage report (src/plan/coverage.ts) from the real servers' captured discovery (test/fixtures), and
// the catalog it ships (src/plan/coverage-catalog.ts) checked against those captures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BUILTIN_CATALOG } from '../../src/plan/coverage-catalog.ts';
import { coverageReport, COVERAGE_ENTRIES_LIMIT, type ObservedAPIService } from '../../src/plan/coverage.ts';
import { resourceSet, type APIGroupDiscoveryList } from '../../src/observe/discovery.ts';
import { apiServicesFrom } from '../../src/observe/coverage.ts';
import { minorOf } from '../../src/plan/version.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES_DIR, fixtureVersions, readFixture } from '../observe/fixtures.ts';
import { OLD, NEW, Sim, peer } from './fleet.ts';

const versions = fixtureVersions();
const own = (v: string): string[] => [...resourceSet(...['discovery-api-nopeer.json', 'discovery-apis-nopeer.json'].map((f) => JSON.parse(readFixture(v, f)) as APIGroupDiscoveryList))].sort();

test('fixtures are there (npm run fixtures captures them)', () => {
  assert.ok(versions.includes(OLD) && versions.includes(NEW), `captured: ${versions.join(', ')}`);
});

test('the catalog is exactly the captured own discovery of each version, with kinds', () => {
  for (const v of versions) {
    const entry = BUILTIN_CATALOG[minorOf(v)!];
    assert.ok(entry, `no catalog entry for ${minorOf(v)}`);
    assert.equal(entry.capturedFrom, v);
    assert.deepEqual(Object.keys(entry.resources).sort(), own(v), `regenerate src/plan/coverage-catalog.ts from test/fixtures/${v}`);
    assert.equal(entry.resources['/v1/pods'], 'Pod');
  }
});

/** scripts/version-facts.ts's read of the sources (test/fixtures/version-facts.json). */
const sourceFacts = (JSON.parse(readFileSync(join(FIXTURES_DIR, 'version-facts.json'), 'utf8')) as { facts: { version: string; resources: Record<string, string> }[] }).facts;

test('the built-in set read from the sources is what the real servers served, on every version captured both ways', () => {
  const both = sourceFacts.filter((f) => versions.includes(f.version));
  assert.ok(both.length >= 2, `versions captured both ways: ${both.map((f) => f.version).join(', ')}`);
  for (const f of both) assert.deepEqual(Object.keys(f.resources).sort(), own(f.version), `${f.version}: source and server disagree`);
});

test('every minor the sources were read for has a catalog entry equal to them, kinds included', () => {
  for (const f of sourceFacts) {
    const entry = BUILTIN_CATALOG[minorOf(f.version)!];
    assert.ok(entry, `no catalog entry for ${minorOf(f.version)}: regenerate src/plan/coverage-catalog.ts from test/fixtures/version-facts.json`);
    assert.deepEqual({ ...entry.resources }, f.resources, `${f.version}: the catalog's ${minorOf(f.version)} differs from the sources`);
  }
});

test('v1.36.3 -> v1.37.2 from the catalog read from the sources: four built-in resources added, none removed', () => {
  const r = coverageReport({ fromVersion: 'v1.36.3', targetVersion: 'v1.37.2', own: [{ server: 'cp-1', version: 'v1.36.3', resources: own(NEW) }], storage: [], observed: { apiServices: [] }, proxyOn: true });
  assert.equal(r.targetSource, 'Catalog v1.37.2');
  assert.deepEqual(r.entries!.filter((e) => e.kind === 'BuiltInAdded').map((e) => `${e.name} ${e.resourceKind}`), [
    'certificates.k8s.io/v1/clustertrustbundles ClusterTrustBundle',
    'certificates.k8s.io/v1/podcertificaterequests PodCertificateRequest',
    'resource.k8s.io/v1/devicetaintrules DeviceTaintRule',
    'storagemigration.k8s.io/v1/storageversionmigrations StorageVersionMigration',
  ]);
  assert.deepEqual([r.builtInAdded, r.builtInRemoved], [4, 0]);
});

/** The APIServices of a fresh v1.35 server plus one CRD group and one aggregated API. */
function apiServices(): ObservedAPIService[] {
  return apiServicesFrom({
    kind: 'APIServiceList',
    items: [
      { metadata: { name: 'v1.', labels: { 'kube-aggregator.kubernetes.io/automanaged': 'onstart' } }, spec: { version: 'v1', service: null } },
      { metadata: { name: 'v1.apps', labels: { 'kube-aggregator.kubernetes.io/automanaged': 'onstart' } }, spec: { group: 'apps', version: 'v1' } },
      { metadata: { name: 'v1alpha1.upgrade.apiserver.dev', labels: { 'kube-aggregator.kubernetes.io/automanaged': 'true' } }, spec: { group: 'upgrade.apiserver.dev', version: 'v1alpha1' } },
      { metadata: { name: 'v1beta1.metrics.k8s.io' }, spec: { group: 'metrics.k8s.io', version: 'v1beta1', service: { namespace: 'kube-system', name: 'metrics-server' } } },
    ],
  });
}

test('v1.35.4 -> v1.36.3 from the captured discovery: the two mutating admission policy resources are added, nothing removed', () => {
  const resources = [...own(OLD), 'upgrade.apiserver.dev/v1alpha1/apiserverupgrades', 'metrics.k8s.io/v1beta1/pods'];
  const r = coverageReport({ fromVersion: OLD, targetVersion: NEW, own: [{ server: 'cp-1', version: OLD, resources }], storage: [], observed: { apiServices: apiServices() }, proxyOn: true });
  assert.deepEqual(r.entries!.filter((e) => e.kind === 'BuiltInAdded').map((e) => `${e.name} ${e.resourceKind}`), [
    'admissionregistration.k8s.io/v1/mutatingadmissionpolicies MutatingAdmissionPolicy',
    'admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings MutatingAdmissionPolicyBinding',
  ]);
  assert.deepEqual([r.builtInAdded, r.builtInRemoved, r.aggregated, r.customResources], [2, 0, 1, 1]);
  assert.deepEqual(r.entries!.filter((e) => e.kind === 'Aggregated'), [{ kind: 'Aggregated', name: 'v1beta1.metrics.k8s.io', detail: 'kube-system/metrics-server' }]);
  assert.deepEqual(r.entries!.filter((e) => e.kind === 'CustomResource').map((e) => e.name), ['upgrade.apiserver.dev/v1alpha1/apiserverupgrades']);
  assert.equal(r.fromSource, 'Observed cp-1');
  assert.equal(r.targetSource, `Catalog ${NEW}`);
  assert.deepEqual(r.clientView!.map((v) => v.kind), ['BuiltInAdded', 'Aggregated', 'CustomResource']);
  assert.match(r.clientView![0]!.sees, /old server forwards to a new one/);
  assert.match(r.clientView![1]!.sees, /^never proxied/);
  assert.match(r.message!, /2 built-in resource\(s\) added, 0 removed/);
});

test('the reverse direction lists them as removed; with the proxy off a client gets 404 from the servers that lack them', () => {
  const r = coverageReport({ fromVersion: NEW, targetVersion: OLD, own: [{ server: 'cp-1', version: NEW, resources: own(NEW) }], storage: [], observed: { apiServices: [] }, proxyOn: false });
  assert.equal(r.builtInRemoved, 2);
  assert.equal(r.builtInAdded, 0);
  assert.match(r.clientView!.find((v) => v.kind === 'BuiltInRemoved')!.sees, /404/);
  assert.match(r.message!, /the proxy is off/);
});

test('a target minor without a catalog is unknown, never "no change"; APIServices not listed: their counts are absent', () => {
  const r = coverageReport({ fromVersion: 'v1.37.2', targetVersion: 'v1.38.0', own: [{ server: 'cp-1', version: 'v1.37.2', resources: own(NEW) }], storage: [], observed: { error: 'HTTP 403' }, proxyOn: true });
  assert.equal(r.targetSource, 'Unknown');
  assert.equal(r.builtInAdded, undefined);
  assert.equal(r.aggregated, undefined);
  assert.deepEqual(r.entries, []);
  assert.match(r.message!, /built-in changes unknown/);
  assert.match(r.message!, /HTTP 403/);
  assert.match(r.message!, /no captured discovery of 1\.38/);
});

test('no own discovery read: the from side falls back to the catalog and says so', () => {
  const r = coverageReport({ fromVersion: OLD, targetVersion: NEW, own: undefined, storage: [], observed: { apiServices: [] }, proxyOn: true });
  assert.equal(r.fromSource, `Catalog ${OLD}`);
  assert.equal(r.builtInAdded, 2);
  assert.equal(r.customResources, undefined);
});

test('bounded: at most 50 entries, counts complete, truncated set', () => {
  const crds: ObservedAPIService[] = [{ name: 'v1.example.com', group: 'example.com', version: 'v1', automanaged: 'true' }];
  const resources = [...own(OLD), ...Array.from({ length: 80 }, (_, i) => `example.com/v1/things${i}`)];
  const r = coverageReport({ fromVersion: OLD, targetVersion: NEW, own: [{ server: 'cp-1', version: OLD, resources }], storage: [], observed: { apiServices: crds }, proxyOn: true });
  assert.equal(r.entries!.length, COVERAGE_ENTRIES_LIMIT);
  assert.equal(r.truncated, true);
  assert.equal(r.customResources, 80);
  assert.equal(r.entries![0]!.kind, 'BuiltInAdded', 'built-in changes first');
});

test('preflight freezes the report in status.coverage; it survives later steps unchanged', () => {
  const sim = new Sim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on')]);
  sim.extra.discovery = { converged: true, message: 'ok', own: ['cp-1', 'cp-2'].map((server) => ({ server, version: OLD, resources: own(OLD) })) };
  sim.extra.coverage = { apiServices: [] };
  sim.step();
  const frozen = structuredClone(sim.status!.coverage);
  assert.equal(frozen?.builtInAdded, 2);
  assert.equal(frozen?.fromSource, 'Observed cp-1');
  sim.extra.coverage = { error: 'changed' };
  sim.applyDriverCalls();
  sim.step();
  sim.step();
  assert.deepEqual(sim.status!.coverage, frozen);
});
