// A call is Done when its server is observed back at the goal; the static Pod agent that carries it out may still
// run for seconds after that (it confirms readiness, then exits, then the Job completes). The fault campaign on real
// kubelets caught the operator sending a Rollback Job for a server while that server's Upgrade agent still ran: two
// agents on one manifest. Nothing else goes to a server until the driver says it runs nothing more for the last call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiServerUpgradeSpec, DriverCall } from '../../src/api/types.generated.ts';
import { callsToReport, DRIVER_RUN_SLACK_MS } from '../../src/plan/calls.ts';
import { resolveSpec } from '../../src/api/defaults.ts';
import { PULL_ALLOWANCE_SECONDS } from '../../src/drivers/static-pod.ts';
import type { ObservedPeer } from '../../src/plan/index.ts';
import { kubeadmFacts, peer, spec, OLD } from './fleet.ts';
import { ShellSim } from './model/shell-sim.ts';

function fleet(n: number): ObservedPeer[] {
  return Array.from({ length: n }, (_, i) => peer(`cp-${i + 1}`, OLD, 'on'));
}

function staticPodSpec(over: Partial<ApiServerUpgradeSpec> = {}): ApiServerUpgradeSpec {
  const base = spec();
  return { ...base, driver: { staticPod: { readyTimeout: '2m' } }, strategy: { ...base.strategy, batchSize: 1, soakDuration: '30s', batchTimeout: '5m' }, analysis: { ...base.analysis, interval: '5s', failureLimit: 1, onBreach: 'Rollback' }, ...over };
}

const calls = (sim: ShellSim, server: string): DriverCall[] => (sim.status?.driverCalls ?? []).filter((c) => c.server === server);

/** cp-1's Upgrade lands while its agent still runs, then a breach asks for the rollback. */
function landedWithAgentRunning(s: ApiServerUpgradeSpec): { sim: ShellSim; upgradeKey: string } {
  const sim = new ShellSim(fleet(3), s);
  sim.extra = { ...sim.extra, kubeadm: kubeadmFacts(3) };
  sim.autoLand = false;
  sim.runUntil((x) => x.held.has('cp-1'), 10, 1000);
  const upgradeKey = sim.held.get('cp-1')!.idempotencyKey;
  sim.reports.set(upgradeKey, { kind: 'running', message: 'the agent Job runs: it confirms readiness before it exits' });
  sim.land('cp-1');
  sim.reconcile(1000);
  assert.equal(calls(sim, 'cp-1').find((c) => c.key === upgradeKey)?.result, 'Done', 'the Upgrade is Done by observation');
  sim.checks = true;
  sim.verdict = 'Breach'; // the signals breach: onBreach Rollback
  sim.runUntil((x) => x.status?.phase === 'RollingBack', 10, 1000);
  return { sim, upgradeKey };
}

test('no Rollback Job for a server while the agent of its landed Upgrade still runs; sent once the driver says it finished', () => {
  const { sim, upgradeKey } = landedWithAgentRunning(staticPodSpec());
  for (let i = 0; i < 5; i++) sim.reconcile(2000);
  assert.deepEqual(calls(sim, 'cp-1').map((c) => c.action), ['Upgrade'], 'no second call while the first agent runs');
  assert.equal(calls(sim, 'cp-1')[0]!.driverSettledAt, undefined);
  sim.reports.set(upgradeKey, { kind: 'succeeded', message: 'the agent Job completed' });
  sim.reconcile(2000);
  sim.reconcile(2000);
  assert.ok(calls(sim, 'cp-1')[0]!.driverSettledAt, 'settled when the driver said so');
  assert.deepEqual(calls(sim, 'cp-1').map((c) => c.action), ['Upgrade', 'Rollback'], 'then the rollback goes');
});

test('a report that cannot be read is no settlement (unknown is running); the driver\'s own deadline ends the wait', () => {
  const { sim, upgradeKey } = landedWithAgentRunning(staticPodSpec());
  sim.reports.set(upgradeKey, 'throws');
  for (let i = 0; i < 5; i++) sim.reconcile(10_000);
  assert.deepEqual(calls(sim, 'cp-1').map((c) => c.action), ['Upgrade'], 'unread: still waiting');
  // The agent's Job cannot outlive readyTimeout + the pull allowance, both within batchTimeout + the slack.
  sim.reconcile(5 * 60_000 + DRIVER_RUN_SLACK_MS);
  sim.reconcile(2000);
  assert.deepEqual(calls(sim, 'cp-1').map((c) => c.action), ['Upgrade', 'Rollback']);
});

test('a Job gone (deleted) settles the call: nothing runs for it', () => {
  const { sim, upgradeKey } = landedWithAgentRunning(staticPodSpec());
  sim.reports.set(upgradeKey, { kind: 'gone', message: 'Job kube-system/x is not there' });
  sim.reconcile(2000);
  sim.reconcile(2000);
  assert.deepEqual(calls(sim, 'cp-1').map((c) => c.action), ['Upgrade', 'Rollback']);
});

// Fault campaign, process seed 281 #3: the rollback began with cp-2's Upgrade in flight; a look found cp-2 restarted
// at v1.36.3 and the operator sent cp-2's Rollback at +19.2 s; the hook ended the Upgrade (cp-2 back in its balancer)
// at +19.3 s. A hook that answers status requests (reportsStatus) holds the Rollback until it says it finished.
const REPORTING_HOOK = { webhook: { url: 'https://hook.example/replace', reportsStatus: true } };

test('a webhook that reports status: no Rollback for a server until the hook says its landed Upgrade ended', () => {
  const { sim, upgradeKey } = landedWithAgentRunning(staticPodSpec({ driver: REPORTING_HOOK }));
  sim.reports.set(upgradeKey, { kind: 'running', message: 'cp-1 is ready; putting it back in the balancer' });
  for (let i = 0; i < 5; i++) sim.reconcile(2000);
  assert.deepEqual(calls(sim, 'cp-1').map((c) => c.action), ['Upgrade'], 'no second call while the hook still runs the first');
  sim.reports.set(upgradeKey, 'throws');
  for (let i = 0; i < 3; i++) sim.reconcile(2000);
  assert.deepEqual(calls(sim, 'cp-1').map((c) => c.action), ['Upgrade'], 'a status not read is no settlement');
  sim.reports.set(upgradeKey, { kind: 'succeeded', message: 'cp-1 on v1.36.3, back in the balancer' });
  sim.reconcile(2000);
  sim.reconcile(2000);
  assert.ok(calls(sim, 'cp-1')[0]!.driverSettledAt, 'settled when the hook said so');
  assert.deepEqual(calls(sim, 'cp-1').map((c) => c.action), ['Upgrade', 'Rollback']);
});

test('a webhook that reports status: a rollback begun while the Upgrade is in flight waits for the landing, then for the hook', () => {
  const sim = new ShellSim(fleet(3), staticPodSpec({ driver: REPORTING_HOOK }));
  sim.autoLand = false;
  sim.runUntil((x) => x.held.has('cp-1'), 10, 1000);
  const upgradeKey = sim.held.get('cp-1')!.idempotencyKey;
  sim.reports.set(upgradeKey, { kind: 'running', message: 'draining cp-1' });
  sim.verdict = 'Breach';
  sim.runUntil((x) => x.status?.phase === 'RollingBack', 10, 1000);
  assert.equal(calls(sim, 'cp-1')[0]!.result, 'Accepted', 'the rollback began with the Upgrade in flight');
  sim.land('cp-1');
  for (let i = 0; i < 3; i++) sim.reconcile(500);
  assert.equal(calls(sim, 'cp-1')[0]!.result, 'Done', 'landed, by observation');
  assert.deepEqual(calls(sim, 'cp-1').map((c) => c.action), ['Upgrade'], 'landed is not ended: the hook still runs it');
  sim.reports.set(upgradeKey, { kind: 'succeeded', message: 'done' });
  sim.reconcile(500);
  sim.reconcile(500);
  assert.deepEqual(calls(sim, 'cp-1').map((c) => c.action), ['Upgrade', 'Rollback']);
});

test('a webhook that reports status and says its Accepted call failed is not asked until the call ends (only settlement is asked)', () => {
  const sim = new ShellSim(fleet(3), staticPodSpec({ driver: REPORTING_HOOK }));
  sim.autoLand = false;
  sim.runUntil((x) => x.held.has('cp-1'), 10, 1000);
  const upgradeKey = sim.held.get('cp-1')!.idempotencyKey;
  sim.reports.set(upgradeKey, { kind: 'failed', message: 'the platform lost the node' });
  for (let i = 0; i < 3; i++) sim.reconcile(2000);
  assert.equal(calls(sim, 'cp-1')[0]!.result, 'Accepted', 'a webhook\'s Accepted call ends by observation or batchTimeout, as before');
});

test('a webhook without reportsStatus has no reports: its calls never wait for one (the gap docs/drivers.md names)', () => {
  const { sim } = landedWithAgentRunning(staticPodSpec({ driver: { webhook: { url: 'https://hook.example/replace' } } }));
  sim.reconcile(2000);
  sim.reconcile(2000);
  assert.deepEqual(calls(sim, 'cp-1').map((c) => c.action), ['Upgrade', 'Rollback']);
});

test('what the shell reads: calls Accepted, and ended calls not settled within batchTimeout + the agent\'s slack', () => {
  const now = new Date('2026-12-04T03:00:00Z');
  const at = (minAgo: number): string => new Date(now.getTime() - minAgo * 60_000).toISOString();
  const c = (key: string, result: DriverCall['result'], minAgo: number, settled?: boolean): DriverCall => ({ key, server: 'cp-1', action: 'Upgrade', result, time: at(minAgo), ...(settled ? { driverSettledAt: at(0) } : {}) });
  const all = [c('accepted', 'Accepted', 30), c('done', 'Done', 1), c('failed', 'Failed', 2), c('timedout', 'TimedOut', 9), c('settled', 'Done', 1, true), c('old', 'Done', 11), c('rejected', 'Rejected', 1), c('abandoned', 'Abandoned', 1), c('requested', 'Requested', 1)];
  const staticPod = resolveSpec(staticPodSpec()).driver;
  assert.deepEqual(callsToReport(all, now, 5 * 60_000, staticPod).map((x) => x.key), ['accepted', 'done', 'failed', 'timedout']);
  // A webhook that reports is asked only what settles a call; one that does not is asked nothing.
  const reporting = resolveSpec(staticPodSpec({ driver: { webhook: { url: 'https://hook.example/replace', reportsStatus: true } } })).driver;
  assert.deepEqual(callsToReport(all, now, 5 * 60_000, reporting).map((x) => x.key), ['done', 'failed', 'timedout']);
  const silent = resolveSpec(staticPodSpec({ driver: { webhook: { url: 'https://hook.example/replace' } } })).driver;
  assert.deepEqual(callsToReport(all, now, 5 * 60_000, silent).map((x) => x.key), []);
  assert.equal(DRIVER_RUN_SLACK_MS, PULL_ALLOWANCE_SECONDS * 1000, 'the slack is the agent Job\'s pull allowance');
});
