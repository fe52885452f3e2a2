// Exec credential plugins, run for real: small /bin/sh scripts in a temp directory that print an ExecCredential
// and count their runs in a file, driven through KubeAccess as the operator uses them.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { stringify } from 'yaml';
import { ExecCredentialError, ExecPlugin, parseExecCredential } from '../../src/runtime/exec-credential.ts';
import { KubeAccess, KubeconfigError } from '../../src/runtime/kubeconfig.ts';

const V1 = 'client.authentication.k8s.io/v1';
const V1BETA1 = 'client.authentication.k8s.io/v1beta1';
const b64 = (s: string): string => Buffer.from(s).toString('base64');

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'auo-exec-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function clock(t: TestContext, ms: number): { ms: number } {
  const c = { ms };
  const saved = KubeAccess.now;
  KubeAccess.now = () => c.ms;
  t.after(() => (KubeAccess.now = saved));
  return c;
}

/** An executable script in `dir`; `body` runs after it counted the run (one line per run in dir/runs). */
function plugin(dir: string, name: string, body: string): string {
  const file = join(dir, name);
  writeFileSync(file, `#!/bin/sh\necho run >> '${join(dir, 'runs')}'\nn=$(wc -l < '${join(dir, 'runs')}' | tr -d ' ')\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

const runs = (dir: string): number => (existsSync(join(dir, 'runs')) ? readFileSync(join(dir, 'runs'), 'utf8').split('\n').filter(Boolean).length : 0);

/** Prints an ExecCredential with `status` (shell-expanded: $n is the run's number). */
const prints = (status: Record<string, unknown>, apiVersion = V1): string => `cat <<EOF\n${JSON.stringify({ apiVersion, kind: 'ExecCredential', status })}\nEOF`;

function access(exec: Record<string, unknown>, o: { cluster?: Record<string, unknown>; user?: Record<string, unknown>; dir?: string } = {}): KubeAccess {
  return KubeAccess.fromObject({
    'current-context': 'ctx',
    clusters: [{ name: 'c', cluster: { server: 'https://10.0.0.1:6443', ...o.cluster } }],
    users: [{ name: 'u', user: { exec: { apiVersion: V1, interactiveMode: 'Never', ...exec }, ...o.user } }],
    contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
  }, o.dir ?? '/', undefined, 'kc');
}

const authorization = async (k: KubeAccess): Promise<unknown> => (await k.credentials()).headers.Authorization;

test('a token from the plugin is the bearer token', async (t) => {
  const dir = tempDir(t);
  const k = access({ command: plugin(dir, 'p', prints({ token: 'tok-$n' })) });
  assert.equal(await authorization(k), 'Bearer tok-1');
});

test('a certificate and key from the plugin are the client certificate; the cluster CA stays', async (t) => {
  const dir = tempDir(t);
  const k = access({ apiVersion: V1BETA1, command: plugin(dir, 'p', prints({ clientCertificateData: 'CERT PEM', clientKeyData: 'KEY PEM' }, V1BETA1)) }, { cluster: { 'certificate-authority-data': b64('CA') } });
  assert.deepEqual(await k.credentials(), { headers: {}, rejectUnauthorized: true, ca: Buffer.from('CA'), cert: Buffer.from('CERT PEM'), key: Buffer.from('KEY PEM') });
});

test('args and env are passed; KUBERNETES_EXEC_INFO carries the cluster only with provideClusterInfo', async (t) => {
  const dir = tempDir(t);
  const command = plugin(dir, 'p', `printf '%s\\n' "$@" > '${dir}/args'\nprintf '%s' "$FOO" > '${dir}/foo'\nprintf '%s' "$KUBERNETES_EXEC_INFO" > '${dir}/info-'$n\n${prints({ token: 't' })}`);
  const cluster = {
    server: 'https://api.example:6443/', 'certificate-authority-data': b64('CA'), 'tls-server-name': 'kubernetes',
    extensions: [{ name: 'other', extension: {} }, { name: 'client.authentication.k8s.io/exec', extension: { audience: 'kube' } }],
  };
  const k = access({ command, args: ['--region', 'eu west'], env: [{ name: 'FOO', value: 'bar baz' }], provideClusterInfo: true }, { cluster });
  await k.credentials();
  assert.equal(readFileSync(join(dir, 'args'), 'utf8'), '--region\neu west\n');
  assert.equal(readFileSync(join(dir, 'foo'), 'utf8'), 'bar baz');
  assert.deepEqual(JSON.parse(readFileSync(join(dir, 'info-1'), 'utf8')), {
    apiVersion: V1, kind: 'ExecCredential',
    spec: { interactive: false, cluster: { server: 'https://api.example:6443', 'tls-server-name': 'kubernetes', 'certificate-authority-data': b64('CA'), config: { audience: 'kube' } } },
  });

  await access({ command, provideClusterInfo: false }, { cluster }).credentials();
  assert.deepEqual(JSON.parse(readFileSync(join(dir, 'info-2'), 'utf8')), { apiVersion: V1, kind: 'ExecCredential', spec: { interactive: false } });
});

test('a command with a relative path is found from the kubeconfig\'s directory; a bare name on PATH', async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'conf'));
  mkdirSync(join(dir, 'bin'));
  plugin(join(dir, 'bin'), 'kube-login', prints({ token: 'relative' }));
  writeFileSync(join(dir, 'conf', 'config'), stringify({
    'current-context': 'ctx',
    clusters: [{ name: 'c', cluster: { server: 'https://10.0.0.1' } }],
    users: [{ name: 'u', user: { exec: { apiVersion: V1, command: '../bin/kube-login' } } }],
    contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
  }));
  assert.equal(await authorization(KubeAccess.fromFile(join(dir, 'conf', 'config'))), 'Bearer relative');

  const saved = process.env.PATH;
  t.after(() => (process.env.PATH = saved));
  process.env.PATH = `${join(dir, 'bin')}${delimiter}${saved ?? ''}`;
  assert.equal(await authorization(access({ command: 'kube-login' }, { dir: join(dir, 'conf') })), 'Bearer relative');
});

test('the credential is cached until its expirationTimestamp, then the plugin runs again', async (t) => {
  const now = clock(t, Date.parse('2030-01-01T00:00:00Z'));
  const dir = tempDir(t);
  const k = access({ command: plugin(dir, 'p', prints({ token: 'tok-$n', expirationTimestamp: '2030-01-01T01:00:00Z' })) });
  assert.equal(await authorization(k), 'Bearer tok-1');
  now.ms = Date.parse('2030-01-01T00:59:59Z');
  assert.equal(await authorization(k), 'Bearer tok-1');
  assert.equal(runs(dir), 1);
  now.ms = Date.parse('2030-01-01T01:00:00Z');
  assert.equal(await authorization(k), 'Bearer tok-2', 'expired: run again');
  assert.equal(runs(dir), 2);
});

test('without an expiry the credential is kept until the server rejects it', async (t) => {
  const now = clock(t, 0);
  const dir = tempDir(t);
  const k = access({ command: plugin(dir, 'p', prints({ token: 'tok-$n' })) });
  assert.equal(await authorization(k), 'Bearer tok-1');
  now.ms += 365 * 24 * 3600_000;
  assert.equal(await authorization(k), 'Bearer tok-1');
  k.credentialsRejected();
  assert.equal(await authorization(k), 'Bearer tok-2');
  assert.equal(await authorization(k), 'Bearer tok-2');
  assert.equal(runs(dir), 2);
});

test('concurrent requests while the plugin runs share one run', async (t) => {
  const dir = tempDir(t);
  const k = access({ command: plugin(dir, 'p', `sleep 0.3\n${prints({ token: 'tok-$n' })}`) });
  const all = await Promise.all(Array.from({ length: 10 }, () => authorization(k)));
  assert.deepEqual(new Set(all), new Set(['Bearer tok-1']));
  assert.equal(runs(dir), 1);
});

test('a failed run is not cached: the next request runs the plugin again', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'fail'), '');
  const k = access({ command: plugin(dir, 'p', `if [ -e '${dir}/fail' ]; then echo 'not logged in' >&2; exit 1; fi\n${prints({ token: 'tok-$n' })}`) });
  await assert.rejects(k.credentials(), /not logged in/);
  rmSync(join(dir, 'fail'));
  assert.equal(await authorization(k), 'Bearer tok-2');
  assert.equal(runs(dir), 2);
});

test('a non-zero exit names the command, the exit code and the start of stderr', async (t) => {
  const dir = tempDir(t);
  const command = plugin(dir, 'p', `echo 'error: token expired, run aws sso login' >&2\nprintf 'x%.0s' $(seq 600) >&2\necho MARKER >&2\nexit 3`);
  const err = await access({ command }).credentials().then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof ExecCredentialError);
  // One line (stderr's line breaks become spaces), made plain and redacted, then cut with a mark.
  assert.match(err.message, new RegExp(`^exec plugin ".*/p" failed with exit code 3: error: token expired, run aws sso login x+…$`));
  assert.doesNotMatch(err.message, /MARKER/, 'stderr is cut at 500 characters');
  assert.ok(err.message.length < 600);
});

test('a missing command says so, with the installHint', async (t) => {
  const dir = tempDir(t);
  await assert.rejects(
    access({ command: 'auo-no-such-plugin', installHint: 'Install it with: brew install auo-login\n' }).credentials(),
    (e: unknown) => e instanceof ExecCredentialError && e.message === 'exec plugin "auo-no-such-plugin" was not found. Install it with: brew install auo-login',
  );
  await assert.rejects(access({ command: './missing' }, { dir }).credentials(), new RegExp(`exec plugin "${dir}/missing" was not found$`));
});

test('output that is not an ExecCredential of the asked version is refused', async (t) => {
  const dir = tempDir(t);
  const cases: [string, RegExp][] = [
    [prints({ token: 't' }, V1BETA1), /apiVersion is "client\.authentication\.k8s\.io\/v1beta1", the kubeconfig asked for client\.authentication\.k8s\.io\/v1/],
    ['echo not json', /its output is not JSON/],
    [`echo '{"apiVersion":"${V1}","kind":"Token","status":{"token":"t"}}'`, /kind is "Token"/],
    [prints({}), /status has neither a token nor clientCertificateData and clientKeyData/],
  ];
  for (const [i, [body, re]] of cases.entries()) {
    await assert.rejects(access({ command: plugin(dir, `p${i}`, body) }).credentials(), (e: unknown) => e instanceof ExecCredentialError && /^exec plugin ".*" did not return a usable ExecCredential: /.test(e.message) && re.test(e.message));
  }
});

test('parseExecCredential: certificate and key go together; the expiry must be a time', () => {
  const out = (status: unknown): string => JSON.stringify({ apiVersion: V1, kind: 'ExecCredential', status });
  assert.deepEqual(parseExecCredential(out({ token: 't', expirationTimestamp: '2030-01-01T00:00:00Z' }), V1), { token: 't', expiresAt: Date.parse('2030-01-01T00:00:00Z') });
  assert.throws(() => parseExecCredential(out({ clientCertificateData: 'C' }), V1), /clientCertificateData without status\.clientKeyData/);
  assert.throws(() => parseExecCredential(out({ clientKeyData: 'K', token: 't' }), V1), /clientKeyData without status\.clientCertificateData/);
  assert.throws(() => parseExecCredential(out({ token: 't', expirationTimestamp: 'tomorrow' }), V1), /expirationTimestamp "tomorrow" is not an RFC 3339 time/);
  assert.throws(() => parseExecCredential(JSON.stringify({ apiVersion: V1, kind: 'ExecCredential' }), V1), /it has no status/);
});

test('the plugin\'s stdin is closed: one that reads it is not left waiting for a terminal', async (t) => {
  const dir = tempDir(t);
  const p = new ExecPlugin({ apiVersion: V1, command: plugin(dir, 'p', `cat > /dev/null\n${prints({ token: 'read' })}`), args: [], env: [], provideClusterInfo: false }, { timeoutMs: 3000 });
  assert.equal((await p.get()).token, 'read');
});

test('a plugin that hangs is killed after the timeout', async (t) => {
  const dir = tempDir(t);
  const p = new ExecPlugin({ apiVersion: V1, command: plugin(dir, 'p', 'exec sleep 10'), args: [], env: [], provideClusterInfo: false }, { timeoutMs: 200 });
  const started = Date.now();
  await assert.rejects(p.get(), /exec plugin ".*" did not finish within 0\.2 s and was killed/);
  assert.ok(Date.now() - started < 5000);
});

test('the kubeconfig\'s own token, basic auth or client certificate wins over the plugin, which then never runs (client-go)', async (t) => {
  const dir = tempDir(t);
  const command = plugin(dir, 'p', prints({ token: 'from-exec' }));
  assert.equal(await authorization(access({ command }, { user: { token: 'static' } })), 'Bearer static');
  assert.equal(await authorization(access({ command }, { user: { username: 'a', password: 'b' } })), `Basic ${b64('a:b')}`);
  const c = await access({ command }, { user: { 'client-certificate-data': b64('C'), 'client-key-data': b64('K') } }).credentials();
  assert.deepEqual([c.cert, c.headers], [Buffer.from('C'), {}]);
  assert.equal(runs(dir), 0);
});

test('exec settings are checked at load', () => {
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ apiVersion: 'client.authentication.k8s.io/v1alpha1', command: 'x' }, /^kc: user "u": exec: apiVersion "client\.authentication\.k8s\.io\/v1alpha1" is not supported/],
    [{ command: undefined }, /^kc: user "u": exec: command is not set/],
    [{ command: 'x', interactiveMode: 'Always' }, /exec: interactiveMode Always needs a terminal/],
    [{ command: 'x', interactiveMode: 'Sometimes' }, /exec: interactiveMode "Sometimes" is not Never, IfAvailable or Always/],
    [{ command: 'x', env: { FOO: 'bar' } }, /exec: env must be a list/],
    [{ command: 'x', env: [{ value: 'bar' }] }, /exec: env\[0\] must have a name/],
    [{ command: 'x', args: 'a b' }, /exec: args must be a list of strings/],
  ];
  for (const [exec, re] of bad) assert.throws(() => access(exec), (e: unknown) => e instanceof KubeconfigError && re.test(e.message), JSON.stringify(exec));
  access({ command: 'x', interactiveMode: 'IfAvailable' });
  access({ command: 'x', interactiveMode: undefined });
});
