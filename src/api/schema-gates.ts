import type { Schema, ValidationRule } from './schema-types.ts';
import { durationField, stringField, timeField } from './schema-builders.ts';
import { ACCEPTABLE_RISKS, HARD_RULES, WEEKDAYS } from './vocabulary.ts';

/**
 * When an upgrade may start a step: health gates, maintenance windows and the risks an admin accepted
 * (docs/api.md, docs/operations.md "Gates, windows and accepted risks"). schema.ts adds them to schema-spec.ts'
 * fields as `startConditions`; each is read on every reconcile (not frozen): tightening a gate or a window mid-run holds the
 * next batch.
 */

/** A gate's name: it shows in the Waiting condition, status.waiting and Events. */
const GATE_NAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

const queryGate: Schema = {
  tsType: 'QueryGate',
  type: 'object',
  description:
    'A PromQL instant query against gates.prometheus. Without op the gate holds when the result is empty (e.g. no critical alert firing); with op and value it holds when the result has at least one series and every series compares true (an empty result is no data: the gate does not hold).',
  required: ['name', 'query'],
  properties: {
    name: stringField('The gate\'s name, shown when it holds the upgrade.', 63, { minLength: 1, pattern: GATE_NAME_PATTERN }),
    query: stringField('The PromQL instant query.', 4096, { minLength: 1 }),
    op: {
      tsType: 'GateComparison',
      type: 'string',
      description: 'Compare every series of the result with value. Absent: the result must be empty.',
      enum: ['<', '<=', '==', '!=', '>=', '>'],
    },
    value: { type: 'number', description: 'The right-hand side of op.' },
  },
  'x-kubernetes-validations': [{ rule: 'has(self.op) == has(self.value)', message: 'a gate query\'s op and value are set together (neither: the result must be empty)' }],
};

export const gatesSchema: Schema = {
  tsType: 'StartGates',
  type: 'object',
  description:
    'Checks that must hold before the first driver call and before every batch. One that does not hold makes the upgrade wait (the Waiting condition, status.waiting: the gate, its query and its value), re-checked every analysis interval; it never makes a call, never interrupts a batch in flight and never holds a rollback or an abort. A gate that cannot be evaluated (Prometheus unreachable, a query error, no Nodes read) does not hold: unknown is unsafe.',
  default: {},
  properties: {
    prometheus: {
      tsType: 'GatePrometheus',
      type: 'object',
      description: 'The Prometheus the queries are sent to (its HTTP API).',
      required: ['address'],
      properties: {
        address: stringField('Base URL of the Prometheus HTTP API, such as http://prometheus.monitoring:9090.', 2048, {
          'x-kubernetes-validations': [{ rule: `(self.startsWith('http://') || self.startsWith('https://')) && isURL(self)`, message: 'gates.prometheus.address must be an http:// or https:// URL' }],
        }),
        caBundle: stringField('PEM bundle (base64-encoded) to verify an https address.', 65536, { format: 'byte' }),
      },
    },
    queries: {
      type: 'array',
      description: 'PromQL gates, each by name.',
      maxItems: 16,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
      items: queryGate,
    },
    controlPlaneNodesReady: {
      type: 'boolean',
      description: 'Built in: every Node labelled node-role.kubernetes.io/control-plane is Ready (none found, or the Nodes not read: does not hold).',
      default: false,
    },
    serversReady: {
      type: 'boolean',
      description: "Built in: every kube-apiserver answers /readyz (which includes etcd) with a fresh identity Lease.",
      default: false,
    },
  },
  'x-kubernetes-validations': [{ rule: '!has(self.queries) || size(self.queries) == 0 || has(self.prometheus)', message: 'gates.prometheus.address is required when gates.queries is set' }],
};

const recurring: Schema = {
  tsType: 'RecurringWindow',
  type: 'object',
  description: 'A window that opens on the given days at start (wall-clock time in window.timeZone) and lasts duration.',
  required: ['days', 'start', 'duration'],
  properties: {
    days: {
      type: 'array',
      description: 'The days of the week it opens on.',
      minItems: 1,
      maxItems: 7,
      'x-kubernetes-list-type': 'set',
      items: { tsType: 'Weekday', type: 'string', description: 'A day of the week.', enum: WEEKDAYS },
    },
    start: stringField('Wall-clock time it opens, HH:MM (24 h). A time skipped by a daylight-saving change opens at the first instant after the gap; a repeated one at its first occurrence.', 5, { pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$' }),
    duration: durationField('How long it stays open (elapsed time, across a daylight-saving change too).', undefined, '1m', '168h'),
  },
};

const exclusion: Schema = {
  tsType: 'WindowExclusion',
  type: 'object',
  description: 'A dated span when no window is open (a freeze), whatever the recurring windows say.',
  required: ['start', 'end'],
  properties: {
    start: timeField('When the exclusion begins (RFC 3339).'),
    end: timeField('When it ends (RFC 3339), after start.'),
    reason: stringField('Why, for the status message.', 256),
  },
  'x-kubernetes-validations': [{ rule: 'timestamp(self.end) > timestamp(self.start)', message: 'a window exclusion\'s end must be after its start' }],
};

export const windowSchema: Schema = {
  tsType: 'MaintenanceWindow',
  type: 'object',
  description:
    'When new batches may start. Outside a window no first call and no new batch starts (the upgrade waits with reason OutsideWindow, status.waiting.until the next start); a batch in flight finishes after the window closes; a rollback and an abort always proceed. Absent: always open.',
  required: ['timeZone', 'recurring'],
  properties: {
    timeZone: stringField('IANA time zone of the recurring windows, such as Europe/Berlin or UTC (an unknown zone makes the spec invalid).', 64, { minLength: 1 }),
    recurring: { type: 'array', description: 'The recurring windows.', minItems: 1, maxItems: 16, 'x-kubernetes-list-type': 'atomic', items: recurring },
    exclusions: { type: 'array', description: 'Dated exclusions.', maxItems: 32, 'x-kubernetes-list-type': 'atomic', items: exclusion },
  },
};

/** One rule per hard safety rule: the API refuses to accept it, naming it. */
const hardRuleRules: ValidationRule[] = Object.entries(HARD_RULES).map(([name, what]) => ({
  rule: `!self.exists(r, r == '${name}')`,
  message: `${name} is a hard safety rule (${what}) and can never be accepted`,
}));

export const acceptRisksSchema: Schema = {
  type: 'array',
  description: `Findings that would block preflight, accepted by name: the upgrade starts despite them, and each acceptance is recorded in status.acceptedRisks (the finding, its value then, the generation) and an Event. Acceptable: ${ACCEPTABLE_RISKS.join(', ')}. Hard safety rules (${Object.keys(HARD_RULES).join(', ')}) are refused by the API.`,
  maxItems: 16,
  'x-kubernetes-list-type': 'set',
  items: stringField('A finding\'s reason, such as DeprecatedAPIRemovedByTarget.', 64),
  'x-kubernetes-validations': [
    ...hardRuleRules,
    { rule: `self.all(r, r in [${[...ACCEPTABLE_RISKS, ...Object.keys(HARD_RULES)].map((n) => `'${n}'`).join(', ')}])`, message: `acceptRisks names a finding that cannot be accepted; acceptable: ${ACCEPTABLE_RISKS.join(', ')}` },
  ],
};

/** The fields schema.ts adds to spec.properties. */
export const startConditions: Readonly<Record<string, Schema>> = { gates: gatesSchema, window: windowSchema, acceptRisks: acceptRisksSchema };

/** status.waiting: why the upgrade waits before its next step, since when and until when (when known). */
export const waitingStatusSchema: Schema = {
  tsType: 'WaitingStatus',
  type: 'object',
  description: 'Why the upgrade waits before its next step without being paused; absent when it does not wait. It goes on by itself once the cause is gone — except AwaitingApproval, which waits for an approval (or its deadline).',
  required: ['reason'],
  properties: {
    reason: stringField('GateNotHeld, GateUnknown, OutsideWindow, AwaitingApproval (a TwoPhase upgrade held before phase two), or the PreflightPassed reason preflight waits on (AlphaGateNotAllowed, NotAllowedByPolicy, UnhealthyFleet, ...).', 128),
    message: stringField('What it waits for: the gate, its query and its value; the window; the preflight finding.', 4096),
    gate: stringField('The gate that does not hold.', 63),
    since: timeField('Since when it has waited for this reason.'),
    until: timeField('When it may go on at the earliest: the next window start (OutsideWindow); the hold\'s deadline (AwaitingApproval).'),
  },
};

/** status.window: the maintenance window as last evaluated. */
export const windowStatusSchema: Schema = {
  tsType: 'WindowStatus',
  type: 'object',
  description: 'spec.window as last evaluated.',
  properties: {
    open: { type: 'boolean', description: 'Whether a window was open.' },
    closesAt: timeField('When the open window closes.'),
    nextStart: timeField('When the next window opens (within 60 days).'),
    checkedAt: timeField('When this was evaluated.'),
  },
};

/** status.acceptedRisks: what spec.acceptRisks let through, and when. */
export const acceptedRisksStatusSchema: Schema = {
  type: 'array',
  description: 'The blocking findings preflight let through because spec.acceptRisks named them.',
  maxItems: 64,
  'x-kubernetes-list-type': 'atomic',
  items: {
    tsType: 'AcceptedRisk',
    type: 'object',
    description: 'One accepted finding.',
    required: ['name'],
    properties: {
      name: stringField('The finding\'s reason, as named in spec.acceptRisks.', 64),
      object: stringField('What it was found on.', 512),
      value: stringField('The finding as it was when accepted.', 1024),
      generation: { type: 'integer', format: 'int64', minimum: 0, description: 'The metadata.generation whose spec accepted it.' },
      time: timeField('When it was accepted.'),
    },
  },
};
