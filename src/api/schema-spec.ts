import type { Schema } from './schema-types.ts';
import { DURATION_PATTERN, IMAGE_REF_MAX_LENGTH, IMAGE_REF_PATTERN, PERCENT_PATTERN } from './patterns.ts';
import { absolutePathField, durationField, secretKeyRefField, stringField, versionField } from './schema-builders.ts';
import { phaseTwoSchema } from './schema-hold.ts';
import { AGENT_READY_TIMEOUT_MAX_SECONDS, AGENT_READY_TIMEOUT_MIN_SECONDS } from './constants.ts';

/**
 * The desired state of an ApiServerUpgrade, as data. This is the single source of truth: the CRD,
 * the TypeScript types (types.generated.ts) and docs/api.md are generated from it by `npm run generate`.
 *
 * Validation lives here wherever the API server can do it (OpenAPI ranges, CEL rules). Checks that need
 * cluster state (skipping a minor, a downgrade, an unhealthy fleet) are the operator's, reported as the
 * PreflightPassed condition.
 */

/** Whole seconds as a Go duration, in the largest whole unit: 10 -> 10s, 3600 -> 1h. */
function goDuration(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600}h`;
  return seconds % 60 === 0 ? `${seconds / 60}m` : `${seconds}s`;
}

const strategy: Schema = {
  tsType: 'UpgradeStrategy',
  type: 'object',
  description: 'How servers are replaced: how many at a time, and how long to watch each batch.',
  default: {},
  properties: {
    batchSize: {
      description:
        'How many servers to replace at a time: a count (at least 1) or a percentage of the servers (1% to 100%, rounded down, at least one server).',
      'x-kubernetes-int-or-string': true,
      anyOf: [{ type: 'integer' }, { type: 'string' }],
      default: 1,
      // Bounds the string form for CEL's cost estimator; ignored for integers.
      maxLength: 4,
      'x-kubernetes-validations': [
        { rule: 'type(self) != int || self >= 1', message: 'batchSize must be at least 1' },
        {
          rule: `type(self) != string || self.matches(r'${PERCENT_PATTERN}')`,
          message: 'batchSize as a string must be a percentage between 1% and 100%, such as 25%',
        },
      ],
    },
    soakDuration: durationField(
      'How long to watch a batch after it converged before starting the next one; analysis keeps running meanwhile. A soak that runs out while the latest checks breach goes on until a healthy check, or until failureLimit applies onBreach.',
      '2m',
      '0s',
      '24h',
    ),
    batchTimeout: durationField(
      'How long one driver call may take until its server is back, restarted and ready at its goal; on timeout the upgrade pauses (or rolls back when analysis.onBreach is Rollback). After that, a server\'s health is the analysis\' (failureLimit).',
      '10m',
      '30s',
      '24h',
    ),
    phases: {
      tsType: 'UpgradePhases',
      type: 'string',
      description:
        'OnePhase: each server moves to the target version in one replacement. TwoPhase (KEP-4330 compatibility versions): phase one replaces every server with the target binary started with --emulated-version of the from-version\'s minor (the API and storage stay the from-version\'s: no skew for the proxy to bridge, and going back to the old binary stays safe); after phaseSoakDuration, phase two lifts the emulation server by server (docs/two-phase.md).',
      enum: ['OnePhase', 'TwoPhase'],
      default: 'OnePhase',
    },
    phaseSoakDuration: durationField(
      'TwoPhase only: how long to watch the fleet once every server runs the new binary emulating the old version, before phase two lifts the emulation.',
      '5m',
      '0s',
      '168h',
    ),
    phaseTwo: phaseTwoSchema,
  },
  'x-kubernetes-validations': [
    {
      rule: "!has(self.phaseTwo) || !has(self.phaseTwo.start) || self.phaseTwo.start == 'Automatic' || (has(self.phases) && self.phases == 'TwoPhase')",
      message: 'phaseTwo.start Approval needs phases TwoPhase: only a TwoPhase upgrade has a phase two to hold',
      fieldPath: '.phaseTwo.start',
    },
  ],
};

const rollbackPolicy: Schema = {
  tsType: 'RollbackPolicy',
  type: 'object',
  description: 'What a rollback may cost.',
  default: {},
  properties: {
    orphanedObjects: {
      tsType: 'OrphanPolicy',
      type: 'string',
      description:
        'A rollback across an API change (phase two of a TwoPhase upgrade) stops serving the resources only the target version has; their objects stay in etcd, answer 404 and are no longer enforced (an admission policy, say). Pause: name them and pause instead of rolling back. Proceed: roll back and report them in status.orphanedObjects.',
      enum: ['Pause', 'Proceed'],
      default: 'Pause',
    },
  },
};

const proxy: Schema = {
  tsType: 'ProxyPolicy',
  type: 'object',
  description:
    'Policy for the Mixed Version Proxy (feature gate UnknownVersionInteroperabilityProxy). The proxy only helps when every server has it on before versions start to differ.',
  default: {},
  properties: {
    gate: {
      tsType: 'ProxyGateMode',
      type: 'string',
      description:
        'Auto: for a minor upgrade, before the first replacement, turn the gate on (a rolling pass of its own) on the old servers where it is off, and keep it on in the new servers (and in rollbacks); a patch upgrade leaves each server\'s gate as it found it. Enabled: the same for every upgrade, patch included, and preflight fails when a server cannot have it on. Unmanaged: never touch the gate; only report its state.',
      enum: ['Auto', 'Enabled', 'Unmanaged'],
      default: 'Auto',
    },
    revertAfter: {
      type: 'boolean',
      description:
        'After a successful upgrade, turn the gate back off on the servers where the operator turned it on. The gate is beta and on by default from v1.36, so this rarely matters.',
      default: false,
    },
    allowAlphaGate: {
      type: 'boolean',
      description:
        'Consent to turning the gate on where it is alpha: through v1.35 UnknownVersionInteroperabilityProxy is an alpha feature (off by default, may change or be removed, not covered by most vendors\' support). Without it, an upgrade whose servers run such a version with the gate off waits in Preflight with reason AlphaGateNotAllowed instead of turning it on (docs/versions.md). Not needed from v1.36 (beta), nor where the gate is already on, nor with gate Unmanaged.',
      default: false,
    },
  },
};

const trust: Schema = {
  tsType: 'TrustPolicy',
  type: 'object',
  description:
    'What preflight does with the Mixed Version Proxy\'s trust checks (status.trust, condition ProxyTrustVerified, docs/trust.md). Findings are reported either way; this says which of them stop the upgrade.',
  default: {},
  properties: {
    requireAllowedNames: {
      type: 'boolean',
      description:
        'Refuse to start when a server runs with --requestheader-allowed-names empty (any certificate the request-header CA signed may then assert any user: AnyFrontProxyCertTrusted) or when that cannot be read (fail closed). False: report it as a warning and go on.',
      default: false,
    },
  },
};

const webhook: Schema = {
  tsType: 'WebhookDriver',
  type: 'object',
  description:
    'Replace a server by calling an HTTPS endpoint (hosted control planes, custom tooling). Each call carries an idempotency key; the endpoint must treat a repeated key as the same request.',
  required: ['url'],
  properties: {
    url: stringField('HTTPS endpoint that replaces one server per call.', 2048, {
      'x-kubernetes-validations': [
        { rule: `self.startsWith('https://') && isURL(self)`, message: 'webhook url must be an https:// URL' },
      ],
    }),
    caBundle: stringField(
      'PEM bundle (base64-encoded, like in webhook configurations) to verify the endpoint; the system roots when empty.',
      65536,
      { format: 'byte' },
    ),
    timeout: durationField('Timeout of one call.', '30s', '1s', '10m'),
    authSecretRef: secretKeyRefField('A Secret key holding a bearer token sent with each call.', 'token'),
    reportsStatus: {
      type: 'boolean',
      description:
        'The hook answers status requests (kind ReplaceStatusRequest: is the replacement of this key running, succeeded or failed? docs/drivers.md "Status"). When true, no other call goes to a server until the hook says it runs nothing more for the last one (a call still ends when its server is observed back at the goal, or at batchTimeout); a status that cannot be read counts as still running. When false, the operator cannot know when the hook finishes: the next call for a server can reach the hook while it still ends the previous one (it must then carry out the newest).',
      default: false,
    },
  },
};

const staticPod: Schema = {
  tsType: 'StaticPodDriver',
  type: 'object',
  description:
    'Replace a server on a kubeadm control-plane node: a Job pinned to the node pre-pulls the target image, rewrites the kube-apiserver static Pod manifest (keeping a backup), waits for the new server\'s /readyz and restores the backup when it does not get ready in time; the kubelet restarts the server.',
  properties: {
    image: stringField(
      'kube-apiserver image repository; the tag is the target version. Empty (the default): keep the repository the node runs (registry and path, read from the mirror Pod kube-system/kube-apiserver-<node>), so a cluster on a private mirror stays on it.',
      512,
      {
        'x-kubernetes-validations': [
          {
            rule: `!self.contains('@') && !self.matches(r':[^/]*$')`,
            message: 'image must be a repository without tag or digest; the tag comes from targetVersion',
          },
        ],
      },
    ),
    manifestPath: absolutePathField('Path of the static Pod manifest on the node.', '/etc/kubernetes/manifests/kube-apiserver.yaml'),
    backupDir: absolutePathField('Directory on the node where the previous manifest is kept for rollback.', '/etc/kubernetes/apiserver-upgrade-backup'),
    peerCAFile: absolutePathField(
      'CA file (path on the node) passed as --peer-ca-file when the operator turns the proxy gate on.',
      '/etc/kubernetes/pki/ca.crt',
    ),
    agentImage: stringField(
      'Image of the node agent Job that rewrites the manifest; it must hold node and the operator\'s compiled agent at /app/dist/agent/main.js. Unset (the default): the operator\'s own image (its --agent-image, which the chart sets), so there is no other image to publish, pull or trust.',
      IMAGE_REF_MAX_LENGTH,
      { pattern: IMAGE_REF_PATTERN },
    ),
    namespace: stringField('Namespace of the agent Jobs.', 63, { default: 'kube-system', minLength: 1 }),
    readyTimeout: durationField(
      'How long the agent waits, after it replaced the manifest, for the new server to answer /readyz 200 on its own address; when it does not, the agent restores the backup on the node and the call fails. Must be shorter than strategy.batchTimeout.',
      '3m',
      // The node agent's READY_TIMEOUT range (constants.ts): the agent refuses a value outside it.
      goDuration(AGENT_READY_TIMEOUT_MIN_SECONDS),
      goDuration(AGENT_READY_TIMEOUT_MAX_SECONDS),
    ),
  },
};

const driver: Schema = {
  tsType: 'UpgradeDriver',
  type: 'object',
  description: 'How one server is replaced. Exactly one of webhook or staticPod.',
  properties: { webhook, staticPod },
  'x-kubernetes-validations': [
    {
      rule: '(has(self.webhook) ? 1 : 0) + (has(self.staticPod) ? 1 : 0) == 1',
      message: 'driver must set exactly one of webhook or staticPod',
    },
  ],
};

const thresholds: Schema = {
  tsType: 'AnalysisThresholds',
  type: 'object',
  description: 'A check breaches when any signal crosses its threshold. Missing data is inconclusive, never a breach.',
  default: {},
  properties: {
    proxyErrorRatio: {
      type: 'number',
      description: 'Largest acceptable share of proxied requests that failed (peer proxy errors / rerouted requests), 0 to 1.',
      default: 0.01,
      minimum: 0,
      maximum: 1,
    },
    errorRatio: {
      type: 'number',
      description: 'Largest acceptable share of all requests answered 5xx, 0 to 1.',
      default: 0.05,
      minimum: 0,
      maximum: 1,
    },
    latencyP99: durationField('Largest acceptable p99 request latency (without WATCH, CONNECT and long-running requests).', '1s', '1ms', '1m'),
    discoveryConvergence: durationField(
      "How long discovery may take to converge after a server changed (every server's peer-aggregated /apis equals the union of the servers' own).",
      '2m',
      '1s',
      '1h',
    ),
    unavailableAPIServices: {
      type: 'integer',
      format: 'int32',
      description:
        'How many APIServices one server may report unavailable (aggregator_unavailable_apiservice) while another server reaches them. An APIService no server reaches is its backend\'s outage and never counts.',
      default: 0,
      minimum: 0,
      maximum: 1000,
    },
    webhookErrorRatio: {
      type: 'number',
      description: 'Largest acceptable share of one admission webhook\'s calls from one server (or version cohort) that failed (unreachable, TLS, timeouts, 5xx), 0 to 1. Denials are not failures.',
      default: 0.05,
      minimum: 0,
      maximum: 1,
    },
    webhookMinCalls: {
      type: 'integer',
      format: 'int32',
      description: 'A webhook called fewer times than this from a server (or cohort) in one check is not judged there.',
      default: 10,
      minimum: 1,
      maximum: 1000000,
    },
  },
};

const prometheus: Schema = {
  tsType: 'PrometheusSource',
  type: 'object',
  description: 'Where to query the signals when source is Prometheus.',
  required: ['address'],
  properties: {
    address: stringField('Base URL of the Prometheus HTTP API, such as http://prometheus.monitoring:9090.', 2048, {
      'x-kubernetes-validations': [
        {
          rule: `(self.startsWith('http://') || self.startsWith('https://')) && isURL(self)`,
          message: 'prometheus address must be an http:// or https:// URL',
        },
      ],
    }),
    selector: stringField('Label matchers that select the kube-apiserver series.', 1024, { default: 'job="apiserver"' }),
    caBundle: stringField('PEM bundle (base64-encoded) to verify an https address.', 65536, { format: 'byte' }),
    window: durationField(
      'Range of each check (the increase over this much time): at least twice the scrape interval of this Prometheus. A check covers max(window, interval) and checks never overlap, so failureLimit counts consecutive breached windows, as with Direct.',
      '1m',
      '2s',
      '1h',
    ),
  },
};

const analysis: Schema = {
  tsType: 'AnalysisPolicy',
  type: 'object',
  description: 'How health is judged during the upgrade and what happens on a breach.',
  default: {},
  properties: {
    interval: durationField('Time between two checks.', '10s', '1s', '10m'),
    failureLimit: {
      type: 'integer',
      format: 'int32',
      description: 'Consecutive breaching checks before onBreach is applied.',
      default: 3,
      minimum: 1,
      maximum: 100,
    },
    onBreach: {
      tsType: 'BreachAction',
      type: 'string',
      description:
        'Pause: stop before the next batch and wait for a human. Rollback: put the replaced servers back on the previous version, when rollback is safe (see the RollbackSafe condition); otherwise pause.',
      enum: ['Pause', 'Rollback'],
      default: 'Pause',
    },
    thresholds,
    source: {
      tsType: 'SignalSource',
      type: 'string',
      description: "Direct: scrape each server's /metrics and discovery. Prometheus: query the signals from analysis.prometheus.",
      enum: ['Direct', 'Prometheus'],
      default: 'Direct',
    },
    prometheus,
  },
  'x-kubernetes-validations': [
    {
      rule: `!has(self.source) || self.source != 'Prometheus' || has(self.prometheus)`,
      message: 'analysis.prometheus.address is required when source is Prometheus',
    },
    {
      rule: `!has(self.prometheus) || (has(self.source) && self.source == 'Prometheus')`,
      message: 'analysis.prometheus may only be set when source is Prometheus',
    },
  ],
};

export const specSchema: Schema = {
  tsType: 'ApiServerUpgradeSpec',
  type: 'object',
  description: 'The target version and the safety policy of one upgrade of the cluster\'s kube-apiservers.',
  required: ['targetVersion', 'driver'],
  properties: {
    targetVersion: versionField(
      'The Kubernetes version to upgrade every kube-apiserver to, such as v1.36.3. Immutable: to move to another version, create a new ApiServerUpgrade.',
      [
        // CEL on spec cannot see status, so "no change while running" is not expressible; immutability is
        // the sound rule, and one object per upgrade keeps its history and idempotency keys meaningful.
        {
          rule: 'self == oldSelf',
          message: 'targetVersion is immutable; create a new ApiServerUpgrade to move to another version',
        },
      ],
    ),
    paused: {
      type: 'boolean',
      description:
        'Declarative pause: when true, no new driver call is started (a call in flight completes). An automatic pause lives in status and is resumed without editing the spec.',
      default: false,
    },
    allowPrerelease: {
      type: 'boolean',
      description:
        'Allow a pre-release targetVersion (alpha, beta, rc). Off by default: a pre-release is refused at preflight with reason PrereleaseTarget (docs/versions.md).',
      default: false,
    },
    strategy,
    proxy,
    driver,
    analysis,
    rollback: rollbackPolicy,
    trust,
  },
  'x-kubernetes-validations': [
    {
      // Across two sub-objects, so on the spec. Defaulting runs before validation, so both are usually set;
      // a missing or malformed one is left to its own field's rules (`||` absorbs duration()'s error).
      rule: `!has(self.driver.staticPod) || !has(self.driver.staticPod.readyTimeout) || !has(self.strategy) || !has(self.strategy.batchTimeout) || !self.driver.staticPod.readyTimeout.matches(r'${DURATION_PATTERN}') || !self.strategy.batchTimeout.matches(r'${DURATION_PATTERN}') || duration(self.driver.staticPod.readyTimeout) < duration(self.strategy.batchTimeout)`,
      message: 'driver.staticPod.readyTimeout must be shorter than strategy.batchTimeout',
      fieldPath: '.driver.staticPod.readyTimeout',
    },
  ],
};
