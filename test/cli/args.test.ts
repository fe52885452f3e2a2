import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCommandLine, UsageError, type Options } from '../../src/cli/args.ts';

function opts(argv: string[]): Options {
  const p = parseCommandLine(argv);
  assert.equal(p.help, false);
  return (p as { options: Options }).options;
}

test('get NAME with -w, -o and the connection flags in any order', () => {
  assert.deepEqual(opts(['get', 'to-v1-36', '-w', '-o', 'yaml', '--kubeconfig', '/k', '--context', 'prod']), {
    command: 'get', name: 'to-v1-36', output: 'yaml', watch: true, filename: undefined, kubeconfig: '/k', context: 'prod', events: 10,
  });
  assert.equal(opts(['--context=prod', 'get', 'x', '-ojson']).output, 'json');
  assert.equal(opts(['get', 'x', '--output=yml']).output, 'yaml');
  assert.equal(opts(['get', 'x', '--events', '3']).events, 3);
  assert.equal(opts(['get', 'x']).output, 'human');
});

test('list (alias ls), the action commands, and plan with -f or a NAME', () => {
  assert.equal(opts(['list']).command, 'list');
  assert.equal(opts(['ls', '-o', 'json']).command, 'list');
  for (const c of ['pause', 'resume', 'abort', 'retry']) assert.deepEqual([opts([c, 'u1']).command, opts([c, 'u1']).name], [c, 'u1']);
  assert.equal(opts(['plan', '-f', 'up.yaml']).filename, 'up.yaml');
  assert.equal(opts(['plan', '-f', '-']).filename, '-');
  assert.equal(opts(['plan', 'to-v1-36', '-o', 'json']).name, 'to-v1-36');
});

test('help: no command, help, -h, help COMMAND', () => {
  assert.deepEqual(parseCommandLine([]), { help: true, command: undefined });
  assert.deepEqual(parseCommandLine(['help']), { help: true, command: undefined });
  assert.deepEqual(parseCommandLine(['help', 'plan']), { help: true, command: 'plan' });
  assert.deepEqual(parseCommandLine(['get', '-h']), { help: true, command: 'get' });
});

test('command lines that cannot run are usage errors that say why', () => {
  const cases: [string[], RegExp][] = [
    [['frob'], /unknown command "frob"/],
    [['pause'], /pause needs the NAME/],
    [['get', 'a', 'b'], /at most one NAME/],
    [['list', 'x'], /list takes no NAME/],
    [['plan'], /either -f FILE .* or the NAME/],
    [['plan', 'x', '-f', 'y.yaml'], /either -f FILE/],
    [['get', 'x', '-o', 'table'], /json, yaml, wide, name, jsonpath=TEMPLATE/],
    [['get', 'x', '-o', 'jsonpath={.a'], /-o jsonpath: unclosed \{/],
    [['plan', 'x', '-o', 'wide'], /-o wide is for get and list/],
    [['completion'], /completion needs the shell: bash, zsh, fish/],
    [['completion', 'tcsh'], /completion needs the shell/],
    [['version', 'x'], /version takes no argument/],
    [['pause', 'x', '-o', 'json'], /-o\/--output is for get, list and plan/],
    [['list', '-w'], /-w\/--watch is for get/],
    [['get', 'x', '-f', 'a'], /-f\/--filename is for plan/],
    [['get', 'x', '--events', 'many'], /--events must be a whole number/],
    [['get', 'x', '--bogus'], /Unknown option '--bogus'/],
    [['get', 'x', '--kubeconfig'], /--kubeconfig/],
  ];
  for (const [argv, why] of cases) assert.throws(() => parseCommandLine(argv), (e: unknown) => e instanceof UsageError && why.test(e.message), argv.join(' '));
});

test('-o wide, name and jsonpath=TEMPLATE; get without a NAME (all, -w watches all); completion SHELL; version', () => {
  assert.equal(opts(['list', '-o', 'wide']).output, 'wide');
  assert.equal(opts(['get', 'x', '-o', 'name']).output, 'name');
  const j = opts(['get', 'x', '-o', 'jsonpath={.phase}{"\\n"}']);
  assert.deepEqual([j.output, j.jsonpath], ['jsonpath', '{.phase}{"\\n"}']);
  assert.deepEqual([opts(['get']).name, opts(['get', '-w']).watch], [undefined, true]);
  const c = opts(['completion', 'zsh']);
  assert.deepEqual([c.command, c.shell, c.name], ['completion', 'zsh', undefined]);
  assert.equal(opts(['version']).command, 'version');
  assert.deepEqual(parseCommandLine(['completion', '--help']), { help: true, command: 'completion' });
});
