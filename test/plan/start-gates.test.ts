// Gates and maintenance windows before the first call and before every batch (src/plan/start-gates.ts,
// src/plan/window.ts): the planner waits — a condition and status.waiting naming the gate, its query and value, or
// the next window start — and makes no driver call; a batch in flight is not interrupted; an abort never waits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sim, peer, spec, OLD, NEW } from './fleet.ts';
import { ABORT_ANNOTATION } from '../../src/plan/index.ts';
import { evaluateGates } from '../../src/plan/start-gates.ts';
import { resolveSpec, SpecError } from '../../src/api/defaults.ts';
import type { ApiServerUpgradeSpec } from '../../src/api/types.generated.ts';
import type { ObservedGates } from '../../src/plan/observation.ts';

const CRITICAL = 'ALERTS{alertstate="firing",severity="critical"}';
const firing: ObservedGates = { queries: [{ name: 'no-critical-alerts', samples: [{ labels: { alertname: 'EtcdDown', severity: 'critical' }, value: 1 }] }] };
const quiet: ObservedGates = { queries: [{ name: 'no-critical-alerts', samples: [] }] };
const prometheusDown: ObservedGates = { queries: [{ name: 'no-critical-alerts', error: 'GET http://prom:9090/api/v1/query: connect ECONNREFUSED' }] };

const gated = (over: Partial<ApiServerUpgradeSpec> = {}): ApiServerUpgradeSpec =>
  spec({ strategy: { batchSize: 1, soakDuration: '0s', batchTimeout: '10m' }, gates: { prometheus: { address: 'http://prom:9090' }, queries: [{ name: 'no-critical-alerts', query: CRITICAL }] }, ...over });

const threeOn = () => [peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on'), peer('cp-3', OLD, 'on')];

function steps(sim: Sim, n: number): string[] {
  const calls: string[] = [];
  for (let i = 0; i < n; i++) {
    sim.step(5_000);
    calls.push(...sim.calls());
    sim.applyDriverCalls();
  }
  return calls;
}

test('a firing critical alert holds batch 1 with no driver call: Waiting names the gate, its query and its value; it goes on once the alert clears', () => {
  const sim = new Sim(threeOn(), gated());
  sim.extra.gates = firing;
  const calls = steps(sim, 6);
  assert.deepEqual(calls, []);
  assert.equal(sim.status?.phase, 'Upgrading');
  assert.equal(sim.status?.waiting?.reason, 'GateNotHeld');
  assert.equal(sim.status?.waiting?.gate, 'no-critical-alerts');
  assert.match(sim.status?.waiting?.message ?? '', /batch 1 waits: gate no-critical-alerts \(ALERTS\{alertstate="firing",severity="critical"\}\) does not hold: 1 series: \{alertname="EtcdDown", severity="critical"\} 1/);
  const waiting = sim.condition('Waiting');
  assert.equal(waiting?.status, 'True');
  assert.equal(waiting?.reason, 'GateNotHeld');
  // Re-checked every interval, and `since` kept while it waits for the same reason.
  const since = sim.status?.waiting?.since;
  assert.ok(sim.last.requeueAfterMs !== undefined && sim.last.requeueAfterMs <= 10_000);
  sim.step(10_000);
  assert.equal(sim.status?.waiting?.since, since);
  assert.equal(sim.last.actions.filter((a) => a.kind === 'event' && a.reason === 'Waiting').length, 0, 'one Event when the wait begins, not one per look');

  sim.extra.gates = quiet;
  const after = steps(sim, 12);
  assert.deepEqual(after, ['Upgrade:cp-1', 'Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.equal(sim.status?.phase, 'Succeeded');
  assert.equal(sim.status?.waiting, undefined);
  // Every call made once.
  assert.equal(sim.status?.driverCalls?.length, 3);
});

test('a gate that fails during batch 1 does not interrupt it, and holds batch 2 until it clears', () => {
  const sim = new Sim(threeOn(), gated());
  sim.extra.gates = quiet;
  sim.step(); // Pending -> Preflight -> Upgrading
  sim.step(5_000);
  assert.deepEqual(sim.calls(), ['Upgrade:cp-1']);
  sim.extra.gates = firing; // the alert starts while cp-1 is replaced
  sim.applyDriverCalls();
  const during = steps(sim, 8);
  assert.deepEqual(during, [], 'batch 2 never starts while the gate fails');
  assert.deepEqual(sim.status?.batch?.history?.map((h) => `${h.index}:${h.result}`), ['1:Succeeded'], 'batch 1 finished though the gate failed mid-batch');
  assert.equal(sim.status?.waiting?.reason, 'GateNotHeld');
  assert.match(sim.status?.waiting?.message ?? '', /^batch 2 waits/);
  sim.extra.gates = quiet;
  assert.deepEqual(steps(sim, 10), ['Upgrade:cp-2', 'Upgrade:cp-3']);
  assert.equal(sim.status?.phase, 'Succeeded');
});

test('a gate that cannot be evaluated (Prometheus down) does not hold: GateUnknown, no call', () => {
  const sim = new Sim(threeOn(), gated());
  sim.extra.gates = prometheusDown;
  assert.deepEqual(steps(sim, 5), []);
  assert.equal(sim.status?.waiting?.reason, 'GateUnknown');
  assert.match(sim.status?.waiting?.message ?? '', /cannot be evaluated, which counts as not holding: cannot be evaluated: GET http:\/\/prom:9090.*ECONNREFUSED/);
  // Not read at all counts the same.
  delete sim.extra.gates;
  assert.deepEqual(steps(sim, 2), []);
  assert.equal(sim.status?.waiting?.reason, 'GateUnknown');
});

test('the gate pass is the first call: held by a gate before it starts, never once it has', () => {
  const sim = new Sim([peer('cp-1', OLD, 'off'), peer('cp-2', OLD, 'off')], gated());
  sim.extra.gates = firing;
  assert.deepEqual(steps(sim, 3), []);
  assert.equal(sim.status?.phase, 'EnablingProxy');
  assert.match(sim.status?.waiting?.message ?? '', /the proxy gate pass \(the first call\) waits/);
  sim.extra.gates = quiet;
  sim.step(5_000);
  assert.deepEqual(sim.calls(), ['EnableProxy:cp-1']);
  sim.applyDriverCalls();
  sim.extra.gates = firing;
  // The pass goes on (cp-2) though the gate fails again; batch 1 then waits.
  assert.deepEqual(steps(sim, 5), ['EnableProxy:cp-2']);
  assert.equal(sim.status?.phase, 'Upgrading');
  assert.match(sim.status?.waiting?.message ?? '', /^batch 1 waits/);
});

test('comparison gates: every series must compare true; an empty answer is no data (does not hold)', () => {
  const s = resolveSpec(gated({ gates: { prometheus: { address: 'http://prom:9090' }, queries: [{ name: 'etcd-leader', query: 'min(etcd_server_has_leader)', op: '==', value: 1 }] } }));
  const judge = (samples: { labels: Record<string, string>; value: number }[]) => evaluateGates(s, { peers: [], gates: { queries: [{ name: 'etcd-leader', samples }] } })[0]!;
  assert.equal(judge([{ labels: {}, value: 1 }]).holds, true);
  assert.equal(judge([{ labels: { instance: 'a' }, value: 1 }, { labels: { instance: 'b' }, value: 0 }]).holds, false);
  assert.match(judge([{ labels: { instance: 'b' }, value: 0 }]).value, /1 series not == 1: \{instance="b"\} 0/);
  assert.equal(judge([]).holds, undefined);
  assert.equal(judge([{ labels: {}, value: Number.NaN }]).holds, false);
});

test('built-in gates: every server ready (/readyz includes etcd); every control-plane Node Ready, none found or not read is unknown', () => {
  const s = resolveSpec(spec({ gates: { serversReady: true, controlPlaneNodesReady: true } }));
  const ok = evaluateGates(s, { peers: [peer('cp-1', OLD), peer('cp-2', OLD)], gates: { queries: [], controlPlaneNodes: [{ name: 'cp-1', ready: true }] } });
  assert.deepEqual(ok.map((v) => [v.name, v.holds]), [['serversReady', true], ['controlPlaneNodesReady', true]]);
  const bad = evaluateGates(s, { peers: [peer('cp-1', OLD), peer('cp-2', OLD, 'off', { ready: false })], gates: { queries: [], controlPlaneNodes: [{ name: 'cp-1', ready: true }, { name: 'cp-2', ready: false }] } });
  assert.deepEqual(bad.map((v) => [v.name, v.holds, v.value]), [['serversReady', false, 'not ready: cp-2 (not ready)'], ['controlPlaneNodesReady', false, 'not Ready: cp-2']]);
  assert.equal(evaluateGates(s, { peers: [peer('cp-1', OLD)], gates: { queries: [], controlPlaneNodes: [] } })[1]!.holds, undefined);
  assert.equal(evaluateGates(s, { peers: [peer('cp-1', OLD)], gates: { queries: [], controlPlaneNodes: { error: 'forbidden' } } })[1]!.holds, undefined);
  assert.equal(evaluateGates(s, { peers: [peer('cp-1', OLD)] })[1]!.holds, undefined);
});

test('an abort while a gate holds the next batch rolls back at once: a gate never delays a rollback', () => {
  const sim = new Sim(threeOn(), gated());
  sim.extra.gates = quiet;
  steps(sim, 4);
  assert.deepEqual(sim.status?.batch?.history?.map((h) => h.index), [1]);
  sim.extra.gates = firing;
  steps(sim, 2);
  assert.equal(sim.status?.waiting?.reason, 'GateNotHeld');
  sim.upgrade = { ...sim.upgrade, annotations: { [ABORT_ANNOTATION]: 'now' } };
  const upgraded = (sim.status?.driverCalls ?? []).filter((c) => c.action === 'Upgrade').map((c) => `Rollback:${c.server}`);
  assert.ok(upgraded.length >= 1);
  const calls = steps(sim, 6);
  assert.deepEqual([...calls].sort(), [...upgraded].sort());
  assert.equal(sim.status?.phase, 'RolledBack');
  assert.equal(sim.status?.waiting, undefined);
});

test('gates are read on every reconcile: an invalid gate spec is refused by resolveSpec', () => {
  assert.throws(() => resolveSpec(spec({ gates: { queries: [{ name: 'x', query: 'up' }] } })), SpecError);
  assert.throws(() => resolveSpec(spec({ gates: { prometheus: { address: 'http://p:9090' }, queries: [{ name: 'x', query: 'up', op: '>' }] } })), SpecError);
  assert.equal(NEW, 'v1.36.3');
});
