// Health gates on real servers (docs/operations.md "Gates, windows and accepted risks"): three real kube-apiservers
// v1.35.4 behind haproxy, the operator as a process, the e2e webhook that really replaces servers, and the harness
// Prometheus with a real alerting rule. The rule's input is a series this test serves (`e2e_critical_condition`), so
// the test decides when a critical alert fires; the upgrade's gate is the one the examples ship:
// ALERTS{alertstate="firing",severity="critical"} must be empty.
// - a firing critical alert holds a new upgrade before batch 1 with zero driver calls (Waiting, GateNotHeld,
//   naming the query and the alert);
// - the same alert starting during batch 1's soak does not interrupt batch 1 and holds batch 2;
// - when it clears the upgrade continues and ends Succeeded, with every call made once.
//   node_modules/.bin/node --test --test-reporter=spec e2e/gates.e2e.ts   (as root)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster, ReplaceWebhook, OLD_VERSION, NEW_VERSION, PROXY_GATE, waitFor, sleep } from './cluster/index.ts';
import { operatorTargetsDir } from './cluster/prometheus.ts';
import { createUpgrade, getUpgrade, installCrd, startOperator, type OperatorProcess } from './support/operator.ts';
import { upgradeManifest } from './support/rig.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

/** healthPorts 18140-18149 belong to this file. */
const HEALTH_PORT = 18140;
const NAME = 'gated';
const QUERY = 'ALERTS{alertstate="firing",severity="critical"}';

let cluster: Cluster;
let hook: ReplaceWebhook;
let op: OperatorProcess;
let source: Server;
let promUrl: string;
/** What the test's target serves: 1 makes the rule E2ECriticalCondition fire. */
let critical = 1;

function report(msg: string): void {
  process.stderr.write(`[gates] ${msg}\n`);
}

async function firingAlerts(): Promise<number> {
  const r = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(QUERY)}`);
  const doc = (await r.json()) as { data: { result: unknown[] } };
  return doc.data.result.length;
}

async function until(what: string, ms: number, ok: (u: ApiServerUpgrade) => boolean): Promise<ApiServerUpgrade> {
  return waitFor(what, ms, async () => {
    const u = await getUpgrade(cluster, NAME);
    return u && ok(u) ? u : undefined;
  }, 500);
}

before(async () => {
  // The gate is already on: the upgrade is three Upgrade calls, one per batch.
  cluster = await Cluster.start({ servers: 3, version: OLD_VERSION, featureGates: { [PROXY_GATE]: true }, verbose: true });
  await installCrd(cluster);
  hook = await ReplaceWebhook.start(cluster);
  source = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
    res.end(`# TYPE e2e_critical_condition gauge\ne2e_critical_condition ${critical}\n`);
  });
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  const dir = operatorTargetsDir(cluster.dir);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'alert-source.json.tmp'), JSON.stringify([{ targets: [`127.0.0.1:${(source.address() as AddressInfo).port}`], labels: { role: 'alert-source' } }]));
  renameSync(join(dir, 'alert-source.json.tmp'), join(dir, 'alert-source.json'));
  const rules = join(cluster.dir, 'e2e-rules.yaml');
  writeFileSync(rules, [
    'groups:',
    '  - name: e2e',
    '    rules:',
    '      - alert: E2ECriticalCondition',
    '        expr: e2e_critical_condition == 1',
    '        labels:',
    '          severity: critical',
    '',
  ].join('\n'));
  promUrl = await cluster.startPrometheus({ scrapeIntervalSeconds: 1, ruleFiles: [rules] });
  op = await startOperator(cluster, { healthPort: HEALTH_PORT });
});

after(async () => {
  await op?.stop();
  await hook?.close();
  await new Promise<void>((r) => (source ? source.close(() => r()) : r()));
  await cluster?.teardown();
});

test('a firing critical alert holds batch 1 with zero driver calls; starting during batch 1 it holds batch 2; cleared, the upgrade ends Succeeded with every call made once', async () => {
  const t0 = Date.now();
  await waitFor('the critical alert to fire in Prometheus', 60_000, async () => ((await firingAlerts()) > 0 ? true : undefined), 500);
  await createUpgrade(cluster, {
    ...upgradeManifest(NAME, hook, { strategy: { soakDuration: '25s' } }),
    spec: {
      ...(upgradeManifest(NAME, hook, { strategy: { soakDuration: '25s' } }).spec as Record<string, unknown>),
      gates: { prometheus: { address: promUrl }, queries: [{ name: 'no-critical-alerts', query: QUERY }] },
    },
  });
  const held = await until('the upgrade to wait on the gate', 90_000, (u) => u.status?.waiting?.reason === 'GateNotHeld');
  assert.equal(held.status?.phase, 'Upgrading');
  assert.equal(held.status?.waiting?.gate, 'no-critical-alerts');
  assert.match(held.status?.waiting?.message ?? '', /^batch 1 waits: gate no-critical-alerts \(ALERTS\{alertstate="firing",severity="critical"\}\) does not hold: 1 series: .*alertname="E2ECriticalCondition"/);
  assert.equal(held.status?.conditions?.find((c) => c.type === 'Waiting')?.reason, 'GateNotHeld');
  // Held for several intervals: still nothing called.
  await sleep(10_000);
  const still = await getUpgrade(cluster, NAME);
  assert.equal(hook.calls.size, 0, 'the hook was never called');
  assert.deepEqual(still?.status?.driverCalls ?? [], [], 'no driver call recorded');
  report(`held before batch 1 with zero calls for ${Math.round((Date.now() - Date.parse(held.status!.waiting!.since!)) / 1000)} s`);

  critical = 0;
  const started = await until('batch 1 to start once the alert cleared', 60_000, (u) => (u.status?.driverCalls ?? []).length === 1);
  assert.equal(started.status?.driverCalls?.[0]?.batch, 1);
  // The alert fires again while batch 1 is replaced and soaks.
  critical = 1;
  const second = await until('batch 1 to finish and batch 2 to wait on the gate', 240_000, (u) => (u.status?.batch?.history ?? []).length === 1 && u.status?.waiting?.reason === 'GateNotHeld');
  assert.match(second.status?.waiting?.message ?? '', /^batch 2 waits/);
  assert.equal(second.status?.batch?.history?.[0]?.result, 'Succeeded', 'batch 1 was not interrupted by the gate');
  await sleep(8_000);
  const held2 = await getUpgrade(cluster, NAME);
  assert.equal(held2?.status?.driverCalls?.length, 1, 'batch 2 made no call while the alert fired');
  assert.equal(hook.calls.size, 1);

  critical = 0;
  const done = await until('the upgrade to succeed', 420_000, (u) => u.status?.phase === 'Succeeded');
  const calls = done.status?.driverCalls ?? [];
  assert.deepEqual(calls.map((c) => [c.batch, c.action, c.result]), [[1, 'Upgrade', 'Done'], [2, 'Upgrade', 'Done'], [3, 'Upgrade', 'Done']]);
  assert.equal(new Set(calls.map((c) => c.server)).size, 3);
  assert.equal(hook.calls.size, 3, 'every call made once');
  assert.equal(done.status?.waiting, undefined);
  assert.equal(done.status?.conditions?.find((c) => c.type === 'Waiting')?.status, 'False');
  report(`Succeeded ${Math.round((Date.now() - t0) / 1000)} s after the alert first fired; the hook got ${hook.calls.size} calls for ${[...new Set(calls.map((c) => c.server))].join(', ')} -> ${NEW_VERSION}`);
});
