// Each kube-apiserver's CoordinatedLeaderElection gate (docs/version-skew.md "Coordinated leader election"): read
// from kubernetes_feature_enabled on its /metrics into status.peers; unknown stays unknown, and a look that did not
// read it keeps the last reading (never "off" for a gate not read).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sim, peer, OLD } from './fleet.ts';
import { COORDINATED_LEADER_ELECTION, FAMILIES, featureGateState } from '../../src/observe/signals.ts';
import { parsePromText } from '../../src/observe/prom-text.ts';
import { readFixture } from '../observe/fixtures.ts';

const WANTED = new Set([FAMILIES.featureEnabled]);

test('the gate from a real /metrics page (v1.35.4, v1.36.3, v1.37.2: beta, off), on at 1, unknown when the page has no sample or another value', () => {
  for (const v of ['v1.35.4', 'v1.36.3', 'v1.37.2']) {
    assert.equal(featureGateState(parsePromText(readFixture(v, 'metrics.txt'), WANTED), COORDINATED_LEADER_ELECTION), 'off', v);
  }
  const page = (value: string): string => `# TYPE kubernetes_feature_enabled gauge\nkubernetes_feature_enabled{name="CoordinatedLeaderElection",stage="BETA"} ${value}\n`;
  assert.equal(featureGateState(parsePromText(page('1'), WANTED), COORDINATED_LEADER_ELECTION), 'on');
  assert.equal(featureGateState(parsePromText(page('0.5'), WANTED), COORDINATED_LEADER_ELECTION), 'unknown');
  assert.equal(featureGateState(parsePromText('# TYPE kubernetes_feature_enabled gauge\nkubernetes_feature_enabled{name="Other",stage="BETA"} 1\n', WANTED), COORDINATED_LEADER_ELECTION), 'unknown');
});

test('status.peers carries each server\'s gate: Enabled, Disabled, Unknown as read; a look that did not read it keeps the last reading; never read, absent', () => {
  const peers = [peer('cp-1', OLD, 'off', { coordinatedLeaderElection: 'on' }), peer('cp-2', OLD, 'off', { coordinatedLeaderElection: 'unknown' }), peer('cp-3', OLD, 'off')];
  const sim = new Sim(peers);
  sim.step();
  sim.step();
  const rows = () => Object.fromEntries((sim.status?.peers ?? []).map((p) => [p.hostname, p.coordinatedLeaderElection]));
  assert.deepEqual(rows(), { 'cp-1': 'Enabled', 'cp-2': 'Unknown', 'cp-3': undefined });
  delete sim.peers[0]!.coordinatedLeaderElection;
  sim.peers[2]!.coordinatedLeaderElection = 'off';
  sim.step();
  assert.deepEqual(rows(), { 'cp-1': 'Enabled', 'cp-2': 'Unknown', 'cp-3': 'Disabled' });
});
