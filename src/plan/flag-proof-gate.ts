/**
 * The flag proof in the upgrade (docs/flag-proof.md): before the first call of the static Pod driver, the target
 * binary on every node proves it accepts the command line that node's call would give it; before each Upgrade call,
 * a node whose command line (or target image) changed since is proven again. Every decision here is pure: the shell
 * reads the nodes' command lines and the proof Jobs (src/controller/flag-proof-reads.ts) and creates the Jobs asked for.
 *
 * What lives in status.flagProof, one row per node: the proof's key, the command line proven, the verdict. A verdict
 * for a key is final (Accepted, Refused, Inconclusive): the same command line on the same image gets the same answer,
 * so a Job deleted after its verdict changes nothing. NotRun (the image not pulled, the Job not there) is read again
 * at every step; a Job deleted before its verdict is created again.
 */
import type { ApiServerUpgradeStatus, FlagProofNode, FlagProofReport } from '../api/types.generated.ts';
import type { ResolvedSpec } from '../api/defaults.ts';
import { FLAG_PROOF_COMMAND_MAX_ITEMS, FLAG_PROOF_ENTRY_MAX_CHARS } from '../api/schema-status.ts';
import type { PlanContext } from './context.ts';
import type { ObservedPeer } from './observation.ts';
import type { ObservedFlagProof, ObservedProofJob, ObservedProofWant } from './observed-preflight.ts';
import type { ProofJobRequest } from './actions.ts';
import { FLAG_PROOF_REASONS, flagProofFindings, needsProofAgain, type NodeProof, type ProofVerdict } from './flag-proof.ts';
import { classifyUpgrade, sameRelease } from './version.ts';
import { stageDefs } from './frozen-plan.ts';
import { safeMessage } from './redact.ts';

/** The condition the flag proof writes at preflight (True: every node Accepted). */
export const FLAG_PROOF_CONDITION = 'FlagProofPassed' as const;
/** Preflight's reason while a node has no verdict yet. */
export const FLAG_PROOF_PENDING = 'FlagProofPending';
/** How soon a step that waits for a proof looks again: a proof takes seconds (docs/flag-proof.md). */
export const PROOF_POLL_MS = 2_000;

/** The call whose command line is proven on one node: what the shell builds the node's proof from. */
export interface ProofRequest {
  hostname: string;
  /** The server's ip:port (the call's `--peer-advertise-*`); absent: not known, the proof cannot be built. */
  address?: string;
  /** The proxy gate the Upgrade call sets; absent: left as the manifest has it. */
  gate?: boolean;
  /** `--emulated-version` the call sets; absent: removed. */
  emulatedVersion?: string;
  targetVersion: string;
}

/** The proxy gate an Upgrade call sets (gate-pass.ts replacementGate's rule, from a from-version that may not be recorded yet). */
export function upgradeGate(spec: Pick<ResolvedSpec, 'proxy' | 'targetVersion' | 'allowPrerelease'>, fromVersion: string | undefined): boolean | undefined {
  const mode = spec.proxy.gate;
  if (mode === 'Unmanaged') return undefined;
  if (mode === 'Enabled' || fromVersion === undefined) return true;
  const kind = classifyUpgrade(fromVersion, spec.targetVersion, { allowPrerelease: spec.allowPrerelease });
  return kind.ok && kind.kind === 'patch' ? undefined : true;
}

/** The one release every server reports (status.fromVersion before preflight recorded it); undefined when mixed or unknown. */
function commonVersion(peers: readonly ObservedPeer[]): string | undefined {
  const first = peers.find((p) => p.version !== undefined)?.version;
  if (first === undefined || peers.some((p) => p.version === undefined || !sameRelease(p.version, first))) return undefined;
  return first;
}

/**
 * For the static Pod driver, each node's next Upgrade call as its proof must see it: the gate, the emulated version
 * of the first batch not yet started before it that holds the node (before the plan is frozen: the first stage's),
 * the address. Empty for any other driver.
 */
export function proofRequests(spec: ResolvedSpec, status: ApiServerUpgradeStatus | undefined, peers: readonly ObservedPeer[], mirrorNodes: readonly string[] = []): ProofRequest[] {
  if (spec.driver.kind !== 'staticPod') return [];
  const from = status?.fromVersion ?? commonVersion(peers);
  const gate = upgradeGate(spec, from);
  const current = Math.max(status?.batch?.current ?? 1, 1);
  const batches = status?.plan?.batches;
  const hosts = new Set<string>([...peers.map((p) => p.hostname), ...(status?.peers ?? []).map((p) => p.hostname)]);
  // A node running a kube-apiserver static Pod whose server is not seen (down since before the upgrade: no identity
  // Lease) is a control-plane node too: proven all the same.
  const known = new Set([...hosts].map((h) => h.toLowerCase()));
  for (const n of mirrorNodes) if (!known.has(n.toLowerCase())) hosts.add(n);
  return [...hosts].sort().map((hostname) => {
    let emulatedVersion: string | undefined;
    if (batches !== undefined) {
      emulatedVersion = batches.find((b) => b.index >= current && b.servers.includes(hostname))?.emulatedVersion;
    } else if (from !== undefined) {
      emulatedVersion = stageDefs(spec.strategy.phases, from)[0]?.emulatedVersion;
    }
    const address = peers.find((p) => p.hostname === hostname)?.address ?? status?.peers?.find((p) => p.hostname === hostname)?.address;
    return { hostname, targetVersion: spec.targetVersion, ...(address === undefined ? {} : { address }), ...(gate === undefined ? {} : { gate }), ...(emulatedVersion === undefined ? {} : { emulatedVersion }) };
  });
}

const FINAL: ReadonlySet<string> = new Set(['Accepted', 'Refused', 'Inconclusive']);

/** A row's message: the binary's or the shell's words, made safe and cut to the field's size. */
const said = (text: string): string => safeMessage(text, { maxChars: 1024 });

/** A row from a proof read off its Job's Pod. */
function rowOfProof(base: FlagProofNode, p: NodeProof): FlagProofNode {
  if ('notRun' in p) return { ...base, result: 'NotRun', message: said(p.notRun) };
  const v = p.verdict;
  if (v.result === 'Accepted') return { ...base, result: 'Accepted', ...(v.warnings.length > 0 ? { message: said(v.warnings.join('; ')) } : {}) };
  if (v.result === 'Inconclusive') return { ...base, result: 'Inconclusive', message: said(v.message) };
  return { ...base, result: 'Refused', message: said(v.message), ...(v.flag === undefined ? {} : { flag: v.flag.slice(0, 256) }), ...(v.item === undefined ? {} : { item: v.item.slice(0, 256) }) };
}

/** Why a command line cannot be recorded in status (so not proven: its row could not say what was). */
function unrecordable(command: readonly string[]): string | undefined {
  if (command.length > FLAG_PROOF_COMMAND_MAX_ITEMS) return `the command line has ${command.length} entries, more than the ${FLAG_PROOF_COMMAND_MAX_ITEMS} status.flagProof records`;
  const long = command.findIndex((e) => e.length > FLAG_PROOF_ENTRY_MAX_CHARS);
  if (long >= 0) return `entry ${long + 1} of the command line is longer than the ${FLAG_PROOF_ENTRY_MAX_CHARS} characters status.flagProof records`;
  return undefined;
}

/**
 * One node's row: from its want (what its call would prove now), the upgrade's proof Jobs and its row before.
 * `create`: the proof Job to create (none of the want's key is there and no verdict for it is recorded).
 */
export function nodeProofRow(hostname: string, want: ObservedProofWant | undefined, jobs: readonly ObservedProofJob[], before: FlagProofNode | undefined, now: string): { row: FlagProofNode; create?: Omit<ProofJobRequest, 'targetVersion'> } {
  if (want === undefined) return { row: { hostname, result: 'NotRun', message: `the command line of ${hostname}'s kube-apiserver was not read` } };
  if ('error' in want) return { row: { hostname, result: 'NotRun', message: said(want.error) } };
  const tooLong = unrecordable(want.command);
  if (tooLong !== undefined) return { row: { hostname, result: 'NotRun', message: tooLong } };
  // The verdict recorded stands for exactly the command line it proved (and the key: the image, the node, the upgrade).
  if (before !== undefined && before.key === want.key && !needsProofAgain(before.command, want.command) && FINAL.has(before.result)) return { row: before };
  const job = jobs.find((j) => j.key === want.key && j.hostname === hostname);
  const sameKey = before !== undefined && before.key === want.key;
  const base: FlagProofNode = {
    hostname, result: 'Pending', key: want.key, image: want.image, command: [...want.command],
    requestedAt: sameKey && before.requestedAt !== undefined ? before.requestedAt : now,
    ...(job !== undefined ? { job: job.name.slice(0, 63) } : {}),
  };
  if (job === undefined) {
    return { row: { ...base, requestedAt: now }, create: { hostname, key: want.key, image: want.image, command: [...want.command] } };
  }
  if (job.proof === undefined) return { row: base };
  const row = rowOfProof(base, job.proof);
  return { row: { ...row, provenAt: sameKey && before.result === row.result && before.provenAt !== undefined ? before.provenAt : now } };
}

/** The proof a row records, as flagProofFindings reads one (undefined: no verdict yet). */
function proofOfRow(r: FlagProofNode): NodeProof | undefined {
  const hostname = r.hostname;
  const message = r.message ?? '';
  let verdict: ProofVerdict;
  if (r.result === 'Pending') return undefined;
  if (r.result === 'NotRun') return { hostname, notRun: message };
  if (r.result === 'Accepted') verdict = { result: 'Accepted', warnings: message === '' ? [] : [message] };
  else if (r.result === 'Inconclusive') verdict = { result: 'Inconclusive', message };
  else verdict = { result: 'Refused', message, ...(r.flag === undefined ? {} : { flag: r.flag }), ...(r.item === undefined ? {} : { item: r.item }) };
  return { hostname, verdict };
}

/** A blocking row as a finding: the node, the flag and item, the binary's message (flagProofFindings' words). */
export function rowFinding(r: FlagProofNode, targetVersion: string): { reason: string; message: string } | undefined {
  const p = proofOfRow(r);
  if (p === undefined) return undefined;
  const f = flagProofFindings([r.hostname], [p], targetVersion).find((x) => x.severity === 'Block');
  return f === undefined ? undefined : { reason: f.reason, message: f.message };
}

/** The state of the rows: Blocked on any Refused, Inconclusive or NotRun; Proving while one is Pending; else Passed. */
export function proofState(rows: readonly FlagProofNode[]): 'Passed' | 'Proving' | 'Blocked' {
  if (rows.some((r) => r.result === 'Refused' || r.result === 'Inconclusive' || r.result === 'NotRun')) return 'Blocked';
  if (rows.some((r) => r.result === 'Pending')) return 'Proving';
  return 'Passed';
}

/** The step over every node to prove: the rows, the Jobs to create, the report and preflight's verdict. */
export function flagProofStep(hostnames: readonly string[], observed: ObservedFlagProof | undefined, before: FlagProofReport | undefined, now: Date, targetVersion: string): { report: FlagProofReport; create: ProofJobRequest[]; reason: string; message: string } {
  const at = now.toISOString();
  const wants = observed === undefined || 'error' in observed ? [] : observed.wants;
  const jobs = observed === undefined || 'error' in observed ? [] : observed.jobs;
  const unread = observed === undefined ? 'the nodes\' command lines and the proof Jobs were not read' : 'error' in observed ? `reading the nodes' command lines and the proof Jobs failed: ${observed.error}` : undefined;
  const rows: FlagProofNode[] = [];
  const create: ProofJobRequest[] = [];
  for (const h of [...hostnames].sort()) {
    const prior = before?.nodes?.find((r) => r.hostname === h);
    if (unread !== undefined) {
      // Unknown is unsafe: a verdict recorded before stands only for the command line it proved, which is not known now.
      rows.push({ hostname: h, result: 'NotRun', message: said(unread) });
      continue;
    }
    const got = nodeProofRow(h, wants.find((w) => w.hostname === h), jobs, prior, at);
    rows.push(got.row);
    if (got.create) create.push({ ...got.create, targetVersion });
  }
  const state = proofState(rows);
  let reason: string = state === 'Passed' ? 'Passed' : FLAG_PROOF_PENDING;
  let message: string;
  if (state === 'Blocked') {
    const first = rows.map((r) => rowFinding(r, targetVersion)).find((f) => f !== undefined)!;
    const more = rows.filter((r) => rowFinding(r, targetVersion) !== undefined).length - 1;
    reason = first.reason;
    message = `${first.message}${more > 0 ? `; ${more} more node(s) blocked (status.flagProof)` : ''}`;
  } else if (state === 'Proving') {
    const pending = rows.filter((r) => r.result === 'Pending').map((r) => r.hostname);
    message = `proving each node's command line against ${targetVersion}: waiting for the verdict of ${pending.join(', ')}`;
  } else {
    message = `${targetVersion} accepts the command line of every node (${rows.length})`;
  }
  return { report: { state, message: said(message), nodes: rows }, create, reason, message: said(message) };
}

/**
 * Whether the shell must read the proof Jobs: some node's want has no final verdict for its key in status. When every
 * node's command line was proven as it is now, the Jobs are not listed (an upgrade under way makes no LIST for them).
 */
export function proofJobsNeeded(status: ApiServerUpgradeStatus | undefined, wants: readonly ObservedProofWant[]): boolean {
  const rows = status?.flagProof?.nodes ?? [];
  return wants.some((w) => 'error' in w || !rows.some((r) => r.hostname === w.hostname && r.key === w.key && FINAL.has(r.result)));
}

/** Events for rows whose result changed to a blocking one, naming the node, the flag and the message. */
function rowEvents(ctx: PlanContext, rows: readonly FlagProofNode[], before: FlagProofReport | undefined): void {
  for (const r of rows) {
    const prior = before?.nodes?.find((x) => x.hostname === r.hostname);
    if (prior?.result === r.result && prior.key === r.key) continue;
    const f = rowFinding(r, ctx.spec.targetVersion);
    if (f !== undefined) ctx.event('Warning', f.reason, f.message);
  }
}

/** Asks the shell for the proof Jobs. */
function requestJobs(ctx: PlanContext, create: readonly ProofJobRequest[]): void {
  for (const proof of create) ctx.actions.push({ kind: 'proveFlags', proof });
}

/**
 * At preflight: proves every node's command line (the static Pod driver), writes status.flagProof and the
 * FlagProofPassed condition, and returns preflight's verdict: ok once every node Accepted; otherwise the reason
 * (FlagProofPending while a verdict is missing; a finding's reason when a node blocks) and the message. The webhook
 * driver: not applicable (the platform's hook proves the flags), said in status.flagProof.
 */
export function flagProofPreflight(ctx: PlanContext): { ok: true } | { ok: false; reason: string; message: string } {
  if (ctx.spec.driver.kind !== 'staticPod') {
    ctx.status.flagProof = { state: 'NotApplicable', message: 'the webhook driver: the platform\'s hook proves the target accepts each node\'s flags (docs/flag-proof.md)' };
    return { ok: true };
  }
  const before = ctx.status.flagProof;
  // Every server, and every node the shell found a kube-apiserver static Pod on (a want for it).
  const observed = ctx.obs.flagProof;
  const hostnames = new Set(ctx.obs.peers.map((p) => p.hostname));
  if (observed !== undefined && !('error' in observed)) for (const w of observed.wants) hostnames.add(w.hostname);
  const step = flagProofStep([...hostnames], observed, before, ctx.now, ctx.spec.targetVersion);
  ctx.status.flagProof = step.report;
  requestJobs(ctx, step.create);
  rowEvents(ctx, step.report.nodes ?? [], before);
  const passed = step.report.state === 'Passed';
  const cond = { type: FLAG_PROOF_CONDITION, status: passed ? 'True' as const : 'False' as const, reason: step.reason, message: step.message };
  const prior = ctx.status.conditions?.find((c) => c.type === FLAG_PROOF_CONDITION);
  ctx.condition(cond);
  if (passed && (prior?.status !== 'True')) ctx.event('Normal', FLAG_PROOF_CONDITION, step.message);
  if (step.report.state === 'Proving') ctx.requeue(PROOF_POLL_MS);
  return passed ? { ok: true } : { ok: false, reason: step.reason, message: step.message };
}

/**
 * Before a node's Upgrade call (the static Pod driver): the command line the call gives now must have an Accepted
 * proof. A node whose command line or target image changed since its proof is proven again (a new key: a new Job)
 * and waits; `refused` names the node, the flag and the binary's message (the caller pauses, calling nothing).
 * A want built for another call's edit (a batch started in this step) waits for the next read.
 */
export function proofBeforeCall(ctx: PlanContext, hostname: string, emulatedVersion: string | undefined, gate: boolean | undefined): { kind: 'proven' } | { kind: 'waiting'; message: string } | { kind: 'refused'; reason: string; message: string } {
  if (ctx.spec.driver.kind !== 'staticPod') return { kind: 'proven' };
  const observed = ctx.obs.flagProof;
  if (observed === undefined || 'error' in observed) {
    ctx.requeue(PROOF_POLL_MS);
    return { kind: 'waiting', message: `${hostname}: its command line is proven before its call, and ${observed === undefined ? 'it was not read' : `reading it failed: ${said(observed.error)}`}` };
  }
  const want = observed.wants.find((w) => w.hostname === hostname);
  // No command line to prove now (its mirror Pod being recreated, a read that failed): wait, calling nothing.
  if (want === undefined || 'error' in want) {
    ctx.requeue(PROOF_POLL_MS);
    return { kind: 'waiting', message: `${hostname}: its command line is proven before its call, and ${want === undefined ? 'it was not read' : said(want.error)}` };
  }
  if (want.emulatedVersion !== emulatedVersion || want.gate !== gate) {
    ctx.requeue(PROOF_POLL_MS);
    return { kind: 'waiting', message: `${hostname}: reading the command line of its next call` };
  }
  const report: FlagProofReport = ctx.status.flagProof ?? { state: 'Proving', nodes: [] };
  const before = report.nodes?.find((r) => r.hostname === hostname);
  const got = nodeProofRow(hostname, want, observed.jobs, before, ctx.now.toISOString());
  const rows = [...(report.nodes ?? []).filter((r) => r.hostname !== hostname), got.row].sort((a, b) => a.hostname.localeCompare(b.hostname));
  rowEvents(ctx, [got.row], report);
  const state = proofState(rows);
  ctx.status.flagProof = { ...report, state, nodes: rows };
  if (got.create) requestJobs(ctx, [{ ...got.create, targetVersion: ctx.spec.targetVersion }]);
  if (got.row.result === 'Accepted') return { kind: 'proven' };
  if (got.row.result === 'Pending') {
    ctx.requeue(PROOF_POLL_MS);
    return { kind: 'waiting', message: `${hostname}: its command line changed since it was proven; proving it again against ${ctx.spec.targetVersion} before its call` };
  }
  const f = rowFinding(got.row, ctx.spec.targetVersion);
  return { kind: 'refused', reason: f?.reason ?? FLAG_PROOF_REASONS.notRun, message: f?.message ?? `${hostname}: no proof` };
}
