import { classifyUpgrade, minorOf, sameRelease } from './version.ts';
import { isUp } from './peers.ts';
import { PROXY_GATE, type PlanContext } from './context.ts';
import { freezePlan, observedStorage } from './frozen-plan.ts';
import type { ObservedStorage } from './observation.ts';
import { proxyWanted, reportTrust, trustRefusal } from './trust.ts';
import { freezeCoverage } from './coverage.ts';
import { reportKubeadmPreflight } from './kubeadm-preflight.ts';
import { flagProofPreflight } from './flag-proof-gate.ts';
import { emulationRange, proxyGateFact } from './version-facts.ts';
import type { KubeadmFinding, KubeadmPreflightReport } from '../api/types.generated.ts';
import { ACCEPTABLE_RISKS } from '../api/vocabulary.ts';
import { componentPreflight } from './component-skew.ts';
import { preflightRoster } from './preflight-roster.ts';

/** Preflight failures that retrying cannot fix: the plan itself is wrong for this fleet. */
const FATAL = new Set(['Downgrade', 'SkipsMinor', 'MajorVersionChange', 'PrereleaseTarget', 'InvalidTargetVersion', 'TwoPhaseNeedsMinorUpgrade', 'CannotEmulate', 'VersionFactsUnknown']);

/**
 * The oldest target this operator runs a TwoPhase upgrade to: compatibility versions went beta in 1.33. Which
 * minors a target emulates is a fact of its release (src/plan/version-facts.ts; v1.35.4's --help says 1.32..1.35).
 */
const EMULATION_MIN_TARGET_MINOR = 33;

interface PreflightVerdict {
  ok: boolean;
  reason: string;
  message: string;
  fromVersion?: string;
  alreadyAtTarget?: boolean;
  needsProxyPass?: boolean;
  fromStorage?: ObservedStorage;
  fromResources?: string[];
}

/** Checks the version-skew policy, the fleet's health and the proxy prerequisites. Touches nothing. */
export function checkPreflight(ctx: PlanContext): PreflightVerdict {
  const peers = ctx.obs.peers;
  const target = ctx.spec.targetVersion;
  if (peers.length === 0) return { ok: false, reason: 'NoServers', message: 'no kube-apiserver identity Leases found in kube-system' };
  const down = peers.filter((p) => !isUp(p));
  if (down.length > 0) {
    const why = down.map((p) => `${p.hostname} (${p.stale ? 'stale lease' : !p.ready ? 'not ready' : 'no /version'})`).join(', ');
    return { ok: false, reason: 'UnhealthyFleet', message: `every server must be healthy before an upgrade starts; not healthy: ${why}` };
  }
  // One release, whatever build metadata or vendor suffix each server reports (docs/versions.md).
  const versions: string[] = [];
  for (const p of peers) if (!versions.some((v) => sameRelease(p.version!, v))) versions.push(p.version!);
  versions.sort();
  if (versions.length > 1) {
    const detail = versions.map((v) => `${v} (${peers.filter((p) => sameRelease(p.version!, v)).map((p) => p.hostname).join(', ')})`).join(' and ');
    return { ok: false, reason: 'MixedVersions', message: `servers run ${detail}; an upgrade starts from one version` };
  }
  const fromVersion = versions[0]!;
  const skew = classifyUpgrade(fromVersion, target, { allowPrerelease: ctx.spec.allowPrerelease });
  if (!skew.ok) return { ok: false, reason: skew.reason, message: skew.message };
  if (skew.kind === 'none') return { ok: true, reason: 'AlreadyAtTarget', message: `every server already runs ${target}`, fromVersion, alreadyAtTarget: true };
  // kube-controller-manager and kube-scheduler must never be newer than the servers (docs/version-skew.md).
  const components = componentPreflight(ctx.obs.components, target);
  if (!components.ok) return { ok: false, reason: components.reason, message: components.message };
  const gateFact = proxyGateFact(target);
  if (ctx.spec.proxy.revertAfter && ctx.spec.proxy.gate !== 'Unmanaged' && !gateFact.known) {
    return { ok: false, reason: 'VersionFactsUnknown', message: `proxy.revertAfter turns the ${PROXY_GATE} gate off after the upgrade where ${target} has it off by default, and that default is unknown: ${gateFact.message}. Set proxy.revertAfter false (the gate stays as the upgrade left it), or use an operator release that knows ${minorOf(target)}` };
  }
  const fromStorage = observedStorage(ctx, fromVersion);
  if (!fromStorage) {
    return {
      ok: false,
      reason: 'StorageVersionsUnknown',
      message: `waiting to read the storage version hashes of ${fromVersion} from a server running it: without them a rollback could not be judged safe once the old servers are gone`,
    };
  }
  let fromResources: string[] | undefined;
  if (ctx.spec.strategy.phases === 'TwoPhase') {
    const two = checkTwoPhase(ctx, fromVersion, skew.kind);
    if (!two.ok) return two;
    fromResources = two.fromResources;
  }
  const minorChange = skew.kind === 'minor';
  const gateOff = peers.filter((p) => p.proxyGate === 'off').map((p) => p.hostname);
  const gateUnknown = peers.filter((p) => p.proxyGate === 'unknown').map((p) => p.hostname);
  const mode = ctx.spec.proxy.gate;
  const proxyMatters = mode === 'Enabled' || (mode === 'Auto' && minorChange);
  if (proxyMatters && gateUnknown.length > 0) {
    return { ok: false, reason: 'ProxyGateUnknown', message: `cannot tell whether ${gateUnknown.join(', ')} run the ${PROXY_GATE} gate (kubernetes_feature_enabled missing from /metrics)` };
  }
  const needsProxyPass = proxyMatters && gateOff.length > 0;
  const consent = alphaGateConsent({ needsProxyPass, fromVersion, allowAlphaGate: ctx.spec.proxy.allowAlphaGate, gateOff });
  if (!consent.ok) return consent;
  let message = `${peers.length} servers on ${fromVersion}; ${minorChange ? 'minor upgrade' : 'patch upgrade'} to ${target}`;
  if (needsProxyPass) message += `; the proxy gate will be turned on first on ${gateOff.join(', ')}`;
  if (mode === 'Unmanaged' && minorChange && gateOff.length > 0) {
    message += `; WARNING: proxy gate off on ${gateOff.join(', ')} and proxy.gate is Unmanaged: clients sent to old servers get 404 for new resources during the upgrade`;
  }
  if (components.note) message += `; ${components.note}`;
  if (fromResources) message += `; TwoPhase: phase one runs ${target} emulating ${minorOf(fromVersion)}, phase two lifts the emulation`;
  return { ok: true, reason: 'Passed', message, fromVersion, needsProxyPass, fromStorage, ...(fromResources ? { fromResources } : {}) };
}

/**
 * Consent for an alpha gate: through v1.35 UnknownVersionInteroperabilityProxy is alpha (off by default, may
 * change without notice, outside most vendors' support). The operator turns it on only where the spec says so
 * (proxy.allowAlphaGate); otherwise preflight waits, touching nothing, and says what is missing and why. A spec
 * edit lets it go on: the verdict is not fatal.
 */
export function alphaGateConsent(o: { needsProxyPass: boolean; fromVersion: string; allowAlphaGate: boolean; gateOff: string[] }): { ok: true } | { ok: false; reason: 'AlphaGateNotAllowed'; message: string } {
  if (!o.needsProxyPass || o.allowAlphaGate) return { ok: true };
  // Unknown is unsafe: a minor newer than the facts this operator holds asks for consent too.
  const fact = proxyGateFact(o.fromVersion);
  if (fact.known && fact.preRelease !== 'Alpha') return { ok: true };
  const stage = fact.known ? `alpha on ${o.fromVersion} (beta from v1.36)` : `of unknown maturity on ${o.fromVersion} (${fact.message})`;
  return {
    ok: false,
    reason: 'AlphaGateNotAllowed',
    message:
      `the ${PROXY_GATE} gate is off on ${o.gateOff.join(', ')} and ${stage}: turning it on runs an alpha feature on production servers, ` +
      'which upstream may change or remove and most vendors do not support. Set spec.proxy.allowAlphaGate: true to consent, ' +
      'or proxy.gate: Unmanaged to upgrade without the proxy (clients sent to old servers get 404 for resources only the new version serves) (docs/versions.md)',
  };
}

/** A TwoPhase plan needs a minor upgrade, a target binary that can emulate the from-version, and the from-version's own discovery. */
function checkTwoPhase(ctx: PlanContext, fromVersion: string, kind: 'patch' | 'minor'): { ok: true; fromResources: string[] } | PreflightVerdict {
  const target = ctx.spec.targetVersion;
  if (kind !== 'minor') {
    return { ok: false, reason: 'TwoPhaseNeedsMinorUpgrade', message: `${fromVersion} -> ${target} keeps the minor version: there is no API change to split off; use strategy.phases OnePhase` };
  }
  const from = minorOf(fromVersion) ?? '0.0';
  const range = emulationRange(target);
  const minorNumber = (m: string): number => Number(m.split('.')[1]);
  if (!range.known) {
    return { ok: false, reason: 'CannotEmulate', message: `whether ${target} runs with --emulated-version=${from} is unknown, so TwoPhase is refused: ${range.message}` };
  }
  if (minorNumber(range.ceiling) < EMULATION_MIN_TARGET_MINOR || minorNumber(from) < minorNumber(range.floor)) {
    return { ok: false, reason: 'CannotEmulate', message: `${target} cannot run with --emulated-version=${from}: it emulates ${range.floor}..${range.ceiling}, and TwoPhase needs a target of v1.${EMULATION_MIN_TARGET_MINOR} or newer` };
  }
  const own = ctx.obs.discovery?.own?.find((o) => sameRelease(o.version, fromVersion) && (o.emulation ?? minorOf(o.version)) === minorOf(fromVersion));
  if (!own) {
    return { ok: false, reason: 'DiscoveryUnknown', message: `waiting to read the own discovery of a ${fromVersion} server: phase one checks that the emulating servers serve exactly these resources` };
  }
  return { ok: true, fromResources: [...own.resources].sort() };
}

/**
 * Runs preflight and, when it passes, freezes the plan. Touches nothing on the fleet, so it also runs for an
 * upgrade created paused: the plan is shown for review before anything is called.
 */
export function runPreflight(ctx: PlanContext): void {
  const roster = preflightRoster(ctx.status.peers, ctx.obs.peers, ctx.now);
  ctx.status.peers = roster.rows;
  for (const d of roster.dropped) {
    ctx.event('Warning', 'ServerRemoved', `${d.hostname} has had no identity Lease since ${d.since}: counted as removed; back before the plan is made, it is counted again, and after, the upgrade pauses MembershipChanged`, d.hostname);
  }
  let v = checkPreflight(ctx);
  // A server an earlier look saw and this one does not is restarting or removed: the fleet is not the one observed.
  if (roster.missing.length > 0 && (v.ok || !FATAL.has(v.reason))) {
    const missing = roster.missing.map((m) => `${m.hostname} (no identity Lease since ${m.since})`).join(', ');
    const message = v.ok ? `every server must be healthy before an upgrade starts; not healthy: ${missing}` : v.reason === 'UnhealthyFleet' ? `${v.message}, ${missing}` : `every server must be healthy before an upgrade starts; not healthy: ${missing}; ${v.message}`;
    v = { ok: false, reason: 'UnhealthyFleet', message };
  }
  // The proxy's trust checks (docs/trust.md): reported whenever read; they stop the upgrade only when the spec says so.
  const trust = reportTrust(ctx);
  const refusal = v.ok && !v.alreadyAtTarget ? trustRefusal(trust, ctx.spec.trust.requireAllowedNames) : undefined;
  if (refusal) v = { ok: false, ...refusal };
  // The kubeadm checks (docs/kubeadm-runbook.md): reported whenever read; a blocking finding stops a run that would change a server.
  const kubeadm = reportKubeadmPreflight(ctx);
  let accepted: KubeadmFinding[] = [];
  if (v.ok && !v.alreadyAtTarget && kubeadm && (kubeadm.report.blocking ?? 0) > 0) {
    const verdict = acceptedBlockers(kubeadm.report, ctx.spec.acceptRisks);
    if (verdict.open.length > 0) {
      const first = verdict.open[0]!;
      const more = verdict.open.length > 1 ? `; ${verdict.open.length - 1} more blocking finding(s) not accepted` : '';
      const message = verdict.unshown || verdict.accepted.length === 0 ? `kubeadm preflight: ${kubeadm.condition.message}` : `kubeadm preflight: ${first.object}: ${first.message}${more}${verdict.accepted.length ? ` (accepted: ${[...new Set(verdict.accepted.map((f) => f.reason))].join(', ')})` : ''}`;
      v = { ok: false, reason: 'KubeadmPreflightFailed', message };
    } else {
      accepted = verdict.accepted;
    }
  }
  // The flag proof (docs/flag-proof.md): the static Pod driver's nodes each prove their command line on the target
  // binary, beside the other checks (a flag the old binary refuses too keeps its server down: the fleet is unhealthy,
  // and the proof names the flag); not for a plan that cannot run. Not applicable to the webhook driver (status.flagProof says so).
  if (ctx.spec.driver.kind !== 'staticPod' || (!v.alreadyAtTarget && (v.ok || !FATAL.has(v.reason)))) {
    const proof = flagProofPreflight(ctx);
    if (!proof.ok && v.ok) v = { ok: false, reason: proof.reason, message: `flag proof: ${proof.message}` };
    else if (!proof.ok && ctx.status.flagProof?.state === 'Blocked') v = { ...v, message: `${v.message}; flag proof: ${proof.message}` };
  }
  if (!v.ok) {
    ctx.condition({ type: 'PreflightPassed', status: 'False', reason: v.reason, message: v.message });
    if (FATAL.has(v.reason)) {
      ctx.setPhase('Failed');
      ctx.status.completedAt = ctx.now.toISOString();
      ctx.condition({ type: 'Progressing', status: 'False', reason: v.reason, message: v.message });
      ctx.condition({ type: 'Complete', status: 'False', reason: v.reason, message: v.message });
      ctx.event('Warning', 'PreflightFailed', v.message);
    } else {
      // The fleet may recover (a server restarting, a lease expiring): check again, touching nothing.
      ctx.progressMessage = `preflight: ${v.message}`;
      ctx.wait(v.reason, `preflight: ${v.message}`);
      ctx.requeue(Math.max(ctx.spec.analysis.intervalMs, 5_000));
    }
    return;
  }
  const from = v.fromVersion!;
  ctx.status.fromVersion = from;
  ctx.status.targetVersion = ctx.spec.targetVersion;
  if (v.alreadyAtTarget) {
    ctx.status.peers = [...ctx.obs.peers].sort((a, b) => a.hostname.localeCompare(b.hostname)).map((p) => ({ identity: p.identity, hostname: p.hostname, ready: p.ready, ...(p.version ? { version: p.version } : {}), state: 'Upgraded' }));
    ctx.condition({ type: 'PreflightPassed', status: 'True', reason: 'AlreadyAtTarget', message: v.message });
    finishSucceeded(ctx, v.message);
    ctx.event('Normal', 'AlreadyAtTarget', v.message);
    return;
  }
  if (accepted.length > 0) {
    recordAcceptedRisks(ctx, accepted);
    v = { ...v, message: `${v.message}; accepted risks: ${[...new Set(accepted.map((f) => f.reason))].join(', ')}` };
  }
  ctx.status.plan = freezePlan(ctx, from, v.fromStorage!);
  if (v.fromResources) ctx.status.plan.fromResources = v.fromResources;
  // Fixed with the plan, so a restart does not recompute it from a fleet already half replaced.
  ctx.status.coverage = freezeCoverage(ctx, from, proxyWanted(ctx) || ctx.obs.peers.every((p) => p.proxyGate === 'on'));
  const total = ctx.status.plan.batches?.length ?? 0;
  ctx.status.batch = { current: 0, total, progress: `0/${total}`, history: [] };
  ctx.condition({ type: 'PreflightPassed', status: 'True', reason: 'Passed', message: v.message });
  ctx.event('Normal', 'PreflightPassed', `${v.message}; ${total} batch(es): ${(ctx.status.plan.batches ?? []).map((b) => b.servers.join('+')).join(', ')}`);
  ctx.setPhase(v.needsProxyPass ? 'EnablingProxy' : 'Upgrading');
  ctx.requeue(0);
}

/**
 * The blocking findings of a kubeadm report against spec.acceptRisks: those accepted by name (only the names
 * ACCEPTABLE_RISKS allows: a hard rule named in an object stored before the CRD refused it counts for nothing) and
 * those still open. Blocking findings the bounded list does not show are open: what was not seen was not accepted.
 */
export function acceptedBlockers(report: KubeadmPreflightReport, acceptRisks: readonly string[]): { accepted: KubeadmFinding[]; open: KubeadmFinding[]; unshown: boolean } {
  const ok = new Set(acceptRisks.filter((r) => (ACCEPTABLE_RISKS as readonly string[]).includes(r)));
  const blockers = (report.findings ?? []).filter((f) => f.severity === 'Block');
  const unshown = (report.blocking ?? 0) > blockers.length;
  const accepted = blockers.filter((f) => ok.has(f.reason ?? ''));
  const open = blockers.filter((f) => !ok.has(f.reason ?? ''));
  return { accepted, open: unshown && open.length === 0 ? blockers : open, unshown };
}

/**
 * status.acceptedRisks gets each accepted finding once (by reason and object), with its value then and the generation
 * whose spec accepted it; a Warning Event says so once, when it is first accepted.
 */
function recordAcceptedRisks(ctx: PlanContext, accepted: readonly KubeadmFinding[]): void {
  const rows = [...(ctx.status.acceptedRisks ?? [])];
  for (const f of accepted) {
    const name = f.reason ?? '';
    if (rows.some((r) => r.name === name && r.object === f.object)) continue;
    rows.push({ name, object: (f.object ?? '').slice(0, 512), value: (f.message ?? '').slice(0, 1024), generation: ctx.upgrade.generation, time: ctx.now.toISOString() });
    ctx.event('Warning', 'RiskAccepted', `${name} accepted by spec.acceptRisks (generation ${ctx.upgrade.generation}): ${f.object}: ${f.message}`);
  }
  ctx.status.acceptedRisks = rows.slice(-64);
}

/** The one way an upgrade ends Succeeded: phase, time, and the Complete and Progressing conditions. */
export function finishSucceeded(ctx: PlanContext, message: string): void {
  ctx.setPhase('Succeeded');
  ctx.status.completedAt = ctx.now.toISOString();
  ctx.condition({ type: 'Complete', status: 'True', reason: 'Succeeded', message });
  ctx.condition({ type: 'Progressing', status: 'False', reason: 'Succeeded', message });
}
