import type {
  AnalysisPolicy,
  ApiServerUpgradeSpec,
  BreachAction,
  OrphanPolicy,
  UpgradePhases,
  ProxyGateMode,
  SignalSource,
  StaticPodDriver,
  UpgradeStrategy,
  WebhookDriver,
  QueryGate,
  Weekday,
} from './types.generated.ts';
import { specSchema } from './schema.ts';
import { applySchemaDefaults } from './schema-defaults.ts';
import { tryParseDuration } from './duration.ts';
import { VERSION_PATTERN, compile } from './patterns.ts';
import { BatchSizeError, resolveBatchSize } from './batch-size.ts';
import { resolvePhaseTwo, type ResolvedPhaseTwo } from './phase-two.ts';

/**
 * The spec with every default applied and every duration parsed, so the planner reads plain numbers.
 *
 * The API server applies the CRD defaults on write, but an object stored before a default existed (or a
 * hand-built test fixture) may lack them; the defaults here are read from the same schema, so both agree.
 * resolveSpec re-checks what the planner relies on and throws SpecError instead of crashing later.
 */
export interface ResolvedSpec {
  targetVersion: string;
  paused: boolean;
  allowPrerelease: boolean;
  strategy: { batchSize: number | string; soakMs: number; batchTimeoutMs: number; phases: UpgradePhases; phaseSoakMs: number; phaseTwo: ResolvedPhaseTwo };
  rollback: { orphanedObjects: OrphanPolicy };
  proxy: { gate: ProxyGateMode; revertAfter: boolean; allowAlphaGate: boolean };
  /** spec.trust (docs/trust.md): whether AnyFrontProxyCertTrusted refuses the upgrade at preflight. */
  trust: { requireAllowedNames: boolean };
  driver: ResolvedDriver;
  /** spec.gates (docs/operations.md "Gates, windows and accepted risks"): checked before the first call and every batch. */
  gates: ResolvedGates;
  /** spec.window: absent, always open. */
  window?: ResolvedWindow;
  /** spec.acceptRisks: blocking findings accepted by name. */
  acceptRisks: string[];
  analysis: {
    intervalMs: number;
    failureLimit: number;
    onBreach: BreachAction;
    thresholds: {
      proxyErrorRatio: number;
      errorRatio: number;
      latencyP99Ms: number;
      discoveryConvergenceMs: number;
      unavailableAPIServices: number;
      webhookErrorRatio: number;
      webhookMinCalls: number;
    };
    source: SignalSource;
    prometheus?: { address: string; selector: string; caBundle?: string; windowMs: number };
  };
}

export interface ResolvedGates {
  prometheus?: { address: string; caBundle?: string };
  queries: QueryGate[];
  controlPlaneNodesReady: boolean;
  serversReady: boolean;
}

export interface ResolvedWindow {
  timeZone: string;
  recurring: { days: Weekday[]; start: string; durationMs: number }[];
  exclusions: { startMs: number; endMs: number; reason?: string }[];
}

export type ResolvedDriver =
  | { kind: 'webhook'; webhook: WebhookDriver & { timeoutMs: number } }
  | { kind: 'staticPod'; staticPod: ResolvedStaticPod };

/** The static Pod driver's settings: `image` '' means keep the repository the node runs; readyTimeout parsed. */
export type ResolvedStaticPod = Required<StaticPodDriver> & { readyTimeoutMs: number };

export class SpecError extends Error {
  override readonly name = 'SpecError';
}

const VERSION = compile(VERSION_PATTERN);

/** The spec as the API server would store it: schema defaults applied, input untouched. */
export function withDefaults(spec: ApiServerUpgradeSpec): ApiServerUpgradeSpec {
  // The schema describes exactly this shape, so defaulting returns the same shape with more fields set.
  return applySchemaDefaults(spec, specSchema) as ApiServerUpgradeSpec;
}

export function resolveSpec(spec: ApiServerUpgradeSpec): ResolvedSpec {
  const s = withDefaults(spec);
  if (typeof s.targetVersion !== 'string' || !VERSION.test(s.targetVersion)) {
    throw new SpecError(`spec.targetVersion ${JSON.stringify(s.targetVersion)} must be a Kubernetes release version such as v1.36.3`);
  }
  const strategy = s.strategy as Required<UpgradeStrategy>;
  return {
    targetVersion: s.targetVersion,
    paused: s.paused === true,
    allowPrerelease: s.allowPrerelease === true,
    strategy: {
      batchSize: batchSize(strategy.batchSize),
      soakMs: duration(strategy.soakDuration, 'spec.strategy.soakDuration'),
      batchTimeoutMs: duration(strategy.batchTimeout, 'spec.strategy.batchTimeout'),
      phases: strategy.phases,
      phaseSoakMs: duration(strategy.phaseSoakDuration, 'spec.strategy.phaseSoakDuration'),
      phaseTwo: phaseTwo(strategy),
    },
    rollback: { orphanedObjects: s.rollback?.orphanedObjects ?? 'Pause' },
    proxy: { gate: s.proxy?.gate ?? 'Auto', revertAfter: s.proxy?.revertAfter === true, allowAlphaGate: s.proxy?.allowAlphaGate === true },
    trust: { requireAllowedNames: s.trust?.requireAllowedNames === true },
    driver: resolveDriver(s, duration(strategy.batchTimeout, 'spec.strategy.batchTimeout')),
    analysis: resolveAnalysis(s.analysis),
    gates: resolveGates(s),
    ...(s.window ? { window: resolveWindow(s.window) } : {}),
    acceptRisks: [...(s.acceptRisks ?? [])],
  };
}

function resolveGates(s: ApiServerUpgradeSpec): ResolvedGates {
  const g = s.gates ?? {};
  const queries = g.queries ?? [];
  if (queries.length > 0 && g.prometheus?.address === undefined) throw new SpecError('spec.gates.prometheus.address is required when gates.queries is set');
  for (const q of queries) {
    if ((q.op === undefined) !== (q.value === undefined)) throw new SpecError(`spec.gates.queries[${q.name}]: op and value are set together`);
  }
  return {
    ...(g.prometheus ? { prometheus: { address: g.prometheus.address, ...(g.prometheus.caBundle === undefined ? {} : { caBundle: g.prometheus.caBundle }) } } : {}),
    queries: queries.map((q) => ({ ...q })),
    controlPlaneNodesReady: g.controlPlaneNodesReady === true,
    serversReady: g.serversReady === true,
  };
}

/** An unknown zone or a malformed time makes the spec invalid: no window is guessed (the upgrade stays put). */
function resolveWindow(w: NonNullable<ApiServerUpgradeSpec['window']>): ResolvedWindow {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: w.timeZone });
  } catch {
    throw new SpecError(`spec.window.timeZone ${JSON.stringify(w.timeZone)} is not a time zone this operator knows (an IANA name such as Europe/Berlin)`);
  }
  if (!w.recurring?.length) throw new SpecError('spec.window.recurring needs at least one window');
  return {
    timeZone: w.timeZone,
    recurring: w.recurring.map((r, i) => {
      if (!/^([01][0-9]|2[0-3]):[0-5][0-9]$/.test(r.start)) throw new SpecError(`spec.window.recurring[${i}].start ${JSON.stringify(r.start)} must be HH:MM`);
      if (!r.days?.length) throw new SpecError(`spec.window.recurring[${i}].days needs at least one day`);
      return { days: [...r.days], start: r.start, durationMs: duration(r.duration, `spec.window.recurring[${i}].duration`) };
    }),
    exclusions: (w.exclusions ?? []).map((e, i) => {
      const startMs = Date.parse(e.start);
      const endMs = Date.parse(e.end);
      if (!Number.isFinite(startMs) || !Number.isFinite(endMs) || endMs <= startMs) throw new SpecError(`spec.window.exclusions[${i}] must have a start before its end (RFC 3339)`);
      return { startMs, endMs, ...(e.reason ? { reason: e.reason } : {}) };
    }),
  };
}

function resolveAnalysis(a: AnalysisPolicy | undefined): ResolvedSpec['analysis'] {
  const analysis = a as Required<Omit<AnalysisPolicy, 'prometheus'>> & Pick<AnalysisPolicy, 'prometheus'>;
  const t = analysis.thresholds as Required<NonNullable<AnalysisPolicy['thresholds']>>;
  return {
    intervalMs: duration(analysis.interval, 'spec.analysis.interval'),
    failureLimit: positiveInteger(analysis.failureLimit, 'spec.analysis.failureLimit'),
    onBreach: analysis.onBreach,
    thresholds: {
      proxyErrorRatio: t.proxyErrorRatio,
      errorRatio: t.errorRatio,
      latencyP99Ms: duration(t.latencyP99, 'spec.analysis.thresholds.latencyP99'),
      discoveryConvergenceMs: duration(t.discoveryConvergence, 'spec.analysis.thresholds.discoveryConvergence'),
      unavailableAPIServices: t.unavailableAPIServices,
      webhookErrorRatio: t.webhookErrorRatio,
      webhookMinCalls: t.webhookMinCalls,
    },
    source: analysis.source,
    ...(analysis.source === 'Prometheus' ? { prometheus: resolvePrometheus(analysis.prometheus) } : {}),
  };
}

/**
 * The analysis settings of a spec that says nothing about analysis: the schema's defaults, the one place they
 * are stated. Used where a spec cannot be resolved (it is invalid) and the fleet is still observed.
 */
export function defaultAnalysis(): ResolvedSpec['analysis'] {
  return resolveAnalysis(withDefaults({} as ApiServerUpgradeSpec).analysis);
}

function resolveDriver(s: ApiServerUpgradeSpec, batchTimeoutMs: number): ResolvedDriver {
  const { webhook, staticPod } = s.driver ?? {};
  if ((webhook === undefined) === (staticPod === undefined)) throw new SpecError('spec.driver must set exactly one of webhook or staticPod');
  if (webhook !== undefined) {
    return { kind: 'webhook', webhook: { ...webhook, timeoutMs: duration(webhook.timeout, 'spec.driver.webhook.timeout') } };
  }
  // Defaulting filled every field that has a default; the rest are required by the schema, checked here anyway.
  const p = staticPod as StaticPodDriver;
  const required = <K extends keyof StaticPodDriver>(k: K): NonNullable<StaticPodDriver[K]> => {
    const v = p[k];
    if (v === undefined || v === '') throw new SpecError(`spec.driver.staticPod.${k} is required`);
    return v as NonNullable<StaticPodDriver[K]>;
  };
  const readyTimeoutMs = duration(p.readyTimeout, 'spec.driver.staticPod.readyTimeout');
  if (readyTimeoutMs >= batchTimeoutMs) {
    throw new SpecError(`spec.driver.staticPod.readyTimeout ${p.readyTimeout ?? ''} must be shorter than strategy.batchTimeout (${batchTimeoutMs / 1000}s)`);
  }
  return {
    kind: 'staticPod',
    staticPod: {
      // No default: empty keeps the repository the node runs (the driver reads it from the mirror Pod).
      image: p.image ?? '',
      manifestPath: required('manifestPath'),
      backupDir: required('backupDir'),
      peerCAFile: required('peerCAFile'),
      // Empty: the operator's own image runs the agent (its --agent-image).
      agentImage: p.agentImage ?? '',
      namespace: required('namespace'),
      readyTimeout: required('readyTimeout'),
      readyTimeoutMs,
    },
  };
}

function resolvePrometheus(p: AnalysisPolicy['prometheus']): NonNullable<ResolvedSpec['analysis']['prometheus']> {
  if (p?.address === undefined) throw new SpecError('spec.analysis.prometheus.address is required when source is Prometheus');
  return {
    address: p.address,
    selector: p.selector ?? 'job="apiserver"',
    ...(p.caBundle === undefined ? {} : { caBundle: p.caBundle }),
    windowMs: duration(p.window, 'spec.analysis.prometheus.window'),
  };
}

function duration(value: string | undefined, field: string): number {
  const ms = value === undefined ? undefined : tryParseDuration(value);
  if (ms === undefined) throw new SpecError(`${field} ${JSON.stringify(value)} must be a Go duration such as 10s, 2m or 1h30m`);
  return ms;
}

function phaseTwo(strategy: UpgradeStrategy): ResolvedPhaseTwo {
  const r = resolvePhaseTwo(strategy.phaseTwo);
  if (typeof r === 'string') throw new SpecError(`spec.strategy.${r}`);
  if (r.start === 'Approval' && strategy.phases !== 'TwoPhase') throw new SpecError('spec.strategy.phaseTwo.start Approval needs phases TwoPhase: only a TwoPhase upgrade has a phase two to hold');
  return r;
}

function positiveInteger(value: number, field: string): number {
  if (!Number.isInteger(value) || value < 1) throw new SpecError(`${field} must be an integer of at least 1, got ${JSON.stringify(value)}`);
  return value;
}

function batchSize(value: number | string): number | string {
  try {
    resolveBatchSize(value, 1);
  } catch (err) {
    if (err instanceof BatchSizeError) throw new SpecError(`spec.strategy.${err.message}`);
    throw err;
  }
  return value;
}
