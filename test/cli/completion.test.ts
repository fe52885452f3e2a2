import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
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
