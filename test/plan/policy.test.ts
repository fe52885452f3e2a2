// The operator's policy (src/plan/policy.ts, docs/policy.md): parsing, the image and URL matching with the
// edge cases a string comparison gets wrong, token bindings, and the planner refusing a spec outside it —
// at preflight, and in a run under way — without a single driver call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiServerUpgradeSpec } from '../../src/api/types.generated.ts';
import { resolveSpec } from '../../src/api/defaults.ts';
import { plan, RESUME_ANNOTATION, ABORT_ANNOTATION } from '../../src/plan/index.ts';
import {
  brokenPolicy, checkSpec, describeViolations, formatImageRef, parseHookUrl, parseImageRef, parsePolicy, PolicyError, type Policy, type PolicyViolation,
} from '../../src/plan/policy.ts';
import { Sim, peer, spec as baseSpec, OLD, NEW } from './fleet.ts';
import { reconcileContext, whatToRead } from '../../src/plan/reconcile.ts';

const HOOK = 'https://hooks.example.com/v1/replace';
const SHA = `sha256:${'a'.repeat(64)}`;
const SHA2 = `sha256:${'b'.repeat(64)}`;

function policy(doc: Record<string, unknown>): Policy {
  return parsePolicy(doc, '/etc/policy.yaml');
}

/** The chart's default node paths: kubeadm's manifests and PKI folders, the CRD's default backup folder. */
const KUBEADM_PATHS = {
  manifestPaths: [{ prefix: '/etc/kubernetes/manifests' }],
  backupDirs: [{ prefix: '/etc/kubernetes/apiserver-upgrade-backup' }],
  peerCAFiles: [{ prefix: '/etc/kubernetes/pki' }],
};

/** A policy of agent images only, with the CRD's default kube-apiserver repository and kubeadm's paths allowed. */
function agents(...rules: Record<string, string>[]): Policy {
  return policy({ apiserverImages: [{ repository: 'registry.k8s.io/kube-apiserver' }], agentImages: rules, ...KUBEADM_PATHS });
}

function webhook(url: string, authSecretRef?: { namespace: string; name: string; key?: string }): ApiServerUpgradeSpec {
  return baseSpec({ driver: { webhook: { url, ...(authSecretRef ? { authSecretRef } : {}) } } });
}

function staticPod(agentImage: string, image = 'registry.k8s.io/kube-apiserver'): ApiServerUpgradeSpec {
  return baseSpec({ driver: { staticPod: { image, agentImage } } });
}

const check = (p: Policy, s: ApiServerUpgradeSpec): PolicyViolation[] => checkSpec(p, resolveSpec(s));
const allowed = (p: Policy, s: ApiServerUpgradeSpec): boolean => check(p, s).length === 0;

// ---------------------------------------------------------------------------------------------------------
// Parsing the policy

test('policy: an empty document allows nothing of any kind; every list is optional', () => {
  for (const doc of [null, undefined, {}]) {
    const p = parsePolicy(doc, 'f');
    assert.deepEqual([p.apiserverImages, p.agentImages, p.webhooks, p.webhookTokens, p.manifestPaths, p.backupDirs, p.peerCAFiles, p.prometheusAddresses], [[], [], [], [], [], [], [], []]);
    assert.equal(allowed(p, webhook(HOOK)), false);
    assert.equal(allowed(p, staticPod('busybox:1.36')), false);
  }
  const full = policy({ apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'OperatorPolicy', webhooks: [{ url: HOOK }] });
  assert.equal(full.webhooks.length, 1);
});

test('policy: without spec.driver.staticPod.agentImage the operator\'s own image runs the agent, which no spec chose: nothing to judge', () => {
  const p = policy({ apiserverImages: [{ repository: 'registry.k8s.io/kube-apiserver' }], agentImages: [], ...KUBEADM_PATHS });
  assert.equal(allowed(p, staticPod('')), true);
  assert.equal(allowed(p, staticPod('busybox:1.36')), false, 'an image the spec names is judged');
});

test('policy: a malformed entry is an error naming it, never ignored', () => {
  const cases: [unknown, RegExp][] = [
    ['webhooks: []', /must be a mapping/],
    [{ webhook: [] }, /policy: unknown field "webhook"/],
    [{ apiVersion: 'v1' }, /apiVersion: must be upgrade\.apiserver\.dev\/v1alpha1/],
    [{ kind: 'Policy' }, /kind: must be OperatorPolicy/],
    [{ webhooks: { url: HOOK } }, /webhooks: must be a list/],
    [{ webhooks: [HOOK] }, /webhooks\[0\]: must be an object/],
    [{ webhooks: [{ url: HOOK, prefix: HOOK }] }, /webhooks\[0\]: must set exactly one of url, prefix/],
    [{ webhooks: [{ uri: HOOK }] }, /webhooks\[0\]: unknown field "uri"/],
    [{ webhooks: [{ url: '' }] }, /webhooks\[0\]\.url: must be a non-empty string/],
    [{ webhooks: [{ url: 'http://hooks.example.com/x' }] }, /webhooks\[0\]\.url: .* uses http, not https/],
    [{ webhooks: [{ prefix: 'https://hooks.example.com/v1/?a=b' }] }, /webhooks\[0\]\.prefix: .* has a query/],
    [{ webhooks: [{ prefix: 'https://user@hooks.example.com/' }] }, /has userinfo/],
    [{ webhooks: [{ prefix: 'hooks.example.com/v1/' }] }, /is not a URL/],
    [{ apiserverImages: [{ image: 'registry.k8s.io/kube-apiserver:v1.36.3' }] }, /apiserverImages\[0\]: unknown field "image"/],
    [{ apiserverImages: [{ repository: 'registry.k8s.io/kube-apiserver:v1.36.3' }] }, /apiserverImages\[0\]\.repository: .* without tag or digest/],
    [{ agentImages: [{ image: 'busybox' }] }, /agentImages\[0\]\.image: "busybox" has neither tag nor digest/],
    [{ agentImages: [{ image: 'busybox@sha256:abc' }] }, /agentImages\[0\]\.image: .* digest that is not sha256/],
    [{ agentImages: [{ repositoryPrefix: 'library' }] }, /agentImages\[0\]\.repositoryPrefix: "library" must start with its registry host/],
    [{ agentImages: [{ repositoryPrefix: 'registry.example.com/tools:1' }] }, /without tag or digest/],
    [{ agentImages: [{ repository: 'registry.example.com/Tools/agent' }] }, /"Tools" .* is not a repository path component/],
    [{ webhookTokens: [{ secret: { namespace: 'a', name: 'b' } }] }, /webhookTokens\[0\]\.urls: must list at least one/],
    [{ webhookTokens: [{ secret: { namespace: 'a' }, urls: [{ url: HOOK }] }] }, /webhookTokens\[0\]\.secret\.name: must be a non-empty string/],
    [{ webhookTokens: [{ secret: { namespace: 'a', name: 'b', keys: 'x' }, urls: [{ url: HOOK }] }] }, /webhookTokens\[0\]\.secret: unknown field "keys"/],
  ];
  for (const [doc, why] of cases) {
    assert.throws(() => parsePolicy(doc, 'f'), (err: unknown) => err instanceof PolicyError && why.test(err.message), `${JSON.stringify(doc)} should fail with ${why}`);
  }
});

// ---------------------------------------------------------------------------------------------------------
// Image references

test('image references: parsed by the distribution grammar and normalised as the runtimes read them', () => {
  const norm = (r: string): string => formatImageRef(parseImageRef(r));
  assert.equal(norm('busybox'), 'docker.io/library/busybox');
  assert.equal(norm('busybox:1.36'), 'docker.io/library/busybox:1.36');
  assert.equal(norm('index.docker.io/library/busybox:1.36'), 'docker.io/library/busybox:1.36');
  assert.equal(norm('docker.io/busybox:1.36'), 'docker.io/library/busybox:1.36');
  assert.equal(norm('myorg/agent:v1'), 'docker.io/myorg/agent:v1');
  assert.equal(norm('Registry.Example.COM/team/agent:v1'), 'registry.example.com/team/agent:v1', 'the registry host is case-insensitive');
  assert.equal(norm('localhost:5000/agent'), 'localhost:5000/agent');
  assert.equal(norm('[::1]:5000/agent:v1'), '[::1]:5000/agent:v1');
  assert.equal(norm(`registry.k8s.io/kube-apiserver:v1.36.3@${SHA}`), `registry.k8s.io/kube-apiserver:v1.36.3@${SHA}`);
  assert.equal(norm('registry.example.com:5000/a/b__c/d-e.f'), 'registry.example.com:5000/a/b__c/d-e.f');
  for (const bad of ['', 'registry.example.com/team/../agent', 'registry.example.com//agent', 'registry.example.com/Team/agent', 'registry.example.com/team/agent:',
    'registry.example.com/team/agent@sha256:ABC', `registry.example.com/agent@sha256:${'A'.repeat(64)}`, `registry.example.com/agent@md5:${'a'.repeat(32)}`,
    'registry.example.com/a..b', 'registry.example.com/-agent', 'registry.example.com/agent:-tag', 'registry.example.com/team agent', `r.example.com/${'a'.repeat(256)}`]) {
    assert.throws(() => parseImageRef(bad), PolicyError, JSON.stringify(bad));
  }
});

test('agentImages: an exact image matches only itself (tag, digest, repository), however it is spelled', () => {
  const p = agents({ image: 'busybox:1.36' });
  for (const ok of ['busybox:1.36', 'docker.io/library/busybox:1.36', 'index.docker.io/library/busybox:1.36', 'docker.io/busybox:1.36']) assert.ok(allowed(p, staticPod(ok)), ok);
  for (const no of ['busybox', 'busybox:latest', 'busybox:1.37', `busybox:1.36@${SHA}`, 'evil.example.com/library/busybox:1.36', 'docker.io/evil/busybox:1.36', 'busybox:1.36-evil']) {
    assert.ok(!allowed(p, staticPod(no)), no);
  }
  const v = check(p, staticPod('evil.example.com/root-shell:latest'));
  assert.deepEqual(v.map((x) => [x.field, x.rule]), [['spec.driver.staticPod.agentImage', 'agentImages']]);
  assert.match(v[0]!.message, /spec\.driver\.staticPod\.agentImage "evil\.example\.com\/root-shell:latest" .* matches no entry of agentImages \(allowed: image busybox:1\.36\)/);

  const pinned = agents({ image: `registry.example.com/tools/agent:v1@${SHA}` });
  for (const ok of [`registry.example.com/tools/agent@${SHA}`, `registry.example.com/tools/agent:v1@${SHA}`]) assert.ok(allowed(pinned, staticPod(ok)), ok);
  for (const no of ['registry.example.com/tools/agent:v1', `registry.example.com/tools/agent@${SHA2}`, `registry.example.com/tools/agent:v2@${SHA}`]) assert.ok(!allowed(pinned, staticPod(no)), no);
  const digestOnly = agents({ image: `registry.example.com/tools/agent@${SHA}` });
  assert.ok(allowed(digestOnly, staticPod(`registry.example.com/tools/agent:anything@${SHA}`)), 'the digest decides what runs');
});

test('agentImages: a repository allows its tags and digests; a prefix whole path components of one registry', () => {
  const repo = agents({ repository: 'registry.example.com/tools/agent' });
  for (const ok of ['registry.example.com/tools/agent', 'registry.example.com/tools/agent:v9', `registry.example.com/tools/agent@${SHA}`, 'REGISTRY.example.com/tools/agent:v1']) assert.ok(allowed(repo, staticPod(ok)), ok);
  for (const no of ['registry.example.com/tools/agent-evil:v1', 'registry.example.com/tools/agent/sub:v1', 'registry.example.com/tools:v1', 'registry.example.com:443/tools/agent:v1']) assert.ok(!allowed(repo, staticPod(no)), no);

  const prefix = agents({ repositoryPrefix: 'registry.example.com/tools/' });
  for (const ok of ['registry.example.com/tools/agent:v1', 'registry.example.com/tools/a/b/c:v1', `registry.example.com/tools/x@${SHA}`, 'registry.example.com/tools:v1']) assert.ok(allowed(prefix, staticPod(ok)), ok);
  for (const no of ['registry.example.com/toolsx/agent:v1', 'registry.example.com:5000/tools/agent:v1', 'registry.example.com.evil.net/tools/agent:v1',
    'evil.net/registry.example.com/tools/agent:v1', 'registry.example.com/other/tools/agent:v1']) {
    assert.ok(!allowed(prefix, staticPod(no)), no);
  }
  const registry = agents({ repositoryPrefix: 'registry.example.com' });
  assert.ok(allowed(registry, staticPod('registry.example.com/anything/at/all:v1')));
  assert.ok(!allowed(registry, staticPod('registry.example.com:5000/anything:v1')), 'another port is another registry');
  const hub = agents({ repositoryPrefix: 'docker.io/library' });
  assert.ok(allowed(hub, staticPod('busybox:1.36')), 'Docker Hub official images are docker.io/library/...');
  assert.ok(!allowed(hub, staticPod('evil/busybox:1.36')));
});

test('apiserverImages: the kube-apiserver repository (its tag is the target version), never a tag or digest in the spec', () => {
  const p = policy({ apiserverImages: [{ repository: 'registry.k8s.io/kube-apiserver' }, { repositoryPrefix: 'mirror.example.com/k8s' }], agentImages: [{ image: 'busybox:1.36' }], ...KUBEADM_PATHS });
  assert.ok(allowed(p, staticPod('busybox:1.36')), 'the CRD default image, registry.k8s.io/kube-apiserver');
  assert.ok(allowed(p, staticPod('busybox:1.36', 'mirror.example.com/k8s/kube-apiserver')));
  for (const no of ['registry.k8s.io/kube-apiserver-evil', 'evil.example.com/kube-apiserver', 'registry.k8s.io/kube-scheduler', 'mirror.example.com/k8s2/kube-apiserver']) {
    const v = check(p, staticPod('busybox:1.36', no));
    assert.deepEqual(v.map((x) => [x.field, x.rule]), [['spec.driver.staticPod.image', 'apiserverImages']], no);
  }
  const tagged = check(p, staticPod('busybox:1.36', 'registry.k8s.io/kube-apiserver:v1.30.0'));
  assert.match(tagged[0]!.message, /must be a repository without tag or digest/);
  // Both fields wrong: both named.
  assert.deepEqual(check(p, staticPod('evil/agent:1', 'evil.example.com/kube-apiserver')).map((x) => x.field), ['spec.driver.staticPod.image', 'spec.driver.staticPod.agentImage']);
});

// ---------------------------------------------------------------------------------------------------------
// Webhook URLs

test('URLs are compared parsed (as node requests them), never as strings', () => {
  assert.equal((parseHookUrl('https://HOOKS.Example.com:443/v1/./a/../replace') as URL).href, HOOK);
  assert.match(parseHookUrl('https://hooks.example.com@evil.net/v1/') as string, /has userinfo .* the host is evil\.net/);
  assert.match(parseHookUrl('https://hooks.example.com:x@evil.net/v1/') as string, /has userinfo/);
  assert.match(parseHookUrl('http://hooks.example.com/v1/') as string, /uses http, not https/);
  assert.match(parseHookUrl('https://hooks.example.com/v1/#frag') as string, /fragment/);
  assert.match(parseHookUrl('https://hooks.example.com/v1/..%2Fadmin') as string, /encoded/);
  assert.match(parseHookUrl('https://hooks.example.com/v1/%5C..%5Cadmin') as string, /encoded/);
  assert.match(parseHookUrl('https://hooks.example.com/v1/%252e%252e/admin') as string, /encoded/);
  assert.match(parseHookUrl('not a url') as string, /is not a URL/);
});

test('webhooks: an exact URL matches only itself after normalisation (case, default port, dot segments)', () => {
  const p = policy({ webhooks: [{ url: HOOK }] });
  for (const ok of [HOOK, 'https://HOOKS.EXAMPLE.COM/v1/replace', 'https://hooks.example.com:443/v1/replace', 'https://hooks.example.com/v1/x/../replace', 'https://hooks.example.com/v1/./replace',
    'HTTPS://hooks.example.com/v1/replace']) {
    assert.ok(allowed(p, webhook(ok)), ok);
  }
  for (const no of ['https://hooks.example.com/v1/replace/', 'https://hooks.example.com/v1/replace?x=1', 'https://hooks.example.com/v1/Replace', 'https://hooks.example.com:8443/v1/replace',
    'https://hooks.example.com./v1/replace', 'https://hooks.example.com.evil.net/v1/replace', 'https://hooks.example.com@evil.net/v1/replace', 'https://evil.net/v1/replace#https://hooks.example.com/v1/replace',
    'https://hooks.example.com/v1/replace/..', 'https://evil.net/?https://hooks.example.com/v1/replace']) {
    assert.ok(!allowed(p, webhook(no)), no);
  }
  const v = check(p, webhook('https://hooks.example.com@evil.net/v1/replace'));
  assert.deepEqual(v.map((x) => [x.field, x.rule]), [['spec.driver.webhook.url', 'webhooks']]);
  assert.match(v[0]!.message, /has userinfo .* the host is evil\.net/);
});

test('webhooks: a prefix is an origin (scheme, host, port) and a path, matched by whole segments', () => {
  const p = policy({ webhooks: [{ prefix: 'https://hooks.example.com/v1/' }] });
  for (const ok of ['https://hooks.example.com/v1', 'https://hooks.example.com/v1/', 'https://hooks.example.com/v1/replace', 'https://hooks.example.com/v1/a/b?cluster=x',
    'https://hooks.example.com/v1/x/../y', 'https://hooks.example.com\\v1\\replace', 'https://hooks.example.com/v1//replace']) {
    assert.ok(allowed(p, webhook(ok)), ok);
  }
  for (const no of ['https://hooks.example.com/v1x/replace', 'https://hooks.example.com/v2/replace', 'https://hooks.example.com/', 'https://hooks.example.com/v1/../admin',
    'https://hooks.example.com/v1/%2e%2e/admin', 'https://hooks.example.com/v1/%2E%2E/admin', 'https://hooks.example.com/v1/..%2Fadmin', 'https://hooks.example.com/v1/%2e%2e%2fadmin',
    'https://hooks.example.com:8443/v1/replace', 'https://hooks.example.com:80/v1/replace', 'https://hooks.example.com.evil.net/v1/replace', 'https://hooks.example.com@evil.net/v1/replace',
    'https://evil.net\\@hooks.example.com/v1/replace', 'https://evil.net/v1/replace', 'https://hooks.example.com./v1/replace', 'https://HOOKS.example.com/V1/replace']) {
    assert.ok(!allowed(p, webhook(no)), no);
  }
  // No trailing slash in the rule: the same segments.
  const bare = policy({ webhooks: [{ prefix: 'https://hooks.example.com/v1' }] });
  assert.ok(allowed(bare, webhook('https://hooks.example.com/v1/replace')));
  assert.ok(!allowed(bare, webhook('https://hooks.example.com/v1x')));
  // The whole origin, ports and addresses as the URL parser writes them.
  const origin = policy({ webhooks: [{ prefix: 'https://127.0.0.1:8443/' }, { prefix: 'https://[::1]:8443/' }, { url: 'https://bücher.example/hook' }] });
  for (const ok of ['https://127.0.0.1:8443/anything', 'https://0x7f.0.0.1:8443/x', 'https://2130706433:8443/x', 'https://[0:0:0:0:0:0:0:1]:8443/x', 'https://xn--bcher-kva.example/hook', 'https://BÜCHER.example/hook']) {
    assert.ok(allowed(origin, webhook(ok)), ok);
  }
  for (const no of ['https://127.0.0.1:8444/x', 'https://127.0.0.2:8443/x', 'https://[::2]:8443/x', 'https://bucher.example/hook']) assert.ok(!allowed(origin, webhook(no)), no);
});

test('webhookTokens: a token Secret goes only to the URLs listed for it; an unlisted Secret goes nowhere', () => {
  const p = policy({
    webhooks: [{ url: 'https://open.example.com/replace' }],
    webhookTokens: [
      { secret: { namespace: 'auo', name: 'cpm-token' }, urls: [{ prefix: 'https://cpm.example.com/v1/' }] },
      { secret: { namespace: 'auo', name: 'keyed', key: 'bearer' }, urls: [{ url: 'https://keyed.example.com/replace' }] },
    ],
  });
  const cpm = { namespace: 'auo', name: 'cpm-token' };
  assert.ok(allowed(p, webhook('https://cpm.example.com/v1/replace', cpm)));
  assert.ok(allowed(p, webhook('https://cpm.example.com/v1/replace', { ...cpm, key: 'other-key' })), 'no key in the rule: any key of the Secret');
  assert.ok(allowed(p, webhook('https://cpm.example.com/v1/replace')), 'a URL a token may go to may be called without it');
  assert.ok(allowed(p, webhook('https://open.example.com/replace')), 'tokenless: webhooks');

  // An allowed URL without its token is allowed; with a token bound elsewhere it is not.
  const elsewhere = check(p, webhook('https://open.example.com/replace', cpm));
  assert.deepEqual(elsewhere.map((x) => [x.field, x.rule]), [['spec.driver.webhook.url', 'webhookTokens']]);
  assert.match(elsewhere[0]!.message, /is not a URL the Secret auo\/cpm-token key token may be sent to \(webhookTokens: allowed: prefix https:\/\/cpm\.example\.com\/v1\/\)/);
  const trick = check(p, webhook('https://cpm.example.com@evil.net/v1/replace', cpm));
  assert.equal(trick[0]!.field, 'spec.driver.webhook.url');

  const unlisted = check(p, webhook('https://cpm.example.com/v1/replace', { namespace: 'auo', name: 'other' }));
  assert.deepEqual(unlisted.map((x) => [x.field, x.rule]), [['spec.driver.webhook.authSecretRef', 'webhookTokens']]);
  assert.match(unlisted[0]!.message, /the Secret auo\/other key token is not listed under webhookTokens/);
  assert.ok(!allowed(p, webhook('https://cpm.example.com/v1/replace', { namespace: 'kube-system', name: 'cpm-token' })), 'same name, other namespace');
  assert.ok(allowed(p, webhook('https://keyed.example.com/replace', { namespace: 'auo', name: 'keyed', key: 'bearer' })));
  assert.ok(!allowed(p, webhook('https://keyed.example.com/replace', { namespace: 'auo', name: 'keyed' })), 'the rule names key bearer; the default key is token');
});

// ---------------------------------------------------------------------------------------------------------
// Node paths and the Prometheus address

function paths(p: { manifestPath?: string; backupDir?: string; peerCAFile?: string }): ApiServerUpgradeSpec {
  return baseSpec({ driver: { staticPod: { agentImage: 'busybox:1.36', ...p } } });
}

test('node paths: the CRD defaults pass the chart\'s default lists; each path must lie within its own list, by whole segments', () => {
  const p = agents({ image: 'busybox:1.36' });
  assert.deepEqual(check(p, paths({})), [], 'kubeadm\'s manifest, the default backup folder, kubeadm\'s CA');
  assert.ok(allowed(p, paths({ backupDir: '/etc/kubernetes/apiserver-upgrade-backup/cp-1', peerCAFile: '/etc/kubernetes/pki/peer/ca.crt' })));
  const cases: [Parameters<typeof paths>[0], string, string][] = [
    [{ manifestPath: '/etc/kubernetes/manifests2/kube-apiserver.yaml' }, 'spec.driver.staticPod.manifestPath', 'manifestPaths'],
    [{ manifestPath: '/etc/kubernetes/kube-apiserver.yaml' }, 'spec.driver.staticPod.manifestPath', 'manifestPaths'],
    [{ backupDir: '/etc' }, 'spec.driver.staticPod.backupDir', 'backupDirs'],
    [{ backupDir: '/etc/kubernetes/apiserver-upgrade-backup-x' }, 'spec.driver.staticPod.backupDir', 'backupDirs'],
    [{ peerCAFile: '/etc/kubernetes/pki-evil/ca.crt' }, 'spec.driver.staticPod.peerCAFile', 'peerCAFiles'],
    [{ peerCAFile: '/tmp/ca.crt' }, 'spec.driver.staticPod.peerCAFile', 'peerCAFiles'],
  ];
  for (const [spec, field, rule] of cases) {
    const v = check(p, paths(spec));
    assert.deepEqual(v.map((x) => [x.field, x.rule]), [[field, rule]], JSON.stringify(spec));
    assert.match(v[0]!.message, new RegExp(`matches no entry of ${rule} \\(allowed: prefix /etc/kubernetes/`));
  }
  assert.deepEqual(check(p, paths({ backupDir: '/' })).map((x) => x.field), ['spec.driver.staticPod.backupDir'], 'the root is no folder of plain segments');
  const exact = policy({ ...KUBEADM_PATHS, agentImages: [{ image: 'busybox:1.36' }], manifestPaths: [{ path: '/etc/kubernetes/manifests/kube-apiserver.yaml' }] });
  assert.ok(allowed(exact, paths({})));
  assert.ok(!allowed(exact, paths({ manifestPath: '/etc/kubernetes/manifests/etcd.yaml' })), 'a path rule is that file only');
});

test('node paths: what a prefix check would be fooled by is refused before any list is read (dot segments, //, odd characters, a newline)', () => {
  const p = agents({ image: 'busybox:1.36' });
  for (const bad of [
    '/etc/kubernetes/manifests/../../../root/.ssh/authorized_keys', '/etc/kubernetes/manifests/./kube-apiserver.yaml', '/etc/kubernetes//manifests/kube-apiserver.yaml',
    '/etc/kubernetes/manifests/', 'etc/kubernetes/manifests/kube-apiserver.yaml', '/etc/kubernetes/manifests/kube apiserver.yaml',
    '/etc/kubernetes/manifests/kube-apiserver.yaml\n- --authorization-mode=AlwaysAllow', '/etc/kubernetes/manifests/$(reboot)', '/etc/kubernetes/manifests/a;b', `/${'a'.repeat(1100)}`,
  ]) {
    const v = check(p, paths({ manifestPath: bad }));
    assert.deepEqual(v.map((x) => x.field), ['spec.driver.staticPod.manifestPath'], JSON.stringify(bad));
    assert.doesNotMatch(v[0]!.message, /matches no entry/, 'refused for its form, not for the list');
  }
  const ca = check(p, paths({ peerCAFile: '/etc/kubernetes/pki/ca.crt\n    - --authorization-mode=AlwaysAllow' }));
  assert.deepEqual(ca.map((x) => x.field), ['spec.driver.staticPod.peerCAFile'], 'the injection of issue 21 is refused by the policy too');
});

test('node paths: a backup folder inside the manifest folder is refused (the kubelet would run the backups), whatever the lists allow', () => {
  const wide = policy({ agentImages: [{ image: 'busybox:1.36' }], manifestPaths: [{ prefix: '/etc/kubernetes' }], backupDirs: [{ prefix: '/etc/kubernetes' }], peerCAFiles: [{ prefix: '/etc/kubernetes' }] });
  for (const backupDir of ['/etc/kubernetes/manifests', '/etc/kubernetes/manifests/backup']) {
    const v = check(wide, paths({ backupDir }));
    assert.deepEqual(v.map((x) => x.field), ['spec.driver.staticPod.backupDir'], backupDir);
    assert.match(v[0]!.message, /is inside the manifest folder \/etc\/kubernetes\/manifests: the kubelet would run the backups as static Pods/);
  }
  assert.ok(allowed(wide, paths({ backupDir: '/etc/kubernetes/manifests-backup' })), 'a sibling with a longer name is not inside');
});

test('node paths: a malformed path rule is an error naming it; there is no allow-everything rule', () => {
  for (const [doc, re] of [
    [{ manifestPaths: [{ prefix: '/' }] }, /manifestPaths\[0\]\.prefix: "\/" is not an absolute path of plain segments/],
    [{ backupDirs: [{ prefix: '/etc/../var' }] }, /backupDirs\[0\]\.prefix: "\/etc\/\.\.\/var" has a \. or \.\. segment/],
    [{ peerCAFiles: [{ path: 'ca.crt' }] }, /peerCAFiles\[0\]\.path: "ca\.crt" is not an absolute path/],
    [{ peerCAFiles: [{ file: '/ca.crt' }] }, /peerCAFiles\[0\]: unknown field "file"/],
    [{ manifestPaths: '/etc' }, /manifestPaths: must be a list/],
  ] as [unknown, RegExp][]) {
    assert.throws(() => parsePolicy(doc, 'f'), (e: Error) => e instanceof PolicyError && re.test(e.message), JSON.stringify(doc));
  }
});

function viaPrometheus(address: string): ApiServerUpgradeSpec {
  return baseSpec({ analysis: { source: 'Prometheus', prometheus: { address } } });
}

test('prometheusAddresses: the address must match an entry (http or https, compared parsed); none listed, none allowed — a cloud metadata address included', () => {
  const none = policy({ webhooks: [{ url: 'https://hook.example/replace' }] });
  for (const a of ['http://169.254.169.254/latest/meta-data/', 'http://metadata.google.internal/computeMetadata/v1/', 'http://prometheus.monitoring:9090']) {
    const v = check(none, { ...viaPrometheus(a), driver: { webhook: { url: 'https://hook.example/replace' } } });
    assert.deepEqual(v.map((x) => [x.field, x.rule]), [['spec.analysis.prometheus.address', 'prometheusAddresses']], a);
    assert.match(v[0]!.message, /matches no entry of prometheusAddresses \(the list is empty\)/);
  }
  const p = policy({ webhooks: [{ url: 'https://hook.example/replace' }], prometheusAddresses: [{ prefix: 'http://prometheus.monitoring.svc:9090' }, { url: 'https://thanos.example.com/' }] });
  const hooked = (a: string): ApiServerUpgradeSpec => ({ ...viaPrometheus(a), driver: { webhook: { url: 'https://hook.example/replace' } } });
  for (const ok of ['http://prometheus.monitoring.svc:9090', 'http://prometheus.monitoring.svc:9090/', 'http://PROMETHEUS.monitoring.svc:9090/prom', 'https://thanos.example.com']) assert.ok(allowed(p, hooked(ok)), ok);
  for (const no of [
    'http://prometheus.monitoring.svc:9091', 'https://prometheus.monitoring.svc:9090', 'http://prometheus.monitoring.svc.evil.net:9090', 'http://prometheus.monitoring.svc:9090@169.254.169.254/',
    'http://169.254.169.254/', 'https://thanos.example.com/other', 'ftp://thanos.example.com/', 'http://[fd00:ec2::254]/',
  ]) assert.ok(!allowed(p, hooked(no)), no);
  assert.match(check(p, hooked('http://user:pw@prometheus.monitoring.svc:9090'))[0]!.message, /has userinfo/);
  assert.deepEqual(check(p, baseSpec({})).filter((v) => v.rule === 'prometheusAddresses'), [], 'Direct: no address to check');
  assert.throws(() => parsePolicy({ prometheusAddresses: [{ prefix: 'ftp://x/' }] }, 'f'), /prometheusAddresses\[0\]\.prefix: "ftp:\/\/x\/" uses ftp, not http or https/);
  assert.throws(() => parsePolicy({ webhooks: [{ url: 'http://hook.example/' }] }, 'f'), /webhooks\[0\]\.url: "http:\/\/hook\.example\/" uses http, not https/, 'hooks stay https only');
});

test('a broken policy allows nothing, and says why', () => {
  const b = brokenPolicy('/etc/policy.yaml', 'cannot read it: ENOENT');
  const v = check(b, webhook(HOOK));
  assert.equal(v.length, 1);
  assert.match(describeViolations(b, v), /the operator's policy \/etc\/policy\.yaml cannot be used \(cannot read it: ENOENT\): nothing is allowed until it is fixed/);
  assert.equal(check(b, staticPod('busybox:1.36')).length, 1);
});

// ---------------------------------------------------------------------------------------------------------
// The planner

const threeOld = (gate: 'on' | 'off' = 'on') => [peer('cp-1', OLD, gate), peer('cp-2', OLD, gate), peer('cp-3', OLD, gate)];
const ALLOW_HOOK = policy({ webhooks: [{ url: 'https://hook.example/replace' }] });
const DENY_ALL = policy({});

/** The fleet simulation, planning with a policy as the reconciler does (src/controller/reconciler.ts). */
class PolicySim extends Sim {
  policy: Policy | undefined;

  override step(advanceMs = 1000): ReturnType<Sim['step']> {
    this.now = new Date(this.now.getTime() + advanceMs);
    const healthy = this.extra.analysis === undefined ? { analysis: { time: this.now.toISOString(), verdict: 'Healthy' as const, signals: {}, breaches: [] } } : {};
    this.last = plan(this.upgrade, this.spec, this.status, { peers: this.peers, ...healthy, ...this.extra }, this.now, this.policy);
    this.status = this.last.status;
    return this.last;
  }

  events(reason?: string): string[] {
    return this.last.actions.filter((a) => a.kind === 'event' && (reason === undefined || a.reason === reason)).map((a) => (a.kind === 'event' ? `${a.reason}: ${a.note}` : ''));
  }
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

test('planner: a spec outside the policy is refused at preflight (PreflightPassed=False NotAllowedByPolicy), makes no call, and waits', () => {
  const sim = new PolicySim(threeOld(), webhook('https://evil.example.net/steal', { namespace: 'auo', name: 'token' }));
  sim.policy = ALLOW_HOOK;
  const calls = run(sim, 10);
  assert.deepEqual(calls, []);
  assert.equal(sim.status?.phase, 'Preflight');
  const c = sim.condition('PreflightPassed');
  assert.equal(c?.status, 'False');
  assert.equal(c?.reason, 'NotAllowedByPolicy');
  assert.match(c!.message, /^not allowed by the operator's policy \(\/etc\/policy\.yaml\): spec\.driver\.webhook\.authSecretRef: the Secret auo\/token key token is not listed under webhookTokens/);
  assert.equal(sim.condition('Progressing')?.message, `preflight: ${c!.message}`);
  assert.equal(sim.status?.plan, undefined, 'no plan frozen');
  assert.ok(sim.last.requeueAfterMs !== undefined && sim.last.requeueAfterMs >= 5_000, 'checked again: the policy may change');
  assert.equal(sim.condition('Degraded'), undefined, 'a preflight wait does not set Degraded');
});

test('planner: the refusal is announced once (one event), and the upgrade goes on by itself once the policy allows it', () => {
  const sim = new PolicySim(threeOld(), webhook('https://other.example/replace'));
  sim.policy = ALLOW_HOOK;
  sim.step();
  assert.equal(sim.events('NotAllowedByPolicy').length, 1);
  assert.match(sim.events('NotAllowedByPolicy')[0]!, /spec\.driver\.webhook\.url "https:\/\/other\.example\/replace" \(https:\/\/other\.example\/replace\) matches no entry of webhooks \(allowed: url https:\/\/hook\.example\/replace\)/);
  sim.step();
  assert.deepEqual(sim.events('NotAllowedByPolicy'), [], 'the same refusal is not announced again');
  sim.policy = policy({ webhooks: [{ prefix: 'https://other.example/' }] });
  const calls = run(sim, 50);
  assert.deepEqual(calls, ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.equal(sim.condition('PreflightPassed')?.reason, 'Passed');
});

test('planner: without a policy every spec is allowed (the binary run without --policy-file); with one that allows it, nothing changes', () => {
  for (const p of [undefined, ALLOW_HOOK]) {
    const sim = new PolicySim(threeOld('off'));
    sim.policy = p;
    assert.deepEqual(run(sim, 100), ['EnableProxy:cp-1', 'EnableProxy:cp-2', 'EnableProxy:cp-3', 'Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
    assert.equal(sim.status?.phase, 'Succeeded');
  }
});

test('planner: a policy file that cannot be used refuses everything', () => {
  const sim = new PolicySim(threeOld());
  sim.policy = brokenPolicy('/etc/policy.yaml', 'agentImages[0]: must be an object');
  assert.deepEqual(run(sim, 5), []);
  assert.match(sim.condition('PreflightPassed')!.message, /cannot be used \(agentImages\[0\]: must be an object\)/);
});

test('planner: a policy narrowed mid-run pauses NotAllowedByPolicy before the next call; a resume does not override it; allowed again, it resumes by itself', () => {
  const sim = new PolicySim(threeOld());
  sim.policy = ALLOW_HOOK;
  sim.step(); // Pending -> Preflight -> Upgrading, first call
  assert.deepEqual(sim.calls(), ['Upgrade:cp-1']);
  sim.applyDriverCalls();
  // Let the first batch finish and the second call be recorded but not delivered (the driver was down).
  let guard = 0;
  while (!sim.calls().includes('Upgrade:cp-2') && guard++ < 50) {
    sim.step();
    if (!sim.calls().includes('Upgrade:cp-2')) sim.applyDriverCalls();
  }
  assert.deepEqual(sim.calls(), ['Upgrade:cp-2']);
  assert.equal(sim.status?.driverCalls?.at(-1)?.result, 'Requested');

  sim.policy = DENY_ALL;
  sim.step();
  assert.deepEqual(sim.calls(), [], 'the Requested call is not re-sent');
  assert.equal(sim.status?.phase, 'Paused');
  assert.equal(sim.status?.pause?.reason, 'NotAllowedByPolicy');
  assert.equal(sim.status?.pause?.resumePhase, 'Upgrading');
  assert.match(sim.status!.pause!.message!, /spec\.driver\.webhook\.url .* matches no entry of webhooks \(the list is empty\)/);
  assert.equal(sim.condition('Paused')?.reason, 'NotAllowedByPolicy');
  assert.deepEqual([sim.condition('Degraded')?.status, sim.condition('Degraded')?.reason], ['True', 'NotAllowedByPolicy']);
  assert.equal(sim.events('Paused').length, 1);
  assert.deepEqual(sim.events('NotAllowedByPolicy'), [], 'one event says it: Paused, with the reason and the message');

  for (let i = 0; i < 3; i++) {
    sim.step(5000);
    assert.deepEqual(sim.calls(), []);
    assert.equal(sim.status?.phase, 'Paused');
  }
  assert.deepEqual(sim.events(), [], 'nothing new to say while it stays refused');
  sim.upgrade = { ...sim.upgrade, annotations: { [RESUME_ANNOTATION]: 'try-1' } };
  sim.step();
  assert.equal(sim.status?.phase, 'Paused');
  assert.deepEqual(sim.calls(), []);
  assert.match(sim.events('ResumeRefused')[0]!, /the resume annotation \(try-1\) does not override the operator's policy/);
  assert.equal(sim.status?.observedResume, 'try-1', 'the value is used up: it does not resume later');

  sim.policy = ALLOW_HOOK;
  sim.step();
  assert.match(sim.events('Resumed')[0]!, /the spec is allowed by the operator's policy \(\/etc\/policy\.yaml\) again; back to Upgrading/);
  assert.deepEqual(sim.calls(), ['Upgrade:cp-2'], 'the same step, the same key');
  assert.equal(sim.last.actions.find((a) => a.kind === 'callDriver')?.kind === 'callDriver' && (sim.last.actions.find((a) => a.kind === 'callDriver') as { request: { idempotencyKey: string } }).request.idempotencyKey, sim.status?.driverCalls?.at(-1)?.key);
  assert.equal(sim.condition('Degraded')?.status, 'False');
  sim.applyDriverCalls();
  run(sim, 50);
  assert.equal(sim.status?.phase, 'Succeeded');
});

test('planner: a spec edited mid-run to a URL outside the policy pauses; edited back, the run goes on', () => {
  const sim = new PolicySim(threeOld());
  sim.policy = ALLOW_HOOK;
  sim.step();
  sim.applyDriverCalls();
  sim.spec = webhook('https://attacker.example/collect', { namespace: 'auo', name: 'token' });
  sim.step();
  assert.deepEqual(sim.calls(), []);
  assert.equal(sim.status?.pause?.reason, 'NotAllowedByPolicy');
  assert.match(sim.status!.pause!.message!, /authSecretRef: the Secret auo\/token key token is not listed/);
  // Still refused, for another reason now: the message follows the spec.
  sim.spec = webhook('https://attacker.example/collect');
  sim.step();
  assert.match(sim.status!.pause!.message!, /spec\.driver\.webhook\.url "https:\/\/attacker\.example\/collect"/);
  assert.equal(sim.condition('Paused')?.message, sim.status!.pause!.message);
  sim.spec = webhook('https://hook.example/replace');
  run(sim, 60);
  assert.equal(sim.status?.phase, 'Succeeded');
});

test('planner: a rollback is a driver call too: refused mid-rollback, it pauses with resumePhase RollingBack and sends no Rollback', () => {
  const sim = new PolicySim(threeOld());
  sim.policy = ALLOW_HOOK;
  sim.step();
  sim.applyDriverCalls();
  sim.step(); // cp-1 is back on the target: a rollback has something to undo
  assert.equal(sim.status?.driverCalls?.[0]?.result, 'Done');
  sim.policy = DENY_ALL;
  sim.upgrade = { ...sim.upgrade, annotations: { [ABORT_ANNOTATION]: 'now' } };
  sim.step();
  assert.deepEqual(sim.calls(), []);
  assert.equal(sim.status?.phase, 'Paused');
  assert.equal(sim.status?.pause?.reason, 'NotAllowedByPolicy');
  assert.equal(sim.status?.pause?.resumePhase, 'RollingBack');
  sim.policy = ALLOW_HOOK;
  sim.step();
  assert.equal(sim.status?.phase, 'RollingBack');
  const calls = [...sim.calls()];
  for (let i = 0; i < 5 && calls.length === 0; i++) {
    sim.step();
    calls.push(...sim.calls());
  }
  assert.deepEqual(calls, ['Rollback:cp-1']);
});

test('planner: paused by spec and outside the policy: Degraded says so; unpaused, it pauses NotAllowedByPolicy instead of calling', () => {
  const sim = new PolicySim(threeOld(), { ...webhook('https://hook.example/replace'), paused: true });
  sim.policy = ALLOW_HOOK;
  sim.step();
  assert.equal(sim.status?.pause?.reason, 'PausedBySpec');
  sim.policy = DENY_ALL;
  sim.step();
  assert.equal(sim.status?.pause?.reason, 'PausedBySpec');
  assert.equal(sim.condition('Degraded')?.reason, 'NotAllowedByPolicy');
  assert.equal(sim.events('NotAllowedByPolicy').length, 1, 'paused for another reason: its own event');
  sim.spec = { ...sim.spec, paused: false };
  sim.step();
  assert.deepEqual(sim.calls(), []);
  assert.equal(sim.status?.pause?.reason, 'NotAllowedByPolicy');
  // And the other way round: allowed again while paused by spec clears Degraded.
  sim.spec = { ...sim.spec, paused: true };
  sim.policy = ALLOW_HOOK;
  sim.step();
  assert.equal(sim.status?.pause?.reason, 'PausedBySpec');
  sim.spec = { ...sim.spec, paused: true, targetVersion: NEW };
  const again = new PolicySim(threeOld(), { ...webhook('https://hook.example/replace'), paused: true });
  again.policy = ALLOW_HOOK;
  again.step();
  again.policy = DENY_ALL;
  again.step();
  again.policy = ALLOW_HOOK;
  again.step();
  assert.deepEqual([again.condition('Degraded')?.status, again.condition('Degraded')?.reason], ['False', 'AllowedByPolicy']);
  assert.equal(again.status?.pause?.reason, 'PausedBySpec');
});

test('prometheusAddresses: spec.gates.prometheus.address is held to the same list (a gate queries it), and the shell never reads the gates of a refused spec', () => {
  const p = policy({ webhooks: [{ url: 'https://hook.example/replace' }], prometheusAddresses: [{ prefix: 'http://prometheus.monitoring.svc:9090' }] });
  const gated = (address: string): ApiServerUpgradeSpec => baseSpec({ driver: { webhook: { url: 'https://hook.example/replace' } }, gates: { prometheus: { address }, queries: [{ name: 'no-critical-alerts', query: 'ALERTS{severity="critical"}' }] } });
  assert.ok(allowed(p, gated('http://prometheus.monitoring.svc:9090')));
  const v = check(p, gated('http://169.254.169.254/latest/meta-data/'));
  assert.deepEqual(v.map((x) => [x.field, x.rule]), [['spec.gates.prometheus.address', 'prometheusAddresses']]);
  assert.match(v[0]!.message, /matches no entry of prometheusAddresses/);
  // An address without a query is never queried: nothing to check.
  assert.ok(allowed(p, baseSpec({ driver: { webhook: { url: 'https://hook.example/replace' } }, gates: { prometheus: { address: 'http://elsewhere:9090' } } })));
  const u = { metadata: { name: 'u', uid: 'u', generation: 1 }, spec: gated('http://169.254.169.254/'), status: { phase: 'Upgrading' as const } };
  const refused = whatToRead(reconcileContext(u, p, new Date()), [], { preflightFacts: false, kubeadmFacts: false, keepKubeadmConfig: false });
  assert.ok(refused.kind === 'read' && refused.reads.gates === undefined, 'not read');
  const ok = { ...u, spec: gated('http://prometheus.monitoring.svc:9090') };
  const read = whatToRead(reconcileContext(ok, p, new Date()), [], { preflightFacts: false, kubeadmFacts: false, keepKubeadmConfig: false });
  assert.ok(read.kind === 'read' && read.reads.gates?.queries[0]?.name === 'no-critical-alerts', 'read');
});
