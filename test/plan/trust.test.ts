// The trust checks (src/plan/trust.ts) row by row, the ProxyTrustVerified condition, and preflight with them:
// a finding warns, spec.trust.requireAllowedNames refuses (fail closed on unknown), and nothing is called.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkServer, trustCondition, trustRefusal, trustReport, TRUST_ROWS_LIMIT, type ObservedServerTrust, type TrustInput } from '../../src/plan/trust.ts';
import { resolveSpec } from '../../src/api/defaults.ts';
import type { ObservedTrust } from '../../src/plan/trust.ts';
import { OLD, Sim, peer, spec } from './fleet.ts';

const NOW = new Date('2026-11-29T10:00:00Z');
const GOOD_FLAGS: Record<string, string> = {
  '--peer-ca-file': '/pki/ca.crt',
  '--proxy-client-cert-file': '/pki/front-proxy-client.crt',
  '--proxy-client-key-file': '/pki/front-proxy-client.key',
  '--requestheader-client-ca-file': '/pki/front-proxy-ca.crt',
  '--requestheader-allowed-names': 'front-proxy-client',
};
const GOOD_HS = { ok: true as const, dnsNames: ['kubernetes', 'kubernetes.default.svc', 'cp-1'], notBefore: '2026-01-01T00:00:00.000Z', notAfter: '2027-01-01T00:00:00.000Z' };

function server(hostname: string, over: Partial<ObservedServerTrust> = {}, flags: Record<string, string> = GOOD_FLAGS): ObservedServerTrust {
  return { hostname, flags: { source: 'MirrorPod', values: { ...flags } }, peerAddress: `10.0.0.${hostname.slice(-1)}:6443`, addressSource: 'leaseAnnotation', handshake: GOOD_HS, ...over };
}
const webhookDriver = resolveSpec(spec()).driver;
const input = (over: Partial<Omit<TrustInput, 'servers' | 'peers'>> = {}): Omit<TrustInput, 'servers' | 'peers'> => ({ proxyWanted: true, driver: webhookDriver, now: NOW, ...over });
const resultOf = (rows: ReturnType<typeof checkServer>, check: string): string => rows.filter((r) => r.check === check).map((r) => `${r.result}${r.reason ? ` ${r.reason}` : ''}`).join('|');

test('every check Verified on a well configured server with the gate on', () => {
  const rows = checkServer(server('cp-1'), peer('cp-1', OLD, 'on'), input());
  assert.deepEqual(rows.map((r) => `${r.check}=${r.result}`), ['PeerCAFile=Verified', 'ProxyClientCert=Verified', 'RequestHeaderCA=Verified', 'RequestHeaderAllowedNames=Verified', 'PeerServingCert=Verified', 'PeerReachable=Verified']);
  assert.equal(rows.find((r) => r.check === 'RequestHeaderAllowedNames')?.flag, '--requestheader-allowed-names');
  assert.equal(rows[0]!.source, 'MirrorPod');
  assert.match(rows.find((r) => r.check === 'PeerReachable')!.message, /from the operator, not from the server's peers/);
});

test('each flag missing is a Finding naming the flag', () => {
  const cases: [string, string, string][] = [
    ['--peer-ca-file', 'PeerCAFile', 'Finding PeerCAFileNotSet'],
    ['--proxy-client-cert-file', 'ProxyClientCert', 'Finding ProxyClientCertNotSet'],
    ['--proxy-client-key-file', 'ProxyClientCert', 'Finding ProxyClientCertNotSet'],
    ['--requestheader-client-ca-file', 'RequestHeaderCA', 'Finding RequestHeaderCANotSet'],
  ];
  for (const [flag, check, want] of cases) {
    const flags = { ...GOOD_FLAGS };
    delete flags[flag];
    const rows = checkServer(server('cp-1', {}, flags), peer('cp-1', OLD, 'on'), input());
    assert.equal(resultOf(rows, check), want, flag);
    assert.equal(rows.find((r) => r.check === check)!.flag, flag);
    // Set but empty is not set either.
    assert.equal(resultOf(checkServer(server('cp-1', {}, { ...GOOD_FLAGS, [flag]: '' }), peer('cp-1', OLD, 'on'), input()), check), want, `${flag}=`);
  }
});

test('--requestheader-allowed-names empty (or only commas) is AnyFrontProxyCertTrusted; absent too', () => {
  for (const v of ['', ' , ']) assert.equal(resultOf(checkServer(server('cp-2', {}, { ...GOOD_FLAGS, '--requestheader-allowed-names': v }), peer('cp-2', OLD, 'on'), input()), 'RequestHeaderAllowedNames'), 'Finding AnyFrontProxyCertTrusted');
  const flags = { ...GOOD_FLAGS };
  delete flags['--requestheader-allowed-names'];
  assert.equal(resultOf(checkServer(server('cp-2', {}, flags), peer('cp-2', OLD, 'on'), input()), 'RequestHeaderAllowedNames'), 'Finding AnyFrontProxyCertTrusted');
});

test('flags unknown: every flag row Unknown with why, never Verified', () => {
  const rows = checkServer(server('cp-1', { flags: { source: 'Unknown', why: 'no mirror Pod; POST https://hook/replace (Describe cp-1): HTTP 404' } }), peer('cp-1', OLD, 'on'), input());
  for (const c of ['PeerCAFile', 'ProxyClientCert', 'RequestHeaderCA', 'RequestHeaderAllowedNames']) assert.equal(resultOf(rows, c), 'Unknown TrustInputUnknown', c);
  assert.match(rows[0]!.message, /HTTP 404/);
  assert.equal(resultOf(rows, 'PeerServingCert'), 'Verified', 'the certificate is read from the server, not from its flags');
});

test('serving certificate without kubernetes.default.svc, or not valid now, is a Finding; a failed handshake: unreachable, certificate unknown', () => {
  assert.equal(resultOf(checkServer(server('cp-1', { handshake: { ...GOOD_HS, dnsNames: ['cp-1', 'localhost'] } }), peer('cp-1', OLD, 'on'), input()), 'PeerServingCert'), 'Finding PeerCertificateLacksServiceName');
  assert.equal(resultOf(checkServer(server('cp-1', { handshake: { ...GOOD_HS, notAfter: '2026-11-01T00:00:00.000Z' } }), peer('cp-1', OLD, 'on'), input()), 'PeerServingCert'), 'Finding PeerCertificateNotValidNow');
  const down = checkServer(server('cp-1', { handshake: { ok: false, error: 'ECONNREFUSED: connect ECONNREFUSED 10.0.0.1:6443' } }), peer('cp-1', OLD, 'on'), input());
  assert.equal(resultOf(down, 'PeerReachable'), 'Finding PeerUnreachable');
  assert.equal(resultOf(down, 'PeerServingCert'), 'Unknown TrustInputUnknown');
  const noAddress = checkServer({ hostname: 'cp-1', flags: { source: 'MirrorPod', values: GOOD_FLAGS } }, peer('cp-1', OLD, 'on'), input());
  assert.equal(resultOf(noAddress, 'PeerReachable'), 'Unknown TrustInputUnknown');
});

test('gate off now: the peer CA cannot be read before the gate is turned on (webhook), the static Pod driver adds it; no proxy at all: no peer rows', () => {
  const off = checkServer(server('cp-1', {}, { ...GOOD_FLAGS, '--peer-ca-file': '' }), peer('cp-1', OLD, 'off'), input());
  assert.equal(resultOf(off, 'PeerCAFile'), 'Unknown TrustInputUnknown');
  const staticPod = resolveSpec(spec({ driver: { staticPod: { agentImage: 'busybox:1.36' } } })).driver;
  const sp = checkServer(server('cp-1'), peer('cp-1', OLD, 'off'), input({ driver: staticPod }));
  assert.equal(resultOf(sp, 'PeerCAFile'), 'Verified');
  assert.equal(sp[0]!.source, 'Driver');
  const none = checkServer(server('cp-1'), peer('cp-1', OLD, 'off'), input({ proxyWanted: false }));
  assert.deepEqual(none.map((r) => r.check), ['ProxyClientCert', 'RequestHeaderCA', 'RequestHeaderAllowedNames']);
});

test('ProxyTrustVerified: True only when all Verified; False names the first finding; Unknown when only unknowns', () => {
  const peers = [peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on')];
  const ok = trustReport({ servers: [server('cp-2'), server('cp-1')], peers, ...input() });
  assert.deepEqual([ok.servers, ok.verified, ok.findings, ok.unknown], [2, 12, 0, 0]);
  assert.deepEqual(ok.checks!.map((r) => r.server).slice(0, 1), ['cp-1'], 'hostnames in order');
  assert.deepEqual(trustCondition(ok), { type: 'ProxyTrustVerified', status: 'True', reason: 'AllVerified', message: '12 verified, 0 finding(s), 0 unknown across 2 server(s)' });

  const bad = trustReport({ servers: [server('cp-1'), server('cp-2', {}, { ...GOOD_FLAGS, '--requestheader-allowed-names': '' })], peers, ...input() });
  const c = trustCondition(bad);
  assert.equal(c.status, 'False');
  assert.equal(c.reason, 'AnyFrontProxyCertTrusted');
  assert.match(c.message, /^cp-2: --requestheader-allowed-names is empty/);

  const unk = trustReport({ servers: [server('cp-1', { flags: { source: 'Unknown', why: 'x' } }), server('cp-2')], peers, ...input() });
  assert.equal(trustCondition(unk).status, 'Unknown');
  assert.equal(trustCondition(unk).reason, 'TrustInputUnknown');
  const both = trustReport({ servers: [server('cp-1', { flags: { source: 'Unknown', why: 'x' } }), server('cp-2', {}, { ...GOOD_FLAGS, '--peer-ca-file': '' })], peers, ...input() });
  assert.equal(trustCondition(both).reason, 'PeerCAFileNotSet', 'a finding wins over an unknown');
  assert.equal(trustCondition(trustReport({ servers: [], peers: [], ...input() })).status, 'Unknown');
});

test('the table is bounded; findings are kept first and the counts cover every row', () => {
  const many = Array.from({ length: 60 }, (_, i) => `cp-${String(i).padStart(2, '0')}`);
  const servers = many.map((h, i) => server(h, {}, i === 59 ? { ...GOOD_FLAGS, '--requestheader-allowed-names': '' } : GOOD_FLAGS));
  const r = trustReport({ servers, peers: many.map((h) => peer(h, OLD, 'on')), ...input() });
  assert.equal(r.checks!.length, TRUST_ROWS_LIMIT);
  assert.equal(r.truncated, true);
  assert.equal(r.verified! + r.findings! + r.unknown!, 360);
  assert.equal(r.checks![0]!.server, 'cp-59');
  assert.equal(trustRefusal(r, true)?.reason, 'AnyFrontProxyCertTrusted');
});

test('requireAllowedNames: empty names or unreadable flags refuse; off, nothing refuses', () => {
  const peers = [peer('cp-1', OLD, 'on')];
  const empty = trustReport({ servers: [server('cp-1', {}, { ...GOOD_FLAGS, '--requestheader-allowed-names': '' })], peers, ...input() });
  assert.equal(trustRefusal(empty, false), undefined);
  assert.equal(trustRefusal(empty, true)?.reason, 'AnyFrontProxyCertTrusted');
  const unread = trustReport({ servers: [server('cp-1', { flags: { source: 'Unknown', why: 'x' } })], peers, ...input() });
  assert.equal(trustRefusal(unread, true)?.reason, 'FrontProxyTrustUnknown');
  assert.equal(trustRefusal(undefined, true)?.reason, 'FrontProxyTrustUnknown', 'not read at all: fail closed');
  assert.equal(trustRefusal(trustReport({ servers: [server('cp-1')], peers, ...input() }), true), undefined);
});

function trustOf(flagsFor: (h: string) => Record<string, string>): ObservedTrust {
  return { servers: ['cp-1', 'cp-2'].map((h) => server(h, {}, flagsFor(h))) };
}

test('preflight: a finding warns (event, ProxyTrustVerified False) and the upgrade starts; status.trust names the server', () => {
  const sim = new Sim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on')]);
  sim.extra.trust = trustOf((h) => (h === 'cp-2' ? { ...GOOD_FLAGS, '--requestheader-allowed-names': '' } : GOOD_FLAGS));
  sim.step();
  assert.equal(sim.condition('PreflightPassed')?.status, 'True');
  assert.equal(sim.condition('ProxyTrustVerified')?.reason, 'AnyFrontProxyCertTrusted');
  const row = sim.status!.trust!.checks!.find((r) => r.result === 'Finding')!;
  assert.deepEqual([row.server, row.check, row.reason, row.flag], ['cp-2', 'RequestHeaderAllowedNames', 'AnyFrontProxyCertTrusted', '--requestheader-allowed-names']);
  assert.equal(sim.last.actions.filter((a) => a.kind === 'event' && a.reason === 'AnyFrontProxyCertTrusted').length, 1);
  assert.ok(sim.calls().length > 0, 'the upgrade went on');
});

test('preflight with requireAllowedNames: refused, nothing called, checked again; fixed, it starts by itself', () => {
  const sim = new Sim([peer('cp-1', OLD, 'on'), peer('cp-2', OLD, 'on')], spec({ trust: { requireAllowedNames: true } }));
  sim.extra.trust = trustOf((h) => (h === 'cp-2' ? { ...GOOD_FLAGS, '--requestheader-allowed-names': '' } : GOOD_FLAGS));
  sim.step();
  sim.step();
  assert.equal(sim.status!.phase, 'Preflight');
  assert.equal(sim.condition('PreflightPassed')?.reason, 'AnyFrontProxyCertTrusted');
  assert.match(sim.condition('PreflightPassed')!.message, /cp-2 run with --requestheader-allowed-names empty/);
  assert.deepEqual(sim.calls(), []);
  assert.equal(sim.status!.plan, undefined);
  assert.ok(sim.last.requeueAfterMs !== undefined);
  assert.equal(sim.last.actions.filter((a) => a.kind === 'event' && a.reason === 'AnyFrontProxyCertTrusted').length, 0, 'warned once, on the first step');

  sim.extra.trust = trustOf(() => GOOD_FLAGS);
  sim.step();
  assert.equal(sim.condition('PreflightPassed')?.reason, 'Passed');
  assert.equal(sim.condition('ProxyTrustVerified')?.status, 'True');

  const blind = new Sim([peer('cp-1', OLD, 'on')], spec({ trust: { requireAllowedNames: true } }));
  blind.step();
  assert.equal(blind.condition('PreflightPassed')?.reason, 'FrontProxyTrustUnknown', 'no trust facts at all: fail closed');
});

test('without trust facts and without requireAllowedNames, nothing is written (as before)', () => {
  const sim = new Sim([peer('cp-1', OLD, 'on')]);
  sim.step();
  assert.equal(sim.status!.trust, undefined);
  assert.equal(sim.condition('ProxyTrustVerified'), undefined);
  assert.equal(sim.condition('PreflightPassed')?.reason, 'Passed');
});
