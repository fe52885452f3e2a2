// What `kubectl apiserver-upgrade plan` prints: the inventory, the preflight verdict, the frozen plan and
// every driver call the operator would make with what it would carry. Pure.
import type { PlannedBatch } from '../api/types.generated.ts';
import { resolveSpec, type ResolvedSpec } from '../api/defaults.ts';
import type { ApiServerUpgradeSpec, CoverageReport, TrustReport } from '../api/types.generated.ts';
import type { DriverRequest, Observation } from '../plan/index.ts';
import type { InventoryRow } from '../observe/inventory.ts';
import { webhookPayload } from '../drivers/webhook.ts';
import { agentJob, plannedImage } from '../drivers/static-pod.ts';
import type { DryRun, PlannedEvent } from './dry-run.ts';
import { printable, table, truncate } from './format.ts';
import { renderCoverage, renderTrust } from './trust-view.ts';
import { renderComponents, renderLeaderElection } from './get-view.ts';
import { evaluateGates } from '../plan/start-gates.ts';
import { windowAt } from '../plan/window.ts';

export interface InventoryView {
  hostname: string;
  identity: string;
  address: string | undefined;
  addressSource: string | undefined;
  version: string | undefined;
  ready: boolean | undefined;
  proxyGate: string;
  /** The CoordinatedLeaderElection gate as its /metrics says (Enabled, Disabled, Unknown); undefined: not read. */
  coordinatedLeaderElection: string | undefined;
  stale: boolean;
  problems: string[];
}

export interface CallView {
  batch: number;
  action: string;
  server: string;
  target: string;
  /** TwoPhase: the --emulated-version the server runs with after the call. */
  emulatedVersion?: string;
  featureGates: Record<string, boolean>;
  idempotencyKey: string;
  /** What the driver would receive: the webhook's POST, or the static Pod driver's agent Job. */
  payload: { webhook: { method: 'POST'; url: string; headers: Record<string, string>; body: unknown } } | { staticPod: { job: Record<string, unknown> } | { refused: string } };
}

export interface PlanView {
  name: string;
  /** Where the spec came from: a file, or the object in the cluster. */
  source: 'file' | 'cluster';
  uid: string;
  targetVersion: string;
  specPaused: boolean;
  inventory: InventoryView[];
  discovery: { converged: boolean; message: string } | undefined;
  storage: { version: string; server: string; resources: number }[];
  /**
   * The kube-controller-manager and kube-scheduler Pods with their versions (docs/version-skew.md), or why they could
   * not be listed; undefined: not read.
   */
  components: { component: string; node: string; pod: string; version: string | undefined }[] | { error: string } | undefined;
  /** Another upgrade the operator would finish first (it runs one at a time). */
  waitsFor: string | undefined;
  preflight: { status: string; reason: string; message: string } | undefined;
  phase: string;
  steps: number;
  fromVersion: string | undefined;
  batches: PlannedBatch[];
  batchSize: string | undefined;
  gateTurnedOn: string[];
  /** The calls the operator would make first, now (never sent). */
  firstCalls: CallView[];
  events: PlannedEvent[];
  projection: { phase: string; message: string | undefined; assumedResumed: boolean; calls: CallView[] } | undefined;
  /**
   * spec.window and spec.gates evaluated once, now (gates from here: a Prometheus only the cluster reaches is not
   * evaluated, and counts as not holding), and spec.acceptRisks; what the operator would wait for, if anything.
   */
  start: {
    window: { timeZone: string; open: boolean; closesAt?: string; nextStart?: string; excludedBy?: string } | undefined;
    gates: { name: string; query?: string; holds: boolean | undefined; value: string }[];
    acceptRisks: string[];
    waiting: { reason: string; message: string | undefined; until: string | undefined } | undefined;
  };
  notes: string[];
  /** What preflight computed of the proxy's trust and coverage (docs/trust.md); flags from mirror Pods only (the plugin calls no driver). */
  trust?: { report: TrustReport; verdict: { status: string; reason: string } | undefined };
  coverage?: CoverageReport;
}

export interface PlanViewInput {
  name: string;
  source: 'file' | 'cluster';
  uid: string;
  /** The object has no UID yet (a file): keys are derived from a placeholder. */
  uidIsPlaceholder: boolean;
  spec: ApiServerUpgradeSpec;
  observation: Observation;
  inventory: readonly InventoryRow[] | undefined;
  dryRun: DryRun;
  waitsFor: string | undefined;
  ignoredAnnotations: string[];
  /** When the window is evaluated (the dry run's now). */
  now?: Date;
}

function resolved(spec: ApiServerUpgradeSpec): ResolvedSpec | undefined {
  try {
    return resolveSpec(spec);
  } catch {
    return undefined;
  }
}

/** What one call would carry to the driver of this spec. */
export function callView(r: DriverRequest, spec: ResolvedSpec, upgradeName: string): CallView {
  let payload: CallView['payload'];
  if (spec.driver.kind === 'webhook') {
    const w = spec.driver.webhook;
    const headers: Record<string, string> = { 'Content-Type': 'application/json', 'Idempotency-Key': r.idempotencyKey };
    if (w.authSecretRef) headers.Authorization = `Bearer <token from Secret ${w.authSecretRef.namespace}/${w.authSecretRef.name}, key ${w.authSecretRef.key ?? 'token'}>`;
    payload = { webhook: { method: 'POST', url: w.url, headers, body: webhookPayload(r) } };
  } else {
    try {
      payload = { staticPod: { job: agentJob(spec.driver.staticPod, r, upgradeName, plannedImage(spec.driver.staticPod, r), { preview: true }) } };
    } catch (err) {
      // The driver would refuse this call before any Job (a value that must not reach the node agent).
      payload = { staticPod: { refused: (err as Error).message } };
    }
  }
  return {
    batch: r.batch, action: r.action, server: r.server.hostname, target: r.targetVersion, ...(r.emulatedVersion === undefined ? {} : { emulatedVersion: r.emulatedVersion }),
    featureGates: { ...r.featureGates }, idempotencyKey: r.idempotencyKey, payload,
  };
}

function inventoryView(rows: readonly InventoryRow[] | undefined, obs: Observation): InventoryView[] {
  const byHostname = (a: InventoryView, b: InventoryView): number => a.hostname.localeCompare(b.hostname);
  return inventoryRows(rows, obs).sort(byHostname);
}

const LEADER_ELECTION = { on: 'Enabled', off: 'Disabled', unknown: 'Unknown' } as const;

function inventoryRows(rows: readonly InventoryRow[] | undefined, obs: Observation): InventoryView[] {
  const cle = (hostname: string): string | undefined => {
    const g = obs.peers.find((p) => p.hostname === hostname)?.coordinatedLeaderElection;
    return g === undefined ? undefined : LEADER_ELECTION[g];
  };
  if (rows) {
    return rows.map((r) => ({ hostname: r.hostname, identity: r.identity, address: r.address || undefined, addressSource: r.addressSource, version: r.version, ready: r.ready, proxyGate: r.proxyGate, coordinatedLeaderElection: r.hostname ? cle(r.hostname) : undefined, stale: r.stale, problems: [...r.problems] }));
  }
  return obs.peers.map((p) => ({ hostname: p.hostname, identity: p.identity, address: p.address, addressSource: undefined, version: p.version, ready: p.ready, proxyGate: p.proxyGate, coordinatedLeaderElection: cle(p.hostname), stale: p.stale, problems: [] }));
}

export function buildPlanView(i: PlanViewInput): PlanView {
  const spec = resolved(i.spec);
  const d = i.dryRun;
  const st = d.status;
  const calls = (rs: readonly DriverRequest[]): CallView[] => (spec ? rs.map((r) => callView(r, spec, i.name)) : []);
  const notes: string[] = [];
  if (i.spec.paused === true) notes.push('spec.paused is true: the operator runs preflight, freezes the plan and pauses (PausedBySpec) before any call; the projected calls are what follows once spec.paused is false.');
  if (i.uidIsPlaceholder) notes.push('the object does not exist yet: idempotency keys derive from the UID the API server assigns at create, so the keys shown (from a placeholder UID) will differ; everything else is the same.');
  if (i.ignoredAnnotations.length > 0) notes.push(`planned as a fresh upgrade: the annotations ${i.ignoredAnnotations.join(', ')} were not taken into account.`);
  if (d.flagProofAssumed) notes.push('the flag proof is assumed to pass: the operator proves each node\'s command line on the target binary at preflight, with a proof Job per node, and waits for every verdict (docs/flag-proof.md).');
  if (i.waitsFor) notes.push(`ApiServerUpgrade ${i.waitsFor} is under way (or older and waiting): the operator runs one upgrade at a time, so this one would wait (AnotherUpgradeActive) until it ends.`);
  if (d.projection && d.projection.phase !== 'Succeeded') notes.push(`the projection did not end Succeeded but ${d.projection.phase}: ${d.projection.message ?? ''}`);
  const unreachable = inventoryView(i.inventory, i.observation).filter((r) => r.ready !== true && r.problems.length > 0);
  if (unreachable.length > 0) notes.push(`the dry run reaches each apiserver directly, as the operator does: from here, ${unreachable.map((r) => `${r.hostname} (${r.problems.join('; ')})`).join(', ')}.`);
  return {
    name: i.name,
    source: i.source,
    uid: i.uid,
    targetVersion: i.spec.targetVersion,
    specPaused: i.spec.paused === true,
    inventory: inventoryView(i.inventory, i.observation),
    discovery: i.observation.discovery,
    storage: (i.observation.storage ?? []).map((s) => ({ version: s.version, server: s.server, resources: Object.keys(s.hashes).length })),
    components: componentsView(i.observation),
    waitsFor: i.waitsFor,
    preflight: d.preflight ? { status: d.preflight.status, reason: d.preflight.reason, message: d.preflight.message } : undefined,
    phase: d.phase,
    steps: d.steps,
    fromVersion: st.fromVersion,
    batches: structuredClone(st.plan?.batches ?? []),
    batchSize: st.plan?.batchSize,
    gateTurnedOn: [...(st.plan?.gateTurnedOn ?? [])],
    firstCalls: calls(d.firstCalls),
    events: d.events,
    start: startView(spec, i),
    projection: d.projection ? { phase: d.projection.phase, message: d.projection.message, assumedResumed: d.projection.assumedResumed, calls: calls(d.projection.calls) } : undefined,
    notes,
    ...(st.trust ? { trust: { report: st.trust, verdict: st.conditions?.find((c) => c.type === 'ProxyTrustVerified') } } : {}),
    ...(st.coverage ? { coverage: st.coverage } : {}),
  };
}

function componentsView(o: Observation): PlanView['components'] {
  const c = o.components;
  if (c === undefined) return undefined;
  if ('error' in c) return { error: c.error };
  return c.pods.map((p) => ({ component: p.component, node: p.node, pod: p.pod, version: p.version }));
}

function startView(spec: ResolvedSpec | undefined, i: PlanViewInput): PlanView['start'] {
  const now = (i.now ?? new Date()).getTime();
  const w = spec?.window ? windowAt(spec.window, now) : undefined;
  const at = (t: number | undefined): string | undefined => (t === undefined ? undefined : new Date(t).toISOString());
  const waiting = i.dryRun.status.waiting;
  return {
    window: spec?.window && w ? { timeZone: spec.window.timeZone, open: w.open, ...(w.closesAt === undefined ? {} : { closesAt: at(w.closesAt)! }), ...(w.nextStart === undefined ? {} : { nextStart: at(w.nextStart)! }), ...(w.excludedBy ? { excludedBy: w.excludedBy } : {}) } : undefined,
    gates: spec ? evaluateGates(spec, i.observation).map((g) => ({ name: g.name, ...(g.query ? { query: g.query } : {}), holds: g.holds, value: g.value })) : [],
    acceptRisks: [...(spec?.acceptRisks ?? [])],
    waiting: waiting ? { reason: waiting.reason, message: waiting.message, until: waiting.until } : undefined,
  };
}

function batchLabel(b: number): string {
  return b === 0 ? 'gate' : b < 0 ? 'rollback' : String(b);
}

function targetOf(c: CallView): string {
  return c.emulatedVersion === undefined ? c.target : `${c.target} (emulating ${c.emulatedVersion})`;
}

function gates(g: Record<string, boolean>): string {
  return Object.entries(g).map(([k, v]) => `${k}=${v}`).join(',');
}

function indent(s: string, by: string): string {
  return s.split('\n').map((l) => (l ? by + l : l)).join('\n');
}

/** The window, the gates and the accepted risks, as evaluated now; and what the operator would wait for. */
function renderStart(st: PlanView['start']): string {
  let s = 'Start conditions (checked before the first call and before every batch; never before a rollback):\n';
  const w = st.window;
  s += w
    ? `  window (${w.timeZone}): ${w.open ? `open, closes at ${w.closesAt ?? '?'}` : `closed${w.excludedBy ? ` (excluded: ${w.excludedBy})` : ''}; next opens at ${w.nextStart ?? 'none within 60 days'}`}\n`
    : '  window: none (always open)\n';
  if (st.gates.length === 0) s += '  gates: none\n';
  for (const g of st.gates) s += `  gate ${g.name}${g.query ? ` (${truncate(g.query, 80)})` : ''}: ${g.holds === true ? 'holds' : g.holds === false ? 'does not hold' : 'cannot be evaluated (does not hold)'}: ${truncate(g.value, 120)}\n`;
  if (st.acceptRisks.length > 0) s += `  accepted risks: ${st.acceptRisks.join(', ')}\n`;
  if (st.waiting) s += `  => the operator would wait: ${st.waiting.reason}${st.waiting.until ? ` until ${st.waiting.until}` : ''}: ${truncate(st.waiting.message, 160)}\n`;
  return s;
}

/** The plan laid out for a person; every string in it (names, messages and addresses from the cluster) goes through terminalText first. */
export function renderPlan(view: PlanView): string {
  const v = printable(view);
  const out: string[] = [];
  out.push(`Dry run of ApiServerUpgrade ${v.name} (${v.source === 'file' ? 'from a file' : 'as stored in the cluster'}) -> ${v.targetVersion}: nothing was written, no driver was called.\n`);

  let inv = `Inventory (${v.inventory.length} kube-apiserver(s), each reached directly as the operator does):\n`;
  inv += v.inventory.length === 0 ? '  none found (no identity Leases in kube-system)\n' : table(['HOSTNAME', 'ADDRESS', 'VERSION', 'READY', 'GATE', 'LEASE', 'PROBLEMS'],
    v.inventory.map((r) => [r.hostname, r.address, r.version, r.ready === undefined ? undefined : String(r.ready), r.proxyGate, r.stale ? 'stale' : 'fresh', truncate(r.problems.join('; '), 80)]), '  ');
  if (v.inventory.length > 0) inv += `  ${renderLeaderElection(v.inventory.map((r) => ({ hostname: r.hostname || r.address || '?', state: r.coordinatedLeaderElection })))}`;
  if (v.discovery) inv += `  discovery: ${v.discovery.converged ? 'converged' : 'not converged'} (${truncate(v.discovery.message, 120)})\n`;
  for (const s of v.storage) inv += `  storage version hashes of ${s.version}: read from ${s.server} (${s.resources} resources)\n`;
  out.push(inv);
  if (v.components !== undefined) {
    out.push('error' in v.components
      ? `Control plane components: not listed (${truncate(v.components.error, 160)}): preflight refuses while their versions are unknown\n`
      : v.components.length === 0 ? 'Control plane components: no kube-controller-manager or kube-scheduler Pod in kube-system (not checked)\n' : renderComponents(v.components));
  }

  const pf = v.preflight;
  out.push(pf ? `Preflight: ${pf.reason} (PreflightPassed=${pf.status})\n  ${pf.message}\n` : `Preflight: not run (phase ${v.phase})\n`);

  out.push(renderStart(v.start));

  if (v.trust) out.push(renderTrust(v.trust.report, v.trust.verdict));
  if (v.coverage) out.push(renderCoverage(v.coverage));

  if (v.batches.length > 0) {
    let s = `Plan (status.plan, frozen at preflight): from ${v.fromVersion ?? '?'}, ${v.batches.length} batch(es) of batchSize ${v.batchSize ?? '?'}\n`;
    const staged = v.batches.some((b) => b.stage !== undefined);
    s += staged
      ? table(['BATCH', 'SERVERS', 'STAGE'], v.batches.map((b) => [b.index, b.servers.join(', '), `${b.stage ?? ''}${b.emulatedVersion ? ` (emulating ${b.emulatedVersion})` : ''}`]), '  ')
      : table(['BATCH', 'SERVERS'], v.batches.map((b) => [b.index, b.servers.join(', ')]), '  ');
    if (v.gateTurnedOn.length > 0) s += `  the proxy gate is off on ${v.gateTurnedOn.join(', ')}: it is turned on there first, server by server (batch "gate")\n`;
    out.push(s);
  } else {
    out.push(`Plan: none (the run stops in phase ${v.phase})\n`);
  }

  if (v.firstCalls.length > 0) {
    out.push('Now: the operator would first call the driver with\n' + table(['BATCH', 'ACTION', 'SERVER', 'TARGET', 'GATES', 'KEY'],
      v.firstCalls.map((c) => [batchLabel(c.batch), c.action, c.server, targetOf(c), gates(c.featureGates), c.idempotencyKey]), '  '));
  } else {
    out.push(`Now: no driver call (the run stops in phase ${v.phase}).\n`);
  }

  const pr = v.projection;
  if (pr) {
    const head = `Projected calls (the planner stepped on a simulated fleet where each call lands at once, every check is healthy, every gate holds and a window is open${pr.assumedResumed ? ', after spec.paused is set to false' : ''}; it ends ${pr.phase}):\n`;
    let s = head + table(['#', 'BATCH', 'ACTION', 'SERVER', 'TARGET', 'GATES', 'KEY'],
      pr.calls.map((c, n) => [n + 1, batchLabel(c.batch), c.action, c.server, targetOf(c), gates(c.featureGates), c.idempotencyKey]), '  ');
    const firstOfBatch = pr.calls.filter((c, n) => pr.calls.findIndex((x) => x.batch === c.batch) === n);
    for (const c of firstOfBatch) {
      if ('webhook' in c.payload) {
        const w = c.payload.webhook;
        s += `\n  batch ${batchLabel(c.batch)}, first call (${c.action} ${c.server}): POST ${w.url}\n`;
        s += indent(Object.entries(w.headers).map(([k, val]) => `${k}: ${val}`).join('\n'), '    ') + '\n';
        s += indent(JSON.stringify(w.body, null, 2), '    ') + '\n';
      } else if ('refused' in c.payload.staticPod) {
        s += `\n  batch ${batchLabel(c.batch)}, first call (${c.action} ${c.server}): refused before any Job: ${c.payload.staticPod.refused}\n`;
      } else {
        const job = c.payload.staticPod.job as { metadata?: { name?: string; namespace?: string } };
        s += `\n  batch ${batchLabel(c.batch)}, first call (${c.action} ${c.server}): Job ${job.metadata?.namespace ?? ''}/${job.metadata?.name ?? ''} (the whole Job: -o yaml)\n`;
      }
    }
    out.push(s);
  }

  if (v.events.length > 0) {
    out.push('Events it would record now:\n' + table(['TYPE', 'REASON', 'NOTE'], v.events.map((e) => [e.type, e.reason, truncate(e.note, 120)]), '  '));
  }
  if (v.notes.length > 0) out.push('Notes:\n' + v.notes.map((n) => `  - ${n}\n`).join(''));
  return out.join('\n');
}
