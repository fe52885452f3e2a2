// Runs docs/argocd-health.lua (the Argo CD health check) in real Lua interpreters: lua5.1, the dialect of
// Argo CD's gopher-lua, and lua5.4. Each case feeds an ApiServerUpgrade as a Lua table, as Argo CD does, and
// checks the returned status and message. Both interpreters are required: `npm test` installs them
// (scripts/setup.ts); a missing one fails every case with the command that installs it, never a skip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const SCRIPT = join(import.meta.dirname, '..', '..', 'docs', 'argocd-health.lua');
const INTERPRETERS = ['lua5.1', 'lua5.4'] as const;

function which(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const installed = new Map(INTERPRETERS.map((l) => [l, which(l)]));
const howToInstall = (lua: string): string => `${lua} is not on PATH: install it with \`apt-get update && apt-get install -y ${lua}\` (as root, \`node scripts/setup.ts test\` does it)`;

/** A JSON value as a Lua table constructor (what Argo CD hands the script as `obj`). */
function toLua(v: unknown): string {
  if (v === null || v === undefined) return 'nil';
  // JSON escapes are Lua escapes too, except \uXXXX (control characters only): Lua 5.1 spells those \ddd.
  if (typeof v === 'string') return JSON.stringify(v).replace(/\\u([0-9a-f]{4})/gi, (_m, h: string) => `\\${String(parseInt(h, 16)).padStart(3, '0')}`);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `{${v.map(toLua).join(', ')}}`;
  return `{${Object.entries(v as Record<string, unknown>).map(([k, x]) => `[${JSON.stringify(k)}] = ${toLua(x)}`).join(', ')}}`;
}

function health(lua: string, o: Record<string, unknown>): { status: string; message: string } {
  const chunk = `obj = ${toLua(o)}\nlocal hs = dofile(${JSON.stringify(SCRIPT)})\nio.write(tostring(hs.status), "\\t", tostring(hs.message))`;
  const out = execFileSync(lua, ['-e', chunk], { encoding: 'utf8' });
  const [status = '', message = ''] = out.split('\t');
  return { status, message };
}

function upgrade(status: Record<string, unknown> | undefined, generation = 3): Record<string, unknown> {
  return {
    apiVersion: 'upgrade.apiserver.dev/v1alpha1', kind: 'ApiServerUpgrade',
    metadata: { name: 'to-v1-36', generation },
    spec: { targetVersion: 'v1.36.3', driver: { webhook: { url: 'https://hook.example' } } },
    ...(status ? { status: { observedGeneration: 3, targetVersion: 'v1.36.3', fromVersion: 'v1.35.4', ...status } } : {}),
  };
}

const cond = (type: string, status: string, reason: string, message: string) => ({ type, status, reason, message, lastTransitionTime: '2026-01-01T00:00:00Z' });

const cases: { name: string; obj: Record<string, unknown>; status: string; message: RegExp }[] = [
  { name: 'no status yet', obj: upgrade(undefined), status: 'Progressing', message: /Waiting for the operator/ },
  { name: 'Succeeded', obj: upgrade({ phase: 'Succeeded' }), status: 'Healthy', message: /runs v1\.36\.3/ },
  { name: 'Pending', obj: upgrade({ phase: 'Pending' }), status: 'Progressing', message: /^Pending to v1\.36\.3$/ },
  { name: 'Preflight', obj: upgrade({ phase: 'Preflight' }), status: 'Progressing', message: /^Preflight/ },
  {
    name: 'Pending behind another upgrade', status: 'Progressing', message: /waiting: ApiServerUpgrade other/,
    obj: upgrade({ phase: 'Pending', conditions: [cond('PreflightPassed', 'False', 'AnotherUpgradeActive', 'waiting: ApiServerUpgrade other is acting on the same fleet')] }),
  },
  { name: 'EnablingProxy', obj: upgrade({ phase: 'EnablingProxy' }), status: 'Progressing', message: /^EnablingProxy/ },
  { name: 'Upgrading with batches', obj: upgrade({ phase: 'Upgrading', batch: { current: 2, total: 3, progress: '2/3' } }), status: 'Progressing', message: /^Upgrading to v1\.36\.3 \(batch 2\/3\)$/ },
  { name: 'RollingBack', obj: upgrade({ phase: 'RollingBack' }), status: 'Progressing', message: /^RollingBack/ },
  {
    name: 'Paused automatically', status: 'Suspended', message: /^Paused \(AnalysisBreach\): 3 consecutive breaching checks/,
    obj: upgrade({ phase: 'Paused', pause: { reason: 'AnalysisBreach', message: '3 consecutive breaching checks (failureLimit 3): proxyErrorRatio', resumePhase: 'Upgrading' } }),
  },
  { name: 'Paused by spec', obj: upgrade({ phase: 'Paused', pause: { reason: 'PausedBySpec', message: 'spec.paused is true' } }), status: 'Suspended', message: /^Paused \(PausedBySpec\): spec\.paused is true$/ },
  { name: 'Paused without details', obj: upgrade({ phase: 'Paused' }), status: 'Suspended', message: /^Paused \(Unknown\)$/ },
  {
    name: 'Failed', status: 'Degraded', message: /^Failed: cannot roll back/,
    obj: upgrade({ phase: 'Failed', conditions: [cond('Progressing', 'False', 'NoFromVersion', 'cannot roll back: the version before the upgrade was never recorded')] }),
  },
  {
    name: 'RolledBack', status: 'Degraded', message: /^Rolled back to v1\.35\.4: 3 consecutive/,
    obj: upgrade({ phase: 'RolledBack', conditions: [cond('Degraded', 'True', 'AnalysisBreach', '3 consecutive breaching checks')] }),
  },
  { name: 'a spec change not yet observed', obj: upgrade({ phase: 'Succeeded' }, 4), status: 'Progressing', message: /observe generation 4/ },
  { name: 'a pause in Git not yet observed', obj: upgrade({ phase: 'Upgrading', observedGeneration: 2 }), status: 'Progressing', message: /observe generation 3/ },
  {
    name: 'invalid spec', status: 'Degraded', message: /^Invalid spec: driver must/,
    obj: upgrade({ phase: 'Pending', conditions: [cond('Degraded', 'True', 'InvalidSpec', 'driver must set exactly one of webhook or staticPod')] }),
  },
  { name: 'a phase from a newer operator', obj: upgrade({ phase: 'Reticulating' }), status: 'Unknown', message: /Unknown phase Reticulating/ },
  { name: 'quotes and non-ASCII in messages', obj: upgrade({ phase: 'Paused', pause: { reason: 'DriverFailed', message: 'HTTP 400: "bad"\u0001 – ü' } }), status: 'Suspended', message: /HTTP 400: "bad"\S – ü$/ },
];

for (const lua of INTERPRETERS) {
  test(`${lua} is installed`, () => {
    assert.ok(installed.get(lua), howToInstall(lua));
  });
  for (const c of cases) {
    test(`${lua}: ${c.name} -> ${c.status}`, () => {
      assert.ok(installed.get(lua), howToInstall(lua));
      const hs = health(lua, c.obj);
      assert.equal(hs.status, c.status, `message: ${hs.message}`);
      assert.match(hs.message, c.message);
    });
  }
}
