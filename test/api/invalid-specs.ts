/**
 * Specs the API server must reject, with a fragment of the message it must give. Data only: the unit
 * tests check what can be checked client-side, and the e2e suite sends each manifest to real
 * kube-apiservers (server-side dry run) and expects `expectedMessage` in the error.
 *
 * Each manifest is wrong in exactly one way: the API server skips the CEL rules of an object that
 * already failed OpenAPI validation ("some validation rules were not checked"), so two mistakes in one
 * manifest would hide each other's messages.
 */
import { API_VERSION, KIND } from '../../src/api/constants.ts';

export type Manifest = Record<string, unknown> & { spec: Record<string, unknown> };

export interface InvalidSpecCase {
  /** Unique, used as the object name suffix and the test title. */
  name: string;
  /** The field the API server reports the error at. */
  field: string;
  /** Who rejects it: a CEL rule (x-kubernetes-validations) or the OpenAPI schema (type, range, enum, required). */
  by: 'cel' | 'openapi';
  /** For transition rules: create this object first, then update it to `manifest`. */
  before?: Manifest;
  manifest: Manifest;
  /** A fragment of the error message. */
  expectedMessage: string;
}

/** A valid spec every case starts from (the webhook driver keeps it short). */
export function validSpec(): Record<string, unknown> {
  return {
    targetVersion: 'v1.36.3',
    strategy: { batchSize: 1, soakDuration: '2m', batchTimeout: '10m' },
    driver: { webhook: { url: 'https://replacer.example.com/replace', timeout: '30s' } },
    analysis: { interval: '10s', failureLimit: 3, onBreach: 'Pause', thresholds: { proxyErrorRatio: 0.01, errorRatio: 0.05 } },
  };
}

export function manifest(name: string, spec: Record<string, unknown>): Manifest {
  return { apiVersion: API_VERSION, kind: KIND, metadata: { name: `invalid-${name}` }, spec };
}

/** The valid spec with one change, made by `edit` on a private copy. */
function invalid(name: string, edit: (spec: Spec) => void): Manifest {
  const spec = validSpec() as Spec;
  edit(spec);
  return manifest(name, spec);
}

// A loose view of the spec for editing fixtures; the point of these fixtures is to be wrong.
interface Spec extends Record<string, unknown> {
  strategy: Record<string, unknown>;
  driver?: Record<string, unknown> & { webhook?: Record<string, unknown> };
  analysis: Record<string, unknown> & { thresholds: Record<string, unknown> };
}

/** The base spec's webhook, for edits that change one of its fields. */
function webhookOf(s: Spec): Record<string, unknown> {
  const w = s.driver?.webhook;
  if (w === undefined) throw new Error('the base spec has a webhook driver');
  return w;
}

function c(name: string, field: string, by: InvalidSpecCase['by'], expectedMessage: string, edit: (spec: Spec) => void): InvalidSpecCase {
  return { name, field, by, expectedMessage, manifest: invalid(name, edit) };
}

const VERSION_MSG = 'must be a Kubernetes release version such as v1.36.3';
const DURATION_MSG = 'must be a Go duration such as 10s, 2m or 1h30m';
const PERCENT_MSG = 'batchSize as a string must be a percentage between 1% and 100%';
const ONE_DRIVER_MSG = 'driver must set exactly one of webhook or staticPod';

export const invalidSpecs: readonly InvalidSpecCase[] = [
  c('version-no-v', 'spec.targetVersion', 'cel', VERSION_MSG, (s) => (s.targetVersion = '1.36.3')),
  c('version-no-patch', 'spec.targetVersion', 'cel', VERSION_MSG, (s) => (s.targetVersion = 'v1.36')),
  c('version-leading-zero', 'spec.targetVersion', 'cel', VERSION_MSG, (s) => (s.targetVersion = 'v1.036.3')),
  c('version-missing', 'spec.targetVersion', 'openapi', 'Required value', (s) => delete s.targetVersion),
  c('batch-size-zero', 'spec.strategy.batchSize', 'cel', 'batchSize must be at least 1', (s) => (s.strategy.batchSize = 0)),
  c('batch-size-negative', 'spec.strategy.batchSize', 'cel', 'batchSize must be at least 1', (s) => (s.strategy.batchSize = -2)),
  c('batch-size-percent-over-100', 'spec.strategy.batchSize', 'cel', PERCENT_MSG, (s) => (s.strategy.batchSize = '150%')),
  c('batch-size-percent-zero', 'spec.strategy.batchSize', 'cel', PERCENT_MSG, (s) => (s.strategy.batchSize = '0%')),
  c('batch-size-malformed', 'spec.strategy.batchSize', 'cel', PERCENT_MSG, (s) => (s.strategy.batchSize = 'half')),
  c('soak-malformed', 'spec.strategy.soakDuration', 'cel', DURATION_MSG, (s) => (s.strategy.soakDuration = '10x')),
  c('soak-no-unit', 'spec.strategy.soakDuration', 'cel', DURATION_MSG, (s) => (s.strategy.soakDuration = '120')),
  c('interval-negative', 'spec.analysis.interval', 'cel', DURATION_MSG, (s) => (s.analysis.interval = '-10s')),
  c('batch-timeout-too-short', 'spec.strategy.batchTimeout', 'cel', 'must be between 30s and 24h', (s) => (s.strategy.batchTimeout = '1s')),
  c('latency-too-long', 'spec.analysis.thresholds.latencyP99', 'cel', 'must be between 1ms and 1m', (s) => (s.analysis.thresholds.latencyP99 = '5m')),
  c('proxy-error-ratio-over-1', 'spec.analysis.thresholds.proxyErrorRatio', 'openapi', 'should be less than or equal to 1', (s) => (s.analysis.thresholds.proxyErrorRatio = 1.5)),
  c('error-ratio-negative', 'spec.analysis.thresholds.errorRatio', 'openapi', 'should be greater than or equal to 0', (s) => (s.analysis.thresholds.errorRatio = -0.1)),
  c('failure-limit-zero', 'spec.analysis.failureLimit', 'openapi', 'should be greater than or equal to 1', (s) => (s.analysis.failureLimit = 0)),
  c('on-breach-unknown', 'spec.analysis.onBreach', 'openapi', 'Unsupported value: "Abort"', (s) => (s.analysis.onBreach = 'Abort')),
  c('proxy-gate-unknown', 'spec.proxy.gate', 'openapi', 'Unsupported value: "On"', (s) => (s.proxy = { gate: 'On' })),
  c('phase-two-deadline-without-action', 'spec.strategy.phaseTwo', 'cel', 'phaseTwo.deadline and phaseTwo.onDeadline go together', (s) => {
    s.strategy.phases = 'TwoPhase';
    s.strategy.phaseTwo = { start: 'Approval', deadline: '1h' };
  }),
  c('phase-two-action-without-deadline', 'spec.strategy.phaseTwo', 'cel', 'phaseTwo.deadline and phaseTwo.onDeadline go together', (s) => {
    s.strategy.phases = 'TwoPhase';
    s.strategy.phaseTwo = { start: 'Approval', onDeadline: 'Rollback' };
  }),
  c('phase-two-deadline-when-automatic', 'spec.strategy.phaseTwo.deadline', 'cel', 'phaseTwo.deadline needs start Approval', (s) => {
    s.strategy.phases = 'TwoPhase';
    s.strategy.phaseTwo = { start: 'Automatic', deadline: '1h', onDeadline: 'Proceed' };
  }),
  c('phase-two-approval-one-phase', 'spec.strategy.phaseTwo.start', 'cel', 'phaseTwo.start Approval needs phases TwoPhase', (s) => {
    s.strategy.phaseTwo = { start: 'Approval' };
  }),
  c('phase-two-deadline-too-short', 'spec.strategy.phaseTwo.deadline', 'cel', 'must be between 10s and 720h', (s) => {
    s.strategy.phases = 'TwoPhase';
    s.strategy.phaseTwo = { start: 'Approval', deadline: '5s', onDeadline: 'Proceed' };
  }),
  c('phase-two-on-deadline-unknown', 'spec.strategy.phaseTwo.onDeadline', 'openapi', 'Unsupported value: "Wait"', (s) => {
    s.strategy.phases = 'TwoPhase';
    s.strategy.phaseTwo = { start: 'Approval', deadline: '1h', onDeadline: 'Wait' };
  }),
  c('no-driver', 'spec.driver', 'cel', ONE_DRIVER_MSG, (s) => (s.driver = {})),
  c('two-drivers', 'spec.driver', 'cel', ONE_DRIVER_MSG, (s) => (s.driver = { ...s.driver, staticPod: { agentImage: 'example.com/agent:v1' } })),
  c('driver-missing', 'spec.driver', 'openapi', 'Required value', (s) => delete s.driver),
  c('webhook-http', 'spec.driver.webhook.url', 'cel', 'webhook url must be an https:// URL', (s) => (webhookOf(s).url = 'http://replacer.example.com/replace')),
  c('webhook-timeout-zero', 'spec.driver.webhook.timeout', 'cel', 'must be between 1s and 10m', (s) => (webhookOf(s).timeout = '0s')),
  c('static-pod-image-tag', 'spec.driver.staticPod.image', 'cel', 'image must be a repository without tag or digest', (s) => {
    s.driver = { staticPod: { image: 'registry.k8s.io/kube-apiserver:v1.36.3', agentImage: 'example.com/agent:v1' } };
  }),
  c('static-pod-relative-manifest', 'spec.driver.staticPod.manifestPath', 'openapi', 'should match', (s) => {
    s.driver = { staticPod: { manifestPath: 'manifests/kube-apiserver.yaml', agentImage: 'example.com/agent:v1' } };
  }),
  // Issue 21: a newline in peerCAFile once added `- --authorization-mode=AlwaysAllow` to every kube-apiserver.
  c('static-pod-peer-ca-newline-injection', 'spec.driver.staticPod.peerCAFile', 'openapi', 'should match', (s) => {
    s.driver = { staticPod: { peerCAFile: '/etc/kubernetes/pki/ca.crt\n    - --authorization-mode=AlwaysAllow' } };
  }),
  c('static-pod-backup-dir-dot-dot', 'spec.driver.staticPod.backupDir', 'openapi', 'should match', (s) => {
    s.driver = { staticPod: { backupDir: '/etc/kubernetes/../../root/.ssh' } };
  }),
  c('static-pod-agent-image-shell', 'spec.driver.staticPod.agentImage', 'openapi', 'should match', (s) => {
    s.driver = { staticPod: { agentImage: 'busybox; sh -c id' } };
  }),
  c('static-pod-ready-timeout-not-below-batch-timeout', 'spec.driver.staticPod.readyTimeout', 'cel', 'driver.staticPod.readyTimeout must be shorter than strategy.batchTimeout', (s) => {
    s.driver = { staticPod: { agentImage: 'example.com/agent:v1', readyTimeout: '10m' } };
  }),
  c('prometheus-without-address', 'spec.analysis', 'cel', 'analysis.prometheus.address is required when source is Prometheus', (s) => {
    s.analysis.source = 'Prometheus';
  }),
  c('prometheus-with-direct', 'spec.analysis', 'cel', 'analysis.prometheus may only be set when source is Prometheus', (s) => {
    s.analysis.prometheus = { address: 'http://prometheus.monitoring:9090' };
  }),
  c('prometheus-window-too-short', 'spec.analysis.prometheus.window', 'cel', 'must be between 2s and 1h', (s) => {
    s.analysis.source = 'Prometheus';
    s.analysis.prometheus = { address: 'http://prometheus.monitoring:9090', window: '1s' };
  }),
  c('accept-risks-hard-rule', 'spec.acceptRisks', 'cel', 'SkipsMinor is a hard safety rule (version skew) and can never be accepted', (s) => {
    s.acceptRisks = ['DeprecatedAPIRemovedByTarget', 'SkipsMinor'];
  }),
  c('accept-risks-rollback-safety', 'spec.acceptRisks', 'cel', 'RollbackUnsafe is a hard safety rule (rollback safety) and can never be accepted', (s) => {
    s.acceptRisks = ['RollbackUnsafe'];
  }),
  c('accept-risks-frozen-plan', 'spec.acceptRisks', 'cel', 'FrozenPlan is a hard safety rule (the frozen plan) and can never be accepted', (s) => {
    s.acceptRisks = ['FrozenPlan'];
  }),
  c('accept-risks-unknown-name', 'spec.acceptRisks', 'cel', 'acceptRisks names a finding that cannot be accepted', (s) => {
    s.acceptRisks = ['EverythingIsFine'];
  }),
  c('gate-op-without-value', 'spec.gates.queries[0]', 'cel', "a gate query's op and value are set together", (s) => {
    s.gates = { prometheus: { address: 'http://prometheus.monitoring:9090' }, queries: [{ name: 'x', query: 'up', op: '>' }] };
  }),
  c('gate-queries-without-prometheus', 'spec.gates', 'cel', 'gates.prometheus.address is required when gates.queries is set', (s) => {
    s.gates = { queries: [{ name: 'x', query: 'up' }] };
  }),
  c('window-exclusion-backwards', 'spec.window.exclusions[0]', 'cel', "a window exclusion's end must be after its start", (s) => {
    s.window = { timeZone: 'UTC', recurring: [{ days: ['Mon'], start: '02:00', duration: '1h' }], exclusions: [{ start: '2026-12-24T00:00:00Z', end: '2026-12-20T00:00:00Z' }] };
  }),
  c('window-start-not-hhmm', 'spec.window.recurring[0].start', 'openapi', 'should match', (s) => {
    s.window = { timeZone: 'UTC', recurring: [{ days: ['Mon'], start: '2am', duration: '1h' }] };
  }),
  {
    name: 'target-version-changed',
    field: 'spec.targetVersion',
    by: 'cel',
    expectedMessage: 'targetVersion is immutable; create a new ApiServerUpgrade',
    before: manifest('target-version-changed', validSpec()),
    manifest: invalid('target-version-changed', (s) => (s.targetVersion = 'v1.37.0')),
  },
];
