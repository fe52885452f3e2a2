import type { PlanContext } from './context.ts';
import { callInFlight, emulationOf, failedSinceResume, landedInBatchUnderWay, serverAt } from './calls.ts';
import { isUp, peerRowFrom } from './peers.ts';
import { replanRemaining } from './frozen-plan.ts';
import { minorOf, sameRelease } from './version.ts';
import { unemulatedTargetServers } from './rollback-verdict.ts';

export interface MembershipChange {
  joined: string[];
  vanished: string[];
  /** Every server the change is about: what a resume may accept. */
  servers: string[];
  message: string;
}

/**
 * Members whose last call was an Upgrade that landed, up now on another release or emulation with nothing in
 * flight: replaced outside this upgrade after the operator's call (a node restored from an old image, a person
 * downgrading it). No batch looks at them again, and the analysis sees them healthy: without this the upgrade
 * would wait for them forever (found by the fault campaign: seed 4242 #7, Upgrading 5 minutes after every fault
 * healed, cp-1 restarted on the old binary after its batch).
 */
function regressedMembers(ctx: PlanContext, members: readonly string[]): { hostname: string; runs: string; goal: string }[] {
  const out: { hostname: string; runs: string; goal: string }[] = [];
  for (const h of members) {
    const last = (ctx.status.driverCalls ?? []).filter((c) => c.server === h).at(-1);
    if (last?.action !== 'Upgrade' || last.result !== 'Done' || !last.target || callInFlight(ctx, h)) continue;
    const p = ctx.observed(h);
    if (!p || !isUp(p) || p.version === undefined) continue;
    if (serverAt(ctx, h, last.target, undefined, last.emulatedVersion)) continue;
    const emulating = (v: string | undefined): string => (v ? ` emulating ${v}` : '');
    out.push({ hostname: h, runs: `${p.version}${emulating(p.emulation)}`, goal: `${last.target}${emulating(last.emulatedVersion)}` });
  }
  return out;
}

/**
 * Compares the servers observed with the plan's members. A server being replaced may drop its identity
 * Lease for a while (graceful stop deletes it), so a member with a call in flight is not "vanished", nor one whose
 * driver reported its call Failed since the last resume (it restarted on its restored manifest), nor one of the
 * batch under way whose replacement landed (seen on real kubelets: the new server crash-loops before it writes
 * its Lease — that is the batch's health, which the analysis counts as serverReady and onBreach acts on, not a
 * fleet change to pause on); any other difference — a new server, a member gone, a replacement back under a new
 * hostname — is a change the plan did not foresee.
 */
export function membershipChange(ctx: PlanContext): MembershipChange | undefined {
  const members = ctx.status.plan?.members;
  if (!members) return undefined;
  const seen = new Set(ctx.obs.peers.map((p) => p.hostname));
  const known = new Set(members);
  const joined = [...seen].filter((h) => !known.has(h)).sort();
  const missing = members.filter((h) => !seen.has(h));
  const vanished = missing.filter((h) => !callInFlight(ctx, h) && !failedSinceResume(ctx, h) && !landedInBatchUnderWay(ctx, h));
  // A member on a version that is neither the from-version nor the target (a joiner on an older release, say)
  // would widen the skew past what the policy allows: the plan cannot cover it.
  const from = ctx.status.fromVersion ?? '';
  const offPolicy = ctx.obs.peers.filter((p) => known.has(p.hostname) && p.version !== undefined && !sameRelease(p.version, from) && !sameRelease(p.version, ctx.spec.targetVersion));
  // TwoPhase, phase one: every server runs the from-version or the target emulating it. One on the target's own
  // API (a node provisioned with the new binary) serves and writes what the old servers cannot read, and phase
  // one's batch would re-apply the emulation over objects only it serves: the plan cannot cover it either.
  // Once every member is observed and every server runs the target's own API, no server serves the from-version's
  // API any more: phase one has nothing left to protect (the fleet is at phase two's goal; resumed, the plan moves
  // no server back into emulation, see replanRemaining), and a pause until one is brought back or the last server
  // removed would never end. The rollback verdict still counts what such a server wrote (plan.targetApiStorage).
  const unemulated = phaseOneMoot(ctx, missing.length) ? [] : unemulatedTargetServers(ctx);
  const regressed = regressedMembers(ctx, members).filter((r) => !offPolicy.some((p) => p.hostname === r.hostname));
  if (joined.length === 0 && vanished.length === 0 && offPolicy.length === 0 && unemulated.length === 0 && regressed.length === 0) return undefined;
  const emulating = `${ctx.spec.targetVersion} emulating ${minorOf(from)}`;
  const parts = [
    ...(offPolicy.length ? [`${offPolicy.map((p) => `${p.hostname} runs ${p.version}`).join(', ')}: neither ${from} nor ${ctx.spec.targetVersion}; bring it to ${from} or remove it before resuming`] : []),
    ...(unemulated.length ? [`${unemulated.join(', ')} runs ${ctx.spec.targetVersion} without emulating ${minorOf(from)} during phase one of a TwoPhase upgrade; bring it to ${from} or ${emulating}, or remove it, before resuming`] : []),
    ...(regressed.length ? [`${regressed.map((r) => `${r.hostname} runs ${r.runs} after its Upgrade to ${r.goal} landed`).join(', ')}: replaced outside this upgrade; bring it back to its goal (the pause then lifts by itself), or abort`] : []),
    ...(joined.length ? [`joined: ${joined.join(', ')}`] : []),
    ...(vanished.length ? [`gone: ${vanished.join(', ')}`] : []),
    ...(joined.length && missing.length > vanished.length ? [`being replaced and not back: ${missing.filter((h) => !vanished.includes(h)).join(', ')} (a replacement back under a new hostname?)`] : []),
  ];
  return { joined, vanished, servers: [...new Set([...joined, ...vanished, ...offPolicy.map((p) => p.hostname), ...unemulated, ...regressed.map((r) => r.hostname)])], message: `the fleet changed since the plan was made (${parts.join('; ')}); resume to re-plan from the servers observed now` };
}

/** TwoPhase, phase one: every member observed, and every server observed on the target's own API (no emulation). */
function phaseOneMoot(ctx: PlanContext, missingMembers: number): boolean {
  const target = ctx.spec.targetVersion;
  return missingMembers === 0 && ctx.obs.peers.length > 0 && ctx.obs.peers.every((p) => p.version !== undefined && sameRelease(p.version, target) && emulationOf(p) === minorOf(target));
}

/**
 * On resume: the plan's members become the servers observed now. Joiners get batches (those already at the
 * target simply have nothing to do); members no longer observed are dropped, with their calls in flight
 * abandoned, so nothing waits on a server that does not exist any more.
 */
export function acceptMembership(ctx: PlanContext, named: readonly string[]): void {
  const plan = ctx.status.plan;
  if (!plan) return;
  const seen = ctx.obs.peers.map((p) => p.hostname);
  const before = plan.members ?? [];
  const joined = seen.filter((h) => !before.includes(h) && named.includes(h)).sort((a, b) => a.localeCompare(b));
  // A member whose call is in flight may be mid-restart (its Lease gone at graceful stop): it stays. One the
  // pause did not name is not dropped either: the next step names it (MembershipChanged) first.
  const gone = before.filter((h) => !seen.includes(h) && !callInFlight(ctx, h) && named.includes(h));
  if (joined.length === 0 && gone.length === 0) return;
  plan.members = [...before.filter((h) => !gone.includes(h)), ...joined];
  for (const c of ctx.status.driverCalls ?? []) {
    if (gone.includes(c.server) && c.result === 'Requested') {
      c.result = 'Abandoned';
      c.completedAt = ctx.now.toISOString();
      c.message = `${c.message ? `${c.message}; ` : ''}abandoned: ${c.server} left the fleet`;
    }
  }
  plan.batches = (plan.batches ?? []).map((b) => ({ ...b, servers: b.servers.filter((h) => !gone.includes(h)) }));
  plan.gateTurnedOn = (plan.gateTurnedOn ?? []).filter((h) => !gone.includes(h));
  ctx.status.peers = (ctx.status.peers ?? []).filter((r) => !gone.includes(r.hostname));
  for (const h of joined) {
    const p = ctx.observed(h);
    if (p) ctx.status.peers.push({ ...peerRowFrom(p), state: 'Pending' });
  }
  ctx.status.peers.sort((a, b) => a.hostname.localeCompare(b.hostname));
  replanRemaining(ctx);
  ctx.event('Normal', 'Replanned', `members re-planned on resume${joined.length ? `; added ${joined.join(', ')}` : ''}${gone.length ? `; dropped ${gone.join(', ')}` : ''}`);
}
