// The harness leaves nothing behind: not after a normal teardown, not after Ctrl-C, and — once swept — not
// after the test runner itself is SIGKILLed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster, waitFor } from './cluster/index.ts';
import { STATE_ROOT, sweepStale } from './cluster/cleanup.ts';

const CLI = join(import.meta.dirname, 'cluster', 'cli.ts');

function netnsList(): string[] {
  return execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n').map((l) => l.split(' ')[0] ?? '').filter(Boolean);
}

/** Processes whose command line mentions the run's folder (haproxy, etcd, kube-apiserver all do). */
function processesOf(dir: string): number[] {
  return readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(dir);
    } catch {
      return false;
    }
  }).map(Number);
}

function assertGone(runId: string): void {
  const dir = join(STATE_ROOT, runId);
  assert.equal(existsSync(dir), false, `run folder ${dir} removed`);
  assert.ok(!netnsList().includes(`auo-${runId}`), 'network namespace removed');
  assert.deepEqual(processesOf(dir), [], 'no process of the run left');
  assert.ok(!execFileSync('ip', ['-o', 'link'], { encoding: 'utf8' }).includes(`auo${runId}h`), 'veth removed');
}

test('teardown removes every process, the namespace, the veth pair and the files', async () => {
  const c = await Cluster.start({ servers: 2 });
  const dir = c.dir;
  assert.ok(processesOf(dir).length >= 4, 'etcd, 2 apiservers and haproxy were running');
  await c.teardown();
  assertGone(c.runId);
});

/** Starts `cluster up` in a child process and returns its run id once the cluster is up. */
async function startChild(): Promise<{ child: ReturnType<typeof spawn>; runId: string }> {
  const child = spawn(process.execPath, [CLI, 'up', '--servers', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', () => undefined);
  const runId = await waitFor('the child cluster to come up', 60_000, async () => {
    const m = /KUBECONFIG=.*auo-e2e\/([0-9a-f]+)\/admin\.kubeconfig/.exec(out);
    return m && out.includes('Ctrl-C') ? m[1] : undefined;
  });
  return { child, runId };
}

test('Ctrl-C (SIGINT) of the process that owns a cluster tears it down', async () => {
  const { child, runId } = await startChild();
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGINT');
  await exited;
  assertGone(runId);
});

test('a SIGKILLed owner leaves a cluster that the next start (or `cluster down`) sweeps away', async () => {
  const { child, runId } = await startChild();
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  assert.ok(existsSync(join(STATE_ROOT, runId)), 'SIGKILL gave the owner no chance to clean up');
  assert.ok(sweepStale() >= 1, 'the sweep found the orphaned cluster');
  assertGone(runId);
});
