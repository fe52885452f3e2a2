// A real rolling upgrade, end to end: the operator (its own process, talking through haproxy) upgrades
// three v1.35.4 servers with the proxy gate off to v1.36.3 through the webhook driver, while a client
// keeps asking the balancer for a resource only v1.36 serves.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { NEW_VERSION, waitFor, type Cluster, type ReplaceWebhook } from './cluster/index.ts';
import { createUpgrade, getUpgrade, type OperatorProcess } from './support/operator.ts';
import type { TrafficRecorder } from './support/traffic.ts';
import { startRig, upgradeManifest } from './support/rig.ts';
import type { ApiServerUpgrade } from '../src/api/types.generated.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

interface RunResult {
  cluster: Cluster;
  hook: ReplaceWebhook;
  op: OperatorProcess;
  traffic: TrafficRecorder;
  final: ApiServerUpgrade;
  phases: string[];
}

async function runUpgrade(name: string, proxyGate: 'Auto' | 'Unmanaged', healthPort: number, until: 'Succeeded' | 'Paused', discoveryConvergence = '2m'): Promise<RunResult> {
  const rig = await startRig({ gate: false, healthPort });
  cleanups.push(() => rig.teardown());
  const { cluster, hook, op, traffic } = rig;
  await createUpgrade(cluster, upgradeManifest(name, hook, { proxy: { gate: proxyGate }, analysis: { onBreach: 'Pause', thresholds: { discoveryConvergence } } }));
  const phases: string[] = [];
  const final = await waitFor(`${name} to finish`, 8 * 60_000, async () => {
    const u = await getUpgrade(cluster, name);
    const phase = u?.status?.phase;
    if (phase && phases.at(-1) !== phase) {
      phases.push(phase);
      process.stderr.write(`[${name}] phase ${phase} ${u?.status?.batch?.progress ?? ''} ${u?.status?.pause?.message ?? ''}\n`);
    }
    if (phase === until) return u;
    // waitFor retries on exceptions, so an unexpected end is returned and asserted on, not thrown.
    if (phase === 'Paused' || phase === 'Failed' || phase === 'Succeeded') return u;
    return undefined;
  }, 500);
  await hook.idle();
  await traffic.stop();
  return { cluster, hook, op, traffic, final, phases };
}

function firstNewServerReady(hook: ReplaceWebhook): number {
  const t = [...hook.calls.values()].filter((c) => c.action === 'Upgrade' && c.doneAt !== undefined).map((c) => c.doneAt!);
  assert.ok(t.length > 0, 'some server was upgraded');
  return Math.min(...t);
}

test('the operator turns the proxy gate on, then upgrades all three servers; no 404 for a new resource once a new server serves it', async () => {
  const r = await runUpgrade('to-v1-36', 'Auto', 18081, 'Succeeded');
  const { final, hook, cluster, op, traffic } = r;

  assert.equal(final.status?.phase, 'Succeeded', JSON.stringify(final.status?.pause ?? final.status?.conditions));
  assert.deepEqual(r.phases.filter((p) => ['EnablingProxy', 'Upgrading', 'Succeeded'].includes(p)), ['EnablingProxy', 'Upgrading', 'Succeeded']);
  for (const s of cluster.servers) {
    const v = JSON.parse((await cluster.request(s.index, '/version')).body) as { gitVersion: string };
    assert.equal(v.gitVersion, NEW_VERSION, `${s.name} runs the target`);
  }
  assert.equal(final.status?.conditions?.find((c) => c.type === 'Complete')?.status, 'True');

  // The gate pass came first, one server at a time, and every key was delivered exactly once.
  const calls = [...hook.calls.values()].sort((a, b) => a.at - b.at);
  assert.deepEqual(calls.map((c) => `${c.action}:${c.hostname}`), ['EnableProxy:cp-1', 'EnableProxy:cp-2', 'EnableProxy:cp-3', 'Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  for (const c of calls) assert.equal(c.deliveries, 1, `key ${c.key} delivered once`);
  assert.deepEqual(final.status?.driverCalls?.map((c) => c.result), ['Done', 'Done', 'Done', 'Done', 'Done', 'Done']);

  // Once the first new server was in and discovery had converged, the client (a new connection per request,
  // so every server answers in turn, the old ones by proxying) never got a 404 for the new resource. Between
  // the new server turning ready and its old peers learning its discovery, a few 404s are possible: that gap
  // is measured and reported, and it is what the operator's DiscoveryConverged gate waits out.
  const from = firstNewServerReady(hook);
  const batch1 = final.status?.batch?.history?.find((h) => h.index === 1);
  assert.ok(batch1?.completedAt, 'batch 1 recorded');
  // The operator judged batch 1 converged when the look that saw it ended; its Soaking Event is written right after.
  // (completedAt - soakDuration is the start of that look, up to a second before its discovery reads under load.)
  const evs0 = JSON.parse((await cluster.request('lb', '/apis/events.k8s.io/v1/namespaces/default/events')).body) as { items: { reason: string; note?: string; eventTime?: string; regarding: { name: string } }[] };
  const soaking = evs0.items.find((e) => e.regarding.name === 'to-v1-36' && e.reason === 'Soaking' && /^batch 1 /.test(e.note ?? ''));
  assert.ok(soaking?.eventTime, 'batch 1 said it soaks');
  const convergedAt = Date.parse(soaking.eventTime);
  assert.ok(convergedAt <= Date.parse(batch1.completedAt), 'judged converged before batch 1 ended');
  const gap404 = traffic.samples.filter((x) => x.status === 404 && x.at >= from && x.at < convergedAt);
  process.stderr.write(`traffic with the gate pass: before the first new server ${JSON.stringify(traffic.summary(0, from))}; ` +
    `sync gap ${convergedAt - from} ms ${JSON.stringify(traffic.summary(from, convergedAt))} (404s at +${gap404.map((x) => x.at - from).join(', +')} ms); ` +
    `after convergence ${JSON.stringify(traffic.summary(convergedAt))}\n`);
  // Each replacement drains its server at haproxy before the stop (the webhook's Cluster.replace), so no
  // request lands on an old server that, shutting down, answers what it would proxy with 503. Anything that
  // still fails (or is a 404) is listed with its time relative to the replacements and to convergence.
  const calls0 = [...hook.calls.values()];
  for (const x of traffic.samples.filter((y) => y.at >= convergedAt && (y.status === 'error' || y.status === 404 || (typeof y.status === 'number' && y.status >= 500)))) {
    const near = calls0.map((c) => `${c.action}:${c.hostname} call${x.at - c.at >= 0 ? '+' : ''}${x.at - c.at}ms done${x.at - (c.doneAt ?? 0) >= 0 ? '+' : ''}${x.at - (c.doneAt ?? 0)}ms`).filter((t) => /call\+\d{1,5}ms/.test(t));
    process.stderr.write(`  ${x.status} ${x.error ?? ''} at converged+${x.at - convergedAt}ms near ${near.join('; ') || 'no replacement'}\n`);
  }
  assert.equal(traffic.count((x) => x.status === 404, convergedAt), 0, 'no 404 for the new resource after the first batch converged');
  assert.ok(traffic.count((x) => x.status === 200, convergedAt) > 50, 'the client kept being served');
  const served5xx = traffic.count((x) => typeof x.status === 'number' && x.status >= 500, convergedAt);
  assert.equal(served5xx, 0, 'no 5xx once the first batch converged');
  const errors = traffic.count((x) => x.status === 'error', convergedAt);
  assert.ok(errors <= traffic.count(() => true, convergedAt) * 0.01, `connection errors stay under 1% of requests (${errors})`);

  // Every step left an Event (events.k8s.io) on the upgrade, and the operator's own metrics tell the phase.
  const evs = JSON.parse((await cluster.request('lb', '/apis/events.k8s.io/v1/namespaces/default/events')).body) as { items: { reason: string; regarding: { name: string } }[] };
  const reasons = new Set(evs.items.filter((e) => e.regarding.name === 'to-v1-36').map((e) => e.reason));
  for (const r of ['Started', 'PreflightPassed', 'ProxyEnabled', 'BatchStarted', 'BatchSucceeded', 'Succeeded']) assert.ok(reasons.has(r), `event ${r} recorded (${[...reasons].join(', ')})`);
  // The gauges are set at the end of the reconcile that wrote Succeeded, after its Events (~0.1 s later).
  const metrics = await waitFor('the phase gauge to say Succeeded', 10_000, async () => {
    const text = await (await fetch(`http://127.0.0.1:${op.healthPort}/metrics`)).text();
    return /apiserver_upgrade_phase\{upgrade="to-v1-36",phase="Succeeded"\} 1/.test(text) ? text : undefined;
  }, 200);
  assert.match(metrics, /apiserver_upgrade_driver_calls_total\{action="Upgrade",outcome="accepted"\} 3/);

  // The operator rode through every replacement of the servers it talks to: it never exited.
  assert.deepEqual(op.exits, []);
  const restarts = op.logLines().filter((l) => String(l.message ?? '').includes('restart')).length;
  process.stderr.write(`operator log lines mentioning watch restarts: ${restarts}\n`);
});

test('control run without the gate pass (proxy.gate Unmanaged): 404s while versions are mixed, and the operator pauses on discovery that cannot converge', async () => {
  const r = await runUpgrade('control-unmanaged', 'Unmanaged', 18082, 'Paused', '15s');
  const { hook, traffic, final } = r;
  assert.ok(!r.phases.includes('EnablingProxy'), 'no gate pass');
  assert.equal([...hook.calls.values()].filter((c) => c.action === 'EnableProxy').length, 0);
  const from = firstNewServerReady(hook);
  const mixed404 = traffic.count((s) => s.status === 404, from);
  process.stderr.write(`control traffic after the first new server: ${JSON.stringify(traffic.summary(from))}\n`);
  assert.ok(mixed404 > 0, 'without the proxy, requests routed to old servers get 404 while versions are mixed');
  // The safety net: old servers without the proxy never list the new resources, so discovery cannot
  // converge and the operator stops after the first batch instead of widening the skew.
  assert.equal(final.status?.phase, 'Paused');
  assert.equal(final.status?.pause?.reason, 'DiscoveryNotConverged');
  assert.equal([...hook.calls.values()].filter((c) => c.action === 'Upgrade').length, 1, 'only the first batch was replaced');
  assert.equal(final.status?.conditions?.find((c) => c.type === 'Paused')?.status, 'True');
});
