// KubeAccess.contextNames: the contexts a fleet list can ask, from the kubeconfig kubectl reads (--kubeconfig, else
// $KUBECONFIG's files merged, else ~/.kube/config), in the files' order, each name once.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { stringify } from 'yaml';
import { KubeAccess, KubeconfigError } from '../../src/runtime/kubeconfig.ts';

function kubeconfig(...contexts: string[]): string {
  return stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': contexts[0],
    clusters: [{ name: 'k', cluster: { server: 'https://k.example:6443' } }],
    users: [{ name: 'u', user: { token: 't' } }],
    contexts: contexts.map((name) => ({ name, context: { cluster: 'k', user: 'u' } })),
  });
}

function env(t: TestContext, vars: Record<string, string | undefined>): void {
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const set = (v: Record<string, string | undefined>): void => {
    for (const [k, x] of Object.entries(v)) if (x === undefined) delete process.env[k]; else process.env[k] = x;
  };
  set(vars);
  t.after(() => set(before));
}

test('contextNames: --kubeconfig\'s file, else $KUBECONFIG merged (first file first, each name once, missing files skipped), else ~/.kube/config', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'asu-contexts-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const home = join(dir, 'home');
  mkdirSync(join(home, '.kube'), { recursive: true });
  writeFileSync(join(dir, 'a'), kubeconfig('prod-b', 'shared'));
  writeFileSync(join(dir, 'b'), kubeconfig('shared', 'prod-a', 'odd\u001b[2Jname'));
  writeFileSync(join(home, '.kube', 'config'), kubeconfig('home'));
  env(t, { HOME: home, KUBECONFIG: [join(dir, 'a'), join(dir, 'gone'), join(dir, 'b')].join(delimiter) });

  assert.deepEqual(KubeAccess.contextNames(join(dir, 'b')), ['shared', 'prod-a', 'odd\u001b[2Jname']);
  assert.deepEqual(KubeAccess.contextNames(), ['prod-b', 'shared', 'prod-a', 'odd\u001b[2Jname']);
  assert.throws(() => KubeAccess.contextNames(join(dir, 'gone')), (e: unknown) => e instanceof KubeconfigError && /gone: the kubeconfig does not exist/.test(e.message));
  process.env.KUBECONFIG = '';
  assert.deepEqual(KubeAccess.contextNames(), ['home']);
  rmSync(join(home, '.kube', 'config'));
  assert.throws(() => KubeAccess.contextNames(), (e: unknown) => e instanceof KubeconfigError && /no kubeconfig: \$KUBECONFIG is not set and .*home\/\.kube\/config does not exist/.test(e.message));
  writeFileSync(join(dir, 'empty'), '');
  assert.deepEqual(KubeAccess.contextNames(join(dir, 'empty')), [], 'an empty file is an empty kubeconfig');
});
