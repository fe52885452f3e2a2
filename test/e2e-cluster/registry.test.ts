// The harness registry's pure parts (e2e/cluster/registry.ts): its config, the nodes' hosts.toml mirrors, the
// name and address checks, and reading containerd's pulls from its access log. The registry itself, pushes and a
// containerd pulling through the mirrors: e2e/registry.e2e.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { checkAddress, checkImageName, containerdPulls, mirrorHostsToml, MIRRORED_REGISTRIES, registryConfig } from '../../e2e/cluster/registry.ts';
import { containerdConfig, registryConfigPath } from '../../e2e/cluster/nodes/kubeadm-layout.ts';

test('the registry config: plain HTTP on the given address, filesystem storage, access log on, no auth', () => {
  const c = parse(registryConfig({ address: '10.77.4.1:5000', storage: '/tmp/x/storage' })) as Record<string, Record<string, unknown>>;
  assert.equal(c.http!.addr, '10.77.4.1:5000');
  assert.equal(c.http!.tls, undefined);
  assert.deepEqual(c.storage!.filesystem, { rootdirectory: '/tmp/x/storage' });
  assert.deepEqual((c.log!.accesslog as Record<string, unknown>).disabled, false);
  assert.equal(c.auth, undefined);
  assert.throws(() => registryConfig({ address: ':5000', storage: '/s' }), /not a registry address/);
});

test('a mirror hosts.toml: the harness registry over http, under /v2/<registry host> (override_path), as server and as the only host', () => {
  const t = mirrorHostsToml('registry.k8s.io', '10.77.4.1:5000');
  assert.equal(t, [
    'server = "http://10.77.4.1:5000/v2/registry.k8s.io"',
    'override_path = true',
    '',
    '[host."http://10.77.4.1:5000/v2/registry.k8s.io"]',
    '  capabilities = ["pull", "resolve"]',
    '  override_path = true',
    '',
  ].join('\n'));
  assert.ok(!/https:/.test(t), 'no upstream: containerd never tries the real registry');
  for (const bad of ['', 'Registry.k8s.io', 'a"b', 'x/y', 'ghcr.io\n[host."http://evil"]']) assert.throws(() => mirrorHostsToml(bad, '10.77.4.1:5000'), /not a registry host name/);
  for (const bad of ['10.77.4.1', '10.77.4.1:0', '10.77.4.1:70000', '300.1.1.1:5000', 'evil.example:5000', '10.77.4.1:5000"']) assert.throws(() => mirrorHostsToml('ghcr.io', bad), /not a registry address/);
  assert.deepEqual([...MIRRORED_REGISTRIES], ['ghcr.io', 'registry.k8s.io', 'registry.auo.test']);
});

test('image names are checked before they become a skopeo argument', () => {
  for (const ok of ['registry.k8s.io/pause:3.10', 'ghcr.io/apiserver-upgrade-operator/apiserver-upgrade-operator:0.2.0', 'localhost:5000/a/b_c:v1.2.3-rc.1', 'kube-apiserver:v1.36.3']) assert.equal(checkImageName(ok), ok);
  for (const bad of ['pause', 'Registry.k8s.io/pause:1', 'a//b:1', 'a/b:', 'a/b:-x', '-a/b:1', 'a b:1', 'a/b:1;rm', `a/b:${'x'.repeat(129)}`, 'a/b@sha256:00']) assert.throws(() => checkImageName(bad), /not an image name/);
  assert.equal(checkAddress('localhost:5000'), 'localhost:5000');
});

test('containerd\'s pulls are read from the access log: its HEAD of the tag and GET of the digest, not skopeo\'s push nor failures', () => {
  const log = [
    '10.77.1.1 - - [03/Dec/2026:14:52:06 +0000] "PUT /v2/registry.k8s.io/pause/manifests/3.10 HTTP/1.1" 201 0 "" "skopeo/1.9.3"',
    'time="2026-12-03T14:52:07Z" level=info msg="response completed" http.request.uri="/v2/registry.k8s.io/pause/manifests/3.10?ns=registry.k8s.io" http.request.useragent="containerd/1.6.20~ds1"',
    '10.77.200.11 - - [03/Dec/2026:14:52:07 +0000] "HEAD /v2/registry.k8s.io/pause/manifests/3.10?ns=registry.k8s.io HTTP/1.1" 200 400 "" "containerd/1.6.20~ds1"',
    '10.77.200.11 - - [03/Dec/2026:14:52:07 +0000] "GET /v2/registry.k8s.io/pause/manifests/sha256:2bf9e6859afa608c2e866a00f9df02cca9dd6468e3524406b1fabb00a2cea904?ns=registry.k8s.io HTTP/1.1" 200 400 "" "containerd/1.6.20~ds1"',
    '10.77.200.11 - - [03/Dec/2026:14:52:08 +0000] "HEAD /v2/ghcr.io/x/y/manifests/9.9?ns=ghcr.io HTTP/1.1" 404 96 "" "containerd/1.6.20~ds1"',
  ].join('\n');
  assert.deepEqual(containerdPulls(log), ['registry.k8s.io/pause:3.10', 'registry.k8s.io/pause:sha256:2bf9e6859afa608c2e866a00f9df02cca9dd6468e3524406b1fabb00a2cea904']);
});

test('a node\'s containerd reads registry hosts from its own certs.d (config_path)', () => {
  const t = containerdConfig({ root: '/tmp/n1', pauseImage: 'registry.k8s.io/pause:3.10' });
  assert.match(t, /\[plugins\."io\.containerd\.grpc\.v1\.cri"\.registry\]\n\s+config_path = "\/tmp\/n1\/containerd\/certs\.d"\n/);
  assert.equal(registryConfigPath('/tmp/n1'), '/tmp/n1/containerd/certs.d');
  assert.ok(!/registry\.mirrors/.test(t), 'not the deprecated mirrors table');
});
