import type { Schema } from './schema-types.ts';
import { CONDITION_REASON_PATTERN, CONDITION_TYPE_PATTERN } from './patterns.ts';
import { stringField, timeField } from './schema-builders.ts';
import { phaseTwoHoldSchema, phaseTwoSchema, rollbackWindowSchema } from './schema-hold.ts';
import { acceptedRisksStatusSchema, waitingStatusSchema, windowStatusSchema } from './schema-gates.ts';
import { CALL_RESULTS, CONTROL_PLANE_COMPONENTS, RUNNING_STATES, COVERAGE_KINDS, FLAG_PROOF_RESULTS, FLAG_PROOF_STATES, GATE_STATES, KUBEADM_CHECKS, KUBEADM_CONFIG_RESULTS, KUBEADM_SEVERITIES, PAUSE_REASONS, PEER_STATES, PHASES, TRUST_CHECKS, TRUST_RESULTS } from './vocabulary.ts';

/**
 * The observed state of an ApiServerUpgrade, as data (see schema-spec.ts for why).
 * Only the operator writes it, through the status subresource. Keyed lists are list-type map so that
 * server-side apply and strategic merges address entries by key.
 */

// One schema object for every phase field: the type generator maps one tsType to one schema.
const phaseSchema: Schema = { tsType: 'UpgradePhase', type: 'string', description: 'A phase of the upgrade.', enum: PHASES };

const condition: Schema = {
  tsType: 'Condition',
  type: 'object',
  description: 'A metav1.Condition.',
  required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
  properties: {
    type: stringField(
      'Progressing, Paused, Degraded, PreflightPassed, DiscoveryConverged, RollbackSafe, Complete, ProxyTrustVerified, KubeadmPreflightPassed or KubeadmConfigUpdated.',
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

// One schema for both pages: the type generator maps one tsType to one schema.
const pageRead: Schema = { tsType: 'PageRead', type: 'string', description: 'How the page answered: Read, NotServed (404) or Failed (another answer, none, or a body that does not parse).', enum: ['Read', 'NotServed', 'Failed'] };

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
      enum: GATE_STATES,
    },
    state: {
      tsType: 'PeerState',
      type: 'string',
      description: 'Where the server is in the upgrade.',
      enum: PEER_STATES,
    },
    ready: { type: 'boolean', description: 'Whether /readyz answered ok at the last observation.' },
    batch: { type: 'integer', format: 'int32', description: 'Batch (1-based) that replaces this server.' },
    holderIdentity: stringField('holderIdentity of the identity Lease; it changes on every restart.', 253),
    lastRenew: timeField('renewTime of the identity Lease.'),
    missingSince: timeField('Preflight: since when this server, seen by an earlier look, has had no identity Lease (restarting, or removed). Preflight waits for it (UnhealthyFleet) and counts it removed 5 minutes after this time.'),
    message: stringField('Details of the last problem, if any.', 4096),
    coordinatedLeaderElection: {
      tsType: 'CoordinatedLeaderElectionState',
      type: 'string',
      description: 'Whether the server runs with the CoordinatedLeaderElection feature gate on, from kubernetes_feature_enabled on its /metrics (docs/version-skew.md): Enabled, Disabled, or Unknown when its page did not say. Absent: not read yet.',
      enum: GATE_STATES,
    },
    running: {
      tsType: 'RunningCheck',
      type: 'object',
      description: 'What the server\'s own /flagz and /statusz said after the last call that reached it, against what that call meant (docs/version-skew.md "The running process").',
      required: ['state', 'call', 'checkedAt'],
      properties: {
        state: { tsType: 'RunningState', type: 'string', description: 'Confirmed, NotServed (a page answered 404: the call stands on /version and /metrics), Differs (the call is not counted as landed: paused RunningProcessDiffers), Unknown (a page could not be read or parsed: held as Differs).', enum: RUNNING_STATES },
        call: stringField('The idempotency key of the call checked.', 253),
        checkedAt: timeField('When the pages were last read for that call.'),
        flagz: pageRead,
        statusz: pageRead,
        message: stringField('What differs (the page, the flag, what the call meant and what runs), or why a page could not be read.', 4096),
      },
    },
  },
};

const batchRecord: Schema = {
  tsType: 'BatchRecord',
  type: 'object',
  description: 'One finished batch.',
  required: ['index'],
  properties: {
    index: { type: 'integer', format: 'int32', description: 'Batch number, 1-based.' },
    servers: { type: 'array', description: 'Hostnames of the servers in the batch (a server\'s identity is derived from its hostname).', maxItems: 256, items: stringField('Hostname.', 253) },
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
    servers: { type: 'array', description: 'Hostnames of the servers in the current batch.', maxItems: 256, items: stringField('Hostname.', 253) },
    startedAt: timeField('When the current batch started.'),
    soakUntil: timeField('When the current batch\'s soak ends.'),
    discoveryPendingSince: timeField('Since when discovery has not converged in this batch (restarts on resume).'),
    phaseSoakUntil: timeField('TwoPhase: when the soak between phase one and phase two ends.'),
    soakHeldSince: timeField('Since when the soak has been held past its end because checks breach (or a fresh check is awaited).'),
    checkAfter: timeField('The batch ends only on a check newer than this: set on resume, so a batch never ends on the breaching check it was paused for.'),
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
    stalePeers: { type: 'integer', format: 'int32', description: 'Identity Leases unchanged for the staleness window, measured on the operator\'s clock.' },
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
    server: stringField('Hostname of the server, when the breach is per server.', 253),
    message: stringField('Details.', 4096),
  },
};

const lastAnalysis: Schema = {
  tsType: 'AnalysisStatus',
  type: 'object',
  description: 'The last analysis check.',
  properties: {
    time: timeField('When the check ran.'),
    nextCheckAt: timeField('When the next check is due: the slot this check filled plus the interval, so the time each look takes does not push every later check later.'),
    verdict: {
      tsType: 'AnalysisVerdict',
      type: 'string',
      description: 'Healthy, Breach, or Inconclusive (not enough data).',
      enum: ['Healthy', 'Breach', 'Inconclusive'],
    },
    consecutiveBreaches: { type: 'integer', format: 'int32', minimum: 0, description: 'Breaching checks in a row, compared with failureLimit.' },
    synthetic: { type: 'boolean', description: 'No signals were available for an interval: the check only looked at the servers\' health. It can breach, never end a batch.' },
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
    reason: { tsType: 'PauseReasonName', type: 'string', description: 'Why the upgrade paused.', enum: PAUSE_REASONS },
    message: stringField('Details, naming the servers, signals or resources involved.', 32768),
    heldRollback: stringField('The cause of the rollback this pause holds (RollbackSafetyUnknown, RollbackOrphans, ComponentSkew): the rollback starts with it once its safety is known and allows it.', 4096),
    since: timeField('When the pause began.'),
    /** The phase the upgrade returns to when the pause ends. */
    resumePhase: phaseSchema,
    servers: {
      type: 'array',
      description: 'MembershipChanged: the servers that joined or left. A resume accepts exactly these into (or out of) the plan; a server that left without being named here is never dropped silently. ComponentSkew: the components holding the rollback, as <component>/<node>.',
      maxItems: 256,
      'x-kubernetes-list-type': 'atomic',
      items: stringField('Hostname, or <component>/<node>.', 300),
    },
  },
};

const driverCall: Schema = {
  tsType: 'DriverCall',
  type: 'object',
  description: 'One driver call: a replacement is asynchronous, so each call has a lifecycle (docs/lifecycle.md).',
  required: ['key', 'server', 'action'],
  properties: {
    key: stringField('Idempotency key: derived from the upgrade UID, batch, server, action, target and attempt.', 253),
    server: stringField('Hostname of the server.', 253),
    identity: stringField('Identity (Lease name) of the server when the call was recorded.', 253),
    batch: { type: 'integer', format: 'int32', description: 'Batch number (0 for the proxy-gate pass, -1 for rollback).' },
    action: {
      tsType: 'DriverAction',
      type: 'string',
      description: 'What the call asks for.',
      enum: ['EnableProxy', 'Upgrade', 'Rollback', 'RevertProxy'],
    },
    target: stringField('The version the server should run after the call.', 64),
    gate: { type: 'boolean', description: 'The proxy gate the server should run with after the call; absent when the call leaves it alone.' },
    emulatedVersion: stringField('The --emulated-version the server should run with after the call; absent: none (its binary\'s own version).', 16),
    time: timeField('When the call was recorded (its batchTimeout counts from here).'),
    holderBefore: stringField('The server\'s process when the call was recorded: its identity Lease\'s holderIdentity, followed by @ and the process start time for a server before 1.35 (whose Lease keeps its holder across restarts). A change proves a restart.', 300),
    acceptedAt: timeField('When the driver accepted the call.'),
    completedAt: timeField('When the call reached Done, Rejected, Failed, TimedOut or Abandoned.'),
    driverSettledAt: timeField('When the driver reported that it runs nothing more for this call (the static Pod agent\'s Job finished or is gone). Until then, and while the driver may still run it, no other call goes to this server: a call is Done when its server is observed back, which can be before the agent exits. Absent for drivers without reports (a webhook without reportsStatus).'),
    attempts: { type: 'integer', format: 'int32', minimum: 0, description: 'Deliveries tried (the same key each time).' },
    result: {
      tsType: 'DriverCallResult',
      type: 'string',
      description:
        'Requested (recorded, not yet confirmed delivered) -> Accepted (in flight) -> Done (observed back at the goal) | TimedOut | Rejected | Failed (the driver reported, after accepting it, that the replacement failed); Abandoned: never accepted and given up by a resume.',
      enum: CALL_RESULTS,
    },
    message: stringField('The driver\'s answer, or the last delivery error.', 4096),
  },
};

const storageHash: Schema = {
  tsType: 'StorageHash',
  type: 'object',
  description: 'The storage version hash of one group/version/resource.',
  required: ['resource', 'hash'],
  properties: {
    resource: stringField('group/version/resource (core group empty: /v1/pods).', 316),
    hash: stringField('storageVersionHash from legacy discovery.', 64),
    kind: stringField('Kind, so a changed hash can be decoded into a version.', 253),
  },
};

// One schema object for every stage field (the type generator maps one tsType to one schema).
const stageSchema: Schema = {
  tsType: 'UpgradeStage',
  type: 'string',
  description: 'TwoPhase upgrades: Binaries (phase one, the new binary emulating the old version) or API (phase two, the emulation lifted).',
  enum: ['Binaries', 'API'],
};

const frozenBatch: Schema = {
  tsType: 'PlannedBatch',
  type: 'object',
  description: 'One batch of the frozen plan.',
  required: ['index', 'servers'],
  properties: {
    index: { type: 'integer', format: 'int32', minimum: 1, description: 'Batch number, 1-based.' },
    servers: { type: 'array', description: 'Hostnames of the servers the batch replaces.', maxItems: 256, 'x-kubernetes-list-type': 'atomic', items: stringField('Hostname.', 253) },
    stage: stageSchema,
    emulatedVersion: stringField('The --emulated-version the batch\'s servers run with ("1.35"); absent: none.', 16),
  },
};

const frozenPlan: Schema = {
  tsType: 'FrozenPlan',
  type: 'object',
  description:
    'The plan fixed when the upgrade started, and the facts later decisions need after a restart or a leader change. Only batches not yet started change, on a resume after a membership change or a strategy edit.',
  properties: {
    fromVersion: stringField('The version every server ran at preflight.', 64),
    members: { type: 'array', description: 'Hostnames of the servers the plan covers.', maxItems: 256, 'x-kubernetes-list-type': 'atomic', items: stringField('Hostname.', 253) },
    batches: { type: 'array', description: 'The batches, in order.', maxItems: 256, 'x-kubernetes-list-type': 'atomic', items: frozenBatch },
    batchSize: stringField('The strategy.batchSize the batches were computed with.', 8),
    phases: { type: 'string', description: 'strategy.phases when the plan was made.', enum: ['OnePhase', 'TwoPhase'] },
    // strategy.phaseTwo when the plan was made (the same schema, so the same type); absent in a plan made before it existed: Automatic.
    phaseTwo: phaseTwoSchema,
    fromResources: {
      type: 'array',
      description: 'TwoPhase: the group/version/resources the from-version serves itself, read at preflight: phase one checks that the emulating servers serve exactly these.',
      maxItems: 2048,
      'x-kubernetes-list-type': 'atomic',
      items: stringField('group/version/resource.', 316),
    },
    gateTurnedOn: {
      type: 'array',
      description: 'Hostnames where the operator turned the proxy gate on (the only servers revertAfter turns it off on).',
      maxItems: 256,
      'x-kubernetes-list-type': 'atomic',
      items: stringField('Hostname.', 253),
    },
    fromStorageServer: stringField('The server the from-version storage hashes were read from.', 253),
    fromStorage: {
      type: 'array',
      description: 'Storage version hashes of the from-version, read at preflight: rollback safety is judged against them after the old servers are gone.',
      maxItems: 2048,
      'x-kubernetes-list-type': 'atomic',
      items: storageHash,
    },
    targetStorageServer: stringField('The server the target-version storage hashes were read from.', 253),
    targetStorage: {
      type: 'array',
      description: 'Storage version hashes of the target version, kept once read, so a rollback is judged after a leader change even when no new server is up.',
      maxItems: 2048,
      'x-kubernetes-list-type': 'atomic',
      items: storageHash,
    },
    targetApiStorageServer: stringField('TwoPhase: the server the target version\'s own (not emulating) storage hashes were read from during phase one.', 253),
    targetApiStorage: {
      type: 'array',
      description:
        'TwoPhase: storage version hashes of the target version without emulation, kept once read from a server seen running it during phase one (a server that joined on the new binary without --emulated-version): a rollback to the old binary must read what it wrote too.',
      maxItems: 2048,
      'x-kubernetes-list-type': 'atomic',
      items: storageHash,
    },
  },
};

const trustCheck: Schema = {
  tsType: 'TrustCheck',
  type: 'object',
  description: 'One trust check of one server.',
  required: ['server', 'check', 'result'],
  properties: {
    server: stringField('Hostname of the server.', 253),
    check: { tsType: 'TrustCheckName', type: 'string', description: 'What was checked (docs/trust.md).', enum: TRUST_CHECKS },
    result: { tsType: 'TrustCheckResult', type: 'string', description: 'Verified, Finding (checked, and wrong), or Unknown (an input could not be read: never counted as verified).', enum: TRUST_RESULTS },
    reason: stringField('A Finding\'s CamelCase reason, such as AnyFrontProxyCertTrusted; Unknown\'s is TrustInputUnknown.', 64),
    flag: stringField('The kube-apiserver flag the check reads, when it reads one.', 128),
    source: stringField('Where the input came from: MirrorPod, Webhook (the driver\'s Describe), TLS (a handshake from the operator), or Unknown.', 32),
    message: stringField('What was found.', 1024),
  },
};

const trustReport: Schema = {
  tsType: 'TrustReport',
  type: 'object',
  description: 'The Mixed Version Proxy\'s trust checks, per server, made at preflight (docs/trust.md). Counts cover every check; checks holds at most 256 rows (findings and unknowns first).',
  properties: {
    checkedAt: timeField('When the checks were made.'),
    servers: { type: 'integer', format: 'int32', minimum: 0, description: 'Servers checked.' },
    verified: { type: 'integer', format: 'int32', minimum: 0, description: 'Checks Verified.' },
    findings: { type: 'integer', format: 'int32', minimum: 0, description: 'Checks with a Finding.' },
    unknown: { type: 'integer', format: 'int32', minimum: 0, description: 'Checks whose input could not be read.' },
    truncated: { type: 'boolean', description: 'More rows than checks holds.' },
    checks: { type: 'array', description: 'One row per server and check.', maxItems: 256, 'x-kubernetes-list-type': 'atomic', items: trustCheck },
  },
};

const coverageEntry: Schema = {
  tsType: 'CoverageEntry',
  type: 'object',
  description: 'One resource or API of the coverage report.',
  required: ['kind', 'name'],
  properties: {
    kind: { tsType: 'CoverageKindName', type: 'string', description: 'BuiltInAdded, BuiltInRemoved, Aggregated or CustomResource.', enum: COVERAGE_KINDS },
    name: stringField('group/version/resource, or the APIService name for an aggregated API.', 316),
    resourceKind: stringField('The resource\'s kind, when known.', 253),
    detail: stringField('For an aggregated API, its service (namespace/name).', 512),
  },
};

const coverageView: Schema = {
  tsType: 'CoverageView',
  type: 'object',
  description: 'What a client sees of one kind of entry while versions are mixed.',
  required: ['kind', 'sees'],
  properties: {
    kind: { tsType: 'CoverageKindName', type: 'string', description: 'BuiltInAdded, BuiltInRemoved, Aggregated or CustomResource.', enum: COVERAGE_KINDS },
    count: { type: 'integer', format: 'int32', minimum: 0, description: 'How many entries of this kind.' },
    sees: stringField('One line: what a client sent to an old or a new server gets.', 1024),
  },
};

const coverageReport: Schema = {
  tsType: 'CoverageReport',
  type: 'object',
  description:
    'What the Mixed Version Proxy covers during this upgrade, fixed at preflight like status.plan (docs/trust.md): the built-in resources that differ between the versions (the proxy routes them while versions are mixed) and the aggregated APIs and custom resources (never proxied: every server serves them itself).',
  properties: {
    fromVersion: stringField('The version the servers ran at preflight.', 64),
    targetVersion: stringField('The target version.', 64),
    fromSource: stringField('Where the from-version\'s built-in set came from: the servers\' own discovery (Observed <server>), or the catalog.', 128),
    targetSource: stringField('Where the target\'s built-in set came from: Catalog <version> (discovery captured from a real server of that minor), or Unknown.', 128),
    builtInAdded: { type: 'integer', format: 'int32', minimum: 0, description: 'Built-in resources only the target serves.' },
    builtInRemoved: { type: 'integer', format: 'int32', minimum: 0, description: 'Built-in resources only the from-version serves.' },
    aggregated: { type: 'integer', format: 'int32', minimum: 0, description: 'Aggregated APIServices (with a service).' },
    customResources: { type: 'integer', format: 'int32', minimum: 0, description: 'Custom resources served (group/version/resources of CRDs).' },
    truncated: { type: 'boolean', description: 'More entries than entries holds.' },
    entries: { type: 'array', description: 'At most 50 named entries, built-in changes first.', maxItems: 50, 'x-kubernetes-list-type': 'atomic', items: coverageEntry },
    clientView: { type: 'array', description: 'One line per kind of entry: what a client sees during the upgrade.', maxItems: 8, 'x-kubernetes-list-type': 'atomic', items: coverageView },
    message: stringField('A summary, or why part of the report is unknown.', 4096),
  },
};

const kubeadmFinding: Schema = {
  tsType: 'KubeadmFinding',
  type: 'object',
  description: 'One finding of the preflight checks for kubeadm clusters.',
  required: ['check', 'severity', 'reason', 'object'],
  properties: {
    check: { tsType: 'KubeadmCheckName', type: 'string', description: 'What was checked (docs/kubeadm-runbook.md).', enum: KUBEADM_CHECKS },
    severity: { tsType: 'KubeadmSeverity', type: 'string', description: 'Block (preflight waits until it is fixed; an input that could not be read blocks too) or Warn.', enum: KUBEADM_SEVERITIES },
    reason: stringField('CamelCase reason, such as KubeletTooOld.', 64),
    object: stringField('The exact object: Node/<name>, Pod kube-system/<name>, a server\'s endpoint, or group/version/resource.', 512),
    message: stringField('What was found and what to do.', 1024),
  },
};

const kubeadmPreflightReport: Schema = {
  tsType: 'KubeadmPreflightReport',
  type: 'object',
  description: 'The preflight checks for kubeadm clusters (kube-system/kubeadm-config exists, or the static Pod driver), made at preflight: kubelet skew, etcd health, serving certificates, deprecated APIs requested, node name = hostname. Counts cover every finding; findings holds at most 64 (blocking first).',
  properties: {
    checkedAt: timeField('When the checks were made.'),
    servers: { type: 'integer', format: 'int32', minimum: 0, description: 'Servers checked.' },
    nodes: { type: 'integer', format: 'int32', minimum: 0, description: 'Nodes whose kubelet version was checked.' },
    blocking: { type: 'integer', format: 'int32', minimum: 0, description: 'Findings that stop preflight.' },
    warnings: { type: 'integer', format: 'int32', minimum: 0, description: 'Findings that only warn.' },
    truncated: { type: 'boolean', description: 'More findings than findings holds.' },
    findings: { type: 'array', description: 'The findings; a passed check has none.', maxItems: 64, 'x-kubernetes-list-type': 'atomic', items: kubeadmFinding },
  },
};

/** The longest command line status.flagProof records (entries, and characters per entry): a longer one is not proven. */
export const FLAG_PROOF_COMMAND_MAX_ITEMS = 256;
export const FLAG_PROOF_ENTRY_MAX_CHARS = 2048;

const flagProofNode: Schema = {
  tsType: 'FlagProofNode',
  type: 'object',
  description: 'One node\'s flag proof: the command line its call would give the target binary, and the binary\'s verdict on it.',
  required: ['hostname', 'result'],
  properties: {
    hostname: stringField('The server\'s hostname (its node).', 253),
    result: { tsType: 'FlagProofResult', type: 'string', description: 'Pending (the proof Job runs or is about to be created), Accepted, Refused (the binary refused a flag: flag, item and message say which and why), Inconclusive (the binary did not answer as expected: blocks) or NotRun (no command line to prove, the image not pulled, the Job not created: blocks).', enum: FLAG_PROOF_RESULTS },
    key: stringField('The proof\'s key (the upgrade, the node, the image and the exact command line): its Job carries it.', 253),
    job: stringField('The proof Job\'s name.', 63),
    image: stringField('The target image the proof ran.', 512),
    command: {
      type: 'array',
      description: 'The command line proven (kube-apiserver\'s flags as the node\'s call would give them, the sentinel --max-requests-inflight=-1 last). A node whose command line differs at its call is proven again first.',
      maxItems: FLAG_PROOF_COMMAND_MAX_ITEMS,
      'x-kubernetes-list-type': 'atomic',
      items: stringField('One entry.', FLAG_PROOF_ENTRY_MAX_CHARS),
    },
    flag: stringField('The flag the binary refused (Refused), as it named it.', 256),
    item: stringField('The feature gate, admission plugin or value in that flag.', 256),
    message: stringField('The binary\'s own message (Refused, Inconclusive), its warnings (Accepted), or why it did not run.', 1024),
    requestedAt: timeField('When the proof Job was asked for.'),
    provenAt: timeField('When the verdict was read.'),
  },
};

const flagProofReport: Schema = {
  tsType: 'FlagProofReport',
  type: 'object',
  description: 'The flag proof (docs/flag-proof.md): before any call of the static Pod driver, the target kube-apiserver binary on every node proves it accepts the command line that node\'s call would give it.',
  required: ['state'],
  properties: {
    state: { tsType: 'FlagProofState', type: 'string', description: 'NotApplicable (the webhook driver: the platform\'s hook proves the flags), Proving, Passed or Blocked.', enum: FLAG_PROOF_STATES },
    message: stringField('Where it stands, naming the node, flag and message of the first blocking result.', 1024),
    nodes: { type: 'array', description: 'One row per node.', maxItems: 256, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['hostname'], items: flagProofNode },
  },
};

const kubeadmConfig: Schema = {
  tsType: 'KubeadmConfigStatus',
  type: 'object',
  description: 'What the operator did to kube-system/kubeadm-config once the upgrade ended (docs/kubeadm-runbook.md): Pending is written with the ending itself and replaced by the outcome, so a restart neither redoes nor misses it (an upgrade that ended before this field existed is never touched).',
  required: ['phase', 'result'],
  properties: {
    phase: phaseSchema,
    result: { tsType: 'KubeadmConfigResult', type: 'string', description: 'Pending (the upgrade just ended; the operator is about to read kubeadm-config), Updated, Unchanged (already consistent), NotFound (not a kubeadm cluster), Refused (left as it was; the KubeadmConfigUpdated condition says why) or NotWritten (the operator\'s write is off, the default: changes lists what to set by hand).', enum: KUBEADM_CONFIG_RESULTS },
    kubernetesVersion: stringField('The kubernetesVersion kubeadm-config should say.', 64),
    changes: { type: 'array', description: 'The edits made (NotWritten: the edits to make by hand).', maxItems: 16, 'x-kubernetes-list-type': 'atomic', items: stringField('One edit.', 512) },
    resourceVersion: stringField('The ConfigMap\'s resourceVersion the edit was made against.', 64),
    time: timeField('When it was done.'),
    message: stringField('What was done, or why not.', 1024),
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
      description: 'Progressing, Paused, Degraded, PreflightPassed, DiscoveryConverged, RollbackSafe, Complete, ProxyTrustVerified, KubeadmPreflightPassed, FlagProofPassed, KubeadmConfigUpdated, Waiting.',
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
    components: {
      type: 'array',
      description: 'Every kube-controller-manager and kube-scheduler Pod in kube-system as last observed, with the version its image names (docs/version-skew.md): none may be newer than the kube-apiservers, so preflight refuses a target older than one, and a rollback that would leave one newer pauses (ComponentSkew).',
      maxItems: 64,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['pod'],
      items: {
        tsType: 'ComponentStatus',
        type: 'object',
        description: 'One kube-controller-manager or kube-scheduler Pod.',
        required: ['component', 'pod', 'node'],
        properties: {
          component: { tsType: 'ControlPlaneComponentName', type: 'string', description: 'Which component its component label names.', enum: CONTROL_PLANE_COMPONENTS },
          pod: stringField('kube-system/<name> of its Pod.', 265),
          node: stringField('The Node it runs on (spec.nodeName); empty when the Pod names none.', 253),
          image: stringField('The image its container runs.', 512),
          version: stringField('The version its image tag names; absent: unknown (preflight refuses, a rollback pauses on it).', 64),
        },
      },
    },
    plan: frozenPlan,
    stage: stageSchema,
    orphanedObjects: {
      type: 'array',
      description: 'Objects of resources only the target version serves, which a rollback across the API change left in etcd unserved (reported when rollback.orphanedObjects is Proceed, or named while it pauses).',
      maxItems: 64,
      'x-kubernetes-list-type': 'atomic',
      items: {
        tsType: 'OrphanedObjects',
        type: 'object',
        description: 'Objects of one resource.',
        required: ['resource'],
        properties: {
          resource: stringField('group/version/resource.', 316),
          count: { type: 'integer', format: 'int32', minimum: 0, description: 'How many objects.' },
          names: { type: 'array', description: 'Up to 20 of them (namespace/name).', maxItems: 20, 'x-kubernetes-list-type': 'atomic', items: stringField('namespace/name.', 507) },
        },
      },
    },
    trust: trustReport,
    kubeadmPreflight: kubeadmPreflightReport,
    flagProof: flagProofReport,
    kubeadmConfig,
    coverage: coverageReport,
    batch,
    lastAnalysis,
    pause,
    waiting: waitingStatusSchema,
    phaseTwoHold: phaseTwoHoldSchema,
    rollbackWindow: rollbackWindowSchema,
    window: windowStatusSchema,
    acceptedRisks: acceptedRisksStatusSchema,
    rollbackStartedAt: timeField('When the upgrade went RollingBack.'),
    observedAbort: stringField('The last value of the upgrade.apiserver.dev/abort annotation acted on: a new value rolls back now, through the same safety checks as onBreach Rollback.', 253),
    observedRetry: stringField('The last value of the upgrade.apiserver.dev/retry annotation acted on: a new value re-runs a Failed upgrade from preflight, or resumes a paused one.', 253),
    resumedAt: timeField('When the upgrade was last resumed: calls that failed before it are retried under a new key, not paused on again.'),
    observedResume: stringField(
      'The last value of the upgrade.apiserver.dev/resume annotation acted on. An automatic pause ends when the annotation is set to a new value, so resuming needs no spec edit (Git does not drift).',
      253,
    ),
    observedApprove: stringField(
      'The last value of the upgrade.apiserver.dev/approve annotation seen. A value approves a held phase two only when first seen while the hold is on; one seen before approves nothing later.',
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
