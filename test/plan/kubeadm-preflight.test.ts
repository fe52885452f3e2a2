// Preflight for kubeadm clusters (src/plan/kubeadm-preflight.ts): each finding at its boundary, block vs warn,
// fail closed on what could not be read, and the planner's use of it (a blocking finding stops preflight, retried).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { certificateFindings, deprecatedFindings, etcdFindings, kubeadmChecksApply, kubeadmCondition, kubeadmPreflightReport, kubeletFindings, nodeNameFindings, KUBEADM_FINDINGS_LIMIT, type ObservedKubeadm, type ObservedKubeadmServer } from '../../src/plan/kubeadm-preflight.ts';
import { deprecatedApis } from '../../src/observe/kubeadm.ts';
import { parsePromText } from '../../src/observe/prom-text.ts';
import { NEW, OLD, Sim, peer, spec, storage } from './fleet.ts';

const T: [number, number] = [1, 36];
const NOW = new Date('2026-06-01T00:00:00Z');
const DAY = 86_400_000;
const inDays = (d: number): string => new Date(NOW.getTime() + d * DAY).toISOString();

function server(over: Partial<ObservedKubeadmServer> = {}): ObservedKubeadmServer {
  return { hostname: 'cp-1', etcd: { status: 200, body: 'ok' }, certificate: { ok: true, dnsNames: ['kubernetes.default.svc'], notAfter: inDays(365) }, deprecated: [], mirrorPod: { name: 'kube-apiserver-cp-1', nodeName: 'cp-1' }, ...over };
}

test('kubelet skew: 3 minors older passes, 4 blocks; newer than the target blocks; same minor newer patch passes; unknown blocks', () => {
  const f = (v: string | undefined) => kubeletFindings([{ name: 'n1', ...(v === undefined ? {} : { kubeletVersion: v }) }], T);
  assert.deepEqual(f('v1.33.0'), []);
  assert.deepEqual(f('v1.36.9'), []);
  assert.deepEqual(f('v1.35.4'), []);
  const old = f('v1.32.11');
  assert.equal(old.length, 1);
  assert.deepEqual([old[0]!.severity, old[0]!.reason, old[0]!.object], ['Block', 'KubeletTooOld', 'Node/n1']);
  assert.match(old[0]!.message, /4 minors older than the target v1\.36/);
  assert.equal(f('v1.37.0')[0]?.reason, 'KubeletNewerThanTarget');
  assert.equal(f('v2.0.0')[0]?.reason, 'KubeletNewerThanTarget');
  assert.equal(f(undefined)[0]?.reason, 'KubeletVersionUnknown');
  assert.equal(f('1.36.0')[0]?.reason, 'KubeletVersionUnknown', 'no leading v: not a Kubernetes version');
  // A vendor build counts as the release it decorates.
  assert.deepEqual(f('v1.34.2-eks-1234'), []);
  assert.equal(kubeletFindings({ error: 'forbidden' }, T)[0]?.reason, 'NodesNotListed');
  assert.deepEqual(kubeletFindings(undefined, T), []);
});

test('etcd: 200 passes; another status blocks with the body; a failed read blocks', () => {
  assert.deepEqual(etcdFindings(server()), []);
  const bad = etcdFindings(server({ etcd: { status: 500, body: '[-]etcd failed: reason withheld\n' } }));
  assert.deepEqual([bad[0]!.severity, bad[0]!.reason, bad[0]!.object], ['Block', 'EtcdUnhealthy', 'kube-apiserver cp-1 /readyz/etcd']);
  assert.match(bad[0]!.message, /HTTP 500: \[-\]etcd failed/);
  assert.equal(etcdFindings(server({ etcd: { status: 403, body: 'forbidden' } }))[0]?.reason, 'EtcdUnhealthy');
  assert.equal(etcdFindings(server({ etcd: { error: 'ECONNREFUSED' } }))[0]?.reason, 'EtcdHealthUnknown');
});

test('serving certificate: 30 days or more passes, under 30 warns, under 7 blocks, expired blocks, unread blocks', () => {
  const at = (d: number) => certificateFindings(server({ certificate: { ok: true, dnsNames: [], notAfter: inDays(d) } }), NOW);
  assert.deepEqual(at(30), []);
  assert.deepEqual(at(29.9).map((f) => [f.severity, f.reason]), [['Warn', 'ServingCertificateExpiring']]);
  assert.deepEqual(at(7).map((f) => [f.severity, f.reason]), [['Warn', 'ServingCertificateExpiring']]);
  assert.deepEqual(at(6.9).map((f) => [f.severity, f.reason]), [['Block', 'ServingCertificateExpiresSoon']]);
  const expired = at(-1);
  assert.equal(expired[0]?.reason, 'ServingCertificateExpiresSoon');
  assert.match(expired[0]!.message, /expired on/);
  assert.equal(certificateFindings(server({ certificate: { ok: false, error: 'ECONNRESET' } }), NOW)[0]?.reason, 'ServingCertificateUnknown');
  assert.equal(certificateFindings(server({ certificate: { ok: true, dnsNames: [] } }), NOW)[0]?.reason, 'ServingCertificateUnknown');
  const { certificate: _, ...noAddress } = server();
  assert.equal(certificateFindings(noAddress, NOW)[0]?.reason, 'ServingCertificateUnknown');
});

test('deprecated APIs: removed at or before the target blocks, later or never warns, an unread /metrics blocks', () => {
  const api = (removedRelease: string) => ({ group: 'flowcontrol.apiserver.k8s.io', version: 'v1beta3', resource: 'flowschemas', subresource: '', removedRelease });
  const f = (r: string) => deprecatedFindings(server({ deprecated: [api(r)] }), T);
  assert.deepEqual(f('1.36').map((x) => [x.severity, x.reason, x.object]), [['Block', 'DeprecatedAPIRemovedByTarget', 'flowcontrol.apiserver.k8s.io/v1beta3/flowschemas (requested on cp-1)']]);
  assert.equal(f('1.32')[0]?.severity, 'Block');
  assert.deepEqual(f('1.37').map((x) => [x.severity, x.reason]), [['Warn', 'DeprecatedAPIRequested']]);
  assert.deepEqual(f('').map((x) => [x.severity, x.reason]), [['Warn', 'DeprecatedAPIRequested']]);
  assert.equal(f('soon')[0]?.severity, 'Block', 'an unreadable removed_release counts as removed');
  assert.equal(deprecatedFindings(server({ deprecated: { error: '403' } }), T)[0]?.reason, 'DeprecatedAPIsUnknown');
  // The core group and a subresource are named as group/version/resource/subresource.
  assert.equal(deprecatedFindings(server({ deprecated: [{ group: '', version: 'v1', resource: 'endpoints', subresource: 'status', removedRelease: '' }] }), T)[0]?.object, 'v1/endpoints/status (requested on cp-1)');
});

test('deprecated APIs from a real v1.35.4 /metrics page: core v1 endpoints, no removal planned', async () => {
  const { readFileSync } = await import('node:fs');
  const page = parsePromText(readFileSync(new URL('../fixtures/v1.35.4/metrics.txt', import.meta.url), 'utf8'), new Set(['apiserver_requested_deprecated_apis']));
  assert.deepEqual(deprecatedApis(page), [{ group: '', version: 'v1', resource: 'endpoints', subresource: '', removedRelease: '' }]);
  assert.deepEqual(deprecatedApis(parsePromText('apiserver_requested_deprecated_apis{group="a",version="v1",resource="r",subresource="",removed_release="1.36"} 0\n', 'all')), [], 'a 0 is not a request');
});

test('node name = hostname (static Pod driver): no mirror Pod, another nodeName, another hostname label each block', () => {
  const nodes = [{ name: 'cp-1', hostnameLabel: 'cp-1' }];
  assert.deepEqual(nodeNameFindings(server(), nodes), []);
  assert.deepEqual(nodeNameFindings(server({ hostname: 'CP-1' }), nodes), [], 'the node name is the hostname lowercased');
  const { mirrorPod: _, ...none } = server();
  assert.deepEqual(nodeNameFindings(none, nodes).map((f) => [f.reason, f.object]), [['MirrorPodNotFound', 'Pod kube-system/kube-apiserver-cp-1']]);
  assert.deepEqual(nodeNameFindings(server({ mirrorPod: { name: 'kube-apiserver-node-a', nodeName: 'node-a' } }), nodes).map((f) => [f.reason, f.object]), [['NodeNameNotHostname', 'Pod kube-system/kube-apiserver-node-a']]);
  assert.deepEqual(nodeNameFindings(server(), [{ name: 'cp-1', hostnameLabel: 'cp-1.example.com' }]).map((f) => [f.reason, f.object]), [['NodeNameNotHostname', 'Node/cp-1']]);
});

test('the checks apply to a kubeadm cluster, to the static Pod driver, and when kubeadm-config could not be read (fail closed)', () => {
  assert.equal(kubeadmChecksApply({ configMap: 'absent' }, false), false);
  assert.equal(kubeadmChecksApply({ configMap: 'absent' }, true), true);
  assert.equal(kubeadmChecksApply({ configMap: 'present' }, false), true);
  assert.equal(kubeadmChecksApply({ configMap: { error: '403' } }, false), true);
});

test('the report: counts, blocking first, bounded; the condition names the first blocking finding, or the first warning', () => {
  const observed: ObservedKubeadm = {
    configMap: 'present',
    nodes: [{ name: 'w1', kubeletVersion: 'v1.31.0' }, { name: 'cp-1', kubeletVersion: OLD, hostnameLabel: 'cp-1' }],
    servers: [server({ deprecated: [{ group: '', version: 'v1', resource: 'endpoints', subresource: '', removedRelease: '' }] })],
  };
  const r = kubeadmPreflightReport({ observed, targetVersion: NEW, staticPod: true, now: NOW });
  assert.equal(r.blocking, 1);
  assert.equal(r.warnings, 1);
  assert.equal(r.nodes, 2);
  assert.equal(r.servers, 1);
  assert.deepEqual(r.findings?.map((f) => [f.severity, f.reason, f.object]), [['Block', 'KubeletTooOld', 'Node/w1'], ['Warn', 'DeprecatedAPIRequested', 'v1/endpoints (requested on cp-1)']]);
  const c = kubeadmCondition(r);
  assert.deepEqual([c.type, c.status, c.reason], ['KubeadmPreflightPassed', 'False', 'KubeletTooOld']);
  assert.match(c.message, /^Node\/w1: kubelet v1\.31\.0 is 5 minors older/);
  const warnOnly = kubeadmCondition(kubeadmPreflightReport({ observed: { ...observed, nodes: [] }, targetVersion: NEW, staticPod: true, now: NOW }));
  assert.deepEqual([warnOnly.status, warnOnly.reason], ['True', 'PassedWithWarnings']);
  const clean = kubeadmCondition(kubeadmPreflightReport({ observed: { configMap: 'present', nodes: [], servers: [server()] }, targetVersion: NEW, staticPod: true, now: NOW }));
  assert.deepEqual([clean.status, clean.reason], ['True', 'AllChecksPassed']);
  // The webhook driver does not pin Jobs to nodes: no node-name check.
  const { mirrorPod: _, ...noPod } = server();
  assert.equal(kubeadmPreflightReport({ observed: { configMap: 'present', nodes: [], servers: [noPod] }, targetVersion: NEW, staticPod: false, now: NOW }).blocking, 0);
  // Bounded: 100 too-old kubelets, 64 rows, the counts cover all.
  const many = kubeadmPreflightReport({ observed: { configMap: 'present', nodes: Array.from({ length: 100 }, (_, i) => ({ name: `w${i}`, kubeletVersion: 'v1.30.0' })), servers: [server({ deprecated: [{ group: '', version: 'v1', resource: 'endpoints', subresource: '', removedRelease: '' }] })] }, targetVersion: NEW, staticPod: true, now: NOW });
  assert.equal(many.findings?.length, KUBEADM_FINDINGS_LIMIT);
  assert.equal(many.blocking, 100);
  assert.equal(many.truncated, true);
  assert.ok(many.findings?.every((f) => f.severity === 'Block'), 'blocking findings first');
  const unread = kubeadmPreflightReport({ observed: { configMap: { error: 'GET: 403' } }, targetVersion: NEW, staticPod: false, now: NOW });
  assert.deepEqual(unread.findings?.map((f) => f.reason), ['KubeadmConfigUnreadable']);
});

test('the planner: a blocking kubeadm finding stops preflight (retried, nothing called); fixed, it passes; warnings never stop it', () => {
  const s = new Sim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on')], spec());
  const tooOld: ObservedKubeadm = { configMap: 'present', nodes: [{ name: 'w1', kubeletVersion: 'v1.32.0' }], servers: [server(), server({ hostname: 'cp-2', mirrorPod: { name: 'kube-apiserver-cp-2', nodeName: 'cp-2' } })] };
  s.extra = { ...s.extra, storage: [storage(OLD)], kubeadm: tooOld };
  const p = s.step();
  assert.equal(s.status?.phase, 'Preflight');
  const pre = s.status?.conditions?.find((c) => c.type === 'PreflightPassed');
  assert.deepEqual([pre?.status, pre?.reason], ['False', 'KubeadmPreflightFailed']);
  assert.match(pre!.message, /Node\/w1: kubelet v1\.32\.0 is 4 minors older/);
  assert.equal(s.status?.kubeadmPreflight?.blocking, 1);
  assert.equal(p.actions.filter((a) => a.kind === 'callDriver').length, 0);
  assert.ok(p.requeueAfterMs !== undefined, 'checked again');
  assert.deepEqual(p.actions.filter((a) => a.kind === 'event').map((a) => a.kind === 'event' && a.reason), ['Started', 'KubeletTooOld']);
  // The same verdict again: no second event.
  assert.deepEqual(s.step().actions.filter((a) => a.kind === 'event').map((a) => a.kind === 'event' && a.reason), []);
  s.extra = { ...s.extra, kubeadm: { ...tooOld, nodes: [{ name: 'w1', kubeletVersion: 'v1.33.0' }], servers: [server({ deprecated: [{ group: '', version: 'v1', resource: 'endpoints', subresource: '', removedRelease: '' }] })] } };
  s.step();
  assert.notEqual(s.status?.phase, 'Preflight');
  assert.equal(s.status?.conditions?.find((c) => c.type === 'PreflightPassed')?.status, 'True');
  assert.equal(s.status?.conditions?.find((c) => c.type === 'KubeadmPreflightPassed')?.reason, 'PassedWithWarnings');
});

test('the planner: not read, or not a kubeadm cluster with the webhook driver: no kubeadm report at all', () => {
  for (const kubeadm of [undefined, { configMap: 'absent' } as ObservedKubeadm]) {
    const s = new Sim([peer('cp-1', OLD, 'on')], spec());
    s.extra = { ...s.extra, storage: [storage(OLD)], ...(kubeadm ? { kubeadm } : {}) };
    s.step();
    assert.equal(s.status?.kubeadmPreflight, undefined);
    assert.equal(s.status?.conditions?.find((c) => c.type === 'KubeadmPreflightPassed'), undefined);
    assert.equal(s.status?.conditions?.find((c) => c.type === 'PreflightPassed')?.status, 'True');
  }
});
