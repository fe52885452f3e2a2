// `kubectl apiserver-upgrade get NAME`: one upgrade as a person reads it. buildGetView computes everything
// shown (also what `-o json|yaml` prints); renderGet lays it out. Both are pure.
import type { CoverageReport, TrustReport, ApiServerUpgrade, ApiServerUpgradeStatus, Condition } from '../api/types.generated.ts';
import { resolveSpec, type ResolvedSpec } from '../api/defaults.ts';
import { formatDuration } from '../api/duration.ts';
import { APPROVAL_WAIT, isTerminal, RESUME_ANNOTATION } from '../api/vocabulary.ts';
import { eventsAbout, type EventRow, type KubeEvent } from './events.ts';
import { age, bar, iso, num, printable, table, truncate, when } from './format.ts';
import { renderCoverage, renderTrust } from './trust-view.ts';

export type BatchState = 'done' | 'current' | 'pending' | 'failed' | 'timedOut' | 'rolledBack';

export interface SignalRow {
  signal: string;
  value: string | undefined;
  threshold: string | undefined;
  /** undefined when there is no value or no threshold to compare with. */
  ok: boolean | undefined;
}

export interface GetView {
  name: string;
  uid: string | undefined;
  phase: string;
  message: string | undefined;
  fromVersion: string | undefined;
  targetVersion: string;
  specPaused: boolean;
  createdAt: string | undefined;
  startedAt: string | undefined;
  completedAt: string | undefined;
  strategy: string | undefined;
  driver: string | undefined;
  progress: {
    current: number;
    total: number;
    done: number;
    batches: { index: number; servers: string[]; state: BatchState; stage?: string; emulatedVersion?: string }[];
    soakUntil: string | undefined;
    /** TwoPhase: when the soak between the phases ends. */
    phaseSoakUntil: string | undefined;
  };
  proxyGate: { on: string[]; off: string[]; unknown: string[]; turnedOnByUpgrade: string[] };
  servers: { hostname: string; version: string | undefined; ready: boolean | undefined; gate: string | undefined; state: string | undefined; batch: number | undefined; message: string | undefined; running: string | undefined; leaderElection: string | undefined }[];
  /** The kube-controller-manager and kube-scheduler Pods as last observed (status.components, docs/version-skew.md). */
  components: { component: string; node: string; pod: string; version: string | undefined }[];
  analysis: {
    time: string | undefined;
    verdict: string | undefined;
    consecutiveBreaches: number;
    failureLimit: number | undefined;
    onBreach: string | undefined;
    signals: SignalRow[];
    breaches: { signal: string; server: string | undefined; observed: string | undefined; threshold: string | undefined; message: string | undefined }[];
  } | undefined;
  pause: { reason: string; message: string | undefined; since: string | undefined; resumePhase: string | undefined; servers: string[]; howToResume: string } | undefined;
  /** Why it waits before its next step without pausing (status.waiting), and until when. */
  waiting: { reason: string; message: string | undefined; gate: string | undefined; since: string | undefined; until: string | undefined } | undefined;
  /** A held phase two (status.phaseTwoHold) and where a rollback goes (status.rollbackWindow). */
  hold: { heldSince: string | undefined; deadline: string | undefined; onDeadline: string | undefined; approvedAt: string | undefined; approval: string | undefined; endedBy: string | undefined; endedAt: string | undefined } | undefined;
  rollbackWindow: { available: boolean | undefined; toVersion: string | undefined; toEmulatedVersion: string | undefined; until: string | undefined; safe: string | undefined; reason: string | undefined; message: string | undefined } | undefined;
  /** spec.window as last evaluated (status.window). */
  window: { open: boolean | undefined; closesAt: string | undefined; nextStart: string | undefined } | undefined;
  /** Findings preflight let through because spec.acceptRisks named them (status.acceptedRisks). */
  acceptedRisks: { name: string; object: string | undefined; value: string | undefined; generation: number | undefined; time: string | undefined }[];
  conditions: { type: string; status: string; reason: string; message: string; lastTransitionTime: string | undefined }[];
  calls: { time: string | undefined; action: string; server: string; batch: number | undefined; target: string | undefined; gate: boolean | undefined; result: string | undefined; attempts: number | undefined; key: string; message: string | undefined }[];
  events: EventRow[];
  /** Why the Events could not be listed (permissions, say); the rest of the view stands. */
  eventsError?: string;
  /** status.trust and status.coverage, written at preflight (docs/trust.md). */
  trust?: TrustReport;
  coverage?: CoverageReport;
}

function resolved(u: ApiServerUpgrade): ResolvedSpec | undefined {
  try {
    return resolveSpec(u.spec);
  } catch {
    return undefined;
  }
}

/** Each planned batch's state, from the batch in progress and the finished batches' history. */
export function batchStates(status: ApiServerUpgradeStatus | undefined): GetView['progress']['batches'] {
  const batches = status?.plan?.batches ?? [];
  const current = status?.batch?.current ?? 0;
  const phase = status?.phase;
  const history = new Map((status?.batch?.history ?? []).map((h) => [h.index, h]));
  return batches.map((b) => {
    const h = history.get(b.index);
    let state: BatchState;
    if (h?.result === 'Failed') state = 'failed';
    else if (h?.result === 'TimedOut') state = 'timedOut';
    else if (h?.result === 'RolledBack') state = 'rolledBack';
    else if (h?.result === 'Succeeded' || phase === 'Succeeded' || b.index < current) state = 'done';
    else if (b.index === current && !isTerminal(phase)) state = 'current';
    else state = 'pending';
    return { index: b.index, servers: [...b.servers], state, ...(b.stage === undefined ? {} : { stage: b.stage }), ...(b.emulatedVersion === undefined ? {} : { emulatedVersion: b.emulatedVersion }) };
  });
}

function signalRows(status: ApiServerUpgradeStatus | undefined, spec: ResolvedSpec | undefined): SignalRow[] {
  const s = status?.lastAnalysis?.signals ?? {};
  const t = spec?.analysis.thresholds;
  const le = (v: number | undefined, max: number | undefined): boolean | undefined => (v === undefined || max === undefined ? undefined : v <= max);
  const rows: SignalRow[] = [
    { signal: 'proxyErrorRatio', value: num(s.proxyErrorRatio, 'ratio'), threshold: t ? `<= ${t.proxyErrorRatio}` : undefined, ok: le(s.proxyErrorRatio, t?.proxyErrorRatio) },
    { signal: 'errorRatio', value: num(s.errorRatio, 'ratio'), threshold: t ? `<= ${t.errorRatio}` : undefined, ok: le(s.errorRatio, t?.errorRatio) },
    { signal: 'latencyP99', value: num(s.latencyP99Seconds, 'seconds'), threshold: t ? `<= ${formatDuration(t.latencyP99Ms)}` : undefined, ok: le(s.latencyP99Seconds, t === undefined ? undefined : t.latencyP99Ms / 1000) },
  ];
  if (s.discoveryConverged !== undefined || s.discoveryPendingSeconds !== undefined) {
    const pending = s.discoveryPendingSeconds;
    const value = s.discoveryConverged === true ? 'converged' : pending !== undefined ? `pending ${pending}s` : 'not converged';
    const ok = s.discoveryConverged === true ? true : pending !== undefined && t ? pending * 1000 <= t.discoveryConvergenceMs : undefined;
    rows.push({ signal: 'discovery', value, threshold: t ? `converges within ${formatDuration(t.discoveryConvergenceMs)}` : undefined, ok });
  }
  if (s.stalePeers !== undefined) rows.push({ signal: 'stalePeers', value: num(s.stalePeers, 'count'), threshold: undefined, ok: undefined });
  return rows;
}

function howToResume(name: string, reason: string, specPaused: boolean): string {
  if (specPaused || reason === 'PausedBySpec') {
    return `kubectl apiserver-upgrade resume ${name} (sets spec.paused to false: a spec edit; if Git manages this object, change it there)`;
  }
  return `once the cause is fixed: kubectl apiserver-upgrade resume ${name} (sets the ${RESUME_ANNOTATION} annotation, no spec edit); or roll back: kubectl apiserver-upgrade abort ${name}`;
}

function describeDriver(spec: ResolvedSpec | undefined): string | undefined {
  if (!spec) return undefined;
  if (spec.driver.kind === 'webhook') return `webhook ${spec.driver.webhook.url} (timeout ${formatDuration(spec.driver.webhook.timeoutMs)})`;
  return `staticPod ${spec.driver.staticPod.image || 'keeping the running repository'} (agent ${spec.driver.staticPod.agentImage || 'in the operator\'s image'}, Jobs in ${spec.driver.staticPod.namespace})`;
}

export function buildGetView(u: ApiServerUpgrade, events: readonly KubeEvent[], eventLimit = 10, eventsError?: string): GetView {
  const st = u.status;
  const spec = resolved(u);
  const name = u.metadata?.name ?? '';
  const phase = st?.phase ?? 'Pending';
  const batches = batchStates(st);
  const total = batches.length || st?.batch?.total || 0;
  const done = batches.length ? batches.filter((b) => b.state === 'done').length : phase === 'Succeeded' ? total : 0;
  const peers = st?.peers ?? [];
  const progress = conditionOf(st?.conditions, 'Progressing');
  const message = st?.pause?.message ?? (progress?.status === 'True' || isTerminal(phase) ? progress?.message : undefined) ?? conditionOf(st?.conditions, 'PreflightPassed')?.message;
  const last = st?.lastAnalysis;
  return {
    name,
    uid: u.metadata?.uid,
    phase,
    message,
    fromVersion: st?.fromVersion ?? st?.plan?.fromVersion,
    targetVersion: st?.targetVersion ?? u.spec?.targetVersion ?? '',
    specPaused: u.spec?.paused === true,
    createdAt: iso(u.metadata?.creationTimestamp),
    startedAt: st?.startedAt,
    completedAt: st?.completedAt,
    strategy: spec ? `batchSize ${spec.strategy.batchSize}, soak ${formatDuration(spec.strategy.soakMs)}, batchTimeout ${formatDuration(spec.strategy.batchTimeoutMs)}, proxy.gate ${spec.proxy.gate}` : undefined,
    driver: describeDriver(spec),
    progress: { current: st?.batch?.current ?? 0, total, done, batches, soakUntil: st?.batch?.soakUntil, phaseSoakUntil: st?.batch?.phaseSoakUntil },
    proxyGate: {
      on: peers.filter((p) => p.proxyGate === 'Enabled').map((p) => p.hostname),
      off: peers.filter((p) => p.proxyGate === 'Disabled').map((p) => p.hostname),
      unknown: peers.filter((p) => p.proxyGate !== 'Enabled' && p.proxyGate !== 'Disabled').map((p) => p.hostname),
      turnedOnByUpgrade: [...(st?.plan?.gateTurnedOn ?? [])],
    },
    servers: peers.map((p) => ({ hostname: p.hostname, version: p.version, ready: p.ready, gate: p.proxyGate, state: p.state, batch: p.batch, message: p.running?.state === 'Differs' || p.running?.state === 'Unknown' ? p.running.message : p.message, running: p.running?.state, leaderElection: p.coordinatedLeaderElection })),
    components: (st?.components ?? []).map((c) => ({ component: c.component, node: c.node, pod: c.pod, version: c.version })),
    analysis: last
      ? {
        time: last.time,
        verdict: last.verdict,
        consecutiveBreaches: last.consecutiveBreaches ?? 0,
        failureLimit: spec?.analysis.failureLimit,
        onBreach: spec?.analysis.onBreach,
        signals: signalRows(st, spec),
        breaches: (last.breaches ?? []).map((b) => ({ signal: b.signal, server: b.server, observed: b.observed, threshold: b.threshold, message: b.message })),
      }
      : undefined,
    pause: st?.pause
      ? { reason: st.pause.reason, message: st.pause.message, since: st.pause.since, resumePhase: st.pause.resumePhase, servers: [...(st.pause.servers ?? [])], howToResume: howToResume(name, st.pause.reason, u.spec?.paused === true) }
      : undefined,
    waiting: st?.waiting ? { reason: st.waiting.reason, message: st.waiting.message, gate: st.waiting.gate, since: st.waiting.since, until: st.waiting.until } : undefined,
    hold: st?.phaseTwoHold ? { heldSince: st.phaseTwoHold.heldSince, deadline: st.phaseTwoHold.deadline, onDeadline: st.phaseTwoHold.onDeadline, approvedAt: st.phaseTwoHold.approvedAt, approval: st.phaseTwoHold.approval, endedBy: st.phaseTwoHold.endedBy, endedAt: st.phaseTwoHold.endedAt } : undefined,
    rollbackWindow: st?.rollbackWindow ? { available: st.rollbackWindow.available, toVersion: st.rollbackWindow.toVersion, toEmulatedVersion: st.rollbackWindow.toEmulatedVersion, until: st.rollbackWindow.until, safe: st.rollbackWindow.safe, reason: st.rollbackWindow.reason, message: st.rollbackWindow.message } : undefined,
    window: st?.window ? { open: st.window.open, closesAt: st.window.closesAt, nextStart: st.window.nextStart } : undefined,
    acceptedRisks: (st?.acceptedRisks ?? []).map((r) => ({ name: r.name, object: r.object, value: r.value, generation: r.generation, time: r.time })),
    conditions: (st?.conditions ?? []).map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message, lastTransitionTime: c.lastTransitionTime })),
    calls: (st?.driverCalls ?? []).map((c) => ({ time: c.time, action: c.action, server: c.server, batch: c.batch, target: c.target, gate: c.gate, result: c.result, attempts: c.attempts, key: c.key, message: c.message })),
    events: eventsAbout(u, events, eventLimit),
    ...(st?.trust ? { trust: st.trust } : {}),
    ...(st?.coverage ? { coverage: st.coverage } : {}),
    ...(eventsError === undefined ? {} : { eventsError }),
  };
}

function conditionOf(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

const PHASE_MARK: Record<string, string> = {
  Pending: '·', Preflight: '◌', EnablingProxy: '◌', Upgrading: '◌', Paused: '॥', RollingBack: '⟲', Succeeded: '✔', RolledBack: '⟲', Failed: '✖',
};
const BATCH_MARK: Record<BatchState, string> = { done: '✔', current: '▶', pending: '·', failed: '✖', timedOut: '✖', rolledBack: '⟲' };

function batchLabel(index: number): string {
  return index === 0 ? 'gate' : index < 0 ? 'rollback' : String(index);
}

function field(label: string, value: string | undefined): string {
  return value === undefined ? '' : `${`${label}:`.padEnd(14)}${value}\n`;
}

/** The view laid out for a person; every string in it, from the cluster as most are, goes through terminalText first. */
export function renderGet(view: GetView, now: Date): string {
  const v = printable(view);
  const out: string[] = [];
  const p = v.progress;
  const pauseNote = v.pause ? ` (${v.pause.reason})` : v.specPaused ? ' (spec.paused is true)' : '';
  let head = field('Name', v.name);
  head += field('Phase', `${PHASE_MARK[v.phase] ?? '?'} ${v.phase}${pauseNote}`);
  head += field('Message', v.message);
  head += field('Versions', `${v.fromVersion ?? '(not known yet)'} -> ${v.targetVersion}`);
  head += field('Strategy', v.strategy);
  head += field('Driver', v.driver);
  if (p.total > 0) {
    const current = p.batches.some((b) => b.state === 'current') ? 1 : 0;
    head += field('Progress', `batch ${p.current}/${p.total}  ${bar(p.done, current, p.total)}  ${p.done}/${p.total} done`);
    head += field('Batches', p.batches.map((b) => `${BATCH_MARK[b.state]} ${b.index}: ${b.servers.join('+') || '(none)'}${b.stage ? ` [${b.stage}${b.emulatedVersion ? ` emulating ${b.emulatedVersion}` : ''}]` : ''}`).join('   '));
    if (p.soakUntil && !isTerminal(v.phase)) head += field('Soak until', when(p.soakUntil, now));
    if (p.phaseSoakUntil && !isTerminal(v.phase)) head += field('Phase soak', `until ${when(p.phaseSoakUntil, now)} (between phase one and phase two)`);
  } else {
    head += field('Progress', 'no plan yet (preflight freezes it)');
  }
  const g = v.proxyGate;
  if (v.servers.length > 0) {
    const turned = g.turnedOnByUpgrade.length ? `; turned on by this upgrade: ${g.turnedOnByUpgrade.join(', ')}` : '';
    head += field('Proxy gate', `on for ${g.on.length}/${v.servers.length} servers${g.off.length ? ` (off: ${g.off.join(', ')})` : ''}${g.unknown.length ? ` (unknown: ${g.unknown.join(', ')})` : ''}${turned}`);
  }
  head += field('Created', when(v.createdAt, now));
  head += field('Started', when(v.startedAt, now));
  head += field('Completed', when(v.completedAt, now));
  out.push(head);

  if (v.pause) {
    out.push(`Paused: ${v.pause.reason}${v.pause.since ? ` since ${when(v.pause.since, now)}` : ''}${v.pause.resumePhase ? `, resumes into ${v.pause.resumePhase}` : ''}\n` +
      `  ${v.pause.message ?? ''}\n${v.pause.servers.length ? `  servers: ${v.pause.servers.join(', ')}\n` : ''}  resume: ${v.pause.howToResume}\n`);
  }

  if (v.waiting) {
    out.push(`Waiting: ${v.waiting.reason}${v.waiting.since ? ` since ${when(v.waiting.since, now)}` : ''}${v.waiting.until ? `, until ${when(v.waiting.until, now)}` : ''}\n` +
      `  ${v.waiting.message ?? ''}\n  ${v.waiting.reason === APPROVAL_WAIT ? `approve: kubectl apiserver-upgrade approve ${v.name}; or roll back: kubectl apiserver-upgrade abort ${v.name}` : 'it goes on by itself once the cause is gone (no resume needed)'}\n`);
  }
  if (v.hold) {
    const h = v.hold;
    const ended = h.endedBy ? `; ended ${h.endedBy}${h.endedAt ? ` ${when(h.endedAt, now)}` : ''}` : '';
    out.push(`Phase two hold: since ${when(h.heldSince, now) ?? '?'}${h.deadline ? `, deadline ${when(h.deadline, now)} (then ${h.onDeadline ?? '?'})` : ', no deadline'}${h.approvedAt ? `; approved ${when(h.approvedAt, now)} (${h.approval ?? ''})` : ''}${ended}\n`);
  }
  if (v.rollbackWindow) {
    const r = v.rollbackWindow;
    const to = `${r.toVersion ?? '?'}${r.toEmulatedVersion ? ` (the new binary emulating ${r.toEmulatedVersion})` : ''}`;
    out.push(`Rollback: ${r.available ? `available to ${to}${r.until ? ` until ${when(r.until, now)}` : ''}` : `not by this upgrade (to ${to})`}; safe ${r.safe ?? 'Unknown'}${r.reason ? ` (${r.reason})` : ''}\n`);
  }
  if (v.window && !isTerminal(v.phase)) {
    out.push(`Window: ${v.window.open ? `open${v.window.closesAt ? `, closes ${when(v.window.closesAt, now)}` : ''}` : 'closed'}${v.window.nextStart ? `; next opens ${when(v.window.nextStart, now)}` : ''}\n`);
  }
  if (v.acceptedRisks.length > 0) {
    out.push('Accepted risks (spec.acceptRisks):\n' + table(['NAME', 'GENERATION', 'ON', 'VALUE'], v.acceptedRisks.map((r) => [r.name, r.generation, truncate(r.object, 50), truncate(r.value, 90)]), '  '));
  }

  if (v.servers.length > 0) {
    out.push('Servers:\n' + table(['HOSTNAME', 'VERSION', 'READY', 'GATE', 'STATE', 'BATCH', 'RUNNING', 'MESSAGE'],
      v.servers.map((s) => [s.hostname, s.version, s.ready === undefined ? undefined : String(s.ready), s.gate, s.state, s.batch, s.running, truncate(s.message, 80)]), '  '));
    out.push(renderLeaderElection(v.servers.map((s) => ({ hostname: s.hostname, state: s.leaderElection }))));
  }
  if (v.components.length > 0) out.push(renderComponents(v.components));

  if (v.trust || v.coverage) {
    out.push(renderTrust(v.trust, v.conditions.find((x) => x.type === 'ProxyTrustVerified')));
    out.push(renderCoverage(v.coverage));
  }

  const a = v.analysis;
  if (a) {
    const limit = a.failureLimit === undefined ? '' : ` of failureLimit ${a.failureLimit}${a.onBreach ? ` (then ${a.onBreach})` : ''}`;
    let s = `Analysis: ${a.verdict ?? '?'} at ${when(a.time, now) ?? '?'}; ${a.consecutiveBreaches} breaching check(s) in a row${limit}\n`;
    s += table(['SIGNAL', 'VALUE', 'THRESHOLD', 'OK'], a.signals.map((r) => [r.signal, r.value ?? 'no data', r.threshold, r.ok === undefined ? '' : r.ok ? '✔' : '✖']), '  ');
    for (const b of a.breaches) s += `  breach: ${b.signal}${b.server ? `@${b.server}` : ''} ${b.observed ?? '?'} > ${b.threshold ?? '?'}${b.message ? ` (${truncate(b.message, 120)})` : ''}\n`;
    out.push(s);
  } else {
    out.push('Analysis: no check yet\n');
  }

  if (v.calls.length > 0) {
    out.push('Driver calls:\n' + table(['AGE', 'ACTION', 'SERVER', 'BATCH', 'TARGET', 'GATE', 'RESULT', 'ATTEMPTS', 'KEY', 'MESSAGE'],
      v.calls.map((c) => [age(c.time, now), c.action, c.server, c.batch === undefined ? undefined : batchLabel(c.batch), c.target, c.gate === undefined ? undefined : c.gate ? 'on' : 'off', c.result, c.attempts, c.key, truncate(c.message, 70)]), '  '));
  } else {
    out.push('Driver calls: none\n');
  }

  if (v.conditions.length > 0) {
    out.push('Conditions:\n' + table(['TYPE', 'STATUS', 'REASON', 'AGE', 'MESSAGE'],
      v.conditions.map((c) => [c.type, c.status, c.reason, age(c.lastTransitionTime, now), truncate(c.message, 90)]), '  '));
  }

  if (v.events.length > 0) {
    out.push(`Events (last ${v.events.length}):\n` + table(['AGE', 'TYPE', 'REASON', 'NOTE'],
      v.events.map((e) => [age(e.time, now), e.type, e.count > 1 ? `${e.reason} (x${e.count})` : e.reason, truncate(e.note, 110)]), '  '));
  } else {
    out.push(v.eventsError ? `Events: not listed: ${v.eventsError}\n` : 'Events: none\n');
  }
  return out.join('\n');
}

/**
 * Whether each kube-apiserver runs with the CoordinatedLeaderElection gate (docs/version-skew.md): Enabled, Disabled,
 * Unknown (its /metrics did not say), or not read yet — never shown as off when it was not read.
 */
export function renderLeaderElection(rows: readonly { hostname: string; state: string | undefined }[]): string {
  const by = (f: (s: string | undefined) => boolean): string[] => rows.filter((r) => f(r.state)).map((r) => r.hostname);
  const groups: [string, string[]][] = [
    ['on', by((s) => s === 'Enabled')],
    ['off', by((s) => s === 'Disabled')],
    ['unknown', by((s) => s === 'Unknown')],
    ['not read', by((s) => s !== 'Enabled' && s !== 'Disabled' && s !== 'Unknown')],
  ];
  const parts = groups.filter(([, h]) => h.length > 0).map(([what, h]) => `${what} on ${h.join(', ')}`);
  return `Coordinated leader election (CoordinatedLeaderElection gate): ${parts.join('; ')}\n`;
}

/** The control plane's other components, each with its version ("unknown" where its image names none). */
export function renderComponents(rows: readonly { component: string; node: string; pod: string; version: string | undefined }[]): string {
  return 'Control plane components (must not be newer than kube-apiserver):\n' + table(['COMPONENT', 'NODE', 'VERSION', 'POD'], rows.map((c) => [c.component, c.node, c.version ?? 'unknown', c.pod]), '  ');
}
