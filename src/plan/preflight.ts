import { compareVersions, parseVersion } from './version.ts';
import { isUp, peerRowFrom } from './peers.ts';
import { PROXY_GATE, type PlanContext } from './context.ts';
import { resolveBatchSize, batchCount } from '../api/batch-size.ts';

/** Preflight failures that retrying cannot fix: the plan itself is wrong for this fleet. */
const FATAL = new Set(['Downgrade', 'SkipsMinor', 'MajorVersionChange']);

interface PreflightVerdict {
  ok: boolean;
  reason: string;
  message: string;
  fromVersion?: string;
  needsProxyPass?: boolean;
}

/** Checks the version-skew policy, the fleet's health and the proxy prerequisites. Touches nothing. */
export function checkPreflight(ctx: PlanContext): PreflightVerdict {
  const peers = ctx.obs.peers;
  const target = parseVersion(ctx.spec.targetVersion);
  if (!target) return { ok: false, reason: 'InvalidTargetVersion', message: `target ${ctx.spec.targetVersion} is not a release version` };
  if (peers.length === 0) return { ok: false, reason: 'NoServers', message: 'no kube-apiserver identity Leases found in kube-system' };
  const down = peers.filter((p) => !isUp(p));
  if (down.length > 0) {
    const why = down.map((p) => `${p.hostname} (${p.stale ? 'stale lease' : !p.ready ? 'not ready' : 'no /version'})`).join(', ');
    return { ok: false, reason: 'UnhealthyFleet', message: `every server must be healthy before an upgrade starts; not healthy: ${why}` };
  }
  const versions = [...new Set(peers.map((p) => p.version!))].sort();
  if (versions.length > 1) {
    const detail = versions.map((v) => `${v} (${peers.filter((p) => p.version === v).map((p) => p.hostname).join(', ')})`).join(' and ');
    return { ok: false, reason: 'MixedVersions', message: `servers run ${detail}; an upgrade starts from one version` };
  }
  const fromVersion = versions[0]!;
  const from = parseVersion(fromVersion);
  if (!from) return { ok: false, reason: 'UnknownVersion', message: `servers report ${fromVersion}, which is not a release version` };
  const cmp = compareVersions(target, from);
  if (target.major !== from.major) return { ok: false, reason: 'MajorVersionChange', message: `${fromVersion} -> ${ctx.spec.targetVersion} changes the major version` };
  if (cmp < 0) {
    return { ok: false, reason: 'Downgrade', message: `${ctx.spec.targetVersion} is older than the running ${fromVersion}; control-plane downgrades are not supported (roll back an upgrade instead)` };
  }
  if (target.minor > from.minor + 1) {
    return { ok: false, reason: 'SkipsMinor', message: `${fromVersion} -> ${ctx.spec.targetVersion} skips ${target.minor - from.minor - 1} minor version(s); upgrade one minor at a time` };
  }
  const minorChange = target.minor !== from.minor;
  const gateOff = peers.filter((p) => p.proxyGate === 'off').map((p) => p.hostname);
  const gateUnknown = peers.filter((p) => p.proxyGate === 'unknown').map((p) => p.hostname);
  const mode = ctx.spec.proxy.gate;
  const proxyMatters = mode === 'Enabled' || (mode === 'Auto' && minorChange);
  if (proxyMatters && gateUnknown.length > 0) {
    return { ok: false, reason: 'ProxyGateUnknown', message: `cannot tell whether ${gateUnknown.join(', ')} run the ${PROXY_GATE} gate (kubernetes_feature_enabled missing from /metrics)` };
  }
  const needsProxyPass = proxyMatters && gateOff.length > 0;
  let message = `${peers.length} servers on ${fromVersion}; ${minorChange ? 'minor upgrade' : 'patch upgrade'} to ${ctx.spec.targetVersion}`;
  if (needsProxyPass) message += `; the proxy gate will be turned on first on ${gateOff.join(', ')}`;
  if (mode === 'Unmanaged' && minorChange && gateOff.length > 0) {
    message += `; WARNING: proxy gate off on ${gateOff.join(', ')} and proxy.gate is Unmanaged: clients sent to old servers get 404 for new resources during the upgrade`;
  }
  return { ok: true, reason: 'Passed', message, fromVersion, needsProxyPass };
}

export function runPreflight(ctx: PlanContext): void {
  const v = checkPreflight(ctx);
  if (!v.ok) {
    ctx.condition({ type: 'PreflightPassed', status: 'False', reason: v.reason, message: v.message });
    if (FATAL.has(v.reason)) {
      ctx.setPhase('Failed');
      ctx.status.completedAt = ctx.now.toISOString();
      ctx.condition({ type: 'Progressing', status: 'False', reason: v.reason, message: v.message });
      ctx.event('Warning', 'PreflightFailed', v.message);
    } else {
      // The fleet may recover (a server restarting, a lease expiring): check again, touching nothing.
      ctx.requeue(Math.max(ctx.spec.analysis.intervalMs, 5_000));
    }
    return;
  }
  const from = v.fromVersion!;
  ctx.status.fromVersion = from;
  ctx.status.targetVersion = ctx.spec.targetVersion;
  ctx.status.peers = [...ctx.obs.peers].sort((a, b) => a.hostname.localeCompare(b.hostname)).map((p) => ({ ...peerRowFrom(p), state: 'Pending' }));
  if (from === ctx.spec.targetVersion) {
    ctx.condition({ type: 'PreflightPassed', status: 'True', reason: 'AlreadyAtTarget', message: `every server already runs ${from}` });
    ctx.setPhase('Succeeded');
    ctx.status.completedAt = ctx.now.toISOString();
    ctx.event('Normal', 'AlreadyAtTarget', `every server already runs ${from}`);
    return;
  }
  const n = ctx.status.peers.length;
  const size = resolveBatchSize(ctx.spec.strategy.batchSize, n);
  ctx.status.batch = { current: 0, total: batchCount(n, size), progress: `0/${batchCount(n, size)}`, history: [] };
  ctx.condition({ type: 'PreflightPassed', status: 'True', reason: 'Passed', message: v.message });
  ctx.event('Normal', 'PreflightPassed', v.message);
  ctx.setPhase(v.needsProxyPass ? 'EnablingProxy' : 'Upgrading');
  ctx.requeue(0);
}
