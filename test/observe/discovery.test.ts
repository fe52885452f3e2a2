// Discovery sets and convergence over small synthetic documents (not captured from a server).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { APIGroupDiscoveryList, ServerDiscovery } from '../../src/observe/discovery.ts';
import {
  aggregatedDiscoveryPaths,
  convergence,
  diffSets,
  legacyDiscoveryPaths,
  NEW_CONVERGENCE_TRACKER,
  resourceSet,
  storageVersionHashes,
  trackConvergence,
  unconvergedForMs,
  unionSets,
  unlistableResources,
} from '../../src/observe/discovery.ts';

const CORE: APIGroupDiscoveryList = {
  kind: 'APIGroupDiscoveryList',
  apiVersion: 'apidiscovery.k8s.io/v2',
  items: [
    {
      metadata: {},
      versions: [
        {
          version: 'v1',
          resources: [
            { resource: 'pods', scope: 'Namespaced', verbs: ['get', 'list'], subresources: [{ subresource: 'status', verbs: ['get'] }] },
            { resource: 'namespaces', scope: 'Cluster', verbs: ['get'] },
          ],
        },
      ],
    },
  ],
};
const APIS: APIGroupDiscoveryList = {
  kind: 'APIGroupDiscoveryList',
  apiVersion: 'apidiscovery.k8s.io/v2',
  items: [
    { metadata: { name: 'apps' }, versions: [{ version: 'v1', resources: [{ resource: 'deployments' }] }] },
    {
      metadata: { name: 'example.dev' },
      versions: [
        { version: 'v1beta1', resources: [{ resource: 'widgets' }], freshness: 'Current' },
        { version: 'v1alpha1', resources: [] },
      ],
    },
  ],
};

describe('resource sets (synthetic)', () => {
  it('keys resources as group/version/resource with the core group empty, without subresources', () => {
    assert.deepEqual([...resourceSet(CORE, APIS)].sort(), ['/v1/namespaces', '/v1/pods', 'apps/v1/deployments', 'example.dev/v1beta1/widgets']);
  });
  it('diffs and unions', () => {
    assert.deepEqual(diffSets(new Set(['a', 'b']), new Set(['b', 'c'])), { added: ['c'], removed: ['a'] });
    assert.deepEqual([...unionSets([new Set(['a']), new Set(['b', 'a'])])], ['a', 'b']);
  });
  it('lists legacy discovery paths for each group/version', () => {
    assert.deepEqual(legacyDiscoveryPaths(CORE), ['/api/v1']);
    assert.deepEqual(legacyDiscoveryPaths(APIS), ['/apis/apps/v1', '/apis/example.dev/v1beta1', '/apis/example.dev/v1alpha1']);
  });
});

describe('unlistableResources (synthetic)', () => {
  it('names the resources whose verbs leave out list (synthetic core namespaces: get only); no verbs array counts as listable', () => {
    const doc: APIGroupDiscoveryList = {
      kind: 'APIGroupDiscoveryList',
      items: [
        { metadata: { name: 'authentication.k8s.io' }, versions: [{ version: 'v1', resources: [{ resource: 'selfsubjectreviews', verbs: ['create'] }, { resource: 'tokenreviews', verbs: ['create'] }] }] },
        { metadata: { name: 'apps' }, versions: [{ version: 'v1', resources: [{ resource: 'deployments', verbs: ['get', 'list', 'create'] }, { resource: 'odd' }] }] },
      ],
    };
    assert.deepEqual([...unlistableResources(doc, CORE)].sort(), ['/v1/namespaces', 'authentication.k8s.io/v1/selfsubjectreviews', 'authentication.k8s.io/v1/tokenreviews']);
  });
});

describe('convergence (synthetic)', () => {
  const OLD = new Set(['/v1/pods', 'apps/v1/deployments']);
  const NEW = new Set(['/v1/pods', 'apps/v1/deployments', 'example.dev/v1/widgets']);
  const ALL = unionSets([OLD, NEW]);
  const server = (name: string, version: string, own: Set<string> | undefined, peer: Set<string> | undefined): ServerDiscovery => ({
    server: name,
    version,
    own,
    peerAggregated: peer,
  });

  it('converges when every peer-aggregated view is the union and versions agree', () => {
    const got = convergence([server('a', 'v1.35.4', OLD, ALL), server('b', 'v1.36.3', NEW, ALL), server('c', 'v1.35.4', OLD, ALL)]);
    assert.deepEqual(got, { converged: true, problems: [] });
  });

  it('names the server whose peer-aggregated view misses a resource (e.g. proxy gate off)', () => {
    const got = convergence([server('a', 'v1.35.4', OLD, OLD), server('b', 'v1.36.3', NEW, ALL)]);
    assert.deepEqual(got, { converged: false, problems: [{ server: 'a', kind: 'peerAggregated', missing: ['example.dev/v1/widgets'], extra: [] }] });
  });

  it('reports extra resources served from a stale peer', () => {
    const got = convergence([server('a', 'v1.35.4', OLD, ALL), server('b', 'v1.35.4', OLD, OLD)]);
    assert.deepEqual(got.problems, [{ server: 'a', kind: 'peerAggregated', missing: [], extra: ['example.dev/v1/widgets'] }]);
  });

  it('reports the odd server out of one version', () => {
    const odd = new Set([...OLD, 'batch/v1/jobs']);
    const got = convergence([server('a', 'v1.35.4', OLD, ALL), server('b', 'v1.35.4', OLD, ALL), server('c', 'v1.35.4', odd, ALL)]);
    const disagreements = got.problems.filter((p) => p.kind === 'versionDisagreement');
    assert.deepEqual(disagreements, [{ server: 'c', kind: 'versionDisagreement', missing: [], extra: ['batch/v1/jobs'] }]);
    assert.equal(got.converged, false);
  });

  it('servers of one binary emulating different versions are compared with their like, not with each other (KEP-4330)', () => {
    const emulating = (name: string, own: Set<string>, emulation: string): ServerDiscovery => ({ ...server(name, 'v1.36.3', own, ALL), emulation });
    // Phase two of a two-phase upgrade: v1.36.3 with --emulated-version=1.35 serves 1.35's set, plain v1.36.3 its own.
    assert.deepEqual(convergence([emulating('a', OLD, '1.35'), emulating('b', NEW, '1.36'), emulating('c', OLD, '1.35')]), { converged: true, problems: [] });
    // The same sets without the emulation: one binary disagreeing with itself.
    assert.deepEqual(convergence([server('a', 'v1.36.3', OLD, ALL), server('b', 'v1.36.3', NEW, ALL), server('c', 'v1.36.3', OLD, ALL)]).problems.map((p) => [p.server, p.kind]), [['b', 'versionDisagreement']]);
    // An odd server within one (binary, emulation) pair is still reported.
    const got = convergence([emulating('a', OLD, '1.35'), emulating('b', OLD, '1.35'), emulating('c', NEW, '1.35')]);
    assert.deepEqual(got.problems, [{ server: 'c', kind: 'versionDisagreement', missing: [], extra: ['example.dev/v1/widgets'] }]);
  });

  it('never converges with a document missing', () => {
    const got = convergence([server('a', 'v1.35.4', OLD, undefined), server('b', 'v1.35.4', OLD, OLD)]);
    assert.deepEqual(got, { converged: false, problems: [{ server: 'a', kind: 'unavailable', missing: [], extra: [] }] });
    assert.equal(convergence([]).converged, false);
  });
});

describe('convergence tracker (synthetic)', () => {
  it('measures time from loss to regain', () => {
    let t = trackConvergence(NEW_CONVERGENCE_TRACKER, true, 1000);
    assert.equal(unconvergedForMs(t, 2000), 0);
    t = trackConvergence(t, false, 5000);
    t = trackConvergence(t, false, 9000);
    assert.equal(t.lostAt, 5000);
    assert.equal(unconvergedForMs(t, 12000), 7000);
    t = trackConvergence(t, true, 20000);
    assert.equal(t.lastTimeToConvergeMs, 15000);
    assert.equal(t.since, 20000);
    assert.equal(unconvergedForMs(t, 30000), 0);
  });
  it('counts from the first observation when first seen unconverged', () => {
    const t = trackConvergence(NEW_CONVERGENCE_TRACKER, false, 100);
    assert.equal(trackConvergence(t, true, 400).lastTimeToConvergeMs, 300);
  });
});

describe('storageVersionHashes (synthetic)', () => {
  it('maps group/version/resource to hash, skipping subresources and unstored resources', () => {
    const apps = storageVersionHashes({
      kind: 'APIResourceList',
      groupVersion: 'apps/v1',
      resources: [
        { name: 'deployments', storageVersionHash: 'AAA=' },
        { name: 'deployments/scale' },
        { name: 'deployments/status', storageVersionHash: 'AAA=' },
      ],
    });
    assert.deepEqual([...apps], [['apps/v1/deployments', 'AAA=']]);
    const core = storageVersionHashes({ groupVersion: 'v1', resources: [{ name: 'pods', storageVersionHash: 'PPP=' }, { name: 'bindings' }] });
    assert.deepEqual([...core], [['/v1/pods', 'PPP=']]);
  });
});

describe('aggregatedDiscoveryPaths (synthetic)', () => {
  const svc = (group: string, version: string, service: unknown) => ({ metadata: { name: `${version}.${group || ''}` }, spec: { group, version, service } });
  it('names the group/versions of APIServices with spec.service; local ones (built-ins, CRDs) are not aggregated', () => {
    const paths = aggregatedDiscoveryPaths({
      kind: 'APIServiceList',
      items: [
        svc('', 'v1', null),
        svc('apps', 'v1', null),
        svc('stable.example.com', 'v1', null),
        { metadata: { name: 'v1.batch' }, spec: { group: 'batch', version: 'v1' } },
        svc('metrics.k8s.io', 'v1beta1', { namespace: 'kube-system', name: 'metrics-server', port: 443 }),
        svc('custom.metrics.k8s.io', 'v1beta2', { namespace: 'monitoring', name: 'adapter' }),
      ],
    });
    assert.deepEqual([...paths], ['/apis/metrics.k8s.io/v1beta1', '/apis/custom.metrics.k8s.io/v1beta2']);
  });
  it('throws on a body that is not an APIServiceList, or an aggregated APIService without a version', () => {
    assert.throws(() => aggregatedDiscoveryPaths({ kind: 'Status' }), /expected an APIServiceList, got Status/);
    assert.throws(() => aggregatedDiscoveryPaths({ kind: 'APIServiceList' }), /without items/);
    assert.throws(() => aggregatedDiscoveryPaths({ kind: 'APIServiceList', items: [{ metadata: { name: 'x' }, spec: { group: 'g', service: {} } }] }), /no spec.version/);
    assert.deepEqual([...aggregatedDiscoveryPaths({ kind: 'APIServiceList', items: [] })], []);
  });
});
