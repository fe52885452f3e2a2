// The plugin's rendering of status.trust and status.coverage (src/cli/trust-view.ts), alone and in `get`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderCoverage, renderTrust } from '../../src/cli/trust-view.ts';
import { buildGetView, renderGet } from '../../src/cli/get-view.ts';
import type { ApiServerUpgrade, CoverageReport, TrustReport } from '../../src/api/types.generated.ts';

const TRUST: TrustReport = {
  checkedAt: '2026-12-01T10:00:00.000Z', servers: 2, verified: 11, findings: 1, unknown: 0,
  checks: [
    { server: 'cp-1', check: 'RequestHeaderAllowedNames', result: 'Verified', flag: '--requestheader-allowed-names', source: 'Webhook', message: '--requestheader-allowed-names=front-proxy-client' },
    { server: 'cp-2', check: 'RequestHeaderAllowedNames', result: 'Finding', reason: 'AnyFrontProxyCertTrusted', flag: '--requestheader-allowed-names', source: 'Webhook', message: '--requestheader-allowed-names is empty' },
  ],
};
const COVERAGE: CoverageReport = {
  fromVersion: 'v1.35.4', targetVersion: 'v1.36.3', fromSource: 'Observed cp-1', targetSource: 'Catalog v1.36.3', builtInAdded: 1, builtInRemoved: 0,
  entries: [{ kind: 'BuiltInAdded', name: 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies', resourceKind: 'MutatingAdmissionPolicy' }],
  clientView: [{ kind: 'BuiltInAdded', count: 1, sees: '404 from every server until the first runs v1.36.3' }],
  message: 'v1.35.4 -> v1.36.3: 1 built-in resource(s) added',
};

test('trust: counts and the verdict; only rows that are not Verified unless all are asked for', () => {
  const text = renderTrust(TRUST, { status: 'False', reason: 'AnyFrontProxyCertTrusted' });
  assert.match(text, /^Trust \(ProxyTrustVerified=False AnyFrontProxyCertTrusted\): 11 verified, 1 finding\(s\), 0 unknown across 2 server\(s\)$/m);
  assert.match(text, /cp-2 +RequestHeaderAllowedNames +Finding +AnyFrontProxyCertTrusted +--requestheader-allowed-names +Webhook/);
  assert.doesNotMatch(text, /cp-1/);
  assert.match(renderTrust(TRUST, undefined, true), /cp-1 +RequestHeaderAllowedNames +Verified/);
  assert.equal(renderTrust(undefined, undefined), 'Trust: not checked (preflight reads it)\n');
});

test('coverage: sources, one line per kind, the entries', () => {
  const text = renderCoverage(COVERAGE);
  assert.match(text, /^Coverage \(from Observed cp-1, target Catalog v1\.36\.3\): v1\.35\.4 -> v1\.36\.3: 1 built-in/m);
  assert.match(text, /^ {2}BuiltInAdded \(1\): 404 from every server/m);
  assert.match(text, /mutatingadmissionpolicies +MutatingAdmissionPolicy/);
});

test('get shows both once preflight wrote them, and neither before', () => {
  const u: ApiServerUpgrade = {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade', metadata: { name: 'to-v1-36' },
    spec: { targetVersion: 'v1.36.3', driver: { webhook: { url: 'https://h.example/replace' } } },
    status: { phase: 'Paused', trust: TRUST, coverage: COVERAGE, conditions: [{ type: 'ProxyTrustVerified', status: 'False', reason: 'AnyFrontProxyCertTrusted', message: 'cp-2: ...', lastTransitionTime: '2026-12-01T10:00:00Z' }] },
  };
  const text = renderGet(buildGetView(u, []), new Date('2026-12-01T10:01:00Z'));
  assert.match(text, /^Trust \(ProxyTrustVerified=False AnyFrontProxyCertTrusted\)/m);
  assert.match(text, /^Coverage \(from Observed cp-1/m);
  const before = renderGet(buildGetView({ ...u, status: { phase: 'Pending' } }, []), new Date('2026-12-01T10:01:00Z'));
  assert.doesNotMatch(before, /^Trust|^Coverage/m);
});
