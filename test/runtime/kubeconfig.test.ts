// The kubeconfig loader: kubectl's merge of $KUBECONFIG, contexts, TLS material, static credentials, impersonation,
// in-cluster and the default chain. Exec credential plugins are in exec-credential.test.ts.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { stringify } from 'yaml';
import { headerKeyEscape, KubeAccess, KubeconfigError } from '../../src/runtime/kubeconfig.ts';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'auo-kubeconfig-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Sets environment variables (undefined: unset) for one test. */
function setEnv(t: TestContext, vars: Record<string, string | undefined>): void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const apply = (v: Record<string, string | undefined>): void => {
    for (const [k, val] of Object.entries(v)) {
      if (val === undefined) delete process.env[k];
      else process.env[k] = val;
    }
  };
  apply(vars);
  t.after(() => apply(saved));
}

/** A clock for token-file re-reads, restored after the test. */
function clock(t: TestContext): { ms: number } {
  const c = { ms: 1_000_000 };
  const saved = KubeAccess.now;
  KubeAccess.now = () => c.ms;
  t.after(() => (KubeAccess.now = saved));
  return c;
}

/** A one-context kubeconfig document. */
function config(cluster: Record<string, unknown>, user: Record<string, unknown>, context: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'v1', kind: 'Config', 'current-context': 'ctx',
    clusters: [{ name: 'c', cluster: { server: 'https://10.0.0.1:6443', ...cluster } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u', ...context } }],
  };
}

const kubeconfigError = (re: RegExp) => (e: unknown): boolean => {
  assert.ok(e instanceof KubeconfigError, `a KubeconfigError, not ${String(e)}`);
  assert.match(e.message, re);
  return true;
};

test('inline data fields: CA, client certificate and key, token; the trailing slash of the server is dropped', async () => {
  const doc = config(
    { server: 'https://api.example:6443/', 'certificate-authority-data': b64('CA') },
    { 'client-certificate-data': b64('CERT'), 'client-key-data': `${b64('KEY')}\n`, token: 'tok' },
    { namespace: 'team-a' },
  );
  const k = KubeAccess.fromObject(doc, '/nowhere');
  assert.equal(k.server, 'https://api.example:6443');
  assert.equal(k.contextName, 'ctx');
  assert.equal(k.namespace, 'team-a');
  const c = await k.credentials();
  assert.deepEqual(c, { headers: { Authorization: 'Bearer tok' }, rejectUnauthorized: true, ca: Buffer.from('CA'), cert: Buffer.from('CERT'), key: Buffer.from('KEY') });
  assert.equal(KubeAccess.fromObject(config({}, {}), '/').namespace, undefined);
  assert.deepEqual((await KubeAccess.fromObject(config({}, {}), '/').credentials()).headers, {}, 'no credential at all is anonymous');
});

test('relative file paths resolve against the kubeconfig file, and a changed file is read again', async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'conf', 'pki'), { recursive: true });
  writeFileSync(join(dir, 'conf', 'ca.crt'), 'CA-1');
  writeFileSync(join(dir, 'conf', 'pki', 'client.crt'), 'CERT');
  writeFileSync(join(dir, 'key.pem'), 'KEY');
  const file = join(dir, 'conf', 'config');
  writeFileSync(file, stringify(config({ 'certificate-authority': 'ca.crt' }, { 'client-certificate': 'pki/client.crt', 'client-key': join(dir, 'key.pem') })));

  const k = KubeAccess.fromFile(file);
  const c1 = await k.credentials();
  assert.deepEqual([c1.ca, c1.cert, c1.key], [Buffer.from('CA-1'), Buffer.from('CERT'), Buffer.from('KEY')]);
  assert.equal((await k.credentials()).ca, c1.ca, 'an unchanged file gives the same Buffer');
  writeFileSync(join(dir, 'conf', 'ca.crt'), 'CA-two');
  assert.deepEqual((await k.credentials()).ca, Buffer.from('CA-two'), 'a rotated CA is picked up');

  rmSync(join(dir, 'conf', 'pki', 'client.crt'));
  await assert.rejects(k.credentials(), kubeconfigError(/user "u": client-certificate: cannot read .*client\.crt/));
  assert.throws(() => KubeAccess.fromFile(file), kubeconfigError(/config: user "u": client-certificate: cannot read .*pki\/client\.crt/), 'a missing file fails at load');
});

test('fromFiles merges as kubectl: first file wins per name and for current-context; each file resolves its own paths; missing files are skipped', async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'a'));
  mkdirSync(join(dir, 'b'));
  writeFileSync(join(dir, 'b', 'ca.crt'), 'CA-B');
  const a = join(dir, 'a', 'config');
  const b = join(dir, 'b', 'config');
  writeFileSync(a, stringify({
    'current-context': '',
    clusters: [{ name: 'shared', cluster: { server: 'https://a.example' } }],
    users: [{ name: 'ua', user: { token: 'a' } }],
    contexts: [{ name: 'ctx-a', context: { cluster: 'shared', user: 'ua', namespace: 'from-a' } }],
  }));
  writeFileSync(b, stringify({
    'current-context': 'ctx-b',
    clusters: [{ name: 'shared', cluster: { server: 'https://b.example' } }, { name: 'only-b', cluster: { server: 'https://only-b.example', 'certificate-authority': 'ca.crt' } }],
    users: [{ name: 'ua', user: { token: 'b' } }],
    contexts: [
      { name: 'ctx-a', context: { cluster: 'only-b', user: 'ua', namespace: 'from-b' } },
      { name: 'ctx-b', context: { cluster: 'shared', user: 'ua' } },
      { name: 'ctx-only-b', context: { cluster: 'only-b', user: 'ua' } },
    ],
  }));
  const c = join(dir, 'c.yaml');
  writeFileSync(c, 'current-context: ctx-a\n');
  const missing = join(dir, 'missing');

  const k = KubeAccess.fromFiles([missing, a, b, c]);
  assert.equal(k.contextName, 'ctx-b', 'a file with an empty current-context does not set it, and the first that does wins');
  assert.equal(KubeAccess.fromFiles([c, b, a]).contextName, 'ctx-a');
  assert.equal(k.server, 'https://a.example', 'cluster "shared" comes from the first file');
  const ka = KubeAccess.fromFiles([a, b], 'ctx-a');
  assert.equal(ka.namespace, 'from-a', 'context "ctx-a" comes from the first file');
  assert.equal(ka.server, 'https://a.example');
  assert.equal(KubeAccess.fromFiles([b, a], 'ctx-a').namespace, 'from-b', 'and the order decides');

  // only-b is defined in b/config, so its relative CA is b/ca.crt although the list starts with a/config.
  const kb = KubeAccess.fromFiles([a, b], 'ctx-only-b');
  assert.equal(kb.server, 'https://only-b.example');
  const creds = await kb.credentials();
  assert.deepEqual(creds.ca, Buffer.from('CA-B'));
  assert.deepEqual(creds.headers, { Authorization: 'Bearer a' }, 'user "ua" from the first file');
  assert.throws(() => KubeAccess.fromFiles([missing, join(dir, 'gone')]), kubeconfigError(/none of the kubeconfig files exists: .*missing, .*gone/));
  assert.throws(() => KubeAccess.fromFile(missing), kubeconfigError(/missing: the kubeconfig does not exist/));
});

test('a file that is not YAML or not a kubeconfig is an error naming it', (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'bad');
  writeFileSync(file, 'clusters: [unclosed');
  assert.throws(() => KubeAccess.fromFiles([file]), kubeconfigError(/bad: not valid YAML/));
  writeFileSync(file, '- a list');
  assert.throws(() => KubeAccess.fromFile(file), kubeconfigError(/bad: not a kubeconfig/));
  writeFileSync(file, 'clusters: {}');
  assert.throws(() => KubeAccess.fromFile(file), kubeconfigError(/bad: clusters must be a list/));
  writeFileSync(file, 'users: [{user: {}}]');
  assert.throws(() => KubeAccess.fromFile(file), kubeconfigError(/bad: users\[0\] has no name/));
  writeFileSync(file, '');
  assert.throws(() => KubeAccess.fromFile(file), kubeconfigError(/bad: no context/), 'an empty file is an empty kubeconfig');
});

test('the context argument wins over current-context; each missing name is an error naming it', () => {
  const doc = config({}, { token: 't' });
  (doc.contexts as unknown[]).push({ name: 'other', context: { cluster: 'c', user: 'u', namespace: 'ns-other' } });
  assert.equal(KubeAccess.fromObject(doc, '/', 'other').namespace, 'ns-other');
  assert.equal(KubeAccess.fromObject(doc, '/', 'other').contextName, 'other');
  assert.equal(KubeAccess.fromObject(doc, '/', '').contextName, 'ctx', 'an empty context is no context');

  assert.throws(() => KubeAccess.fromObject(doc, '/', 'dev', 'my.yaml'), kubeconfigError(/^my\.yaml: context "dev" is not defined \(contexts: ctx, other\)$/));
  assert.throws(() => KubeAccess.fromObject({ ...doc, 'current-context': undefined }, '/', undefined, 'my.yaml'), kubeconfigError(/my\.yaml: no context: current-context is not set/));
  assert.throws(() => KubeAccess.fromObject(config({}, {}, { cluster: 'gone' }), '/', undefined, 'my.yaml'), kubeconfigError(/my\.yaml: context "ctx": cluster "gone" is not defined/));
  assert.throws(() => KubeAccess.fromObject(config({}, {}, { user: 'nobody' }), '/', undefined, 'my.yaml'), kubeconfigError(/my\.yaml: context "ctx": user "nobody" is not defined/));
  assert.throws(() => KubeAccess.fromObject(config({}, {}, { user: undefined }), '/'), kubeconfigError(/context "ctx": user is not set/));
  assert.throws(() => KubeAccess.fromObject(config({}, {}, { cluster: '' }), '/'), kubeconfigError(/context "ctx": cluster is not set/));
});

test('cluster fields: server must be an http(s) URL; insecure-skip-tls-verify and tls-server-name; proxy-url is refused', async () => {
  const k = KubeAccess.fromObject(config({ 'insecure-skip-tls-verify': true, 'tls-server-name': 'kubernetes.default.svc', 'disable-compression': true, extensions: [] }, {}), '/');
  assert.deepEqual(await k.credentials(), { headers: {}, rejectUnauthorized: false, serverName: 'kubernetes.default.svc' });
  assert.equal(KubeAccess.fromObject(config({ server: 'http://127.0.0.1:8080' }, {}), '/').server, 'http://127.0.0.1:8080');
  assert.equal(KubeAccess.fromObject(config({ server: 'https://rancher.example/k8s/clusters/c-1/' }, {}), '/').server, 'https://rancher.example/k8s/clusters/c-1');

  const bad: [Record<string, unknown>, RegExp][] = [
    [{ server: undefined }, /cluster "c": server is not set/],
    [{ server: '10.0.0.1:6443' }, /cluster "c": server "10\.0\.0\.1:6443" (is not a URL|must be an https:\/\/ or http:\/\/ URL)/],
    [{ server: 'ftp://example' }, /cluster "c": server "ftp:\/\/example" must be an https:\/\/ or http:\/\/ URL/],
    [{ 'proxy-url': 'socks5://proxy:1080' }, /cluster "c": proxy-url is not supported/],
    [{ 'insecure-skip-tls-verify': 'yes' }, /cluster "c": insecure-skip-tls-verify must be true or false/],
    [{ 'insecure-skip-tls-verify': true, 'certificate-authority-data': b64('CA') }, /insecure-skip-tls-verify and a certificate authority cannot both be set/],
    [{ 'certificate-authority-data': '-----BEGIN CERTIFICATE-----' }, /cluster "c": certificate-authority-data is not base64/],
    [{ 'certificate-authority': '/no/such/ca.crt' }, /cluster "c": certificate-authority: cannot read \/no\/such\/ca\.crt/],
  ];
  for (const [cluster, re] of bad) assert.throws(() => KubeAccess.fromObject(config(cluster, {}), '/', undefined, 'kc'), kubeconfigError(re), JSON.stringify(cluster));
});

test('a client certificate needs its key and the other way round', () => {
  assert.throws(() => KubeAccess.fromObject(config({}, { 'client-certificate-data': b64('C') }), '/'), kubeconfigError(/user "u": client-certificate is set without client-key/));
  assert.throws(() => KubeAccess.fromObject(config({}, { 'client-key-data': b64('K') }), '/'), kubeconfigError(/user "u": client-key is set without client-certificate/));
});

test('tokenFile wins over token, is re-read at most every 60 s, and at once after a 401; a failed re-read keeps the token', async (t) => {
  const now = clock(t);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'token'), 'one\n');
  const k = KubeAccess.fromObject(config({}, { token: 'static', tokenFile: 'token' }), dir);
  const auth = async (): Promise<unknown> => (await k.credentials()).headers.Authorization;
  assert.equal(await auth(), 'Bearer one');
  writeFileSync(join(dir, 'token'), 'two');
  now.ms += 59_999;
  assert.equal(await auth(), 'Bearer one', 'not re-read within a minute');
  now.ms += 1;
  assert.equal(await auth(), 'Bearer two');
  writeFileSync(join(dir, 'token'), 'three');
  k.credentialsRejected();
  assert.equal(await auth(), 'Bearer three', 'a 401 re-reads at once');
  rmSync(join(dir, 'token'));
  now.ms += 60_000;
  assert.equal(await auth(), 'Bearer three');

  assert.equal((await KubeAccess.fromObject(config({}, { token: 'static' }), dir).credentials()).headers.Authorization, 'Bearer static');
  assert.throws(() => KubeAccess.fromObject(config({}, { tokenFile: 'token' }), dir), kubeconfigError(/user "u": tokenFile: cannot read a token from .*token/));
  writeFileSync(join(dir, 'empty'), '\n');
  assert.throws(() => KubeAccess.fromObject(config({}, { tokenFile: 'empty' }), dir), kubeconfigError(/the file is empty/));
});

test('username and password are basic auth; with a token as well it is refused, as kubectl does', async () => {
  const k = KubeAccess.fromObject(config({}, { username: 'admin', password: 'p:ss' }), '/');
  assert.deepEqual((await k.credentials()).headers, { Authorization: `Basic ${b64('admin:p:ss')}` });
  assert.throws(() => KubeAccess.fromObject(config({}, { username: 'admin', password: 'x', token: 't' }), '/'), kubeconfigError(/user "u": both a token and username\/password/));
});

test('impersonation: user, uid, groups as repeated headers, extra with client-go\'s key escaping', async () => {
  const k = KubeAccess.fromObject(config({}, {
    token: 't', as: 'jane', 'as-uid': '42', 'as-groups': ['dev', 'ops'],
    'as-user-extra': { scopes: ['view', 'edit'], 'example.com/my key%': ['v'], empty: [] },
  }), '/');
  const c = await k.credentials();
  assert.deepEqual(c.headers, {
    Authorization: 'Bearer t',
    'Impersonate-User': 'jane',
    'Impersonate-Uid': '42',
    'Impersonate-Group': ['dev', 'ops'],
    'Impersonate-Extra-scopes': ['view', 'edit'],
    'Impersonate-Extra-example.com%2Fmy%20key%25': ['v'],
  });
  (c.headers['Impersonate-Group'] as string[]).push('mutated');
  assert.deepEqual((await k.credentials()).headers['Impersonate-Group'], ['dev', 'ops'], 'each call has its own headers');
  assert.equal(headerKeyEscape("A-z_0.9!#$&'*+^`|~"), "A-z_0.9!#$&'*+^`|~");
  assert.equal(headerKeyEscape('ü:'), '%C3%BC%3A');

  assert.throws(() => KubeAccess.fromObject(config({}, { 'as-groups': ['dev'] }), '/'), kubeconfigError(/user "u": as-uid, as-groups and as-user-extra need as/));
  assert.throws(() => KubeAccess.fromObject(config({}, { as: 'x', 'as-groups': 'dev' }), '/'), kubeconfigError(/as-groups must be a list of strings/));
  assert.throws(() => KubeAccess.fromObject(config({}, { as: 'x', 'as-user-extra': { k: 'v' } }), '/'), kubeconfigError(/as-user-extra\.k must be a list of strings/));
});

test('auth-provider is refused with a pointer to exec plugins', () => {
  const doc = config({}, { 'auth-provider': { name: 'oidc', config: { 'idp-issuer-url': 'https://idp' } } });
  assert.throws(() => KubeAccess.fromObject(doc, '/', undefined, 'kc'), kubeconfigError(/^kc: user "u": auth-provider plugins \(oidc, gcp, azure\) are not supported; use an exec credential plugin .*kubelogin/));
});

test('in-cluster: service host and port (IPv6 in brackets), CA, namespace, and a token re-read every minute', async (t) => {
  const now = clock(t);
  const root = tempDir(t);
  const sa = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
  mkdirSync(sa, { recursive: true });
  writeFileSync(join(sa, 'ca.crt'), 'CLUSTER-CA');
  writeFileSync(join(sa, 'token'), 'sa-1');
  writeFileSync(join(sa, 'namespace'), 'operators');
  setEnv(t, { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' });

  const k = KubeAccess.fromCluster(root);
  assert.equal(k.server, 'https://10.96.0.1:443');
  assert.equal(k.contextName, 'in-cluster');
  assert.equal(k.namespace, 'operators');
  assert.deepEqual(await k.credentials(), { headers: { Authorization: 'Bearer sa-1' }, rejectUnauthorized: true, ca: Buffer.from('CLUSTER-CA') });
  writeFileSync(join(sa, 'token'), 'sa-2');
  now.ms += 59_000;
  assert.equal((await k.credentials()).headers.Authorization, 'Bearer sa-1');
  now.ms += 1_000;
  assert.equal((await k.credentials()).headers.Authorization, 'Bearer sa-2', 'a rotated bound token is picked up');

  process.env.KUBERNETES_SERVICE_HOST = 'fd00:10:96::1';
  assert.equal(KubeAccess.fromCluster(root).server, 'https://[fd00:10:96::1]:443');
  rmSync(join(sa, 'namespace'));
  assert.equal(KubeAccess.fromCluster(root).namespace, undefined);

  delete process.env.KUBERNETES_SERVICE_PORT;
  assert.throws(() => KubeAccess.fromCluster(root), kubeconfigError(/KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set/));
  process.env.KUBERNETES_SERVICE_PORT = '443';
  rmSync(join(sa, 'token'));
  assert.throws(() => KubeAccess.fromCluster(root), kubeconfigError(/in-cluster: the service account token: cannot read/));
});

test('fromDefault: $KUBECONFIG, else ~/.kube/config, else in-cluster, else an error saying where it looked', async (t) => {
  const dir = tempDir(t);
  const home = join(dir, 'home');
  const root = join(dir, 'root');
  const sa = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
  mkdirSync(join(home, '.kube'), { recursive: true });
  mkdirSync(sa, { recursive: true });
  const one = (server: string): string => stringify(config({ server }, {}));
  writeFileSync(join(dir, 'env-a'), one('https://env-a.example'));
  writeFileSync(join(dir, 'env-b'), one('https://env-b.example'));
  writeFileSync(join(home, '.kube', 'config'), one('https://home.example'));
  writeFileSync(join(sa, 'ca.crt'), 'CA');
  writeFileSync(join(sa, 'token'), 'sa');
  setEnv(t, { HOME: home, KUBECONFIG: ['', join(dir, 'gone'), join(dir, 'env-b'), join(dir, 'env-a')].join(delimiter), KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' });

  assert.equal(KubeAccess.fromDefault(undefined, root).server, 'https://env-b.example');
  process.env.KUBECONFIG = join(dir, 'gone');
  assert.throws(() => KubeAccess.fromDefault(undefined, root), kubeconfigError(/none of the kubeconfig files exists/), 'a $KUBECONFIG of missing files does not fall through');
  process.env.KUBECONFIG = '';
  assert.equal(KubeAccess.fromDefault(undefined, root).server, 'https://home.example');
  assert.throws(() => KubeAccess.fromDefault('nope', root), kubeconfigError(/context "nope" is not defined/));
  rmSync(join(home, '.kube', 'config'));
  assert.equal(KubeAccess.fromDefault(undefined, root).contextName, 'in-cluster');
  assert.throws(() => KubeAccess.fromDefault('prod', root), kubeconfigError(/context "prod" was asked for, but there is no kubeconfig/));
  delete process.env.KUBERNETES_SERVICE_HOST;
  assert.throws(() => KubeAccess.fromDefault(undefined, root), kubeconfigError(/no kubeconfig: \$KUBECONFIG is not set, .*home\/\.kube\/config does not exist, and this is not a pod/));
});
