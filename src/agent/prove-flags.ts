// The flag proof run where the target binary is (docs/flag-proof.md): the target kube-apiserver is started with the
// command line to prove and PROOF_SENTINEL last, and what it prints is read into a verdict (src/plan/flag-proof.ts).
// The binary is started directly (execFile, an argument list: no shell), with an empty environment but PATH, and is
// killed when it has not exited within the timeout (then it got past validation: Inconclusive).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { isMap, isSeq, parseDocument } from 'yaml';
import { PROOF_OUTPUT_MAX, PROOF_SENTINEL, readProof, type ProofRun, type ProofVerdict } from '../plan/flag-proof.ts';
import { proofCommand } from '../drivers/flag-proof-command.ts';

/** How long the binary may take: it exits in well under a second when it validates (docs/flag-proof.md). */
export const PROOF_TIMEOUT_SECONDS = 30;

/** Runs `binary` with `args` (PROOF_SENTINEL already last) and collects what it prints; never rejects. */
export function runBinary(binary: string, args: readonly string[], timeoutMs: number): Promise<ProofRun & { ms: number }> {
  return new Promise((resolve) => {
    const started = performance.now();
    let output = '';
    let timedOut = false;
    const keep = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (output.length > 2 * PROOF_OUTPUT_MAX) output = output.slice(-PROOF_OUTPUT_MAX);
    };
    let child;
    try {
      child = spawn(binary, [...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin' } });
    } catch (err) {
      resolve({ exitCode: null, timedOut: false, output: `cannot start ${binary}: ${(err as Error).message}`, ms: 0 });
      return;
    }
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', (err) => {
      output += `cannot start ${binary}: ${err.message}\n`;
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ exitCode: code, timedOut, output, ms: performance.now() - started });
    });
  });
}

/** Proves `args` (the command line without the binary and without the sentinel) with `binary`. */
export async function proveFlags(binary: string, args: readonly string[], timeoutSeconds = PROOF_TIMEOUT_SECONDS): Promise<{ verdict: ProofVerdict; ms: number }> {
  const run = await runBinary(binary, [...args, PROOF_SENTINEL], timeoutSeconds * 1000);
  return { verdict: readProof(run, timeoutSeconds), ms: run.ms };
}

/** The kube-apiserver command list of a static Pod manifest (the container named kube-apiserver, or the one running it). */
export function manifestCommand(text: string): string[] | { error: string } {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) return { error: `not valid YAML: ${doc.errors[0]!.message.split('\n')[0]}` };
  const containers = doc.getIn(['spec', 'containers'], true);
  if (!isSeq(containers)) return { error: 'no spec.containers list' };
  const all = containers.items.filter(isMap).map((c) => c.toJSON() as { name?: unknown; command?: unknown; args?: unknown });
  const commandOf = (c: { command?: unknown }): string[] | undefined => (Array.isArray(c.command) && c.command.every((x) => typeof x === 'string') ? (c.command as string[]) : undefined);
  const byName = all.filter((c) => c.name === 'kube-apiserver');
  const found = byName.length > 0 ? byName : all.filter((c) => commandOf(c)?.[0]?.endsWith('kube-apiserver') === true);
  if (found.length !== 1) return { error: found.length === 0 ? 'no kube-apiserver container' : `${found.length} kube-apiserver containers` };
  const command = commandOf(found[0]!);
  if (command === undefined) return { error: 'the kube-apiserver container\'s command is not a list of strings' };
  if (found[0]!.args !== undefined) return { error: 'the kube-apiserver container has args: the static Pod driver edits flags in its command only (kubeadm\'s layout)' };
  return command;
}

const USAGE = `usage: prove-flags --binary <kube-apiserver of the target version> [--timeout-seconds N] (--manifest <static Pod manifest> | -- <flag>...)
Runs the target kube-apiserver with the command line and ${PROOF_SENTINEL} appended, and prints one JSON line:
{"result":"Accepted"|"Refused"|"Inconclusive", "flag", "item", "message", "warnings", "ms"}.
Exit 0 Accepted, 1 Refused, 3 Inconclusive, 2 a usage or input error. Nothing is served and nothing is written.`;

/** The command: `node dist/agent/prove-flags-cli.js ...`; returns the exit code and writes its lines with `out`/`err`. */
export async function proveFlagsCommand(argv: readonly string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  let binary: string | undefined;
  let manifest: string | undefined;
  let timeout = PROOF_TIMEOUT_SECONDS;
  let flags: string[] | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      flags = argv.slice(i + 1);
      break;
    }
    const value = argv[i + 1];
    if ((a === '--binary' || a === '--manifest' || a === '--timeout-seconds') && value === undefined) {
      err(`${a} needs a value\n${USAGE}`);
      return 2;
    }
    if (a === '--binary') binary = value;
    else if (a === '--manifest') manifest = value;
    else if (a === '--timeout-seconds') {
      timeout = /^[1-9][0-9]{0,3}$/.test(value!) ? Number(value) : Number.NaN;
      if (Number.isNaN(timeout)) {
        err(`--timeout-seconds must be 1..9999, got ${JSON.stringify(value)}`);
        return 2;
      }
    } else if (a === '--help' || a === '-h') {
      out(USAGE);
      return 0;
    } else {
      err(`unknown argument ${JSON.stringify(a)}\n${USAGE}`);
      return 2;
    }
    i++;
  }
  if (binary === undefined || (manifest === undefined) === (flags === undefined)) {
    err(USAGE);
    return 2;
  }
  let args: string[];
  if (manifest !== undefined) {
    let text: string;
    try {
      text = readFileSync(manifest, 'utf8');
    } catch (e) {
      err(`cannot read ${manifest}: ${(e as Error).message}`);
      return 2;
    }
    const command = manifestCommand(text);
    if (!Array.isArray(command)) {
      err(`${manifest}: ${command.error}`);
      return 2;
    }
    const built = proofCommand(command, undefined);
    if ('error' in built) {
      err(`${manifest}: ${built.error}`);
      return 2;
    }
    args = built.args.slice(0, -1);
  } else {
    const built = proofCommand(['kube-apiserver', ...flags!], undefined);
    if ('error' in built) {
      err(built.error);
      return 2;
    }
    args = built.args.slice(0, -1);
  }
  const { verdict, ms } = await proveFlags(binary, args, timeout);
  out(JSON.stringify({ ...verdict, ms: Math.round(ms) }));
  return verdict.result === 'Accepted' ? 0 : verdict.result === 'Refused' ? 1 : 3;
}
