// The kube-apiserver image a node keeps (src/plan/policy.ts nodeImageVerdict, src/plan/kubeadm-preflight.ts
// apiserverImageFindings): without spec.driver.staticPod.image the static Pod driver pulls the repository each node
// runs at the target tag, so preflight refuses, per node, a repository the operator's policy does not list — the
// chart's admission policy would deny that Job at call time, halfway through a run. Allowed: listed in
// apiserverImages, or, only with the explicit opt-in anyKubeApiserverRepository, any <registry>/<path>/kube-apiserver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ApiServerUpgradeSpec } from '../../src/api/types.generated.ts';
import { plan } from '../../src/plan/index.ts';
import { brokenPolicy, nodeImageVerdict, parseImageRef, parsePolicy, PolicyError, type Policy } from '../../src/plan/policy.ts';
import { apiserverImageFindings, kubeadmPreflightReport, type ObservedKubeadm, type ObservedKubeadmServer } from '../../src/plan/kubeadm-preflight.ts';
import { targetImage } from '../../src/drivers/static-pod.ts';
import { NEW, OLD, Sim, kubeadmFacts, peer, spec as baseSpec, storage } from './fleet.ts';

const UPSTREAM = 'registry.k8s.io/kube-apiserver';
const MIRROR = 'registry.example.internal/k8s/kube-apiserver';
const SHA = `sha256:${'c'.repeat(64)}`;

/** The chart's default policy: kubeadm's paths, the upstream repository, the opt-in as given. */
function policy(apiserverImages: Record<string, string>[] = [{ repository: UPSTREAM }], any = false): Policy {
  return parsePolicy({
    apiserverImages, anyKubeApiserverRepository: any,
    manifestPaths: [{ path: '/etc/kubernetes/manifests/kube-apiserver.yaml' }], backupDirs: [{ prefix: '/etc/kubernetes/apiserver-upgrade-backup' }], peerCAFiles: [{ path: '/etc/kubernetes/pki/ca.crt' }],
  }, '/etc/policy.yaml');
}

const allowed = (p: Policy, running: string, version = NEW): boolean => nodeImageVerdict(p, running, version).allowed;

test('the policy file: anyKubeApiserverRepository is an explicit boolean, off when absent; a broken policy never has it', () => {
  assert.equal(parsePolicy({}, 'f').anyKubeApiserverRepository, false);
  assert.equal(parsePolicy({ anyKubeApiserverRepository: null }, 'f').anyKubeApiserverRepository, false);
  assert.equal(parsePolicy({ anyKubeApiserverRepository: true }, 'f').anyKubeApiserverRepository, true);
  for (const bad of ['true', 1, 'yes', [], {}]) assert.throws(() => parsePolicy({ anyKubeApiserverRepository: bad }, 'f'), (e: unknown) => e instanceof PolicyError && /anyKubeApiserverRepository: must be true or false/.test(e.message), JSON.stringify(bad));
  assert.equal(brokenPolicy('f', 'x').anyKubeApiserverRepository, false);
});

test('the image judged is the one the driver pulls: the node\'s repository as written, at the target tag (a digest dropped)', () => {
  assert.deepEqual(nodeImageVerdict(policy(), `${UPSTREAM}:${OLD}`, NEW), { allowed: true, image: `${UPSTREAM}:${NEW}`, repository: UPSTREAM, by: 'apiserverImages' });
  assert.deepEqual(nodeImageVerdict(policy(), `${UPSTREAM}:${OLD}@${SHA}`, NEW), { allowed: true, image: `${UPSTREAM}:${NEW}`, repository: UPSTREAM, by: 'apiserverImages' });
  assert.deepEqual(nodeImageVerdict(policy(), `${MIRROR}:${OLD}`, NEW), { allowed: false, image: `${MIRROR}:${NEW}`, repository: MIRROR, why: 'NotListed' });
  assert.deepEqual(nodeImageVerdict(policy([{ repository: MIRROR }]), `${MIRROR}:${OLD}`, NEW).allowed, true);
  // A repository under a listed prefix, by whole path components.
  assert.equal(allowed(policy([{ repositoryPrefix: 'registry.example.internal/k8s' }]), `${MIRROR}:${OLD}`), true);
  assert.equal(allowed(policy([{ repositoryPrefix: 'registry.example.internal/k8' }]), `${MIRROR}:${OLD}`), false);
  // Nothing listed: nothing allowed.
  assert.equal(allowed(policy([]), `${UPSTREAM}:${OLD}`), false);
  // What the policy cannot parse is refused (unknown is unsafe): upper case in the path, a space, an empty reference.
  for (const bad of ['registry.k8s.io/Kube-apiserver:v1.35.4', 'registry.k8s.io/kube apiserver:v1', '', 'registry.k8s.io//kube-apiserver:v1']) {
    const v = nodeImageVerdict(policy(), bad, NEW);
    assert.equal(v.allowed, false, bad);
    assert.equal(!v.allowed && v.why, 'Unparseable', bad);
  }
});

test('look-alikes of a listed repository are not it; spellings of the same repository are', () => {
  const p = policy();
  for (const lookAlike of [
    'registry.k8s.io.evil.example/kube-apiserver', 'evil.example/registry.k8s.io/kube-apiserver', 'registry.k8s.io/kube-apiserver-evil', 'registry.k8s.io/kube-apiserver/evil',
    'registry.k8s.io/evil/kube-apiserver', 'registry.k8s.io:443/kube-apiserver', 'registry.k8s.io:5000/kube-apiserver', 'k8s.io/kube-apiserver', 'registry-k8s.io/kube-apiserver',
    'kube-apiserver', 'library/kube-apiserver',
  ]) assert.equal(allowed(p, `${lookAlike}:${OLD}`), false, lookAlike);
  // The registry host is a DNS name: its case does not matter (the runtimes and the admission policy read it so).
  for (const same of ['REGISTRY.K8S.IO/kube-apiserver', 'Registry.K8s.Io/kube-apiserver']) assert.equal(allowed(p, `${same}:${OLD}`), true, same);
  // Docker Hub: `kube-apiserver` is docker.io/library/kube-apiserver, index.docker.io is docker.io.
  const hub = policy([{ repository: 'docker.io/library/kube-apiserver' }]);
  for (const same of ['kube-apiserver', 'library/kube-apiserver', 'docker.io/kube-apiserver', 'index.docker.io/library/kube-apiserver', 'INDEX.DOCKER.IO/library/kube-apiserver']) assert.equal(allowed(hub, `${same}:${OLD}`), true, same);
  for (const other of ['index.docker.io.evil.example/library/kube-apiserver', 'docker.io/evil/kube-apiserver', 'docker.com/library/kube-apiserver']) assert.equal(allowed(hub, `${other}:${OLD}`), false, other);
});

test('the opt-in: any <registry>/<path>/kube-apiserver at a version tag, and nothing that is not named kube-apiserver', () => {
  const any = policy([{ repository: UPSTREAM }], true);
  for (const r of [MIRROR, 'evil.example/x/kube-apiserver', 'kube-apiserver', 'localhost:5000/kube-apiserver']) {
    assert.equal(allowed(policy(), `${r}:${OLD}`), false, `${r} without the opt-in`);
    const v = nodeImageVerdict(any, `${r}:${OLD}`, NEW);
    assert.deepEqual([v.allowed, v.allowed && v.by], [true, 'anyKubeApiserverRepository'], r);
  }
  for (const r of ['registry.k8s.io/kube-apiserver-evil', 'evil.example/x/kube-apiserver2', 'evil.example/kube-apiserver/shell', 'evil.example/x/not-apiserver', 'evil.example/xkube-apiserver']) {
    assert.equal(allowed(any, `${r}:${OLD}`), false, r);
  }
  // The admission policy admits such an image only at a version tag.
  assert.equal(allowed(any, `${MIRROR}:${OLD}`, 'latest'), false);
  assert.equal(allowed(any, `${MIRROR}:${OLD}`, 'v1.36.3-rc.1'), true);
  // A listed repository stays allowed by the list, whatever the opt-in says.
  assert.deepEqual(nodeImageVerdict(any, `${UPSTREAM}:${OLD}`, NEW), { allowed: true, image: `${UPSTREAM}:${NEW}`, repository: UPSTREAM, by: 'apiserverImages' });
});

// ---------------------------------------------------------------------------------------------------------
// Generated

const component = fc.stringMatching(/^[a-z0-9]{1,8}([._-][a-z0-9]{1,6}){0,2}$/);
const host = fc.tuple(fc.array(fc.stringMatching(/^[a-z0-9]{1,10}$/), { minLength: 1, maxLength: 3 }), fc.constantFrom('com', 'io', 'internal', 'example'), fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }))
  .map(([labels, tld, port]) => `${[...labels, tld].join('.')}${port === undefined ? '' : `:${port}`}`);
/** A repository with an explicit registry host: `<host>/<path>/kube-apiserver` or another last component. */
const repository = fc.tuple(host, fc.array(component, { maxLength: 3 }), fc.oneof(fc.constant('kube-apiserver'), component)).map(([h, path, last]) => [h, ...path, last].join('/'));
const version = fc.tuple(fc.integer({ min: 1, max: 1 }), fc.integer({ min: 28, max: 40 }), fc.integer({ min: 0, max: 30 })).map(([a, b, c]) => `v${a}.${b}.${c}`);
const runningTag = fc.option(fc.oneof(version, fc.stringMatching(/^[a-z0-9][a-z0-9.-]{0,10}$/)), { nil: undefined });
const running = (repo: string, tag: string | undefined, digest: boolean): string => `${repo}${tag === undefined ? '' : `:${tag}`}${digest ? `@${SHA}` : ''}`;

/** Changes that make another repository that a string comparison could take for `repo`. */
const lookAlike = fc.constantFrom(
  (r: string) => r.replace(/^([^/:]+)/, '$1.evil.example'),
  (r: string) => `evil.example/${r}`,
  (r: string) => `${r}-evil`,
  (r: string) => `${r}/evil`,
  (r: string) => r.replace(/\/([^/]+)$/, '/evil/$1'),
  (r: string) => r.replace(/^([^/:]+)(:\d+)?\//, '$1:1/'),
  (r: string) => r.replace(/^[^/]+\//, 'docker.io/'),
);

test('generated: a listed repository is allowed on any spelling of its registry host\'s case; every look-alike is refused', () => {
  fc.assert(fc.property(repository, runningTag, fc.boolean(), lookAlike, fc.boolean(), (repo, tag, digest, alike, any) => {
    const p = policy([{ repository: repo }], any);
    assert.equal(allowed(p, running(repo, tag, digest)), true, repo);
    const upper = repo.replace(/^[^/]+/, (h) => h.toUpperCase());
    assert.equal(allowed(p, running(upper, tag, digest)), true, upper);
    const other = alike(repo);
    if (other.toLowerCase() === repo.toLowerCase()) return;
    const v = nodeImageVerdict(p, running(other, tag, digest), NEW);
    // The opt-in admits other repositories by their name alone; without it, nothing but the list.
    const parses = ((): boolean => { try { parseImageRef(other); return true; } catch { return false; } })();
    assert.equal(v.allowed, any && parses && other.endsWith('/kube-apiserver'), `${other} vs ${repo}`);
    if (v.allowed) assert.equal(v.by, 'anyKubeApiserverRepository');
  }), { numRuns: 2000 });
});

test('generated: with the opt-in, allowed exactly when listed or the last path component is kube-apiserver; without it, exactly when listed', () => {
  fc.assert(fc.property(repository, repository, runningTag, fc.boolean(), version, (listed, repo, tag, any, target) => {
    const p = policy([{ repository: listed }], any);
    const sameRepo = repo.toLowerCase() === listed.toLowerCase() || repo.replace(/^[^/]+/, (h) => h.toLowerCase()) === listed.replace(/^[^/]+/, (h) => h.toLowerCase());
    assert.equal(allowed(p, running(repo, tag, false), target), sameRepo || (any && repo.endsWith('/kube-apiserver')), `${repo} (listed ${listed}, opt-in ${any})`);
  }), { numRuns: 2000 });
});

test('generated: the image judged is exactly the image the static Pod driver builds (src/drivers/static-pod.ts targetImage)', () => {
  fc.assert(fc.property(repository, runningTag, fc.boolean(), version, (repo, tag, digest, target) => {
    const r = running(repo, tag, digest);
    const driver = targetImage('', r, target);
    const v = nodeImageVerdict(policy([{ repository: repo }]), r, target);
    assert.ok('image' in driver, JSON.stringify(driver));
    assert.equal(v.image, driver.image);
  }), { numRuns: 1000 });
});

// ---------------------------------------------------------------------------------------------------------
// The preflight finding

function server(image: string | undefined, host = 'cp-1'): ObservedKubeadmServer {
  return {
    hostname: host, etcd: { status: 200, body: 'ok' }, certificate: { ok: true, dnsNames: ['kubernetes.default.svc'], notAfter: '2027-12-01T00:00:00Z' }, deprecated: [],
    mirrorPod: { name: `kube-apiserver-${host}`, nodeName: host, ...(image === undefined ? {} : { image }) },
  };
}

test('the finding names the node, the image its Job would pull, and the settings to change', () => {
  assert.deepEqual(apiserverImageFindings(server(`${UPSTREAM}:${OLD}`), policy(), NEW), []);
  const [f] = apiserverImageFindings(server(`${MIRROR}:${OLD}`, 'cp-2'), policy(), NEW);
  assert.deepEqual([f?.check, f?.severity, f?.reason, f?.object], ['ApiserverImage', 'Block', 'ApiserverImageNotAllowed', 'Pod kube-system/kube-apiserver-cp-2']);
  assert.match(f!.message, /^node cp-2 runs "registry\.example\.internal\/k8s\/kube-apiserver:v1\.35\.4": its agent Job would pull registry\.example\.internal\/k8s\/kube-apiserver:v1\.36\.3, whose repository registry\.example\.internal\/k8s\/kube-apiserver the operator's policy does not allow \(apiserverImages: allowed: repository registry\.k8s\.io\/kube-apiserver\)/);
  assert.match(f!.message, /list its repository in the chart's policy\.apiserverImages/);
  assert.match(f!.message, /admissionPolicy\.anyKubeApiserverRepository: true/);
  // With the opt-in on, a repository not named kube-apiserver: said so.
  const [g] = apiserverImageFindings(server(`registry.example.internal/k8s/apiserver:${OLD}`), policy([], true), NEW);
  assert.match(g!.message, /anyKubeApiserverRepository is on but allows only <registry>\/<path>\/kube-apiserver at a version tag/);
  // No image in the mirror Pod, or one the policy cannot parse: unknown, blocking.
  assert.deepEqual(apiserverImageFindings(server(undefined), policy(), NEW).map((x) => [x.reason, x.severity]), [['ApiserverImageUnknown', 'Block']]);
  assert.deepEqual(apiserverImageFindings(server('Registry.k8s.io/Kube-Apiserver:v1'), policy(), NEW).map((x) => x.reason), ['ApiserverImageUnknown']);
  // No mirror Pod at all: the NodeName check blocks (the driver reads the repository from that Pod).
  const { mirrorPod: _, ...none } = server(undefined);
  assert.deepEqual(apiserverImageFindings(none, policy(), NEW), []);
  const report = kubeadmPreflightReport({ observed: { configMap: 'present', nodes: [], servers: [none] }, targetVersion: NEW, staticPod: true, now: new Date(), apiserverImages: policy() });
  assert.deepEqual(report.findings?.map((x) => x.reason), ['MirrorPodNotFound']);
});

test('the report: one finding per node not allowed, only for the static Pod driver and only when asked (a policy, no spec image)', () => {
  const observed: ObservedKubeadm = { configMap: 'present', nodes: [], servers: [server(`${UPSTREAM}:${OLD}`, 'cp-1'), server(`${MIRROR}:${OLD}`, 'cp-2'), server(`${MIRROR}:${OLD}`, 'cp-3')] };
  const r = kubeadmPreflightReport({ observed, targetVersion: NEW, staticPod: true, now: new Date(), apiserverImages: policy() });
  assert.deepEqual(r.findings?.map((x) => [x.check, x.object]), [['ApiserverImage', 'Pod kube-system/kube-apiserver-cp-2'], ['ApiserverImage', 'Pod kube-system/kube-apiserver-cp-3']]);
  assert.equal(r.blocking, 2);
  assert.equal(kubeadmPreflightReport({ observed, targetVersion: NEW, staticPod: true, now: new Date() }).blocking, 0, 'not asked');
  assert.equal(kubeadmPreflightReport({ observed, targetVersion: NEW, staticPod: false, now: new Date(), apiserverImages: policy() }).blocking, 0, 'the webhook driver pulls no image');
});

/** The fleet simulation, planning with a policy as the reconciler does. */
class PolicySim extends Sim {
  policy: Policy | undefined;

  override step(advanceMs = 1000): ReturnType<Sim['step']> {
    this.now = new Date(this.now.getTime() + advanceMs);
    const healthy = { analysis: { time: this.now.toISOString(), verdict: 'Healthy' as const, signals: {}, breaches: [] } };
    const flagProof = this.proofs.observe(this.spec, this.status, this.peers, this.now);
    this.last = plan(this.upgrade, this.spec, this.status, { peers: this.peers, ...healthy, ...(flagProof ? { flagProof } : {}), ...this.extra }, this.now, this.policy);
    this.proofs.apply(this.last.actions, this.now);
    this.status = this.last.status;
    return this.last;
  }
}

function staticPodSpec(image?: string): ApiServerUpgradeSpec {
  return baseSpec({ driver: { staticPod: { ...(image === undefined ? {} : { image }) } } });
}

/** kubeadm facts of three nodes whose mirror Pods run `repos[i]` at the old version. */
function facts(repos: string[]): ObservedKubeadm {
  const f = kubeadmFacts(repos.length);
  return { ...f, servers: f.servers!.map((s, i) => ({ ...s, mirrorPod: { ...s.mirrorPod!, image: `${repos[i]}:${OLD}` } })) };
}

function run(sim: PolicySim, steps: number): string[] {
  const calls: string[] = [];
  for (let i = 0; i < steps; i++) {
    sim.step();
    calls.push(...sim.calls());
    sim.applyDriverCalls();
    if (['Succeeded', 'RolledBack', 'Failed', 'Paused'].includes(sim.status?.phase ?? '')) break;
  }
  return calls;
}

test('the planner: a node on an unlisted repository keeps the upgrade in Preflight (a wait, no call, no Job), naming it; listed, the upgrade runs', () => {
  const sim = new PolicySim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on'), peer('cp-3', OLD, 'on')], staticPodSpec());
  sim.policy = policy();
  sim.extra = { ...sim.extra, storage: [storage(OLD), storage(NEW)], kubeadm: facts([UPSTREAM, MIRROR, UPSTREAM]) };
  assert.deepEqual(run(sim, 8), []);
  assert.equal(sim.status?.phase, 'Preflight');
  assert.equal(sim.status?.plan, undefined, 'no plan frozen');
  const pre = sim.condition('PreflightPassed');
  assert.deepEqual([pre?.status, pre?.reason], ['False', 'KubeadmPreflightFailed']);
  assert.match(pre!.message, /kubeadm preflight: Pod kube-system\/kube-apiserver-cp-2: node cp-2 runs "registry\.example\.internal\/k8s\/kube-apiserver:v1\.35\.4"/);
  assert.equal(sim.condition('KubeadmPreflightPassed')?.reason, 'ApiserverImageNotAllowed');
  assert.deepEqual(sim.status?.kubeadmPreflight?.findings?.map((f) => [f.check, f.reason, f.object]), [['ApiserverImage', 'ApiserverImageNotAllowed', 'Pod kube-system/kube-apiserver-cp-2']]);
  assert.ok(sim.last.requeueAfterMs !== undefined, 'checked again: the policy may change');
  // The admin lists the mirror (the ConfigMap the policy file is mounted from): preflight passes by itself.
  sim.policy = policy([{ repository: UPSTREAM }, { repository: MIRROR }]);
  assert.deepEqual(run(sim, 60), ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.equal(sim.status?.phase, 'Succeeded');
});

test('the planner: the opt-in lets each node keep its kube-apiserver repository; without a policy nothing is judged; a spec image is judged as a field', () => {
  for (const p of [policy([{ repository: UPSTREAM }], true), undefined]) {
    const sim = new PolicySim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on'), peer('cp-3', OLD, 'on')], staticPodSpec());
    sim.policy = p;
    sim.extra = { ...sim.extra, storage: [storage(OLD), storage(NEW)], kubeadm: facts([MIRROR, 'evil.example/x/kube-apiserver', UPSTREAM]) };
    assert.deepEqual(run(sim, 60), ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3'], String(p?.anyKubeApiserverRepository));
  }
  // spec.driver.staticPod.image names the repository every node moves to: the nodes' own are not pulled, and the
  // spec's is judged by the list alone — the opt-in never widens it, even for the nodes' own repository.
  const sim = new PolicySim([peer('cp-1', OLD, 'on')], staticPodSpec(MIRROR));
  sim.policy = policy([{ repository: UPSTREAM }], true);
  sim.extra = { ...sim.extra, storage: [storage(OLD), storage(NEW)], kubeadm: facts([MIRROR]) };
  assert.deepEqual(run(sim, 5), []);
  assert.equal(sim.condition('PreflightPassed')?.reason, 'NotAllowedByPolicy');
  assert.match(sim.condition('PreflightPassed')!.message, /spec\.driver\.staticPod\.image "registry\.example\.internal\/k8s\/kube-apiserver" .*matches no entry of apiserverImages/);
});
