import type { Schema } from './schema-types.ts';
import { CONDITION_REASON_PATTERN, CONDITION_TYPE_PATTERN } from './patterns.ts';
import { stringField, timeField } from './schema-builders.ts';

/**
 * The observed state of an ApiServerUpgrade, as data (see schema-spec.ts for why).
 * Only the operator writes it, through the status subresource. Keyed lists are list-type map so that
 * server-side apply and strategic merges address entries by key.
 */

const PHASES = ['Pending', 'Preflight', 'EnablingProxy', 'Upgrading', 'Paused', 'RollingBack', 'Succeeded', 'RolledBack', 'Failed'];
// One schema object for every phase field: the type generator maps one tsType to one schema.
const phaseSchema: Schema = { tsType: 'UpgradePhase', type: 'string', description: 'A phase of the upgrade.', enum: PHASES };

const condition: Schema = {
  tsType: 'Condition',
  type: 'object',
  description: 'A metav1.Condition.',
  required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
  properties: {
    type: stringField(
      'Progressing, Paused, Degraded, PreflightPassed, DiscoveryConverged, RollbackSafe or Complete.',
      316,
      { pattern: CONDITION_TYPE_PATTERN },
    ),
    status: { tsType: 'ConditionStatus', type: 'string', description: 'True, False or Unknown.', enum: ['True', 'False', 'Unknown'] },
    observedGeneration: {
      type: 'integer',
      format: 'int64',
      minimum: 0,
      description: 'The metadata.generation the condition was computed from.',
    },
    lastTransitionTime: timeField('When the status last changed.'),
    reason: stringField('CamelCase reason for the last transition.', 1024, { minLength: 1, pattern: CONDITION_REASON_PATTERN }),
    message: stringField('Human-readable details.', 32768),
  },
};

const peer: Schema = {
  tsType: 'PeerStatus',
  type: 'object',
  description: 'One kube-apiserver as the operator sees it.',
  required: ['identity', 'hostname'],
  properties: {
    identity: stringField('Name of the server\'s identity Lease in kube-system (apiserver-<hash of hostname>).', 253),
    hostname: stringField('Hostname the server\'s identity derives from.', 253),
    address: stringField('Peer advertise address (ip:port).', 64),
    version: stringField('Version the server reports on /version.', 64),
    proxyGate: {
      tsType: 'ProxyGateState',
      type: 'string',
      description: 'Whether the server runs with UnknownVersionInteroperabilityProxy on.',
      enum: ['Enabled', 'Disabled', 'Unknown'],
    },
    state: {
      tsType: 'PeerState',
      type: 'string',
      description: 'Where the server is in the upgrade.',
      enum: ['Pending', 'EnablingProxy', 'Replacing', 'Converging', 'Upgraded', 'RollingBack', 'RolledBack', 'Failed', 'Unreachable'],
    },
    ready: { type: 'boolean', description: 'Whether /readyz answered ok at the last observation.' },
    batch: { type: 'integer', format: 'int32', description: 'Batch (1-based) that replaces this server.' },
    holderIdentity: stringField('holderIdentity of the identity Lease; it changes on every restart.', 253),
    lastRenew: timeField('renewTime of the identity Lease.'),
    message: stringField('Details of the last problem, if any.', 4096),
  },
};

const batchRecord: Schema = {
  tsType: 'BatchRecord',
  type: 'object',
  description: 'One finished batch.',
  required: ['index'],
  properties: {
    index: { type: 'integer', format: 'int32', description: 'Batch number, 1-based.' },
    servers: { type: 'array', description: 'Identities of the servers in the batch.', maxItems: 256, items: stringField('Identity.', 253) },
    startedAt: timeField('When the first driver call of the batch was made.'),
    completedAt: timeField('When the batch finished.'),
    result: {
      tsType: 'BatchResult',
      type: 'string',
      description: 'How the batch ended.',
      enum: ['Succeeded', 'Failed', 'TimedOut', 'RolledBack'],
    },
    message: stringField('Details.', 4096),
  },
};

const batch: Schema = {
  tsType: 'BatchStatus',
  type: 'object',
  description: 'Progress of the batches.',
  properties: {
    current: { type: 'integer', format: 'int32', minimum: 0, description: 'The batch in progress (1-based); 0 before the first.' },
    total: { type: 'integer', format: 'int32', minimum: 0, description: 'Number of batches in the plan.' },
    progress: stringField('current/total, for kubectl get.', 32),
    servers: { type: 'array', description: 'Identities of the servers in the current batch.', maxItems: 256, items: stringField('Identity.', 253) },
    startedAt: timeField('When the current batch started.'),
    soakUntil: timeField('When the current batch\'s soak ends.'),
    history: {
      type: 'array',
      description: 'Finished batches, oldest first.',
      maxItems: 256,
      'x-kubernetes-list-type': 'atomic',
      items: batchRecord,
    },
  },
};

const signals: Schema = {
  tsType: 'AnalysisSignals',
  type: 'object',
  description: 'Signal values of one check. A signal without data is absent.',
  properties: {
    proxyErrorRatio: { type: 'number', description: 'Failed share of proxied requests over the interval.' },
    errorRatio: { type: 'number', description: 'Share of requests answered 5xx over the interval.' },
    latencyP99Seconds: { type: 'number', description: 'p99 request latency in seconds over the interval.' },
    discoveryConverged: { type: 'boolean', description: 'Whether discovery had converged.' },
    discoveryPendingSeconds: { type: 'number', description: 'How long discovery has not converged, in seconds.' },
    stalePeers: { type: 'integer', format: 'int32', description: 'Identity Leases whose server does not answer.' },
  },
};

const breach: Schema = {
  tsType: 'Breach',
  type: 'object',
  description: 'A signal that crossed its threshold.',
  required: ['signal'],
  properties: {
    signal: stringField('Name of the threshold (proxyErrorRatio, errorRatio, latencyP99, discoveryConvergence, ...).', 64),
    observed: stringField('The observed value.', 64),
    threshold: stringField('The threshold it crossed.', 64),
    server: stringField('Identity of the server, when the breach is per server.', 253),
    message: stringField('Details.', 4096),
  },
};

const lastAnalysis: Schema = {
  tsType: 'AnalysisStatus',
  type: 'object',
  description: 'The last analysis check.',
  properties: {
    time: timeField('When the check ran.'),
    verdict: {
      tsType: 'AnalysisVerdict',
      type: 'string',
      description: 'Healthy, Breach, or Inconclusive (not enough data).',
      enum: ['Healthy', 'Breach', 'Inconclusive'],
    },
    consecutiveBreaches: { type: 'integer', format: 'int32', minimum: 0, description: 'Breaching checks in a row, compared with failureLimit.' },
    signals,
    breaches: { type: 'array', description: 'The breaches of this check.', maxItems: 64, 'x-kubernetes-list-type': 'atomic', items: breach },
  },
};

const pause: Schema = {
  tsType: 'PauseStatus',
  type: 'object',
  description: 'Why the upgrade is paused; absent when it is not.',
  required: ['reason'],
  properties: {
    reason: stringField('CamelCase reason, such as PausedBySpec, AnalysisBreach, BatchTimeout, RollbackUnsafe.', 1024, {
      pattern: CONDITION_REASON_PATTERN,
    }),
    message: stringField('Details, naming the servers, signals or resources involved.', 32768),
    since: timeField('When the pause began.'),
    /** The phase the upgrade returns to when the pause ends. */
    resumePhase: phaseSchema,
  },
};

const driverCall: Schema = {
  tsType: 'DriverCall',
  type: 'object',
  description: 'One driver call, recorded before it is made so it is never retried blindly.',
  required: ['key', 'server', 'action'],
  properties: {
    key: stringField('Idempotency key: derived from the upgrade UID, batch, server, action and target.', 253),
    server: stringField('Identity of the server.', 253),
    batch: { type: 'integer', format: 'int32', description: 'Batch number (0 for the proxy-gate pass).' },
    action: {
      tsType: 'DriverAction',
      type: 'string',
      description: 'What the call asks for.',
      enum: ['EnableProxy', 'Upgrade', 'Rollback', 'RevertProxy'],
    },
    target: stringField('The version the server should run after the call.', 64),
    time: timeField('When the call was recorded.'),
    result: {
      tsType: 'DriverCallResult',
      type: 'string',
      description: 'Pending until the driver answered; Abandoned when a resume gave up on it and retried under a new key.',
      enum: ['Pending', 'Succeeded', 'Failed', 'Abandoned'],
    },
    message: stringField('Details from the driver.', 4096),
  },
};

export const statusSchema: Schema = {
  tsType: 'ApiServerUpgradeStatus',
  type: 'object',
  description: 'What the operator observed and did. Written only by the operator.',
  properties: {
    phase: phaseSchema,
    observedGeneration: { type: 'integer', format: 'int64', minimum: 0, description: 'The metadata.generation last acted on.' },
    fromVersion: stringField('The version the servers ran before the upgrade.', 64),
    targetVersion: stringField('The target version being rolled out (spec.targetVersion when it was accepted).', 64),
    startedAt: timeField('When the upgrade left Pending.'),
    completedAt: timeField('When the upgrade reached Succeeded, RolledBack or Failed.'),
    conditions: {
      type: 'array',
      description: 'Progressing, Paused, Degraded, PreflightPassed, DiscoveryConverged, RollbackSafe, Complete.',
      maxItems: 32,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
      items: condition,
    },
    peers: {
      type: 'array',
      description: 'Every kube-apiserver, by identity.',
      maxItems: 256,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['identity'],
      items: peer,
    },
    batch,
    lastAnalysis,
    pause,
    observedResume: stringField(
      'The last value of the upgrade.apiserver.dev/resume annotation acted on. An automatic pause ends when the annotation is set to a new value, so resuming needs no spec edit (Git does not drift).',
      253,
    ),
    rollbackBlockedBy: {
      type: 'array',
      description: 'Resources (group/resource) whose storage version the old servers cannot read; rollback is refused while any is listed.',
      maxItems: 256,
      'x-kubernetes-list-type': 'set',
      items: stringField('group/resource.', 316),
    },
    driverCalls: {
      type: 'array',
      description: 'Driver calls made, oldest first.',
      maxItems: 1024,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['key'],
      items: driverCall,
    },
  },
};
