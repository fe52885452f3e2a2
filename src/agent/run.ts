// The static Pod driver's node agent: `node /app/dist/agent/main.js` in the operator's own image, run by the Job
// that src/drivers/static-pod.ts agentJob() builds, pinned to one control-plane node with the manifests folder and
// the backup folder mounted. It edits the kubeadm kube-apiserver static Pod manifest the way an operator would by
// hand — the image, the proxy feature gate and its --peer-* flags, --emulated-version — as a YAML document
// (manifest-edit.ts), waits for the new server's /readyz and puts the backup back when it does not get ready.
//
// Steps: check the environment (input.ts; exit 2 on anything off); one probe of /readyz, so that an agent that
// cannot talk TLS to the server stops before anything is written (a server that is down is no reason to stop: a
// rollback of a broken server); keep the manifest as found (files.ts, once per key); edit it in memory; when that
// changes it, write it under a dot name in the manifests folder and rename it onto the manifest; wait (wait.ts)
// until READY_TIMEOUT seconds have passed. Not ready in time, or stopped by SIGTERM/SIGINT meanwhile (the Job's
// deadline): the backup is put back the same atomic way, a line saying so goes to the termination log, and the
// agent exits 3 (143 on a signal). When the edit changes nothing (a re-run), nothing is renamed, no gap is needed,
// and a server not ready in time is not reverted (exit 4).
//
// Exit codes: 0 done and ready; 2 bad input or a manifest the agent cannot edit (nothing replaced); 3 reverted;
// 4 not ready and nothing to revert; 143 stopped by a signal (reverted when the manifest had been replaced);
// 1 a step failed (named in the termination log; before the rename nothing was replaced).
//
// Environment: MANIFEST, BACKUP_DIR, KEY, IMAGE (the full target reference), VERSION, GATE (true, false, or empty:
// leave the gate alone), PEER_CA, PEER_IP, PEER_PORT, EMULATED_VERSION (major.minor, or empty: none),
// READY_TIMEOUT (seconds), POLL_INTERVAL (seconds, default 2), TERMINATION_LOG (default /dev/termination-log,
// which the kubelet reads into the container's terminated state). Lines for people go to stdout (the Job's log).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { compile, NODE_PATH_MAX_LENGTH, NODE_PATH_PATTERN } from '../api/patterns.ts';
import { DEFAULT_TERMINATION_LOG, readInput } from './input.ts';
import { editManifest } from './manifest-edit.ts';
import { keepBackup, pathsOf, removeTemps, replaceManifest, restoreBackup, type Paths } from './files.ts';
import { gitVersion, notReady, serverUrl } from './probe.ts';
import { waitReady } from './wait.ts';

const envLog = process.env.TERMINATION_LOG ?? '';
/** Where the termination message goes; a TERMINATION_LOG that is not a safe path is not used. */
const terminationLog = envLog !== '' && envLog.length <= NODE_PATH_MAX_LENGTH && compile(NODE_PATH_PATTERN).test(envLog) ? envLog : DEFAULT_TERMINATION_LOG;

let step = 'checking the input';
let paths: Paths | undefined;
/** The manifest on the node is the agent's edit (not the backup): a revert is owed. */
let replaced = false;
let ready = false;
let told = false;

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function tell(message: string): void {
  told = true;
  try {
    writeFileSync(terminationLog, `${message}\n`);
  } catch {
    // No termination log (not in a Pod): stderr has the line.
  }
}

function exit(code: number): never {
  if (paths) {
    try {
      removeTemps(paths);
    } catch {
      // Nothing to do about it: the kubelet skips dot names.
    }
  }
  process.exit(code);
}

function fail(code: number, message: string): never {
  process.stderr.write(`${message}\n`);
  tell(message);
  exit(code);
}

function stopped(signal: NodeJS.Signals): void {
  if (replaced && !ready && paths) {
    try {
      restoreBackup(paths);
    } catch (err) {
      fail(143, `stopped (${signal}) while ${step}, after the manifest was replaced, and restoring ${paths.backup} failed: ${(err as Error).message}`);
    }
    fail(143, `reverted: the agent was stopped (${signal}: the Job's deadline or a deletion) before the new kube-apiserver static Pod was ready; restored ${paths.backup}`);
  }
  fail(143, `stopped (${signal}) while ${step}; the manifest was not replaced`);
}
process.on('SIGTERM', () => stopped('SIGTERM'));
process.on('SIGINT', () => stopped('SIGINT'));

async function main(): Promise<never> {
  const input = readInput(process.env);
  if ('error' in input) fail(2, input.error);
  const p = pathsOf(input.manifest, input.backupDir, input.key);
  paths = p;
  if (!existsSync(input.manifest)) fail(2, `no manifest at ${input.manifest}`);
  const base = serverUrl(input.peerIP, input.peerPort);
  const asked = `image ${input.image}, gate ${input.gate ?? ''}, emulated version ${input.emulatedVersion ?? ''}`;

  step = `checking that the agent can read ${base}/readyz`;
  const first = await notReady(base);
  if (first?.tls) fail(2, `the agent cannot check the server: ${base}/readyz: ${first.why} (the TLS handshake failed); the manifest was not replaced`);
  if (first) say(`the server does not answer ${base}/readyz before the replacement (${first.why}); going on`);
  const oldVersion = await gitVersion(base);

  step = `keeping the manifest as ${p.backup}`;
  const found = readFileSync(input.manifest);
  keepBackup(p, input.backupDir, found);

  step = 'editing the manifest';
  const text = found.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(found)) fail(2, `${input.manifest} is not UTF-8 text; the manifest was not replaced`);
  const edit = editManifest(text, input);
  if (!edit.ok) fail(2, `${edit.message} (${input.manifest}); the manifest was not replaced`);
  if (edit.note) say(edit.note);
  if (!edit.changed) {
    say(`the manifest is already as asked (${asked}): nothing to replace`);
  } else {
    step = 'replacing the manifest';
    replaceManifest(p, edit.text);
    replaced = true;
    say(`manifest replaced: ${asked} (empty: none); backup ${p.backup}`);
  }

  step = 'waiting for the new kube-apiserver to be ready';
  const seconds = input.readyTimeoutMs / 1000;
  const w = await waitReady({ base, replaced, oldVersion, version: input.version, timeoutMs: input.readyTimeoutMs, pollMs: input.pollIntervalMs });
  if (w.ready) {
    ready = true;
    say(`ready: ${base}/readyz answered 200 after ${Math.round(w.afterMs / 1000)}s`);
    exit(0);
  }
  if (replaced) {
    step = `restoring ${p.backup}`;
    restoreBackup(p);
    replaced = false;
    fail(3, `reverted: the new kube-apiserver static Pod was not ready within ${seconds}s (${base}/readyz, last: ${w.last}); restored ${p.backup}`);
  }
  fail(4, `not ready: ${base}/readyz did not answer 200 within ${seconds}s (last: ${w.last}); the manifest was already as asked, nothing to revert`);
}

main().catch((err: unknown) => {
  const why = err instanceof Error ? err.message : String(err);
  if (!told) {
    const where = replaced && paths ? `, after the manifest was replaced; backup ${paths.backup}` : '; the manifest was not replaced';
    tell(`failed (exit 1) while ${step}: ${why}${where}`);
  }
  process.stderr.write(`${why}\n`);
  exit(1);
});
