// Where the Kubernetes ecosystem's own tools are, for the e2e tests: helm and promtool from the folder that
// scripts/install-tools.sh fills (and prints), kubectl from PATH. A missing tool fails with the command that installs it.
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

/** The folder install-tools.sh writes to: $AUO_TOOL_CACHE, else $XDG_CACHE_HOME or ~/.cache, then apiserver-upgrade-operator/tools. */
export function toolCache(): string {
  return process.env.AUO_TOOL_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'apiserver-upgrade-operator', 'tools');
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

const HOW: Record<string, string> = {
  helm: 'run `bash scripts/install-tools.sh` (builds helm from the Go module proxy into the tool cache)',
  promtool: 'run `bash scripts/install-tools.sh` (installs Debian\'s prometheus package: promtool and the prometheus server)',
  kubectl: 'install kubectl 1.32+ on PATH',
};

/**
 * Absolute path of a tool: the tool cache first, then PATH. Throws an error that says how to install it.
 */
export function tool(name: 'helm' | 'promtool' | 'kubectl'): string {
  const dirs = [toolCache(), ...(process.env.PATH ?? '').split(delimiter).filter(Boolean)];
  for (const d of dirs) {
    const p = join(d, name);
    if (executable(p)) return p;
  }
  throw new Error(`${name} not found in ${toolCache()} or on PATH: ${HOW[name] ?? `install ${name}`}`);
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a tool with optional stdin; resolves with its exit code and output (never rejects on a non-zero exit). */
export function run(cmd: string, args: string[], opts: { input?: string; cwd?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { cwd: opts.cwd, timeout: opts.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr}`));
      resolve({ code: err ? Number(err.code) : 0, stdout, stderr });
    });
    // A child that exits before reading its input breaks the pipe: its exit code and output say why, not an EPIPE
    // thrown from the stream (it killed a whole campaign run once).
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(opts.input ?? '');
  });
}

/** Like run(), but throws with the output when the exit code is not 0. */
export async function runOk(cmd: string, args: string[], opts: { input?: string; cwd?: string; timeoutMs?: number } = {}): Promise<string> {
  const r = await run(cmd, args, opts);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.code}\n${r.stderr}${r.stdout}`);
  return r.stdout;
}
