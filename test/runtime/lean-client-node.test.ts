// The operator's process runs without client-node's generated API (src/runtime/lean-client-node.ts): its whole
// module graph (`src/main.ts --help` loads every module, then exits) is resolved through the hook, and KubeConfig
// still does what the operator asks of it. The image runs the same graph compiled (dist/), without type stripping.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileApp, OPERATOR_CONFIG } from '../../e2e/cluster/operator-image.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const LEAN = './src/runtime/lean-client-node.ts';

function node(args: string[], env: Record<string, string> = {}, cwd = root): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', ...args], { cwd, encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// Registered after LEAN, so it sees every resolution's final URL; writes them to $RESOLVED_OUT at exit (a file:
// a pipe may drop the end of a large write made while the process exits).
const TRACKER = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const urls = [];
registerHooks({ resolve(s, c, next) { const r = next(s, c); urls.push(r.url); return r; } });
process.on('exit', () => writeFileSync(process.env.RESOLVED_OUT, JSON.stringify(urls)));
`)}`;

/** `<main> --help` with the tracker (after the hook `lean`, if any) in `cwd`: its exit status and every URL it resolved. */
function resolvedByMain(lean: string | undefined, main = 'src/main.ts', cwd = root): { status: number | null; stderr: string; urls: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'lean-client-node-'));
  try {
    const out = join(dir, 'resolved.json');
    const r = node([...(lean ? ['--import', lean] : []), '--import', TRACKER, main, '--help'], { RESOLVED_OUT: out }, cwd);
    return { status: r.status, stderr: r.stderr, urls: r.status === 0 ? JSON.parse(readFileSync(out, 'utf8')) as string[] : [] };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the operator\'s module graph loads none of client-node\'s generated API, and its KubeConfig module gets the stub', () => {
  const { status, stderr, urls } = resolvedByMain(LEAN);
  assert.equal(status, 0, stderr);
  assert.ok(urls.some((u) => u.endsWith('/src/runtime/client-node-api-stub.ts')), 'config.js imported the stub');
  assert.ok(urls.some((u) => u.endsWith('/@kubernetes/client-node/dist/config.js')), 'KubeConfig came from its own module');
  const generated = urls.filter((u) => /\/@kubernetes\/client-node\/dist\/(index\.js|api\.js|gen\/(index|apis\/|models\/|types\/))/.test(u));
  assert.deepEqual(generated, [], 'no module of the generated API, nor the root module that loads it all');
});

test('without the hook the same graph loads the generated API: the hook is what makes the difference', () => {
  const { status, stderr, urls } = resolvedByMain(undefined);
  assert.equal(status, 0, stderr);
  assert.ok(urls.some((u) => u.includes('/@kubernetes/client-node/dist/gen/apis/')));
});

test('the image\'s compiled operator (the build stage\'s dist/) loads no TypeScript and gets the compiled stub', async () => {
  const app = mkdtempSync(join(tmpdir(), 'compiled-operator-'));
  try {
    await compileApp(root, join(app, 'dist'));
    // As in the image's /app: package.json beside dist/ ("type": "module", the version), and node_modules.
    copyFileSync(join(root, 'package.json'), join(app, 'package.json'));
    symlinkSync(join(root, 'node_modules'), join(app, 'node_modules'));
    const entry = OPERATOR_CONFIG.entrypoint.slice(1);
    const lean = entry[entry.indexOf('--import') + 1];
    const { status, stderr, urls } = resolvedByMain(lean, entry[entry.length - 1], app);
    assert.equal(status, 0, stderr);
    assert.ok(urls.some((u) => u.endsWith('/dist/runtime/client-node-api-stub.js')), 'config.js imported the compiled stub');
    assert.ok(urls.some((u) => u.endsWith('/dist/main.js')));
    assert.deepEqual(urls.filter((u) => u.endsWith('.ts')), [], 'every module of the app is compiled');
    assert.deepEqual(urls.filter((u) => /\/@kubernetes\/client-node\/dist\/gen\/apis\//.test(u)), []);
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
});

test('under the hook KubeConfig loads a kubeconfig and authenticates requests; makeApiClient says why it is not there', () => {
  const script = `
    const { KubeConfig, RequestContext, HttpMethod } = await import('./src/runtime/client-node.ts');
    const kc = new KubeConfig();
    kc.loadFromOptions({ clusters: [{ name: 'c', server: 'https://10.0.0.1:6443', skipTLSVerify: true }], users: [{ name: 'u', token: 'tok' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
    const ctx = new RequestContext('https://10.0.0.1:6443/version', HttpMethod.GET);
    await kc.applySecurityAuthentication(ctx);
    let err = '';
    try { kc.makeApiClient(class {}); } catch (e) { err = e.message; }
    process.stdout.write(JSON.stringify({ server: kc.getCurrentCluster()?.server, auth: ctx.getHeaders().Authorization, err }));
  `;
  const r = node(['--import', LEAN, '--input-type=module', '-e', script]);
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { server: string; auth: string; err: string };
  assert.equal(out.server, 'https://10.0.0.1:6443');
  assert.equal(out.auth, 'Bearer tok');
  assert.match(out.err, /makeApiClient is not available in the operator process/);
});
