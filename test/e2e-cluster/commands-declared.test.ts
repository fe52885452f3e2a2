// Every external command a test or script runs is declared for the profile that runs it (issue 23): in
// e2e/cluster/requirements.ts SYSTEM (which scripts/setup.ts installs for that profile), as a Go-built tool of
// e2e/cluster/binaries.ts, or among the commands every machine has (node, npm, git, Debian's essential packages).
// A newcomer's `npm ci && npm test` died with `spawnSync /bin/busybox ENOENT` because a unit test ran busybox,
// declared for e2e only: on a machine that had it, nothing showed. This reads the sources instead of the machine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ALWAYS, commandUses, declaredFor, profilesOf } from '../../e2e/cluster/command-scan.ts';
import { SYSTEM, type Profile } from '../../e2e/cluster/requirements.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The Go-built tools, read from binaries.ts's BinaryKind (so a tool added there counts at once). */
function goBuilt(): string[] {
  const src = readFileSync(join(root, 'e2e/cluster/binaries.ts'), 'utf8');
  const m = /export type BinaryKind =([^;]+);/.exec(src);
  assert.ok(m, 'binaries.ts exports BinaryKind');
  return [...m[1]!.matchAll(/'([^']+)'/g)].map((x) => x[1]!);
}

/**
 * Uses that are not a need of the profile, each with the reason. Keyed `file:command`.
 */
const NOT_NEEDS: Record<string, string> = {
  'scripts/setup.ts:apt-get': 'the installer itself: setup checks it with onPath first and otherwise says to install the packages with the machine\'s own package manager',
};

function sources(): string[] {
  return ['test', 'e2e', 'scripts'].flatMap((d) =>
    readdirSync(join(root, d), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith('.ts'))
      .map((e) => relative(root, join(e.parentPath, e.name)))
      // This file's own samples are commands it means to be undeclared.
      .filter((f) => f !== 'test/e2e-cluster/commands-declared.test.ts'),
  );
}

/** The files the demo loads: e2e/demo.ts and its relative imports, transitively. */
function demoGraph(): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(join(root, file), 'utf8');
    for (const m of text.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^;]*?from\s+'(\.[^']+\.ts)'/gm)) visit(relative(root, resolve(dirname(join(root, file)), m[1]!)));
  };
  visit('e2e/demo.ts');
  return seen;
}

/** Every undeclared use in these files, as `file:line runs X, not declared for P`. */
function undeclared(files: { file: string; text: string; profiles: Profile[] }[]): string[] {
  const tools = goBuilt();
  return files.flatMap(({ file, text, profiles }) =>
    commandUses(text)
      .filter((u) => NOT_NEEDS[`${file}:${u.command}`] === undefined && declaredFor(u.command, profiles, tools) === undefined)
      .map((u) => `${file}:${u.line} runs ${u.command}, not declared for ${profiles.join('/')} (add it to SYSTEM in e2e/cluster/requirements.ts for that profile)`),
  );
}

test('commandUses: literals, constants, system paths and the harness\'s runners; not paths of built things or other calls', () => {
  const src = [
    "const BUSYBOX = '/bin/busybox';",
    "execFileSync(BUSYBOX, ['--list']);",
    "spawnSync('openssl', ['req']);",
    "await runOk('/usr/sbin/haproxy', ['-c']);",
    "run(join(bin, 'sh'), []);",
    "spawn('./node_modules/.bin/tsc', []);",
    "child.run('nope', []);",
    "requireCommands(['ip', 'unshare'], 'x');",
    "tool('promtool');",
  ].join('\n');
  assert.deepEqual(commandUses(src).map((u) => `${u.line}:${u.command}`), ['2:busybox', '3:openssl', '4:haproxy', '8:ip', '8:unshare', '9:promtool']);
});

test('a unit test running a command only another profile declares is caught (the busybox case), a declared one is not', () => {
  // Deliberately undeclared for `test`: e2e only (as busybox was), and a command nothing declares.
  const e2eOnly = SYSTEM.find((n) => n.for.includes('e2e') && !SYSTEM.some((m) => m.command === n.command && m.for.includes('test')))!;
  assert.ok(e2eOnly, 'SYSTEM has a command declared for e2e and not for test');
  const text = `import { spawnSync } from 'node:child_process';\nconst BIN = '/bin/${e2eOnly.command}';\nspawnSync(BIN, ['--help']);\nexecFileSync('no-such-tool-anywhere', []);\nexecFileSync('node', ['-v']);\n`;
  assert.deepEqual(undeclared([{ file: 'test/x.test.ts', text, profiles: ['test'] }]), [
    `test/x.test.ts:3 runs ${e2eOnly.command}, not declared for test (add it to SYSTEM in e2e/cluster/requirements.ts for that profile)`,
    'test/x.test.ts:4 runs no-such-tool-anywhere, not declared for test (add it to SYSTEM in e2e/cluster/requirements.ts for that profile)',
  ]);
  assert.deepEqual(undeclared([{ file: 'e2e/x.e2e.ts', text: text.replace(/^execFileSync\('no-such.*$/m, ''), profiles: ['e2e'] }]), []);
});

test('every command run under test/, e2e/ and scripts/ is declared for the profile that runs it', () => {
  const demo = demoGraph();
  assert.ok(demo.has('e2e/cluster/haproxy.ts') || [...demo].some((f) => f.startsWith('e2e/cluster/')), `the demo's graph reaches the cluster harness: ${[...demo].join(', ')}`);
  const files = sources().map((file) => {
    const own = profilesOf(file)!;
    // A module the demo loads must work with what the demo installs, whatever else also loads it.
    const profiles: Profile[] = demo.has(file) && !own.includes('demo') ? ['demo', 'tools'] : own;
    return { file, text: readFileSync(join(root, file), 'utf8'), profiles };
  });
  const uses = files.flatMap((f) => commandUses(f.text));
  assert.ok(uses.length > 30 && uses.some((u) => u.command === 'openssl'), `the scan found the commands (${uses.length})`);
  assert.deepEqual(undeclared(files), []);
});

test('ALWAYS names no command SYSTEM installs (one place decides each command)', () => {
  assert.deepEqual(SYSTEM.filter((n) => ALWAYS[n.command] !== undefined).map((n) => n.command), []);
});
