// One upgrade path run end to end on real servers (the core scenario of e2e/upgrade.e2e.ts and
// e2e/rollback.e2e.ts, for any from/to pair of paths.ts): the rig, the upgrade, its phases as they pass, and the
// checks every path shares. Each extended file picks its path and adds what is particular to it.
import assert from 'node:assert/strict';
import { waitFor, type Cluster } from '../cluster/index.ts';
import { createUpgrade, getUpgrade } from '../support/operator.ts';
import { startRig, upgradeManifest, type Rig } from '../support/rig.ts';
import type { ApiServerUpgrade } from '../../src/api/types.generated.ts';
import type { UpgradePath } from './paths.ts';

const TERMINAL = ['Succeeded', 'RolledBack', 'Failed', 'Paused'];

export interface PathRun {
  rig: Rig;
  final: ApiServerUpgrade;
  phases: string[];
  /** From the upgrade's creation to its end, ms. */
  elapsedMs: number;
}

/** Starts the rig on `path.from` and creates the upgrade; the caller may act (kill a server) before `finish`. */
export async function startPath(path: UpgradePath, name: string, healthPort: number, spec: Parameters<typeof upgradeManifest>[2], gate?: boolean): Promise<{ rig: Rig; createdAt: number }> {
  const rig = await startRig({ gate, healthPort, from: path.from, to: path.to, probe: path.probe, trafficMaxMs: 15 * 60_000 });
  try {
    await createUpgrade(rig.cluster, upgradeManifest(name, rig.hook, spec, path.to));
  } catch (err) {
    await rig.teardown();
    throw err;
  }
  return { rig, createdAt: Date.now() };
}

/** Waits until `want` holds or the upgrade ends, logging each phase change. */
export async function watchUpgrade(cluster: Cluster, name: string, want: (u: ApiServerUpgrade) => boolean, withinMs: number, phases: string[] = []): Promise<ApiServerUpgrade> {
  return waitFor(`${name}: the awaited state`, withinMs, async () => {
    const u = await getUpgrade(cluster, name);
    const phase = u?.status?.phase;
    if (phase && phases.at(-1) !== phase) {
      phases.push(phase);
      process.stderr.write(`[${name}] ${phase} ${u?.status?.stage ?? ''} ${u?.status?.batch?.progress ?? ''} ${u?.status?.pause?.message ?? ''}\n`);
    }
    // An unexpected end is returned, not thrown (waitFor retries on exceptions), and asserted on by the caller.
    return u && (want(u) || TERMINAL.includes(phase ?? '')) ? u : undefined;
  }, 500);
}

/** Waits for the end, then stops the hook's work and the client. */
export async function finishPath(started: { rig: Rig; createdAt: number }, name: string, withinMs = 10 * 60_000, phases: string[] = []): Promise<PathRun> {
  const final = await watchUpgrade(started.rig.cluster, name, () => false, withinMs, phases);
  const elapsedMs = Date.now() - started.createdAt;
  await started.rig.hook.idle();
  await started.rig.traffic.stop();
  return { rig: started.rig, final, phases, elapsedMs };
}

/** The gitVersion each server reports, in server order. */
export async function fleetVersions(cluster: Cluster): Promise<string[]> {
  return Promise.all(cluster.servers.map(async (s) => (JSON.parse((await cluster.request(s.index, '/version')).body) as { gitVersion: string }).gitVersion));
}

/** The driver calls as action:hostname[@emulation] in the order they came, each asserted delivered exactly once. */
export function callsOnce(rig: Rig): string[] {
  const calls = [...rig.hook.calls.values()].sort((a, b) => a.at - b.at);
  for (const c of calls) assert.equal(c.deliveries, 1, `key ${c.key} (${c.action} ${c.hostname}) delivered once`);
  return calls.map((c) => `${c.action}:${c.hostname}${c.emulatedVersion ? `@${c.emulatedVersion}` : ''}`);
}

/**
 * What the client saw once the first batch had converged (its completedAt minus the soak): no 404 for the probe,
 * no 5xx, connection errors under 1%, and still served. Returns the summaries for the log.
 */
export function assertServedAfterConvergence(run: PathRun, path: UpgradePath, soakMs: number): string {
  const { traffic } = run.rig;
  const batch1 = run.final.status?.batch?.history?.find((h) => h.index === 1);
  assert.ok(batch1?.completedAt, 'batch 1 recorded');
  const convergedAt = Date.parse(batch1.completedAt) - soakMs;
  assert.equal(traffic.count((x) => x.status === 404, convergedAt), 0, `no 404 for ${path.probe} after the first batch converged`);
  assert.equal(traffic.count((x) => typeof x.status === 'number' && x.status >= 500, convergedAt), 0, 'no 5xx after the first batch converged');
  const errors = traffic.count((x) => x.status === 'error', convergedAt);
  assert.ok(errors <= traffic.count(() => true, convergedAt) * 0.01, `connection errors stay under 1% (${errors})`);
  assert.ok(traffic.count((x) => x.status === 200, convergedAt) > 20, 'the client kept being served');
  if (!path.probeIsNew) assert.equal(traffic.count((x) => x.status === 404), 0, `${path.probe} is served by every version: never a 404`);
  return `before convergence ${JSON.stringify(traffic.summary(0, convergedAt))}, after ${JSON.stringify(traffic.summary(convergedAt))}`;
}

/** startPath then finishPath, the rig kept in `rigs` for the file's teardown; asserts the upgrade ended in `phase`. */
export async function runPath(path: UpgradePath, name: string, healthPort: number, spec: Parameters<typeof upgradeManifest>[2], o: { gate?: boolean; rigs: Rig[]; phase: string }): Promise<PathRun> {
  const started = await startPath(path, name, healthPort, spec, o.gate);
  o.rigs.push(started.rig);
  const run = await finishPath(started, name);
  assert.equal(run.final.status?.phase, o.phase, JSON.stringify(run.final.status?.pause ?? run.final.status?.conditions));
  return run;
}
