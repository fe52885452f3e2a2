// Which external commands a test or script runs, read from its source: the first argument of execFile,
// execFileSync, spawn, spawnSync, exec, execSync and the harness's run/runOk/runSyncQuiet when it is a string
// literal, or a constant of the same file bound to one, plus the names given to onPath(), tool() and requireCommands().
// test/e2e-cluster/commands-declared.test.ts checks each against the profile that runs the file
// (e2e/cluster/requirements.ts), so a command that only another profile installs fails in seconds, not on a newcomer's
// fresh machine (issue 23: `spawnSync /bin/busybox ENOENT` in a unit test, busybox declared for e2e only).
import { basename, dirname } from 'node:path';
import { SYSTEM, type Profile } from './requirements.ts';

export interface CommandUse {
  command: string;
  line: number;
}

const RUNNERS = ['execFile', 'execFileSync', 'spawn', 'spawnSync', 'exec', 'execSync', 'run', 'runOk', 'runSyncQuiet'];
/** Where a command named by absolute path comes from the system's packages (elsewhere it is something the tests built). */
const SYSTEM_DIRS = new Set(['/bin', '/sbin', '/usr/bin', '/usr/sbin', '/usr/local/bin']);
const STRING = String.raw`'([^'\n]*)'|"([^"\n]*)"`;

/** The command a literal names: a bare name, or the base name of a path in a system folder; else undefined. */
function commandOf(literal: string): string | undefined {
  if (literal.startsWith('/')) return SYSTEM_DIRS.has(dirname(literal)) ? basename(literal) : undefined;
  return /^[A-Za-z0-9][A-Za-z0-9._+-]*$/.test(literal) ? literal : undefined;
}

/** Every external command `source` runs by a name it states, with its 1-based line. */
export function commandUses(source: string): CommandUse[] {
  const consts = new Map<string, string>();
  for (const m of source.matchAll(new RegExp(String.raw`\bconst\s+([A-Za-z_$][\w$]*)\s*=\s*(?:${STRING})\s*;`, 'g'))) consts.set(m[1]!, m[2] ?? m[3]!);
  const lineOf = (i: number): number => source.slice(0, i).split('\n').length;
  const out: CommandUse[] = [];
  const add = (literal: string | undefined, i: number): void => {
    const command = literal === undefined ? undefined : commandOf(literal);
    if (command !== undefined) out.push({ command, line: lineOf(i) });
  };
  const call = new RegExp(String.raw`(?<![\w$.])(?:${RUNNERS.join('|')})\(\s*(?:${STRING}|([A-Za-z_$][\w$]*)\s*[,)])`, 'g');
  for (const m of source.matchAll(call)) add(m[1] ?? m[2] ?? (m[3] === undefined ? undefined : consts.get(m[3])), m.index);
  for (const m of source.matchAll(new RegExp(String.raw`\b(?:onPath|tool)\(\s*(?:${STRING})\s*\)`, 'g'))) add(m[1] ?? m[2], m.index);
  for (const m of source.matchAll(/\brequireCommands\(\s*\[([^\]]*)\]/g)) {
    for (const s of m[1]!.matchAll(new RegExp(STRING, 'g'))) add(s[1] ?? s[2], m.index);
  }
  return out.sort((a, b) => a.line - b.line);
}

/**
 * Commands every machine that can run the README's commands has: Node and npm (they run everything), git (the
 * clone), and what Debian's and Ubuntu's essential packages give (coreutils, bash, dash, findutils, tar, gzip,
 * libc-bin, mount), which apt cannot remove.
 */
export const ALWAYS: Record<string, string> = Object.fromEntries([
  ...['node', 'npm', 'git'].map((c) => [c, 'runs the README\'s commands']),
  ...['sh', 'bash', 'env', 'mkdir', 'rmdir', 'sleep', 'cat', 'cp', 'mv', 'rm', 'ln', 'chmod', 'id', 'kill', 'true', 'false', 'find', 'tar', 'gzip', 'ldd', 'mount', 'umount', 'grep', 'sed'].map((c) => [c, 'an essential Debian/Ubuntu package']),
]);

/** The profiles that run a file, from where it is: unit tests under test/, the e2e suite (and the demo) under e2e/. */
export function profilesOf(file: string): Profile[] | undefined {
  if (file.startsWith('test/')) return ['test'];
  // The demo installs its own profile, and with --fault the tools one (helm, promtool) first.
  if (file === 'e2e/demo.ts' || file.startsWith('e2e/demo/')) return ['demo', 'tools'];
  if (file.startsWith('e2e/')) return ['e2e', 'demo'];
  if (file.startsWith('scripts/')) return ['test', 'demo', 'e2e', 'tools'];
  return undefined;
}

/** Why `command` may be run by a file of these profiles, or undefined when nothing declares it. */
export function declaredFor(command: string, profiles: Profile[], goBuilt: readonly string[]): string | undefined {
  if (ALWAYS[command]) return ALWAYS[command];
  if (goBuilt.includes(command)) return 'built from the Go module proxy by e2e/cluster/binaries.ts';
  if (command === 'go') return 'the Go toolchain: requireGo (e2e/cluster/binaries.ts) stops with its download command when it is missing';
  const need = SYSTEM.find((n) => n.command === command && n.for.some((p) => profiles.includes(p)));
  return need ? `${need.pkg} (requirements.ts, for ${need.for.join(', ')})` : undefined;
}
