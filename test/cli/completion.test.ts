import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { completionScript } from '../../src/cli/completion.ts';
import { COMMANDS, SHELLS } from '../../src/cli/args.ts';

test('each shell\'s script completes every command, the -o formats and upgrade names from the cluster', () => {
  for (const shell of SHELLS) {
    const s = completionScript(shell);
    for (const c of COMMANDS) assert.ok(s.includes(c), `${shell}: ${c}`);
    assert.match(s, /wide name jsonpath=/, shell);
    assert.match(s, /kubectl get apiserverupgrades\.upgrade\.apiserver\.dev -o name/, shell);
    assert.match(s, /kubectl-apiserver_upgrade/, shell);
  }
});

test('the bash script parses, and completes commands and flags', () => {
  const script = completionScript('bash');
  execFileSync('bash', ['-n'], { input: script });
  const complete = (words: string[]): string => execFileSync('bash', ['-c', `${script}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _kubectl_apiserver_upgrade; printf '%s\\n' "\${COMPREPLY[@]}"`], { encoding: 'utf8' });
  assert.deepEqual(complete(['kubectl-apiserver_upgrade', 'pl']).trim().split('\n'), ['plan']);
  assert.deepEqual(complete(['kubectl-apiserver_upgrade', 'get', '-o', 'w']).trim().split('\n'), ['wide']);
  assert.deepEqual(complete(['kubectl-apiserver_upgrade', 'completion', 'f']).trim().split('\n'), ['fish']);
});

test('the fleet flags complete, and --context/--contexts complete the kubeconfig\'s context names (after a comma too)', (t) => {
  for (const shell of SHELLS) {
    const s = completionScript(shell);
    for (const f of ['all-contexts', 'contexts', 'cluster-timeout']) assert.ok(s.includes(f), `${shell}: --${f}`);
    assert.match(s, /kubectl config get-contexts -o name/, shell);
  }
  // A kubectl on PATH that knows two contexts: what `kubectl config get-contexts -o name` prints.
  const bin = mkdtempSync(join(tmpdir(), 'asu-completion-'));
  t.after(() => rmSync(bin, { recursive: true, force: true }));
  writeFileSync(join(bin, 'kubectl'), '#!/bin/sh\n[ "$1 $2 $3 $4" = "config get-contexts -o name" ] && printf "prod-a\\nprod-b\\nstaging\\n"\n', { mode: 0o755 });
  const script = completionScript('bash');
  const complete = (words: string[]): string[] => execFileSync('bash', ['-c', `${script}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _kubectl_apiserver_upgrade; printf '%s\\n' "\${COMPREPLY[@]}"`], { encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } }).trim().split('\n');
  assert.deepEqual(complete(['kubectl-apiserver_upgrade', 'list', '--all-c']), ['--all-contexts']);
  assert.deepEqual(complete(['kubectl-apiserver_upgrade', 'list', '--contexts', 'prod']), ['prod-a', 'prod-b']);
  assert.deepEqual(complete(['kubectl-apiserver_upgrade', 'list', '--contexts', 'prod-a,s']), ['prod-a,staging']);
  assert.deepEqual(complete(['kubectl-apiserver_upgrade', 'list', '--context', 'st']), ['staging']);
});
