// HTTPS_PROXY/NO_PROXY as kubectl reads them: where kubectl would tunnel through the proxy, the plugin refuses with an
// error that says so and how to go around it, and never connects (neither to the proxy nor around it). Checked
// against a CONNECT proxy on loopback, written here, that counts what reaches it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { proxyFor } from '../../src/cli/proxy.ts';
import { run } from '../../src/cli/cli.ts';
import { KubeUpgradeApi } from '../../src/cli/client.ts';

test('proxyFor: the variables, NO_PROXY\'s forms and loopback, as Go\'s httpproxy reads them', () => {
  const env = { HTTPS_PROXY: 'http://proxy.corp:3128' };
  const s = 'https://api.prod.example.com:6443';
  assert.deepEqual(proxyFor(s, env), { proxy: 'http://proxy.corp:3128', variable: 'HTTPS_PROXY' });
  assert.deepEqual(proxyFor(s, { https_proxy: 'http://p:1' }), { proxy: 'http://p:1', variable: 'https_proxy' });
  assert.equal(proxyFor(s, {}), undefined);
  assert.equal(proxyFor(s, { HTTP_PROXY: 'http://p:1' }), undefined, 'HTTP_PROXY is for http:// servers');
  for (const no of ['*', 'example.com', '.example.com', 'api.prod.example.com', 'api.prod.example.com:6443', 'other.org, prod.example.com']) {
    assert.equal(proxyFor(s, { ...env, NO_PROXY: no }), undefined, `NO_PROXY=${no}`);
  }
  for (const no of ['example.org', 'api.prod.example.com:443', 'prod.example.co']) assert.ok(proxyFor(s, { ...env, no_proxy: no }), `NO_PROXY=${no} does not match`);
  assert.ok(proxyFor('https://example.com:6443', { ...env, NO_PROXY: '.example.com' }), 'a leading dot: subdomains only');
  assert.equal(proxyFor('https://10.1.2.3:6443', { ...env, NO_PROXY: '10.0.0.0/8' }), undefined);
  assert.ok(proxyFor('https://11.1.2.3:6443', { ...env, NO_PROXY: '10.0.0.0/8' }));
  assert.equal(proxyFor('https://10.1.2.3:6443', { ...env, NO_PROXY: '10.1.2.3' }), undefined);
  for (const local of ['https://127.0.0.1:6443', 'https://localhost:6443', 'https://[::1]:6443']) assert.equal(proxyFor(local, env), undefined, `${local}: Go never proxies loopback`);
});

test('the plugin refuses a proxied API server with a clear error and connects to nothing; NO_PROXY lets it go direct', async () => {
  let reached = 0;
  const proxy = createServer();
  proxy.on('connect', (_req, socket) => {
    reached++;
    socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
  });
  proxy.on('request', (_req, res) => {
    reached++;
    res.end();
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const port = (proxy.address() as { port: number }).port;
  const dir = mkdtempSync(join(tmpdir(), 'proxy-'));
  const kubeconfig = join(dir, 'config');
  writeFileSync(kubeconfig, [
    'apiVersion: v1', 'kind: Config', 'current-context: c',
    'clusters: [{name: k, cluster: {server: "https://kube.auo.test:6443", insecure-skip-tls-verify: true}}]',
    'users: [{name: u, user: {token: t}}]',
    'contexts: [{name: c, context: {cluster: k, user: u}}]',
  ].join('\n'));
  try {
    const env = { HTTPS_PROXY: `http://127.0.0.1:${port}` };
    let err = '';
    const code = await run(['list', '--kubeconfig', kubeconfig], {
      out: () => undefined, err: (s) => (err += s),
      connect: (c) => KubeUpgradeApi.connect(c, env),
      contexts: () => [], now: () => new Date(), readFile: async () => '', isTTY: false, interrupted: async () => undefined,
    });
    assert.equal(code, 1);
    assert.match(err, /^error: HTTPS_PROXY is set \(http:\/\/127\.0\.0\.1:\d+\) and kubectl would reach https:\/\/kube\.auo\.test:6443 through it, but this plugin does not go through proxies: add kube\.auo\.test to NO_PROXY/);
    assert.equal(reached, 0, 'nothing was sent to the proxy');
    const direct = KubeUpgradeApi.connect({ kubeconfig }, { ...env, NO_PROXY: 'auo.test' });
    direct.close();
    assert.equal(reached, 0);
  } finally {
    proxy.close();
  }
});
