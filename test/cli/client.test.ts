import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { CliError, loadConfig } from '../../src/cli/client.ts';

const dir = mkdtempSync(join(tmpdir(), 'auo-kubeconfig-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfig(file: string, contexts: string[], current: string): string {
  const path = join(dir, file);
  writeFileSync(path, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': current,
    clusters: contexts.map((c) => ({ name: c, cluster: { server: `https://${c}.example:6443` } })),
    users: [{ name: 'u', user: { token: 't' } }],
    contexts: contexts.map((c) => ({ name: c, context: { cluster: c, user: 'u' } })),
  }));
  return path;
}

test('--kubeconfig and --context choose the cluster as kubectl does', () => {
  const path = kubeconfig('two.json', ['staging', 'prod'], 'staging');
  assert.equal(loadConfig({ kubeconfig: path }).server, 'https://staging.example:6443');
  assert.equal(loadConfig({ kubeconfig: path, context: 'prod' }).server, 'https://prod.example:6443');
  assert.throws(() => loadConfig({ kubeconfig: path, context: 'dev' }), (e: unknown) => e instanceof CliError && /context "dev" is not defined \(contexts: staging, prod\)/.test(e.message));
  assert.throws(() => loadConfig({ kubeconfig: join(dir, 'missing') }), (e: unknown) => e instanceof CliError && /cannot load the kubeconfig: .*missing: the kubeconfig does not exist/.test(e.message));
});

test('without --kubeconfig, $KUBECONFIG is read (a list of files, merged), and --context picks from all of them', () => {
  const a = kubeconfig('a.json', ['a'], 'a');
  const b = kubeconfig('b.json', ['b'], 'b');
  const saved = process.env.KUBECONFIG;
  process.env.KUBECONFIG = [a, b].join(delimiter);
  try {
    assert.equal(loadConfig({}).server, 'https://a.example:6443');
    assert.equal(loadConfig({ context: 'b' }).server, 'https://b.example:6443');
    // A file listed but missing is skipped, as kubectl does; none at all is an error.
    process.env.KUBECONFIG = [join(dir, 'gone.json'), b].join(delimiter);
    assert.equal(loadConfig({}).server, 'https://b.example:6443');
    process.env.KUBECONFIG = join(dir, 'gone.json');
    assert.throws(() => loadConfig({}), /none of the kubeconfig files exists/);
  } finally {
    if (saved === undefined) delete process.env.KUBECONFIG;
    else process.env.KUBECONFIG = saved;
  }
});
