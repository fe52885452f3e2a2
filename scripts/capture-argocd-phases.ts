// Records the ApiServerUpgrade objects a real upgrade produces in each phase, for the Argo CD health check's tests
// (test/argocd/recorded-phases.test.ts): 3 real kube-apiservers on the old version, the operator as its own process,
// the replacement webhook as the driver (e2e/support/rig.ts), and three upgrades on that one fleet:
//   failed      targets a version below the fleet's: preflight refuses it (Failed, reason Downgrade);
//   preflight   does not consent to the alpha proxy gate: waits in Preflight (AlphaGateNotAllowed); then deleted;
//   first       created with spec.paused: true, resumed; aborted once a server runs the target (RollingBack, RolledBack);
//   second      created while `first` waits, so it waits in Pending behind it; then runs to Succeeded.
// The first object seen in each phase (and pause reason) that the operator had observed (observedGeneration(), as
// health.lua reads it, is metadata.generation) is written to test/fixtures/argocd-phases/<phase>[-<reason>].yaml, without managedFields.
//   sudo node scripts/capture-argocd-phases.ts            (about 3 minutes with the binaries cached)
// Existing files are kept unless `--overwrite` is given.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { NEW_VERSION, OLD_VERSION, waitFor } from '../e2e/cluster/index.ts';
import { createUpgrade, getUpgrade } from '../e2e/support/operator.ts';
import { startRig, upgradeManifest, type Rig } from '../e2e/support/rig.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';
import { ABORT_ANNOTATION, isTerminal } from '../src/api/vocabulary.ts';
import { observedGeneration, phaseFile, PHASES_DIR } from './argocd-phases.ts';

const UPGRADES = '/apis/upgrade.apiserver.dev/v1alpha1/apiserverupgrades';

/** Polls the named upgrades and keeps the first observed object of each phase, until stopped. */
class Recorder {
  readonly seen = new Map<string, ApiServerUpgrade>();
  private stopped = false;
  private readonly loop: Promise<void>;
  private readonly rig: Rig;
  private readonly names: string[];
  constructor(rig: Rig, names: string[]) {
    this.rig = rig;
    this.names = names;
    this.loop = this.run();
  }
  private async run(): Promise<void> {
    while (!this.stopped) {
      for (const name of this.names) {
        const u = await getUpgrade(this.rig.cluster, name);
        if (u === undefined || observedGeneration(u) !== u.metadata?.generation) continue;
        const file = phaseFile(u);
        if (file !== undefined && !this.seen.has(file)) {
          this.seen.set(file, u);
          process.stderr.write(`[capture] ${name}: ${file}\n`);
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}

async function patch(rig: Rig, name: string, body: object): Promise<void> {
  const r = await rig.cluster.request('lb', `${UPGRADES}/${name}`, { method: 'PATCH', headers: { 'Content-Type': 'application/merge-patch+json' }, body: JSON.stringify(body) });
  if (r.status !== 200) throw new Error(`patch ${name}: HTTP ${r.status}: ${r.body}`);
}

const until = (rig: Rig, name: string, what: string, ms: number, ok: (u: ApiServerUpgrade) => boolean): Promise<ApiServerUpgrade> =>
  waitFor(`${name}: ${what}`, ms, async () => {
    const u = await getUpgrade(rig.cluster, name);
    return u !== undefined && ok(u) ? u : undefined;
  }, 200);

async function versions(rig: Rig): Promise<string[]> {
  return Promise.all(rig.cluster.servers.map(async (s) => {
    try {
      return (JSON.parse((await rig.cluster.request(s.index, '/version')).body) as { gitVersion: string }).gitVersion;
    } catch {
      return 'down';
    }
  }));
}

if (import.meta.main) {
  const overwrite = process.argv.includes('--overwrite');
  const rig = await startRig({ gate: false, healthPort: 18150, trafficMaxMs: 20 * 60_000 });
  const rec = new Recorder(rig, ['failed', 'preflight', 'first', 'second']);
  try {
    const failed = upgradeManifest('failed', rig.hook) as { spec: Record<string, unknown> };
    failed.spec.targetVersion = 'v1.34.0';
    await createUpgrade(rig.cluster, failed);
    await until(rig, 'failed', 'Failed', 60_000, (u) => u.status?.phase === 'Failed');

    // Without consent to the alpha gate, on servers where it is off, preflight waits (AlphaGateNotAllowed); deleted
    // once recorded, as it would otherwise hold the fleet.
    await createUpgrade(rig.cluster, upgradeManifest('preflight', rig.hook, { proxy: { allowAlphaGate: false } }));
    await until(rig, 'preflight', 'waiting in Preflight', 60_000, (u) => u.status?.phase === 'Preflight' && observedGeneration(u) === u.metadata?.generation &&
      u.status.conditions?.some((c) => c.type === 'PreflightPassed' && c.reason === 'AlphaGateNotAllowed') === true);
    await new Promise((r) => setTimeout(r, 500));
    const del = await rig.cluster.request('lb', `${UPGRADES}/preflight`, { method: 'DELETE' });
    if (del.status !== 200) throw new Error(`delete preflight: HTTP ${del.status}: ${del.body}`);

    const first = upgradeManifest('first', rig.hook, { strategy: { soakDuration: '20s' } }) as { spec: Record<string, unknown> };
    first.spec.paused = true;
    await createUpgrade(rig.cluster, first);
    await until(rig, 'first', 'paused by its spec', 60_000, (u) => u.status?.phase === 'Paused' && u.status.pause?.reason === 'PausedBySpec');
    await createUpgrade(rig.cluster, upgradeManifest('second', rig.hook));
    await until(rig, 'second', 'Pending behind first', 60_000, (u) => u.status?.phase === 'Pending' && observedGeneration(u) === u.metadata?.generation);
    await patch(rig, 'first', { spec: { paused: false } });
    await waitFor(`a server on ${NEW_VERSION}`, 180_000, async () => ((await versions(rig)).includes(NEW_VERSION) ? true : undefined), 500);
    await patch(rig, 'first', { metadata: { annotations: { [ABORT_ANNOTATION]: new Date().toISOString().replace(/\.\d+Z$/, 'Z') } } });
    await until(rig, 'first', 'RolledBack', 240_000, (u) => u.status?.phase === 'RolledBack');
    const done = await until(rig, 'second', 'an end', 300_000, (u) => isTerminal(u.status?.phase));
    if (done.status?.phase !== 'Succeeded') throw new Error(`second ended ${done.status?.phase}: ${JSON.stringify(done.status?.conditions)}`);
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    await rec.stop();
    await rig.teardown();
  }
  mkdirSync(PHASES_DIR, { recursive: true });
  for (const [file, u] of rec.seen) {
    const path = join(PHASES_DIR, file);
    if (existsSync(path) && !overwrite) {
      process.stderr.write(`[capture] kept ${path} (--overwrite replaces it)\n`);
      continue;
    }
    if (u.metadata) delete (u.metadata as { managedFields?: unknown }).managedFields;
    const header = `# Recorded by scripts/capture-argocd-phases.ts from a real upgrade ${OLD_VERSION} -> ${NEW_VERSION} (${u.metadata?.name}).\n`;
    writeFileSync(path, header + stringify(u, { lineWidth: 0 }));
    process.stderr.write(`[capture] wrote ${path}\n`);
  }
}
