// What the operator's process loads (`main.ts --help` loads every module, then exits): none of
// @kubernetes/client-node, undici or the other HTTP stacks client-node brings (~13 MiB of RSS, docs/scale.md); only
// types come from client-node. The image runs the same graph compiled (the build stage's dist/), without type
// stripping (~18 MiB more).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileApp, OPERATOR_CONFIG } from '../../e2e/cluster/operator-image.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

// Registered first, so it sees every resolution's final URL; writes them to $RESOLVED_OUT at exit (a file: a pipe
// may drop the end of a large write made while the process exits).
const TRACKER = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const urls = [];
registerHooks({ resolve(s, c, next) { const r = next(s, c); urls.push(r.url); return r; } });
process.on('exit', () => writeFileSync(process.env.RESOLVED_OUT, JSON.stringify(urls)));
`)}`;

/** `node <args> --help` in `cwd` with the tracker: its exit status, output and every URL it resolved. */
function resolved(args: string[], cwd: string): { status: number | null; stdout: string; stderr: string; urls: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'module-graph-'));
  try {
    const out = join(dir, 'resolved.json');
    const r = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', '--import', TRACKER, ...args, '--help'], { cwd, encoding: 'utf8', timeout: 60_000, env: { ...process.env, RESOLVED_OUT: out } });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, urls: r.status === 0 ? JSON.parse(readFileSync(out, 'utf8')) as string[] : [] };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const HEAVY = /\/node_modules\/(@kubernetes\/client-node|undici|openid-client|socks|socks-proxy-agent|hpagent|js-yaml|jsonpath-plus)\//;

test('the operator\'s sources load no module of client-node, undici or their HTTP stacks', () => {
  const { status, stderr, urls } = resolved(['src/main.ts'], root);
  assert.equal(status, 0, stderr);
  assert.ok(urls.some((u) => u.endsWith('/src/runtime/kubeconfig.ts')), 'the tracker saw the operator\'s own modules');
  assert.ok(urls.some((u) => /\/node_modules\/yaml\//.test(u)), 'and its dependencies');
  assert.deepEqual(urls.filter((u) => HEAVY.test(u)), []);
});

test('the image\'s compiled operator (the build stage\'s dist/, the entrypoint\'s command) loads no TypeScript and no client-node', async () => {
  const app = mkdtempSync(join(tmpdir(), 'compiled-operator-'));
  try {
    await compileApp(root, join(app, 'dist'));
    // As in the image's /app: package.json beside dist/ ("type": "module", the version), and node_modules.
    copyFileSync(join(root, 'package.json'), join(app, 'package.json'));
    symlinkSync(join(root, 'node_modules'), join(app, 'node_modules'));
    const { status, stdout, stderr, urls } = resolved(OPERATOR_CONFIG.entrypoint.slice(1), app);
    assert.equal(status, 0, stderr);
    assert.match(stdout, /^usage: node dist\/main\.js \[options\]/);
    assert.ok(urls.some((u) => u.endsWith('/dist/runtime/kubeconfig.js')));
    assert.deepEqual(urls.filter((u) => u.endsWith('.ts')), [], 'every module of the app is compiled');
    assert.deepEqual(urls.filter((u) => HEAVY.test(u)), []);
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
});
