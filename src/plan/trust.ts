/**
 * The Mixed Version Proxy's trust checks (docs/trust.md), pure: each server's effective flags, its serving
 * certificate as a peer sees it, and whether its peer address answers, into one row per server and check,
 * the ProxyTrustVerified condition, and preflight's refusal when spec.trust.requireAllowedNames asks for it.
 *
 * Unknown is never Verified: a flag that could not be read (no mirror Pod, a hook without Describe) is a row
 * `Unknown`, and the condition is Unknown while any row is.
 */
import type { TrustCheck, TrustReport } from '../api/types.generated.ts';
import type { ConditionInput } from '../api/conditions.ts';
import type { ResolvedDriver } from '../api/defaults.ts';
import type { TrustCheckName, TrustResult } from '../api/vocabulary.ts';
import type { ObservedPeer } from './observation.ts';
import type { PlanContext } from './context.ts';
import { classifyUpgrade } from './version.ts';
import type { ObservedFlags, ObservedServerTrust } from './observed-preflight.ts';

export type { ObservedFlags, ObservedHandshake, ObservedServerTrust, ObservedTrust } from './observed-preflight.ts';

/** The ServerName the proxy verifies a peer's serving certificate with (k8s.io/apiserver, code). */
export const PEER_SERVER_NAME = 'kubernetes.default.svc';
/** Rows kept in status.trust.checks (the counts cover all). */
export const TRUST_ROWS_LIMIT = 256;

/**
 * The reasons a row (and ProxyTrustVerified) can carry, each with its entry in docs/troubleshooting.md. Written
 * as `reason:` literals so test/docs/reasons.test.ts finds them.
 */
export const TRUST_REASONS = {
  unknown: { reason: 'TrustInputUnknown' },
  peerCAFile: { reason: 'PeerCAFileNotSet' },
  proxyClientCert: { reason: 'ProxyClientCertNotSet' },
  requestHeaderCA: { reason: 'RequestHeaderCANotSet' },
  allowedNames: { reason: 'AnyFrontProxyCertTrusted' },
  certName: { reason: 'PeerCertificateLacksServiceName' },
  certTime: { reason: 'PeerCertificateNotValidNow' },
  unreachable: { reason: 'PeerUnreachable' },
} as const;

const UNKNOWN_REASON = TRUST_REASONS.unknown.reason;

interface Row {
  server: string;
  check: TrustCheckName;
  result: TrustResult;
  reason?: string;
  flag?: string;
  source?: string;
  message: string;
}

const verified = (server: string, check: TrustCheckName, source: string, message: string, flag?: string): Row => ({ server, check, result: 'Verified', source, message, ...(flag ? { flag } : {}) });
const finding = (server: string, check: TrustCheckName, reason: string, source: string, message: string, flag?: string): Row => ({ server, check, result: 'Finding', reason, source, message, ...(flag ? { flag } : {}) });
const unknown = (server: string, check: TrustCheckName, source: string, message: string, flag?: string): Row => ({ server, check, result: 'Unknown', reason: UNKNOWN_REASON, source, message, ...(flag ? { flag } : {}) });

/** A flag that must name a file: set and not empty. */
function flagSet(flags: ObservedFlags, server: string, check: TrustCheckName, flag: string, findingReason: string, why: string): Row {
  if (flags.source === 'Unknown') return unknown(server, check, 'Unknown', `${flag} not read: ${flags.why}`, flag);
  const v = flags.values[flag];
  if (v === undefined || v === '') return finding(server, check, findingReason, flags.source, `${flag} is not set: ${why}`, flag);
  return verified(server, check, flags.source, `${flag}=${v}`, flag);
}

export interface TrustInput {
  servers: readonly ObservedServerTrust[];
  peers: readonly ObservedPeer[];
  /** Whether the upgrade runs with the proxy: the gate is on, or the operator will turn it on (preflight's needsProxyPass). */
  proxyWanted: boolean;
  driver: ResolvedDriver;
  now: Date;
}

/** The checks of one server, in TRUST_CHECKS order. */
export function checkServer(s: ObservedServerTrust, peer: ObservedPeer | undefined, input: Omit<TrustInput, 'servers' | 'peers'>): Row[] {
  const h = s.hostname;
  const rows: Row[] = [];
  const gateOn = peer?.proxyGate === 'on';
  const proxyHere = gateOn || input.proxyWanted;
  if (proxyHere) {
    if (!gateOn && input.driver.kind === 'staticPod') {
      // The gate is off now, so the running command has no --peer-* flags; the static Pod driver adds them.
      rows.push(verified(h, 'PeerCAFile', 'Driver', `the gate is off now; the static Pod driver adds --peer-ca-file=${input.driver.staticPod.peerCAFile} when it turns it on`, '--peer-ca-file'));
    } else if (!gateOn) {
      rows.push(unknown(h, 'PeerCAFile', s.flags.source, 'the gate is off now, so the server runs without --peer-* flags; whether the driver\'s template adds --peer-ca-file when it turns the gate on cannot be read before it does', '--peer-ca-file'));
    } else {
      rows.push(flagSet(s.flags, h, 'PeerCAFile', '--peer-ca-file', TRUST_REASONS.peerCAFile.reason, 'without it the server builds no proxy and no peer-aggregated discovery, so it answers 404 for what only its peers serve'));
    }
  }
  const cert = flagSet(s.flags, h, 'ProxyClientCert', '--proxy-client-cert-file', TRUST_REASONS.proxyClientCert.reason, 'the proxy (and the aggregator) present this certificate to the destination server');
  const key = flagSet(s.flags, h, 'ProxyClientCert', '--proxy-client-key-file', TRUST_REASONS.proxyClientCert.reason, 'the key of --proxy-client-cert-file');
  rows.push(cert.result !== 'Verified' ? cert : key.result !== 'Verified' ? key : { ...cert, message: `${cert.message}, ${key.message}` });
  rows.push(flagSet(s.flags, h, 'RequestHeaderCA', '--requestheader-client-ca-file', TRUST_REASONS.requestHeaderCA.reason, 'the destination of a proxied request cannot authenticate the forwarded user'));
  rows.push(allowedNames(s.flags, h));
  if (proxyHere) rows.push(...peerRows(s, input.now));
  return rows;
}

function allowedNames(flags: ObservedFlags, h: string): Row {
  const flag = '--requestheader-allowed-names';
  if (flags.source === 'Unknown') return unknown(h, 'RequestHeaderAllowedNames', 'Unknown', `${flag} not read: ${flags.why}`, flag);
  const names = (flags.values[flag] ?? '').split(',').map((x) => x.trim()).filter(Boolean);
  if (names.length === 0) {
    return finding(h, 'RequestHeaderAllowedNames', TRUST_REASONS.allowedNames.reason, flags.source, `${flag} is empty: any client certificate the --requestheader-client-ca-file CA signed may assert any user (set it to the proxy's certificate CN, e.g. front-proxy-client)`, flag);
  }
  return verified(h, 'RequestHeaderAllowedNames', flags.source, `${flag}=${names.join(',')}`, flag);
}

/** The serving certificate as a peer's proxy sees it, and the peer address answering, both from the operator. */
function peerRows(s: ObservedServerTrust, now: Date): Row[] {
  const h = s.hostname;
  const where = s.peerAddress ? `${s.peerAddress}${s.addressSource ? ` (${s.addressSource})` : ''}` : '';
  if (!s.peerAddress || !s.handshake) {
    const why = 'no peer address known for the server';
    return [unknown(h, 'PeerServingCert', 'Unknown', why), unknown(h, 'PeerReachable', 'Unknown', why)];
  }
  if (!s.handshake.ok) {
    return [
      unknown(h, 'PeerServingCert', 'TLS', `no certificate read from ${where}: ${s.handshake.error}`),
      finding(h, 'PeerReachable', TRUST_REASONS.unreachable.reason, 'TLS', `${where} does not answer a TLS handshake from the operator: ${s.handshake.error} (checked from the operator, not from the server's peers)`),
    ];
  }
  const hs = s.handshake;
  const reach = verified(h, 'PeerReachable', 'TLS', `${where} answered a TLS handshake from the operator (checked from the operator, not from the server's peers)`);
  if (!hs.dnsNames.includes(PEER_SERVER_NAME)) {
    return [finding(h, 'PeerServingCert', TRUST_REASONS.certName.reason, 'TLS', `the certificate served at ${where} names ${hs.dnsNames.join(', ') || 'no DNS name'}, not ${PEER_SERVER_NAME}: a peer's proxy verifies it with that name and fails`), reach];
  }
  const expired = hs.notAfter !== undefined && Date.parse(hs.notAfter) < now.getTime();
  const early = hs.notBefore !== undefined && Date.parse(hs.notBefore) > now.getTime();
  if (expired || early) {
    return [finding(h, 'PeerServingCert', TRUST_REASONS.certTime.reason, 'TLS', `the certificate served at ${where} is valid ${hs.notBefore ?? '?'} to ${hs.notAfter ?? '?'}, not now`), reach];
  }
  return [verified(h, 'PeerServingCert', 'TLS', `the certificate served at ${where} names ${PEER_SERVER_NAME}${hs.notAfter ? `, valid until ${hs.notAfter}` : ''} (its issuer is not checked against --peer-ca-file, which the operator cannot read)`), reach];
}

/** Every check of every server, hostnames in order; rows that are not Verified first in the bounded list. */
export function trustReport(input: TrustInput): TrustReport {
  const servers = [...input.servers].sort((a, b) => a.hostname.localeCompare(b.hostname));
  const rows = servers.flatMap((s) => checkServer(s, input.peers.find((p) => p.hostname === s.hostname), input));
  const count = (r: TrustResult): number => rows.filter((x) => x.result === r).length;
  const rank = (r: Row): number => (r.result === 'Finding' ? 0 : r.result === 'Unknown' ? 1 : 2);
  const shown = rows.length > TRUST_ROWS_LIMIT ? [...rows].sort((a, b) => rank(a) - rank(b)).slice(0, TRUST_ROWS_LIMIT) : rows;
  return {
    checkedAt: input.now.toISOString(),
    servers: servers.length,
    verified: count('Verified'),
    findings: count('Finding'),
    unknown: count('Unknown'),
    ...(rows.length > TRUST_ROWS_LIMIT ? { truncated: true } : {}),
    checks: shown.map((r): TrustCheck => ({ ...r, message: r.message.slice(0, 1024) })),
  };
}

/** ProxyTrustVerified from the report: True only when every row is Verified; a Finding wins over an Unknown. */
export function trustCondition(report: TrustReport): ConditionInput {
  const rows = report.checks ?? [];
  const first = rows.find((r) => r.result === 'Finding');
  const counts = `${report.verified ?? 0} verified, ${report.findings ?? 0} finding(s), ${report.unknown ?? 0} unknown across ${report.servers ?? 0} server(s)`;
  if (first) {
    return { type: 'ProxyTrustVerified', status: 'False', reason: first.reason ?? UNKNOWN_REASON, message: `${first.server}: ${first.message}; ${counts}` };
  }
  const unk = rows.find((r) => r.result === 'Unknown');
  if (unk || (report.servers ?? 0) === 0) {
    return { type: 'ProxyTrustVerified', status: 'Unknown', reason: UNKNOWN_REASON, message: unk ? `${unk.server} ${unk.check}: ${unk.message}; ${counts}` : 'no server to check' };
  }
  return { type: 'ProxyTrustVerified', status: 'True', reason: 'AllVerified', message: counts };
}

/**
 * spec.trust.requireAllowedNames: a server whose --requestheader-allowed-names is empty, or could not be read,
 * stops preflight (fail closed). Undefined when nothing stops it.
 */
export function trustRefusal(report: TrustReport | undefined, requireAllowedNames: boolean): { reason: string; message: string } | undefined {
  if (!requireAllowedNames) return undefined;
  if (!report) return { reason: 'FrontProxyTrustUnknown', message: 'spec.trust.requireAllowedNames is true and the servers\' flags were not read' };
  const rows = (report.checks ?? []).filter((r) => r.check === 'RequestHeaderAllowedNames');
  const any = rows.filter((r) => r.result === 'Finding').map((r) => r.server);
  if (any.length > 0) {
    return { reason: 'AnyFrontProxyCertTrusted', message: `spec.trust.requireAllowedNames is true and ${any.join(', ')} run with --requestheader-allowed-names empty: any certificate the request-header CA signed may assert any user on them; set the flag (e.g. front-proxy-client) on every server, then preflight passes by itself` };
  }
  const unread = rows.filter((r) => r.result !== 'Verified').map((r) => r.server);
  if (unread.length > 0 || report.truncated || rows.length < (report.servers ?? 0)) {
    return { reason: 'FrontProxyTrustUnknown', message: `spec.trust.requireAllowedNames is true and --requestheader-allowed-names could not be read on ${unread.join(', ') || 'every server'} (no kubeadm mirror Pod, and the driver does not answer Describe): an unknown counts as unsafe` };
  }
  return undefined;
}

/** Whether this upgrade runs the proxy: spec.proxy.gate Enabled, or Auto across a minor (preflight's own rule). */
export function proxyWanted(ctx: PlanContext): boolean {
  const mode = ctx.spec.proxy.gate;
  if (mode === 'Enabled') return true;
  if (mode === 'Unmanaged') return false;
  const from = ctx.obs.peers.find((p) => p.version)?.version;
  if (!from) return false;
  const k = classifyUpgrade(from, ctx.spec.targetVersion, { allowPrerelease: ctx.spec.allowPrerelease });
  return k.ok && k.kind === 'minor';
}

/**
 * At preflight: writes status.trust and ProxyTrustVerified from the observation's trust facts, and returns the
 * report. Without trust facts (not read) nothing is written and undefined is returned.
 */
export function reportTrust(ctx: PlanContext): TrustReport | undefined {
  const t = ctx.obs.trust;
  if (!t) return undefined;
  const report = trustReport({ servers: t.servers, peers: ctx.obs.peers, proxyWanted: proxyWanted(ctx), driver: ctx.spec.driver, now: ctx.now });
  const before = ctx.status.conditions?.find((c) => c.type === 'ProxyTrustVerified');
  ctx.status.trust = report;
  const c = trustCondition(report);
  ctx.condition(c);
  // One event per change of verdict, not one per preflight reconcile.
  if (c.status === 'False' && (before?.status !== 'False' || before.reason !== c.reason)) ctx.event('Warning', c.reason, c.message);
  return report;
}
