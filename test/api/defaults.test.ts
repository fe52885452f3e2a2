import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SpecError, resolveSpec, withDefaults } from '../../src/api/defaults.ts';
import type { ApiServerUpgradeSpec } from '../../src/api/types.generated.ts';
import { loadExamples } from './examples.ts';
import { DEFAULT_UNAVAILABLE_APISERVICES, DEFAULT_WEBHOOK_ERROR_RATIO, DEFAULT_WEBHOOK_MIN_CALLS } from '../../src/observe/signals.ts';

const minimal: ApiServerUpgradeSpec = { targetVersion: 'v1.36.3', driver: { webhook: { url: 'https://h.example/replace' } } };

test('withDefaults fills what the API server would, from the schema', () => {
  assert.deepEqual(withDefaults(minimal), {
    targetVersion: 'v1.36.3',
    paused: false,
    allowPrerelease: false,
    strategy: { batchSize: 1, soakDuration: '2m', batchTimeout: '10m', phases: 'OnePhase', phaseSoakDuration: '5m', phaseTwo: { start: 'Automatic' } },
    proxy: { gate: 'Auto', revertAfter: false, allowAlphaGate: false },
    driver: { webhook: { url: 'https://h.example/replace', timeout: '30s', reportsStatus: false } },
    analysis: {
      interval: '10s',
      failureLimit: 3,
      onBreach: 'Pause',
      thresholds: { proxyErrorRatio: 0.01, errorRatio: 0.05, latencyP99: '1s', discoveryConvergence: '2m', unavailableAPIServices: 0, webhookErrorRatio: 0.05, webhookMinCalls: 10 },
      source: 'Direct',
    },
    rollback: { orphanedObjects: 'Pause' },
    trust: { requireAllowedNames: false },
    gates: { controlPlaneNodesReady: false, serversReady: false },
  });
});

test('withDefaults keeps given values and does not mutate its input', () => {
  const spec: ApiServerUpgradeSpec = { ...minimal, strategy: { batchSize: '50%' } };
  const copy = structuredClone(spec);
  const d = withDefaults(spec);
  assert.equal(d.strategy?.batchSize, '50%');
  assert.equal(d.strategy?.soakDuration, '2m');
  assert.deepEqual(spec, copy);
});

test('resolveSpec parses durations and picks the driver', () => {
  const r = resolveSpec(minimal);
  assert.equal(r.strategy.soakMs, 120_000);
  assert.equal(r.strategy.batchTimeoutMs, 600_000);
  assert.equal(r.analysis.intervalMs, 10_000);
  assert.equal(r.analysis.thresholds.latencyP99Ms, 1000);
  assert.equal(r.driver.kind, 'webhook');
  assert.equal(r.driver.kind === 'webhook' ? r.driver.webhook.timeoutMs : 0, 30_000);
  assert.equal(r.analysis.prometheus, undefined);
});

test('the thresholds of issue 13: the CRD defaults equal the ones the analysis applies when none is passed', () => {
  const t = resolveSpec(minimal).analysis.thresholds;
  assert.deepEqual(
    { unavailableAPIServices: t.unavailableAPIServices, webhookErrorRatio: t.webhookErrorRatio, webhookMinCalls: t.webhookMinCalls },
    { unavailableAPIServices: DEFAULT_UNAVAILABLE_APISERVICES, webhookErrorRatio: DEFAULT_WEBHOOK_ERROR_RATIO, webhookMinCalls: DEFAULT_WEBHOOK_MIN_CALLS },
  );
  assert.deepEqual(t, { proxyErrorRatio: 0.01, errorRatio: 0.05, latencyP99Ms: 1000, discoveryConvergenceMs: 120_000, unavailableAPIServices: 0, webhookErrorRatio: 0.05, webhookMinCalls: 10 });
  const given = resolveSpec({ ...minimal, analysis: { thresholds: { unavailableAPIServices: 2, webhookErrorRatio: 0.2, webhookMinCalls: 50 } } }).analysis.thresholds;
  assert.deepEqual([given.unavailableAPIServices, given.webhookErrorRatio, given.webhookMinCalls, given.errorRatio], [2, 0.2, 50, 0.05]);
});

test('resolveSpec fills the staticPod defaults', () => {
  const r = resolveSpec({ targetVersion: 'v1.36.3', driver: { staticPod: { agentImage: 'example.com/agent:v1' } } });
  assert.deepEqual(r.driver, {
    kind: 'staticPod',
    staticPod: {
      // No default: keep the repository the node runs (the driver reads it from the mirror Pod).
      image: '',
      manifestPath: '/etc/kubernetes/manifests/kube-apiserver.yaml',
      backupDir: '/etc/kubernetes/apiserver-upgrade-backup',
      peerCAFile: '/etc/kubernetes/pki/ca.crt',
      agentImage: 'example.com/agent:v1',
      namespace: 'kube-system',
      readyTimeout: '3m',
      readyTimeoutMs: 180_000,
    },
  });
});

test('resolveSpec throws SpecError instead of crashing on a spec the API server would refuse', () => {
  const bad: unknown[] = [
    { ...minimal, targetVersion: '1.36' },
    { ...minimal, driver: {} },
    { ...minimal, driver: { webhook: { url: 'https://x' }, staticPod: { agentImage: 'a' } } },
    { targetVersion: 'v1.36.3' },
    { ...minimal, strategy: { soakDuration: '10x' } },
    { ...minimal, analysis: { failureLimit: 0 } },
    { ...minimal, analysis: { source: 'Prometheus' } },
    { targetVersion: 'v1.36.3', driver: { staticPod: { readyTimeout: '3x' } } },
  ];
  for (const spec of bad) {
    // The point is to feed malformed specs, as an old or hand-edited object could be.
    assert.throws(() => resolveSpec(spec as ApiServerUpgradeSpec), SpecError, JSON.stringify(spec));
  }
});

test('every example resolves', () => {
  const examples = loadExamples();
  assert.ok(examples.length >= 3);
  for (const { file, object } of examples) {
    const r = resolveSpec(object.spec);
    assert.equal(r.targetVersion, object.spec.targetVersion, file);
  }
  const rollback = examples.find((e) => e.file === 'rollback-on-breach.yaml');
  assert.equal(rollback && resolveSpec(rollback.object.spec).analysis.prometheus?.address, 'http://prometheus-operated.monitoring.svc:9090');
  // The window defaults from the schema, as the API server would default it.
  assert.equal(rollback && resolveSpec(rollback.object.spec).analysis.prometheus?.windowMs, 60_000);
});
