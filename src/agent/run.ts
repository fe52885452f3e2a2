// The static Pod driver's node agent: `node /app/dist/agent/main.js` in the operator's own image, run by the Job
// that src/drivers/static-pod.ts agentJob() builds, pinned to one control-plane node with the manifests folder and
// the backup folder mounted. It edits the kubeadm kube-apiserver static Pod manifest the way an operator would by
// hand — the image, the proxy feature gate and its --peer-* flags, --emulated-version — as a YAML document
// (manifest-edit.ts), waits for the new server's /readyz and puts the backup back when it does not get ready.
//
// Steps: check the environment (input.ts; exit 2 on anything off) and that the manifest is a regular file the
// agent may read (exit 2 when not), before anything is written; one probe of /readyz, so that an agent that
// cannot talk TLS to the server stops before anything is written (a server that is down is no reason to stop: a
// rollback of a broken server); keep the manifest as found (files.ts, once per key); edit it in memory; when that
// changes it, write it under a dot name in the manifests folder and rename it onto the manifest; wait (wait.ts)
// until READY_TIMEOUT seconds have passed. Not ready in time, or stopped by SIGTERM/SIGINT meanwhile (the Job's
// deadline), or past its own deadline: the backup is put back the same atomic way, a line saying so goes to the
// termination message, and the agent exits 3 (143 on a signal). When the edit changes nothing (a re-run), nothing
// is renamed, no gap is needed, and a server not ready in time is not reverted (exit 4).
//
// Its own deadline: the whole run ends within READY_TIMEOUT + AGENT_RUN_ALLOWANCE_SECONDS of the input check,
// whatever the server does (a probe takes up to 5 s), so the agent never outlives the Job's deadline
// (READY_TIMEOUT + 300 s, counted from before the image pull) and reverts on its own first.
//
// Exit codes: 0 done and ready; 2 bad input or a manifest the agent cannot edit (nothing replaced); 3 reverted;
// 4 not ready and nothing to revert; 143 stopped by a signal (reverted when the manifest had been replaced);
// 1 a step failed, or the agent's own deadline passed before the manifest was replaced (named in the termination
// message; before the rename nothing was replaced).
//
// Environment (AGENT_ENV_NAMES, nothing else is read): MANIFEST, BACKUP_DIR, KEY, IMAGE (the full target
// reference), VERSION, GATE (true, false, or empty: leave the gate alone), PEER_CA, PEER_IP, PEER_PORT,
// EMULATED_VERSION (major.minor, or empty: none), READY_TIMEOUT (whole seconds, 10 to 3600). Lines for people go to
// stdout (the Job's log); the termination message goes only where `options` say (main.ts: /dev/termination-log).
import { readInput } from './input.ts';
import { editManifest } from './manifest-edit.ts';
import { keepBackup, pathsOf, readRegularFile, removeTemps, replaceManifest, restoreBackup, writeTerminationMessage, type Paths } from './files.ts';
import { gitVersion, notReady, serverUrl } from './probe.ts';
import { waitReady } from './wait.ts';

/** What the agent is not told by its environment: main.ts passes the fixed values; a test passes its own. */
export interface AgentOptions {
  /** The container's terminationMessagePath. */
  terminationMessagePath: string;
  /** How long between two probes of /readyz while waiting. */
  pollMs: number;
  /** The run ends within READY_TIMEOUT plus this. */
  runAllowanceMs: number;
}

/** Runs the agent once with `env`; it ends the process (process.exit) with its exit code. */
export function runAgent(env: NodeJS.ProcessEnv, options: AgentOptions): void {
  let step = 'checking the input';
  let paths: Paths | undefined;
  /** The manifest on the node is the agent's edit (not the backup): a revert is owed. */
  let replaced = false;
  let ready = false;
  let told = false;

  const say = (line: string): void => {
    process.stdout.write(`${line}\n`);
  };

  /** The termination message, once: later lines go to stderr only. */
  const tell = (message: string): void => {
    if (told) return;
    told = true;
    // Not written when there is no such file (not in a Pod) or it is not the kubelet's empty one: stderr has the line.
    writeTerminationMessage(options.terminationMessagePath, `${message}\n`);
  };

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

  /**
   * A signal (the Job's deadline, a deletion: exit 143) or the agent's own deadline (exit 3 when it reverted, else
   * 1): revert when a revert is owed, and end.
   */
  const stopped = (what: string, cause: string, code: number): void => {
    if (replaced && !ready && paths) {
      try {
        restoreBackup(paths);
      } catch (err) {
        fail(code, `stopped (${what}) while ${step}, after the manifest was replaced, and restoring ${paths.backup} failed: ${(err as Error).message}`);
      }
      fail(code === 143 ? 143 : 3, `reverted: the agent was stopped (${what}: ${cause}) before the new kube-apiserver static Pod was ready; restored ${paths.backup}`);
    }
    fail(code, `stopped (${what}) while ${step}; the manifest was not replaced`);
  };
  process.on('SIGTERM', () => stopped('SIGTERM', 'the Job\'s deadline or a deletion', 143));
  process.on('SIGINT', () => stopped('SIGINT', 'the Job\'s deadline or a deletion', 143));

  async function main(): Promise<never> {
    const input = readInput(env);
    if ('error' in input) fail(2, input.error);
    const deadlineMs = input.readyTimeoutSeconds * 1000 + options.runAllowanceMs;
    setTimeout(() => stopped('its own deadline', `READY_TIMEOUT + ${options.runAllowanceMs / 1000}s passed`, 1), deadlineMs);
    const p = pathsOf(input.manifest, input.backupDir, input.key);
    const found = readRegularFile(input.manifest);
    if ('error' in found) fail(2, `the manifest ${input.manifest} ${found.error}; nothing was written`);
    paths = p;
    const base = serverUrl(input.peerIP, input.peerPort);
    const asked = `image ${input.image}, gate ${input.gate ?? ''}, emulated version ${input.emulatedVersion ?? ''}`;

    step = `checking that the agent can read ${base}/readyz`;
    const first = await notReady(base);
    if (first?.tls) fail(2, `the agent cannot check the server: ${base}/readyz: ${first.why} (the TLS handshake failed); the manifest was not replaced`);
    if (first) say(`the server does not answer ${base}/readyz before the replacement (${first.why}); going on`);
    const oldVersion = await gitVersion(base);

    step = `keeping the manifest as ${p.backup}`;
    // Read again: the manifest kept and edited is the one on the node now, after the probes.
    const now = readRegularFile(input.manifest);
    if ('error' in now) fail(2, `the manifest ${input.manifest} ${now.error}; the manifest was not replaced`);
    keepBackup(p, input.backupDir, now.data);

    step = 'editing the manifest';
    const text = now.data.toString('utf8');
    if (!Buffer.from(text, 'utf8').equals(now.data)) fail(2, `${input.manifest} is not UTF-8 text; the manifest was not replaced`);
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
    const seconds = input.readyTimeoutSeconds;
    const w = await waitReady({ base, replaced, oldVersion, version: input.version, timeoutMs: seconds * 1000, pollMs: options.pollMs });
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
    const where = replaced && paths ? `, after the manifest was replaced; backup ${paths.backup}` : '; the manifest was not replaced';
    tell(`failed (exit 1) while ${step}: ${why}${where}`);
    process.stderr.write(`${why}\n`);
    exit(1);
  });
}
