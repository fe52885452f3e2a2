// `kubectl apiserver-upgrade` against a real cluster: the plugin's executable (the launcher npm installs as a
// bin) with the cluster's kubeconfig, the operator as its own process, the replacement webhook as the driver.
//  - retry re-runs a Failed upgrade from preflight;
//  - plan is a dry run that changes nothing (the object's resourceVersion, no Event, no hook call) and prints
//    the batches and the driver calls the upgrade then really makes, in order, with the same keys; get, get -w
//    and list show the phases; pause and resume change the spec as documented;
//  - abort after the first batch ends RolledBack with every server on the old version; resume acts on an
//    automatic pause through its annotation.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { accessSync, constants, cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { parse } from 'yaml';
import { NEW_VERSION, OLD_VERSION, waitFor, type Cluster } from './cluster/index.ts';
import { createUpgrade, getUpgrade, startOperator } from './support/operator.ts';
import { startRig, upgradeManifest, type Rig } from './support/rig.ts';
import { closedPort, forward, type Forwarder } from './support/tcp-forward.ts';
import { run, runOk, tool, toolCache } from './support/tools.ts';
import { buildArchive, fillManifest } from '../src/cli/krew-archive.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';
import { ABORT_ANNOTATION, RESUME_ANNOTATION, RETRY_ANNOTATION } from '../src/api/vocabulary.ts';
import type { PlanView } from '../src/cli/plan-view.ts';
import type { ListRow } from '../src/cli/list-view.ts';
import type { GetView } from '../src/cli/get-view.ts';

const PLUGIN = join(import.meta.dirname, '..', 'src', 'cli', 'kubectl-apiserver_upgrade');
const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';

let rig: Rig;
const cleanups: (() => Promise<void>)[] = [];
before(async () => {
  rig = await startRig({ gate: false, healthPort: 18100, trafficMaxMs: 30 * 60_000 });
  cleanups.push(() => rig.teardown());
  await rig.traffic.stop();
});
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

interface Out {
  code: number;
  stdout: string;
  stderr: string;
}

/** The plugin as a user runs it, through its launcher, with the cluster's kubeconfig. */
async function plugin(...args: string[]): Promise<Out> {
  const r = await run(PLUGIN, [...args, '--kubeconfig', rig.cluster.kubeconfig], { timeoutMs: 120_000 });
  process.stderr.write(`$ kubectl apiserver-upgrade ${args.join(' ')} -> ${r.code}${r.stderr ? `: ${r.stderr.trim()}` : ''}\n`);
  return r;
}

async function ok(...args: string[]): Promise<string> {
  const r = await plugin(...args);
  assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A refusal: exit 1 and one line on stderr saying why. */
async function refused(why: RegExp, ...args: string[]): Promise<void> {
  const r = await plugin(...args);
  assert.equal(r.code, 1, `${args.join(' ')} must be refused`);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^error: [^\n]+\n$/, 'one line');
  assert.match(r.stderr, why);
}

async function must(name: string): Promise<ApiServerUpgrade> {
  return waitFor(`${name} readable`, 30_000, () => getUpgrade(rig.cluster, name));
}

async function until(name: string, what: string, within: number, probe: (u: ApiServerUpgrade) => boolean): Promise<ApiServerUpgrade> {
  let last = '';
  return waitFor(`${name}: ${what}`, within, async () => {
    const u = await getUpgrade(rig.cluster, name);
    const line = `${u?.status?.phase} ${u?.status?.batch?.progress ?? ''} ${u?.status?.pause?.reason ?? ''} ${u?.status?.pause?.message ?? ''}`;
    if (line !== last) process.stderr.write(`[${name}] ${(last = line)}\n`);
    return u && probe(u) ? u : undefined;
  }, 500);
}

async function patchSpec(name: string, spec: Record<string, unknown>): Promise<void> {
  const r = await rig.cluster.request('lb', `${UPGRADES}/${name}`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify({ spec }) });
  assert.equal(r.status, 200, r.body);
}

/** The operator records an Event after the status write it follows: a reader that saw the status waits for it. */
async function eventRecorded(name: string, reason: string): Promise<void> {
  await waitFor(`${name}: a ${reason} Event`, 30_000, async () => ((await eventReasons(name)).includes(reason) ? true : undefined), 500);
}

async function eventReasons(name: string): Promise<string[]> {
  const r = await rig.cluster.request('lb', `/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=${encodeURIComponent(`regarding.name=${name}`)}`);
  return (JSON.parse(r.body) as { items: { reason: string }[] }).items.map((e) => e.reason);
}

async function versions(cluster: Cluster): Promise<string[]> {
  return Promise.all(cluster.servers.map(async (s) => (JSON.parse((await cluster.request(s.index, '/version')).body) as { gitVersion: string }).gitVersion));
}

test('retry re-runs a Failed upgrade from preflight; resume, pause and abort refuse a finished one', async () => {
  const name = 'plugin-failed';
  const m = upgradeManifest(name, rig.hook) as { spec: Record<string, unknown> };
  m.spec.targetVersion = 'v1.34.0';
  await createUpgrade(rig.cluster, m);
  const failed = await until(name, 'Failed', 60_000, (u) => u.status?.phase === 'Failed');
  assert.equal(failed.status?.conditions?.find((c) => c.type === 'PreflightPassed')?.reason, 'Downgrade');
  assert.match(await ok('get', name), /^Phase: +✖ Failed$/m);

  const out = await ok('retry', name);
  assert.match(out, /annotated upgrade\.apiserver\.dev\/retry=\S+\. The operator re-runs the Failed upgrade from preflight/);
  const token = (await must(name)).metadata?.annotations?.[RETRY_ANNOTATION];
  assert.ok(token);
  const again = await until(name, 'the retry acted on', 60_000, (u) => u.status?.observedRetry === token && u.status.phase === 'Failed');
  assert.notEqual(again.status?.completedAt, undefined);
  await eventRecorded(name, 'Retried');

  await refused(/cannot resume plugin-failed: it is Failed, finished; `kubectl apiserver-upgrade retry plugin-failed` re-runs/, 'resume', name);
  await refused(/cannot pause plugin-failed: it is Failed, finished/, 'pause', name);
  await refused(/cannot abort plugin-failed: it is already Failed, finished/, 'abort', name);
  await refused(/apiserverupgrade "nope" not found/, 'get', 'nope');
});

test('plan changes nothing and prints the batches and the calls the upgrade then makes; get, get -w, list, pause and resume', async () => {
  const { cluster, hook } = rig;
  const name = 'plugin-plan';
  const m = upgradeManifest(name, hook, { analysis: { thresholds: { discoveryConvergence: '2m' } } }) as { spec: Record<string, unknown> };
  m.spec.paused = true;
  await createUpgrade(cluster, m);

  // get -w from the start: a redraw on every change, until interrupted.
  const watch = spawn(PLUGIN, ['get', name, '-w', '--kubeconfig', cluster.kubeconfig], { stdio: ['ignore', 'pipe', 'pipe'] });
  let watched = '';
  watch.stdout.setEncoding('utf8').on('data', (s: string) => (watched += s));
  const watchExit = new Promise<number | null>((r) => watch.once('exit', (code) => r(code)));
  cleanups.push(async () => void watch.kill('SIGKILL'));

  // Created paused: preflight runs and the plan is frozen, then it pauses before any call.
  const held = await until(name, 'PausedBySpec with a plan', 90_000, (u) => u.status?.pause?.reason === 'PausedBySpec' && (u.status.plan?.batches?.length ?? 0) > 0);
  const pausedView = await ok('get', name);
  process.stderr.write(pausedView);
  assert.match(pausedView, /^Phase: +॥ Paused \(PausedBySpec\)$/m);
  const view = JSON.parse(await ok('get', name, '-o', 'json')) as GetView;
  assert.deepEqual([view.phase, view.pause?.reason, view.progress.total], ['Paused', 'PausedBySpec', 3]);
  const rows = JSON.parse(await ok('list', '-o', 'json')) as ListRow[];
  assert.equal(rows.find((r) => r.name === name)?.phase, 'Paused');
  assert.match(await ok('list'), new RegExp(`^${name} +Paused +${OLD_VERSION.replace(/\./g, '\\.')} +${NEW_VERSION.replace(/\./g, '\\.')} +0/3 +0/3 +PausedBySpec +- +\\S+$`, 'm'));
  // The same through kubectl, which finds the plugin on PATH.
  const bin = mkdtempSync(join(tmpdir(), 'auo-kubectl-plugin-'));
  symlinkSync(PLUGIN, join(bin, 'kubectl-apiserver_upgrade'));
  const viaKubectl = await runWithPath(tool('kubectl'), ['apiserver-upgrade', 'list', '--kubeconfig', cluster.kubeconfig], bin);
  assert.equal(viaKubectl.code, 0, viaKubectl.stderr);
  assert.match(viaKubectl.stdout, new RegExp(`^${name} +Paused `, 'm'));

  // The dry run, with the operator stopped so that nothing else writes: the object does not change at all.
  await rig.op.stop();
  let plan: PlanView | undefined;
  try {
    plan = await dryRunChangesNothing(name, held);
  } finally {
    const second = await startOperator(cluster, { healthPort: 18101 });
    cleanups.push(() => second.stop());
  }

  // Paused by spec: pause and retry make no sense; resume sets spec.paused to false.
  await refused(/plugin-plan is already paused by its spec/, 'pause', name);
  await refused(/plugin-plan is paused by its spec \(spec\.paused is true\), which a retry does not override/, 'retry', name);
  assert.match(await ok('resume', name), /spec\.paused set to false\. This is a spec edit: Git tools/);
  assert.equal((await must(name)).spec.paused, false);

  // Paused again mid-run (a spec edit), and resumed.
  await until(name, 'Upgrading', 3 * 60_000, (u) => u.status?.phase === 'Upgrading');
  process.stderr.write(await ok('get', name));
  assert.match(await ok('pause', name), /spec\.paused set to true\. This is a spec edit: Git tools \(Argo CD, Flux\) will see it/);
  assert.equal((await must(name)).spec.paused, true);
  await until(name, 'PausedBySpec mid-run', 3 * 60_000, (u) => u.status?.pause?.reason === 'PausedBySpec');
  await ok('resume', name);

  const final = await until(name, 'Succeeded', 8 * 60_000, (u) => ['Succeeded', 'Failed', 'RolledBack'].includes(u.status?.phase ?? '') || (u.status?.phase === 'Paused' && u.status.pause?.reason !== 'PausedBySpec'));
  await hook.idle();
  assert.equal(final.status?.phase, 'Succeeded', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.deepEqual(await versions(cluster), cluster.servers.map(() => NEW_VERSION));

  // The plan printed before is what ran: the batches, and every driver call in order, under the same keys.
  assert.deepEqual(final.status?.plan?.batches, plan.batches);
  const received = [...hook.calls.values()].sort((a, b) => a.at - b.at);
  assert.deepEqual(received.map((c) => `${c.action}:${c.hostname}`), plan.projection!.calls.map((c) => `${c.action}:${c.server}`));
  assert.deepEqual(received.map((c) => c.key), plan.projection!.calls.map((c) => c.idempotencyKey));
  assert.deepEqual(received.map((c) => c.featureGates), plan.projection!.calls.map((c) => c.featureGates));
  const firstUpgrade = plan.projection!.calls.find((c) => c.action === 'Upgrade')!;
  assert.ok('webhook' in firstUpgrade.payload);
  assert.equal(firstUpgrade.payload.webhook.url, hook.url);

  const done = await ok('get', name);
  process.stderr.write(`${done}${await ok('list')}`);
  assert.match(done, /^Phase: +✔ Succeeded$/m);
  assert.match(done, /^Batches: +✔ 1: cp-1 +✔ 2: cp-2 +✔ 3: cp-3$/m);
  await refused(/cannot resume plugin-plan: it is Succeeded, finished/, 'resume', name);
  await refused(/cannot abort plugin-plan: it Succeeded, and there is no rollback after Succeeded/, 'abort', name);

  // get -w redraws one change at a time, each with a read of the Events: on a loaded machine its last view comes
  // seconds after the object's. What is checked is that it draws Succeeded, not how soon (60 s at most).
  await waitFor('get -w to draw Succeeded', 60_000, async () => (/^Phase: +\S+ Succeeded$/m.test(watched) ? true : undefined), 250).catch(() => undefined);
  watch.kill('SIGINT');
  assert.equal(await watchExit, 0, 'get -w ends cleanly on Ctrl-C');
  const phases = [...watched.matchAll(/^Phase: +\S+ (\w+)/gm)].map((x) => x[1]!).filter((p, i, a) => p !== a[i - 1]);
  process.stderr.write(`get -w drew ${[...watched.matchAll(/^Name:/gm)].length} views; phases ${phases.join(' -> ')}\n`);
  for (const p of ['Paused', 'EnablingProxy', 'Upgrading', 'Succeeded']) assert.ok(phases.includes(p), `get -w showed ${p}: ${phases.join(', ')}`);
  assert.equal(phases.at(-1), 'Succeeded');
});

const forwarders: Forwarder[] = [];
after(async () => {
  for (const f of forwarders) await f.close();
});

test('abort after the first batch: RolledBack, every server on the old version; resume acts on an automatic pause', async () => {
  const { cluster, hook } = rig;
  // Back to the old version (the previous test upgraded the fleet), with the gate on as it is now.
  for (const s of cluster.servers) await cluster.replace(s.index, { version: OLD_VERSION });
  assert.deepEqual(await versions(cluster), cluster.servers.map(() => OLD_VERSION));
  const callsBefore = new Set(hook.calls.keys());

  // A driver that cannot be reached: the first call times out (batchTimeout) and the upgrade pauses. The URL is a
  // loopback port nothing listens on yet; the driver settings are frozen while the upgrade runs (docs/security.md),
  // so the cause is fixed where it lies — the hook comes up at that address — not by a spec edit.
  const name = 'plugin-abort';
  const door = await closedPort();
  const m = upgradeManifest(name, hook, { strategy: { batchTimeout: '30s', soakDuration: '5s' } }) as { spec: { driver: { webhook: { url: string } } } };
  m.spec.driver.webhook.url = `https://127.0.0.1:${door}/replace`;
  await createUpgrade(cluster, m);
  await until(name, 'BatchTimeout', 3 * 60_000, (u) => u.status?.pause?.reason === 'BatchTimeout' || u.status?.phase === 'Failed');
  const get = await ok('get', name);
  assert.match(get, /^Phase: +॥ Paused \(BatchTimeout\)$/m);
  assert.match(get, /the driver was never reached/);
  await refused(/plugin-abort is already paused \(BatchTimeout\)/, 'pause', name);

  // Fix the cause (the hook answers at that address now; batchTimeout stays editable), then resume: an annotation.
  forwarders.push(await forward(door, Number(new URL(hook.url).port)));
  await patchSpec(name, { strategy: { batchTimeout: '3m' } });
  const generation = (await must(name)).metadata?.generation;
  assert.match(await ok('resume', name), /annotated upgrade\.apiserver\.dev\/resume=\S+ \(no spec edit\)/);
  const resumed = await must(name);
  assert.equal(resumed.metadata?.generation, generation, 'resume did not touch the spec');
  const token = resumed.metadata?.annotations?.[RESUME_ANNOTATION];
  await until(name, 'resumed', 60_000, (u) => u.status?.observedResume === token && u.status?.phase !== 'Paused');

  // Abort once the first batch is done.
  await until(name, 'batch 1 done', 4 * 60_000, (u) => (u.status?.batch?.history ?? []).some((h) => h.index === 1 && h.result === 'Succeeded') || ['Paused', 'Failed'].includes(u.status?.phase ?? ''));
  assert.match(await ok('abort', name), /annotated upgrade\.apiserver\.dev\/abort=\S+\. The operator rolls back now, through the same safety checks/);
  const abortToken = (await must(name)).metadata?.annotations?.[ABORT_ANNOTATION];
  const final = await until(name, 'RolledBack', 5 * 60_000, (u) => ['RolledBack', 'Succeeded', 'Failed'].includes(u.status?.phase ?? '') || u.status?.phase === 'Paused');
  await hook.idle();
  assert.equal(final.status?.phase, 'RolledBack', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.equal(final.status?.observedAbort, abortToken);
  assert.deepEqual(await versions(cluster), cluster.servers.map(() => OLD_VERSION), 'every server is back on the old version');
  const calls = [...hook.calls.values()].filter((c) => !callsBefore.has(c.key)).sort((a, b) => a.at - b.at).map((c) => `${c.action}:${c.hostname}`);
  process.stderr.write(`calls of ${name}: ${calls.join(', ')}\n`);
  assert.equal(calls[0], 'Upgrade:cp-1');
  const upgraded = calls.filter((c) => c.startsWith('Upgrade:')).map((c) => c.slice('Upgrade:'.length));
  assert.deepEqual(calls.filter((c) => c.startsWith('Rollback:')).map((c) => c.slice('Rollback:'.length)).sort(), [...new Set(upgraded)].sort(), 'every server upgraded was rolled back');
  assert.match(await ok('get', name), /^Phase: +⟲ RolledBack$/m);
  await eventRecorded(name, 'Aborted');
  await refused(/cannot abort plugin-abort: it is already RolledBack, finished/, 'abort', name);
  await refused(/cannot retry plugin-abort: it is RolledBack/, 'retry', name);
});

/** `plan NAME`, human and JSON, while nothing else writes: the object, its Events and the hook stay as they were. */
async function dryRunChangesNothing(name: string, held: ApiServerUpgrade): Promise<PlanView> {
  const { cluster, hook } = rig;
  const before = await must(name);
  const eventsBefore = await eventReasons(name);
  const hookBefore = hook.log.length;
  const human = await ok('plan', name);
  const plan = JSON.parse(await ok('plan', name, '-o', 'json')) as PlanView;
  const afterPlan = await must(name);
  assert.equal(afterPlan.metadata?.resourceVersion, before.metadata?.resourceVersion, 'plan wrote nothing to the object');
  assert.deepEqual(await eventReasons(name), eventsBefore, 'plan recorded no Event');
  assert.equal(hook.log.length, hookBefore, 'the hook received nothing from plan');
  // The operator's preflight asked the hook to Describe each server (trust, docs/trust.md); nothing else.
  assert.deepEqual(hook.log.filter((e) => e.action !== 'Describe').map((e) => `${e.event} ${e.action} ${e.hostname}`), [], 'no replacement call reached the hook');
  process.stderr.write(human);
  assert.match(human, /nothing was written, no driver was called/);
  assert.match(human, /^Preflight: Passed \(PreflightPassed=True\)$/m);
  for (const s of cluster.servers) assert.match(human, new RegExp(`^ {2}${s.hostname} +${s.address.replace(/\./g, '\\.')}:\\d+ +${OLD_VERSION.replace(/\./g, '\\.')} +true +off +fresh`, 'm'));
  assert.deepEqual(plan.inventory.map((r) => [r.hostname, r.version, r.ready, r.proxyGate]), cluster.servers.map((s) => [s.hostname, OLD_VERSION, true, 'off']));
  assert.equal(plan.preflight?.status, 'True');
  assert.deepEqual(plan.batches, held.status?.plan?.batches, 'the dry run freezes the plan the operator froze');
  assert.equal(plan.uid, held.metadata?.uid);
  assert.equal(plan.projection?.phase, 'Succeeded');
  assert.equal(plan.projection?.assumedResumed, true);
  return plan;
}

/** krew: $AUO_KREW, the tool cache, or PATH; undefined when there is none. */
function krew(): string | undefined {
  for (const p of [process.env.AUO_KREW, join(toolCache(), 'krew'), ...(process.env.PATH ?? '').split(delimiter).map((d) => join(d, 'krew'))]) {
    if (!p) continue;
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  return undefined;
}

test('the krew release archive installs (krew install --archive) and runs as `kubectl apiserver-upgrade` against the cluster', async () => {
  const root = join(import.meta.dirname, '..');
  const work = mkdtempSync(join(tmpdir(), 'auo-krew-e2e-'));
  const a = buildArchive(root, join(work, 'dist'));
  const again = buildArchive(root, join(work, 'dist2'));
  assert.equal(again.sha256, a.sha256, 'the archive is reproducible');
  const manifest = join(work, 'apiserver-upgrade.yaml');
  writeFileSync(manifest, fillManifest(readFileSync(join(root, 'krew', 'apiserver-upgrade.yaml'), 'utf8'), a.version, a.sha256));
  const krewRoot = join(work, 'krew');
  const k = krew();
  let bin: string;
  if (k) {
    process.stderr.write(await runOk('env', [`KREW_ROOT=${krewRoot}`, k, 'install', `--manifest=${manifest}`, `--archive=${a.path}`]));
    bin = join(krewRoot, 'bin');
  } else {
    // No krew here (scripts/setup.ts does not install it): do what it does with the manifest, by hand.
    process.stderr.write('krew not found ($AUO_KREW, the tool cache, PATH): installing by the manifest\'s rules by hand\n');
    const m = parse(readFileSync(manifest, 'utf8')) as { spec: { platforms: { files: { from: string; to: string }[]; bin: string }[] } };
    const p = m.spec.platforms[0]!;
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    await runOk('tar', ['-xzf', a.path, '-C', unpacked]);
    const store = join(krewRoot, 'store', 'apiserver-upgrade', `v${a.version}`);
    for (const f of p.files) cpSync(join(unpacked, dirname(f.from.replace(/\*$/, 'x'))), join(store, f.to), { recursive: true });
    bin = join(krewRoot, 'bin');
    mkdirSync(bin, { recursive: true });
    symlinkSync(join(store, p.bin), join(bin, 'kubectl-apiserver_upgrade'));
  }
  // The archive has no Node: the plugin takes the one on PATH (here the project's Node 24).
  const r = await runWithPath(tool('kubectl'), ['apiserver-upgrade', 'list', '--kubeconfig', rig.cluster.kubeconfig], `${bin}${delimiter}${dirname(process.execPath)}`);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^(NAME +PHASE +FROM +TO .*|No ApiServerUpgrades found\.)$/m);
});

function runWithPath(cmd: string, args: string[], dir: string): Promise<Out> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env: { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}` } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('exit', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}
