import type { PlanContext } from './context.ts';
import { callPollMs, driveStep, emulationOf } from './calls.ts';
import { onBreach } from './breach.ts';
import { classifyUpgrade, minorOf, sameRelease } from './version.ts';

/**
 * The version (and emulation) a gate call keeps a server at: the one it runs. Turning the gate on happens at the
 * from-version, but a server that joined on the target (accepted by a resume) runs the target: a gate call at the
 * from-version would downgrade it. A server not observed now is judged by its last recorded version.
 */
function keepAt(ctx: PlanContext, hostname: string, version: string): { version: string; emulatedVersion?: string } {
  const target = ctx.spec.targetVersion;
  const seen = ctx.observed(hostname);
  const runs = seen?.version ?? ctx.peerRow(hostname)?.version;
  if (runs === undefined || !sameRelease(runs, target) || sameRelease(version, target)) return { version };
  const emulated = seen ? emulationOf(seen) : undefined;
  return { version: target, ...(emulated !== undefined && emulated !== minorOf(target) ? { emulatedVersion: emulated } : {}) };
}

/**
 * Turns the Mixed Version Proxy gate on (or back off) server by server, at the version each runs, before
 * (or after) any version changes: the proxy only helps if every server has it when the skew starts.
 * Turning it off touches only the servers where the operator turned it on (status.plan.gateTurnedOn).
 * `version` is the fleet's version; a server already on the target stays there (keepAt).
 * Returns true once every server concerned is at the wanted gate state.
 */
export function gatePass(ctx: PlanContext, want: 'on' | 'off', version: string): boolean {
  const action = want === 'on' ? 'EnableProxy' : 'RevertProxy';
  const plan = ctx.status.plan;
  const members = plan?.members ?? [];
  const servers = want === 'on' ? members : (plan?.gateTurnedOn ?? []).filter((h) => members.includes(h));
  for (const h of servers) {
    const at = keepAt(ctx, h, version);
    const r = driveStep(ctx, h, 0, action, at.version, want === 'on', at.emulatedVersion === undefined ? {} : { emulatedVersion: at.emulatedVersion });
    if (r === 'done') {
      if (ctx.peerRow(h)?.state === 'EnablingProxy') ctx.setPeerState(h, 'Pending');
      continue;
    }
    if (r === 'waiting') {
      ctx.setPeerState(h, 'EnablingProxy', `${action} requested`);
      ctx.progressMessage = `${action} on ${h}`;
      ctx.requeue(callPollMs(ctx));
      return false;
    }
    ctx.setPeerState(h, 'Failed', r.message);
    onBreach(ctx, r.failed, r.message);
    return false;
  }
  return true;
}

/**
 * The gate a replacement (Upgrade or Rollback) carries; undefined means none, and the driver keeps what the server
 * has. Unmanaged: none. Enabled: on. Auto: on only across a minor step, where the versions serve different APIs and
 * the proxy is what keeps clients served; a patch upgrade leaves each server's gate as it found it, so it can never
 * turn on an alpha gate that preflight did not ask consent for (preflight plans no gate pass for a patch).
 */
export function replacementGate(ctx: PlanContext): boolean | undefined {
  const mode = ctx.spec.proxy.gate;
  if (mode === 'Unmanaged') return undefined;
  if (mode === 'Enabled') return true;
  const from = ctx.status.fromVersion;
  if (from === undefined) return true;
  const kind = classifyUpgrade(from, ctx.spec.targetVersion, { allowPrerelease: ctx.spec.allowPrerelease });
  return kind.ok && kind.kind === 'patch' ? undefined : true;
}
