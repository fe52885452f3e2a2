// The campaign's history checker on hand-made histories: a clean one passes, and each rule catches the violation
// it is there for (and only that rule fires).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkHistory, percentiles, RULES, WATCH_LAG_MS, type History, type Rule } from '../../e2e/campaign/history-check.ts';
import { GATE_LAG_MS, goDurationMs, windowOpenAt } from '../../e2e/campaign/rules-gates.ts';
import { VIOLATING_LATE } from './violating-late.ts';

const OLD = 'v1.35.4';
const NEW = 'v1.36.3';

/** A clean upgrade of cp-1..cp-3, one at a time: each down 10 s, back on the target; Succeeded at 100 s. */
function clean(): History {
  const servers = ['cp-1', 'cp-2', 'cp-3'];
  return {
    spec: { fromVersion: OLD, targetVersion: NEW, batchSize: 1, failureLimit: 3, intervalMs: 10_000, targetOnlyResources: ['admissionregistration.k8s.io/v1/mutatingadmissionpolicies'] },
    ops: servers.map((s, i) => ({ key: `k-up-${s}`, server: s, action: 'Upgrade', start: 10_000 + i * 30_000, end: 20_000 + i * 30_000, landed: true })),
    servers: [
      ...servers.map((s) => ({ t: 0, server: s, up: true, version: OLD })),
      ...servers.flatMap((s, i) => [
        { t: 11_000 + i * 30_000, server: s, up: false, version: OLD },
        { t: 20_000 + i * 30_000, server: s, up: true, version: NEW },
      ]),
    ],
    statuses: [
      { t: 1_000, phase: 'Upgrading' },
      { t: 35_000, phase: 'Upgrading', finishedBatches: [1] },
      { t: 100_000, phase: 'Succeeded', finishedBatches: [1, 2, 3] },
    ],
    breaches: [],
    healedAt: 0,
    endedAt: 120_000,
    client: [
      { t: 5_000, resource: 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies', code: 404 },
      { t: 40_000, resource: 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies', code: 200 },
    ],
  };
}

function rules(h: History): Rule[] {
  return [...new Set(checkHistory(h).violations.map((v) => v.rule))];
}

test('a clean history has no violation', () => {
  assert.deepEqual(checkHistory(clean()).violations, []);
});

test('OncePerKey: a key carried out twice', () => {
  const h = clean();
  h.ops.push({ ...h.ops[0]!, start: 60_500, end: 61_000 });
  assert.ok(rules(h).includes('OncePerKey'), JSON.stringify(checkHistory(h).violations));
});

test('OneInFlight: a second replacement of a server while the first is in flight', () => {
  const h = clean();
  h.ops.push({ key: 'k-other', server: 'cp-1', action: 'Upgrade', start: 15_000, end: 25_000, landed: true });
  assert.deepEqual(rules(h), ['OneInFlight']);
});

test('RollbackAfterLanding: a Rollback sent while an Upgrade had not landed (its own server\'s, or another\'s); one that never ended is in flight until batchTimeout', () => {
  const h = clean();
  h.ops = [{ key: 'k-up', server: 'cp-1', action: 'Upgrade', start: 10_000, end: 30_000, landed: true }, { key: 'k-rb', server: 'cp-1', action: 'Rollback', start: 31_000, end: 40_000, landed: true }];
  h.statuses.splice(1, 0, { t: 30_500, phase: 'RollingBack', targetStorageKnown: true, rollbackSafe: 'True' }, { t: 32_000, phase: 'Upgrading' });
  assert.deepEqual(rules(h), []);
  h.ops[1] = { ...h.ops[1]!, start: 15_000 };
  assert.ok(rules(h).includes('RollbackAfterLanding'));
  // Another server's Upgrade that never ended: in flight until batchTimeout (60 s) after it started.
  const o = clean();
  o.spec = { ...o.spec, batchTimeoutMs: 60_000 };
  o.ops = [{ key: 'k-up-cp-2', server: 'cp-2', action: 'Upgrade', start: 10_000, landed: false }, { key: 'k-rb', server: 'cp-1', action: 'Rollback', start: 50_000, end: 55_000, landed: true }];
  o.statuses = [{ t: 1_000, phase: 'Upgrading' }, { t: 49_000, phase: 'RollingBack', rollbackSafe: 'True' }];
  assert.ok(checkHistory(o).violations.some((v) => v.rule === 'RollbackAfterLanding' && /Upgrade of cp-2/.test(v.message)));
  o.ops[1] = { ...o.ops[1]!, start: 71_000, end: 75_000 };
  o.statuses[1] = { ...o.statuses[1]!, t: 70_500 };
  assert.ok(!rules(o).includes('RollbackAfterLanding'), 'after its timeout it is no longer in flight');
});

test('TerminalMatchesFleet: Succeeded with a server on the old version; RolledBack with an emulation flag left', () => {
  const h = clean();
  h.servers = h.servers.filter((r) => !(r.server === 'cp-3' && r.version === NEW));
  assert.deepEqual(rules(h), ['TerminalMatchesFleet']);
  const r = clean();
  r.statuses = [{ t: 1_000, phase: 'Upgrading' }, { t: 100_000, phase: 'RolledBack' }];
  r.servers = [...r.servers.filter((x) => x.t === 0), ...['cp-1', 'cp-2'].map((s) => ({ t: 0, server: s, up: true, version: OLD })), { t: 50_000, server: 'cp-3', up: true, version: OLD, emulation: '1.35' }];
  r.ops = [];
  r.client = [];
  assert.deepEqual(rules(r), ['TerminalMatchesFleet']);
  assert.match(checkHistory(r).violations[0]!.message, /cp-3 runs v1\.35\.4 emulating 1\.35/);
});

test('TerminalMatchesFleet: the harness\'s poll may see the last server back just after the terminal status, not a second later', () => {
  const h = clean();
  // cp-3 back on the target at 20 ms after Succeeded was seen: the poll's lag, fine.
  h.servers = h.servers.map((r) => (r.server === 'cp-3' && r.up && r.version === NEW ? { ...r, t: 100_020 } : r));
  assert.deepEqual(rules(h), []);
  h.servers = h.servers.map((r) => (r.server === 'cp-3' && r.up && r.version === NEW ? { ...r, t: 101_500 } : r));
  assert.ok(rules(h).includes('TerminalMatchesFleet'));
});

test('TerminalMatchesFleet: a rollback begun in phase two of TwoPhase ends on the target emulating the from-version (docs/two-phase.md), not on the old binary', () => {
  const r = clean();
  r.ops = [];
  r.client = [];
  const emulating = ['cp-1', 'cp-2', 'cp-3'].map((s) => ({ t: 50_000, server: s, up: true, version: NEW, emulation: '1.35' }));
  r.servers = [...r.servers.filter((x) => x.t === 0), ...emulating];
  r.statuses = [{ t: 1_000, phase: 'Upgrading', stage: 'Binary' }, { t: 40_000, phase: 'Upgrading', stage: 'API' }, { t: 45_000, phase: 'RollingBack', stage: 'API' }, { t: 100_000, phase: 'RolledBack', stage: 'API' }];
  assert.deepEqual(rules(r), [], 'the from-version\'s API on the new binary is where a phase-two rollback goes');
  // The same fleet after a rollback from phase one (stage Binary): the emulation flags are left, the old binary is not back.
  r.statuses = [{ t: 1_000, phase: 'Upgrading', stage: 'Binary' }, { t: 45_000, phase: 'RollingBack', stage: 'Binary' }, { t: 100_000, phase: 'RolledBack', stage: 'Binary' }];
  assert.deepEqual(rules(r), ['TerminalMatchesFleet']);
  // A phase-two rollback that left one server without its emulation (the target's API) is caught.
  r.statuses = [{ t: 1_000, phase: 'Upgrading', stage: 'API' }, { t: 45_000, phase: 'RollingBack', stage: 'API' }, { t: 100_000, phase: 'RolledBack', stage: 'API' }];
  r.servers = [...r.servers, { t: 60_000, server: 'cp-2', up: true, version: NEW }];
  assert.deepEqual(rules(r), ['TerminalMatchesFleet']);
  assert.match(checkHistory(r).violations[0]!.message, /cp-2 runs v1\.36\.3 \(want every server up on v1\.36\.3, emulating 1\.35: a rollback from phase two\)/);
});

test('DownWithinBatch: two servers down at once in replacements with batch size 1', () => {
  const h = clean();
  h.servers.push({ t: 12_000, server: 'cp-2', up: false, version: OLD }, { t: 14_000, server: 'cp-2', up: true, version: OLD });
  // cp-2 restarting by itself with no call in flight (a kubelet restart) is not the operator's doing.
  assert.deepEqual(rules(h), []);
  // A second call in flight that takes cp-2 down while cp-1 is down is.
  h.ops.push({ key: 'k-early', server: 'cp-2', action: 'Upgrade', start: 11_500, end: 14_000, landed: false });
  assert.ok(rules(h).includes('DownWithinBatch'), JSON.stringify(checkHistory(h).violations));
  // So is a call that never came back (no end): it counts until the run's end.
  h.ops[h.ops.length - 1] = { key: 'k-early', server: 'cp-2', action: 'Upgrade', start: 11_500, landed: false };
  h.servers = h.servers.filter((r) => !(r.server === 'cp-2' && r.t === 14_000));
  assert.ok(rules(h).includes('DownWithinBatch'));
});

test('BreachActedOn: a breach longer than failureLimit x interval paused within the bound is measured; one never acted on is a violation', () => {
  const h = clean();
  h.breaches = [{ from: 40_000, to: 90_000 }];
  h.statuses = [{ t: 1_000, phase: 'Upgrading' }, { t: 35_000, phase: 'Upgrading', finishedBatches: [1] }, { t: 72_000, phase: 'Paused', pauseReason: 'AnalysisBreach', pauseMessage: '3 consecutive breaching checks' }];
  const ok = checkHistory(h);
  assert.deepEqual(ok.violations.filter((v) => v.rule === 'BreachActedOn'), []);
  assert.deepEqual(ok.breachReactionMs, [32_000]);
  h.statuses[2] = { ...h.statuses[2]!, t: 85_000 };
  assert.ok(rules(h).includes('BreachActedOn'), 'acted 45 s after the breach began: bound 30 s + 10 s');
  h.statuses.pop();
  assert.ok(rules(h).includes('BreachActedOn'));
  // A breach no longer than the bound needs no reaction.
  h.breaches = [{ from: 40_000, to: 65_000 }];
  assert.ok(!rules(h).includes('BreachActedOn'));
});

test('ComesToRest: active at the end; Paused on an unknown that is known', () => {
  const h = clean();
  h.statuses = [{ t: 1_000, phase: 'Upgrading' }];
  assert.deepEqual(rules(h), ['ComesToRest']);
  h.statuses = [{ t: 1_000, phase: 'Paused', pauseReason: 'RollbackSafetyUnknown', pauseMessage: 'the storage version hashes of v1.36.3 have not been read', targetStorageKnown: true }];
  assert.deepEqual(rules(h), ['ComesToRest']);
  h.statuses[0] = { ...h.statuses[0]!, targetStorageKnown: false };
  assert.deepEqual(rules(h), [], 'still unknown: a real cause');
  h.statuses[0] = { t: 1_000, phase: 'Paused' };
  assert.deepEqual(rules(h), ['ComesToRest']);
});

test('ComesToRest: a preflight waiting MixedVersions rests while the fleet is mixed, not once it runs one version', () => {
  const h = clean();
  // cp-2 restarted on the target by someone else before preflight passed: no call was ever made.
  h.ops = [];
  h.servers = [...['cp-1', 'cp-2', 'cp-3'].map((server) => ({ t: 0, server, up: true, version: OLD })), { t: 10_000, server: 'cp-2', up: true, version: NEW }];
  h.statuses = [{ t: 11_000, phase: 'Preflight', waiting: 'MixedVersions' }];
  h.healedAt = 20_000;
  h.endedAt = 200_000;
  assert.deepEqual(rules(h), [], 'the fleet is mixed at the end: a present cause');
  h.servers.push({ t: 100_000, server: 'cp-2', up: true, version: OLD });
  assert.deepEqual(rules(h), ['ComesToRest'], 'one version again for 100 s, still waiting');
  h.servers[h.servers.length - 1] = { t: 190_000, server: 'cp-2', up: true, version: OLD };
  assert.deepEqual(rules(h), [], 'one version again 10 s before the end: the next look may not have come yet');
  h.servers[h.servers.length - 1] = { t: 100_000, server: 'cp-2', up: true, version: OLD };
  h.statuses = [{ t: 11_000, phase: 'Preflight', waiting: 'UnhealthyFleet' }];
  h.servers.pop();
  assert.deepEqual(rules(h), ['ComesToRest'], 'another preflight wait at the end is no rest');
});

test('ResumeCompletes: a pause resumed after the heal that does not end in a terminal phase', () => {
  const h = clean();
  const paused = { t: 60_000, phase: 'Paused', pauseReason: 'AnalysisBreach', pauseMessage: 'error rate 0.4 over 3 checks' };
  h.statuses = [...h.statuses.slice(0, 2), paused];
  h.healedAt = 50_000;
  assert.deepEqual(rules(h), [], 'a pause nobody resumed rests on its reason');
  h.resumesAfterHeal = [85_000];
  assert.deepEqual(rules(h), ['ResumeCompletes'], 'resumed, and paused again on the same reason');
  h.statuses.push({ t: 86_000, phase: 'Upgrading' });
  assert.deepEqual(rules(h), ['ResumeCompletes', 'ComesToRest'], 'resumed, and still going at the end');
  h.statuses.push({ t: 110_000, phase: 'Succeeded', finishedBatches: [1, 2, 3] });
  assert.deepEqual(rules(h), [], 'resumed, and ended');
  // A pause the operator lifts by itself once the fleet is the plan's: it stays because the fleet stays changed (a
  // restart on another binary is one-shot, never undone), which ComesToRest judges, not the resume.
  h.statuses[h.statuses.length - 1] = { t: 110_000, phase: 'Paused', pauseReason: 'MembershipChanged', pauseMessage: 'cp-3 runs v1.36.3 without emulating 1.35' };
  assert.deepEqual(rules(h), [], 'a self-lifting pause is a present cause');
});

test('No404AfterConvergence: a 404 for a target-only resource after batch 1 converged', () => {
  const h = clean();
  h.client.push({ t: 50_000, resource: 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies', code: 404 });
  assert.deepEqual(rules(h), ['No404AfterConvergence']);
});

test('percentiles of the breach reaction times', () => {
  assert.equal(percentiles([]), undefined);
  assert.deepEqual(percentiles([30, 10, 20, 40]), { p50: 20, p95: 40, max: 40 });
});

test('DownWithinBatch: a server a fault took down is not the operator\'s doing', () => {
  const h = clean();
  h.servers.push({ t: 12_000, server: 'cp-2', up: false, version: OLD }, { t: 14_000, server: 'cp-2', up: true, version: OLD });
  h.ops.push({ key: 'k-early', server: 'cp-2', action: 'Upgrade', start: 11_500, end: 14_000, landed: false });
  h.faultDown = [{ server: 'cp-2', from: 11_500, to: 14_500 }];
  assert.deepEqual(rules(h), []);
  h.faultDown = [{ server: 'cp-3', from: 11_500, to: 14_500 }];
  assert.deepEqual(rules(h), ['DownWithinBatch']);
});

test('BreachActedOn: the bound runs from when a replica leads again; a breach during preflight is not judged', () => {
  const h = clean();
  h.breaches = [{ from: 40_000, to: 120_000 }];
  h.statuses = [{ t: 1_000, phase: 'Upgrading' }, { t: 35_000, phase: 'Upgrading', finishedBatches: [1] }, { t: 95_000, phase: 'Paused', pauseReason: 'AnalysisBreach', pauseMessage: 'x' }];
  assert.ok(rules(h).includes('BreachActedOn'), 'no leader gap: 95 s is past 40 + 30 + 10');
  h.operatorBlind = [{ from: 39_000, to: 60_000 }];
  assert.ok(!rules(h).includes('BreachActedOn'), 'no leader until 60 s: bound 60 + 30 + 10 = 100 s');
  h.statuses[2] = { ...h.statuses[2]!, t: 101_000 };
  assert.ok(rules(h).includes('BreachActedOn'));
  h.statuses = [{ t: 1_000, phase: 'Preflight' }, { t: 150_000, phase: 'Upgrading' }, { t: 200_000, phase: 'Succeeded' }];
  assert.ok(!rules(h).includes('BreachActedOn'), 'preflight waits for a healthy fleet instead');
});

test('BreachActedOn: no pause can be recorded while no server can write; blind spans that follow within the bound chain', () => {
  // Seed 191 #0: cp-1 down in its Upgrade, cp-2 cut from etcd at 8.7 s, cp-3 at 15.7 s until 25.2 s: no server could
  // store the pause; the leader could not renew its lease either, and no replica led from 29.1 s to 41.8 s.
  const h = clean();
  h.spec = { ...h.spec, failureLimit: 3, intervalMs: 2_000 };
  h.ops = [{ key: 'k-up-cp-1', server: 'cp-1', action: 'Upgrade', start: 200, end: 50_000, landed: true }];
  h.servers = [
    ...['cp-1', 'cp-2', 'cp-3'].map((s) => ({ t: 0, server: s, up: true, version: OLD })),
    { t: 3_400, server: 'cp-1', up: false, version: OLD },
    { t: 10_900, server: 'cp-2', up: false, version: OLD },
    { t: 20_500, server: 'cp-3', up: false, version: OLD },
    { t: 25_200, server: 'cp-3', up: true, version: OLD },
    { t: 36_200, server: 'cp-2', up: true, version: OLD },
    { t: 45_200, server: 'cp-1', up: true, version: NEW },
  ];
  h.faultDown = [{ server: 'cp-2', from: 8_700, to: 36_200 }, { server: 'cp-3', from: 15_700, to: 25_200 }];
  h.breaches = [{ server: 'cp-2', from: 10_900, to: 36_200 }];
  h.statuses = [{ t: 0, phase: 'Upgrading' }, { t: 133_900, phase: 'Succeeded' }];
  assert.ok(rules(h).includes('BreachActedOn'), 'a leader from 25.2 s on: bound 25.2 + 6 + 2 = 33.2 s, the breach lasted to 36.2 s');
  h.operatorBlind = [{ from: 29_100, to: 41_800 }];
  assert.ok(!rules(h).includes('BreachActedOn'), 'no leader from 29.1 s, inside the bound that began at 25.2 s: nothing left to act on');
  // cp-3 up all along: a server could write from 10.9 s on, and the leaderless span began past 10.9 + 8 = 18.9 s.
  h.faultDown = [{ server: 'cp-2', from: 8_700, to: 36_200 }];
  h.servers = h.servers.filter((r) => r.server !== 'cp-3' || r.t === 0);
  assert.ok(rules(h).includes('BreachActedOn'));
});

test('No404AfterConvergence: judged from the first batch on the target\'s API, until a rollback begins', () => {
  const h = clean();
  // TwoPhase phase one: the emulating servers do not serve the target's API yet.
  h.ops = h.ops.map((o) => ({ ...o, emulated: true }));
  h.client.push({ t: 50_000, resource: 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies', code: 404 });
  assert.deepEqual(rules(h), []);
  const r = clean();
  r.client.push({ t: 50_000, resource: 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies', code: 404 });
  r.statuses.splice(2, 0, { t: 45_000, phase: 'RollingBack' });
  assert.deepEqual(rules(r).filter((x) => x === 'No404AfterConvergence'), [], 'a rollback takes the resource away on purpose');
});

test('BreachActedOn: a server down while its call is in flight is the replacement\'s until the call ends for the operator', () => {
  // Seed 151 #0: the hook failed cp-2's Upgrade at once (the webhook reports no failure), the harness killed cp-2
  // 9 s later for 6 s; the operator left cp-2 to its replacement, as it must until batchTimeout.
  const h = clean();
  h.spec = { ...h.spec, batchTimeoutMs: 60_000 };
  h.ops = [{ key: 'k-up-cp-1', server: 'cp-1', action: 'Upgrade', start: 10_000, end: 10_000, landed: false }];
  h.faultDown = [{ server: 'cp-1', from: 19_000, to: 55_000 }];
  h.breaches = [{ server: 'cp-1', from: 19_000, to: 55_000 }];
  h.statuses = [{ t: 1_000, phase: 'Upgrading' }, { t: 71_000, phase: 'Paused', pauseReason: 'BatchTimeout', pauseMessage: 'Upgrade of cp-1: timed out' }];
  assert.ok(!rules(h).includes('BreachActedOn'), 'down 19-55 s, its call in flight until 70 s: nothing to act on before');
  // Static Pod mode dates the breach from when /readyz first failed, after the outage began: the server ties them.
  h.breaches = [{ server: 'cp-1', from: 23_000, to: 55_000 }];
  assert.ok(!rules(h).includes('BreachActedOn'), 'seen failing at 23 s, its call in flight until 70 s');
  h.breaches = [{ server: 'cp-2', from: 23_000, to: 55_000 }];
  assert.ok(rules(h).includes('BreachActedOn'), 'cp-2 had no call in flight: bound 23 + 30 + 10 = 63 s, paused at 71 s');
  h.breaches = [{ server: 'cp-1', from: 19_000, to: 55_000 }];
  // Nodes seed 251 #7: the call started during the breach, before its bound ran out: the replacement's from then on.
  h.ops = [{ key: 'k-up-cp-1', server: 'cp-1', action: 'Upgrade', start: 25_000, end: 25_000, landed: false }];
  assert.ok(!rules(h).includes('BreachActedOn'), 'down from 19 s, its call from 25 s (bound 59 s) in flight until 85 s');
  h.ops = [{ key: 'k-up-cp-1', server: 'cp-1', action: 'Upgrade', start: 60_000, end: 60_000, landed: false }];
  assert.ok(rules(h).includes('BreachActedOn'), 'a call made after the bound of 59 s ran out excuses nothing');
  h.ops = [{ key: 'k-up-cp-1', server: 'cp-1', action: 'Upgrade', start: 10_000, end: 10_000, landed: false }];
  // The driver reported the failure at 10 s: from then on the server's health is the analysis', bound 19 + 30 + 10.
  h.spec.driverReportsFailure = true;
  assert.ok(rules(h).includes('BreachActedOn'));
  h.spec.driverReportsFailure = false;
  // Still down after the call timed out at 70 s: bound 70 + 30 + 10 = 110 s.
  h.faultDown = [{ server: 'cp-1', from: 19_000, to: 150_000 }];
  h.breaches = [{ server: 'cp-1', from: 19_000, to: 150_000 }];
  h.statuses = [{ t: 1_000, phase: 'Upgrading' }, { t: 109_000, phase: 'Paused', pauseReason: 'AnalysisBreach', pauseMessage: 'x' }];
  assert.ok(!rules(h).includes('BreachActedOn'));
  h.statuses[1] = { ...h.statuses[1]!, t: 112_000 };
  assert.ok(rules(h).includes('BreachActedOn'), 'acted at 112 s: past 110 s');
  // A breach that is not a server down (client errors), and a history without the batch timeout, are judged from their start.
  h.statuses[1] = { ...h.statuses[1]!, t: 60_000 };
  assert.ok(!rules(h).includes('BreachActedOn'));
  h.breaches = [{ server: 'cp-1', from: 19_000, to: 150_000 }, { from: 19_500, to: 150_000 }];
  assert.ok(rules(h).includes('BreachActedOn'), 'a breach with no server of its own: bound 19.5 + 30 + 10 = 59.5 s');
  h.breaches = [{ server: 'cp-1', from: 19_000, to: 150_000 }];
  delete h.spec.batchTimeoutMs;
  assert.ok(rules(h).includes('BreachActedOn'));
});

test('BreachActedOn: a landing no replica could see leaves the call in flight until the server is back', () => {
  // Seed 4207 #6: cp-1's Upgrade landed at 25.2 s during an operator rollout (no leader 11.3-30.1 s); the harness
  // killed cp-1 at 26.3 s for 18.4 s. The new leader never saw cp-1 at the target before it went down, so the call
  // was in flight for the operator until cp-1 came back (44.7 s); the pause at 49.5 s was not late.
  const h = clean();
  h.spec = { ...h.spec, failureLimit: 2, intervalMs: 5_000, batchTimeoutMs: 60_000 };
  h.ops = [{ key: 'k-up-cp-1', server: 'cp-1', action: 'Upgrade', start: 1_900, end: 25_200, landed: true }];
  h.operatorBlind = [{ from: 11_300, to: 30_100 }];
  h.faultDown = [{ server: 'cp-1', from: 26_300, to: 44_700 }];
  h.breaches = [{ server: 'cp-1', from: 26_300, to: 70_000 }];
  h.statuses = [{ t: 1_800, phase: 'Upgrading' }, { t: 49_500 + 14_000, phase: 'Paused', pauseReason: 'AnalysisBreach', pauseMessage: 'x' }];
  // In flight until 44.7 s: bound 44.7 + 10 + 5 = 59.7 s. Paused at 63.5 s: late.
  assert.ok(rules(h).includes('BreachActedOn'), 'the bound runs from the server\'s return');
  h.statuses[1] = { ...h.statuses[1]!, t: 59_000 };
  assert.ok(!rules(h).includes('BreachActedOn'), 'paused at 59 s, within 59.7 s');
  // A leader looking between the landing and the fault could see it: the bound runs from the breach (after the blind span).
  h.operatorBlind = [{ from: 11_300, to: 25_500 }];
  assert.ok(rules(h).includes('BreachActedOn'), 'seen landed at 25.5 s: bound 26.3 + 10 + 5 = 41.3 s, paused at 59 s');
  // Never back: in flight until its batchTimeout (1.9 + 60 = 61.9 s).
  h.operatorBlind = [{ from: 11_300, to: 30_100 }];
  h.faultDown = [{ server: 'cp-1', from: 26_300, to: 200_000 }];
  h.breaches = [{ server: 'cp-1', from: 26_300, to: 200_000 }];
  h.statuses[1] = { ...h.statuses[1]!, t: 76_000 };
  assert.ok(!rules(h).includes('BreachActedOn'), 'bound 61.9 + 10 + 5 = 76.9 s');
  h.statuses[1] = { ...h.statuses[1]!, t: 78_000 };
  assert.ok(rules(h).includes('BreachActedOn'), 'paused at 78 s: past 76.9 s');
});

/** cp-1 upgraded, then rolled back under the given status; the fleet ends on the old version. */
function rolledBack(status: Partial<History['statuses'][number]>): History {
  const h = clean();
  h.ops = [
    { key: 'k-up-cp-1', server: 'cp-1', action: 'Upgrade', start: 10_000, end: 20_000, landed: true },
    { key: 'k-rb-cp-1', server: 'cp-1', action: 'Rollback', start: 40_000, end: 50_000, landed: true },
  ];
  h.servers = [
    ...['cp-1', 'cp-2', 'cp-3'].map((s) => ({ t: 0, server: s, up: true, version: OLD })),
    { t: 11_000, server: 'cp-1', up: false, version: OLD },
    { t: 20_000, server: 'cp-1', up: true, version: NEW },
    { t: 41_000, server: 'cp-1', up: false, version: NEW },
    { t: 50_000, server: 'cp-1', up: true, version: OLD },
  ];
  h.statuses = [
    { t: 1_000, phase: 'Upgrading' },
    { t: 30_000, phase: 'Paused', pauseReason: 'PausedBySpec', pauseMessage: 'spec.paused', targetStorageKnown: true, rollbackSafe: 'True' },
    { t: 39_000, phase: 'RollingBack', targetStorageKnown: true, rollbackSafe: 'True', ...status },
    { t: 60_000, phase: 'RolledBack', targetStorageKnown: true, rollbackSafe: 'True' },
  ];
  h.client = [];
  return h;
}

test('RollbackOnlyWhenSafe: a Rollback to the old binary while the status says rollback safety is unknown, unsafe or not True is flagged', () => {
  assert.deepEqual(rules(rolledBack({})), [], 'RollingBack with RollbackSafe=True is clean');
  const paused = rolledBack({ phase: 'Paused', pauseReason: 'RollbackSafetyUnknown', pauseMessage: 'the target\'s storage hashes are not known', targetStorageKnown: false, rollbackSafe: 'Unknown' });
  assert.deepEqual(rules(paused), ['RollbackOnlyWhenSafe']);
  assert.match(checkHistory(paused).violations[0]!.message, /Rollback cp-1 \(k-rb-cp-1\) carried out at 40000 while the status said Paused RollbackSafetyUnknown/);
  // The same history with the hashes known but the operator's own verdict Unknown: still flagged (the rule, not the history).
  assert.deepEqual(rules(rolledBack({ rollbackSafe: 'Unknown' })), ['RollbackOnlyWhenSafe']);
  assert.deepEqual(rules(rolledBack({ rollbackSafe: 'False' })), ['RollbackOnlyWhenSafe']);
  // Recorded before the condition was kept: the storage hashes decide.
  assert.deepEqual(rules(rolledBack({ rollbackSafe: undefined, targetStorageKnown: false })), ['RollbackOnlyWhenSafe']);
  // The status write before the call may reach the watch a little after it.
  const late = rolledBack({});
  late.statuses[2] = { ...late.statuses[2]!, t: 40_500 };
  assert.deepEqual(rules(late), []);
});

test('RollbackOnlyWhenSafe: a rollback begun in phase two of TwoPhase (to the target emulating) needs no storage verdict', () => {
  const h = rolledBack({ rollbackSafe: 'Unknown', stage: 'API' });
  h.ops[1] = { ...h.ops[1]!, emulated: true };
  h.servers = h.servers.map((r) => (r.t === 50_000 ? { ...r, version: NEW, emulation: '1.35' } : r));
  h.servers.push(...['cp-2', 'cp-3'].map((s) => ({ t: 45_000, server: s, up: true, version: NEW, emulation: '1.35' })));
  assert.ok(!rules(h).includes('RollbackOnlyWhenSafe'), JSON.stringify(checkHistory(h).violations));
});

test('BreachActedOn: reaching Succeeded is not an action on a breach; a breach the upgrade outran within the bound is fine', () => {
  const h = clean();
  h.statuses = [{ t: 1_000, phase: 'Upgrading' }, { t: 35_000, phase: 'Upgrading', finishedBatches: [1] }, { t: 85_000, phase: 'Succeeded', finishedBatches: [1, 2, 3] }];
  h.breaches = [{ from: 36_000, to: 110_000 }];
  assert.deepEqual(rules(h), ['BreachActedOn']);
  assert.match(checkHistory(h).violations[0]!.message, /was never acted on \(the upgrade went on to Succeeded at 85000\)/);
  assert.doesNotMatch(checkHistory(h).violations[0]!.message, /acted on only at/);
  h.breaches = [{ from: 56_000, to: 110_000 }];
  assert.deepEqual(rules(h), [], 'Succeeded before the bound (56 s + 3 x 10 s + 10 s): nothing was owed');
  assert.deepEqual(checkHistory(h).breachReactionMs, [], 'and it is not counted as a reaction');
});

test('StoppedSendsNothing: no call while Paused or terminal, none but Rollback while RollingBack; a state the watch may have missed a change of is not judged', () => {
  const h = clean();
  h.statuses = [
    { t: 1_000, phase: 'Upgrading' },
    { t: 35_000, phase: 'Upgrading', finishedBatches: [1] },
    { t: 38_000, phase: 'Paused', pauseReason: 'AnalysisBreach', pauseMessage: 'breach' },
    { t: 60_000, phase: 'Paused', pauseReason: 'AnalysisBreach', pauseMessage: 'breach' },
  ];
  h.ops = [h.ops[0]!, { ...h.ops[1]!, start: 45_000, end: 50_000 }];
  h.servers = h.servers.filter((r) => r.server !== 'cp-3');
  const v = checkHistory(h).violations.filter((x) => x.rule === 'StoppedSendsNothing');
  assert.equal(v.length, 1, JSON.stringify(checkHistory(h).violations));
  assert.match(v[0]!.message, /Upgrade cp-2 \(k-up-cp-2\) carried out at 45000 while the upgrade was Paused AnalysisBreach/);
  // A resume the watch saw only in resumedAt (the Upgrading between was missed): not judged.
  h.statuses[3] = { ...h.statuses[3]!, resumedAt: '2026-12-06T10:00:44Z' };
  assert.ok(!rules(h).includes('StoppedSendsNothing'));
  // A pause the operator lifts by itself is not judged either.
  h.statuses = h.statuses.map((s) => (s.phase === 'Paused' ? { ...s, pauseReason: 'MembershipChanged', resumedAt: undefined } : s));
  assert.ok(!rules(h).includes('StoppedSendsNothing'));
  // After a terminal phase nothing at all.
  const t = clean();
  t.ops.push({ key: 'k-late', server: 'cp-1', action: 'Upgrade', start: 110_000, end: 115_000, landed: true });
  assert.ok(rules(t).includes('StoppedSendsNothing'));
  // RollingBack: an Upgrade is flagged, a Rollback is not.
  const r = rolledBack({});
  r.statuses.push({ t: 62_000, phase: 'RollingBack', targetStorageKnown: true, rollbackSafe: 'True' });
  r.statuses.sort((a, b) => a.t - b.t);
  r.statuses = r.statuses.filter((s) => s.phase !== 'RolledBack');
  r.statuses.push({ t: 90_000, phase: 'RollingBack', targetStorageKnown: true, rollbackSafe: 'True' });
  assert.ok(!rules(r).includes('StoppedSendsNothing'), JSON.stringify(checkHistory(r).violations));
  r.ops.push({ key: 'k-up-cp-2', server: 'cp-2', action: 'Upgrade', start: 70_000, end: 75_000, landed: true });
  assert.ok(rules(r).includes('StoppedSendsNothing'));
});

/** The clean history after a gate pass: cp-1's EnableProxy landed at 5 s, cp-2's ends at `end` (the first Upgrade: 10 s). */
function gatePassEndingAt(end: number): History {
  const h = clean();
  h.ops.unshift(
    { key: 'k-ep-cp-1', server: 'cp-1', action: 'EnableProxy', start: 2_000, end: 5_000, landed: true },
    { key: 'k-ep-cp-2', server: 'cp-2', action: 'EnableProxy', start: 5_500, end, landed: true },
  );
  return h;
}

test('EnableProxyFirst: the gate pass\'s EnableProxy of every upgraded server lands before the first Upgrade', () => {
  const h = gatePassEndingAt(9_000);
  assert.deepEqual(rules(h), []);
  h.ops[1] = { ...h.ops[1]!, end: 12_000 };
  assert.deepEqual(rules(h), ['EnableProxyFirst']);
  h.ops[1] = { key: 'k-ep-cp-2', server: 'cp-2', action: 'EnableProxy', start: 5_500, end: 6_000, landed: false };
  assert.deepEqual(rules(h), ['EnableProxyFirst'], 'its EnableProxy failed');
  // Retried under a new key after a failed one, and landed: fine.
  h.ops.splice(2, 0, { key: 'k-ep-cp-2b', server: 'cp-2', action: 'EnableProxy', start: 7_000, end: 9_500, landed: true });
  assert.deepEqual(rules(h), []);
});

test('EnableProxyFirst: a call whose server came back before the first Upgrade landed then, though its agent Job completed later', () => {
  // Nodes seed 4202 #9: cp-2's server back up at 9.0 s, the first Upgrade at 10.0 s, the Job complete at 14.0 s.
  const h = gatePassEndingAt(14_000);
  assert.deepEqual(rules(h), ['EnableProxyFirst'], 'no sign of the server coming back: the Job\'s end is the landing');
  h.servers.push({ t: 6_000, server: 'cp-2', up: false, version: OLD }, { t: 9_000, server: 'cp-2', up: true, version: OLD });
  assert.deepEqual(rules(h), []);
  // Back only after the first Upgrade started: not landed in time.
  h.servers.splice(-1, 1, { t: 10_500, server: 'cp-2', up: true, version: OLD });
  assert.deepEqual(rules(h), ['EnableProxyFirst']);
  // Down and back by the harness's own fault: says nothing of the call.
  h.servers.splice(-1, 1, { t: 9_000, server: 'cp-2', up: true, version: OLD });
  h.faultDown = [{ server: 'cp-2', from: 5_800, to: 9_000 }];
  assert.deepEqual(rules(h), ['EnableProxyFirst']);
});

test('EnableProxyFirst: a webhook call whose new run was ready before the first Upgrade landed then, though the hook ended later', () => {
  // Process seed 4213 #16: cp-3's EnableProxy ended at 31.12 s in the hook's record (its 500 ms readiness poll, then the
  // balancer), the first Upgrade started at 30.98 s: the operator had seen cp-3 back on its look.
  const h = gatePassEndingAt(10_140);
  assert.deepEqual(rules(h), ['EnableProxyFirst'], 'no readiness record: the hook\'s end is the landing');
  h.ops[1] = { ...h.ops[1]!, readyAfter: 9_600 };
  assert.deepEqual(rules(h), []);
  // Still not ready after the first Upgrade started: not landed in time.
  h.ops[1] = { ...h.ops[1]!, readyAfter: 10_050 };
  assert.deepEqual(rules(h), ['EnableProxyFirst']);
  // A failed call is no landing, whatever its readiness record says.
  h.ops[1] = { ...h.ops[1]!, readyAfter: 9_600, landed: false };
  assert.deepEqual(rules(h), ['EnableProxyFirst']);
});

test('PhaseOneFirst and StageNeverBack: no emulated Upgrade after phase two\'s first call; status.stage never leaves API once there', () => {
  const h = clean();
  h.ops = h.ops.map((o) => ({ ...o, emulated: true }));
  h.ops.push({ key: 'k-lift-cp-1', server: 'cp-1', action: 'Upgrade', start: 85_000, end: 90_000, landed: true });
  h.statuses = [{ t: 1_000, phase: 'Upgrading', stage: 'Binaries' }, { t: 84_000, phase: 'Upgrading', stage: 'API' }];
  assert.deepEqual(rules(h).filter((r) => r === 'PhaseOneFirst' || r === 'StageNeverBack'), []);
  h.ops.push({ key: 'k-again-cp-4', server: 'cp-4', action: 'Upgrade', start: 95_000, end: 99_000, landed: true, emulated: true });
  h.statuses.push({ t: 94_000, phase: 'Upgrading', stage: 'Binaries' });
  const found = rules(h);
  assert.ok(found.includes('PhaseOneFirst') && found.includes('StageNeverBack'), found.join(', '));
  assert.match(checkHistory(h).violations.find((v) => v.rule === 'StageNeverBack')!.message, /from API \(since 84000\) to Binaries at 94000/);
});

/** clean() with the calls as the watch first saw them recorded: batch k's Upgrade half a second before the hook took it. */
function started(): History {
  const h = clean();
  h.callsSeen = h.ops.map((o, i) => ({ t: o.start - 500, key: o.key, batch: i + 1, action: o.action }));
  return h;
}

/** rolledBack() whose rollback could begin at 39 s while the gate failed (35-65 s), yet its first Rollback came at 62 s. */
function heldRollback(): History {
  const h = rolledBack({});
  h.spec = { ...h.spec, batchTimeoutMs: 60_000 };
  h.ops[1] = { ...h.ops[1]!, start: 62_000, end: 70_000 };
  h.servers = h.servers.map((r) => (r.t === 41_000 ? { ...r, t: 63_000 } : r.t === 50_000 ? { ...r, t: 70_000 } : r));
  h.statuses[3] = { ...h.statuses[3]!, t: 80_000 };
  h.callsSeen = [{ t: 9_800, key: 'k-up-cp-1', batch: 1, action: 'Upgrade' }, { t: 61_500, key: 'k-rb-cp-1', batch: 1, action: 'Rollback' }];
  h.gate = { failing: [{ from: 35_000, to: 65_000 }], unknown: [] };
  return h;
}

test('NoCallWhileGateFails: a batch start while the gauge failed or Prometheus was out, past the lag; not within the lag, nor just after Prometheus came back', () => {
  assert.deepEqual(rules(started()), [], 'no gate: nothing to judge');
  const at = (failing: { from: number; to: number }[], unknown: { from: number; to: number }[] = []): Rule[] => {
    const h = started();
    h.gate = { failing, unknown };
    return rules(h);
  };
  // Batch 2's start is seen at 39.5 s.
  assert.deepEqual(at([{ from: 39_500 - GATE_LAG_MS, to: 45_000 }]), ['NoCallWhileGateFails'], 'failing for the whole lag');
  assert.deepEqual(at([{ from: 39_500 - GATE_LAG_MS + 1, to: 45_000 }]), [], 'the flip may not have been scraped and queried yet');
  assert.deepEqual(at([{ from: 30_000, to: 45_000 }], [{ from: 20_000, to: 31_000 }]), ['NoCallWhileGateFails'], 'Prometheus down, then the gauge failing: held throughout');
  assert.deepEqual(at([{ from: 20_000, to: 45_000 }], [{ from: 25_000, to: 36_000 }]), [], 'Prometheus back 3.5 s before: its last sample may be from before the flip');
  assert.deepEqual(at([], [{ from: 20_000, to: 45_000 }]), ['NoCallWhileGateFails'], 'unknown is not held');
  assert.deepEqual(at([{ from: 40_500, to: 65_000 }]), [], 'a start before the flip: the rest of batch 2 goes on (no other batch starts until 70 s)');
});

test('NoCallOutsideWindow: the spec\'s UTC recurring windows, evaluated by the checker: days, a window across midnight, exclusions', () => {
  const all = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const w = { timeZone: 'UTC', recurring: [{ days: ['Mon'], start: '23:30', duration: '1h' }] };
  const monday = Date.parse('2026-12-07T23:45:00Z');
  assert.equal(windowOpenAt(w, monday), true);
  assert.equal(windowOpenAt(w, Date.parse('2026-12-08T00:15:00Z')), true, 'opened Monday, still open past midnight');
  assert.equal(windowOpenAt(w, Date.parse('2026-12-08T00:30:00Z')), false, 'closed after its hour');
  assert.equal(windowOpenAt(w, Date.parse('2026-12-08T23:45:00Z')), false, 'not on Tuesday');
  assert.equal(windowOpenAt({ ...w, exclusions: [{ start: '2026-12-07T23:40:00Z', end: '2026-12-07T23:50:00Z' }] }, monday), false, 'an exclusion closes it');
  assert.equal(windowOpenAt({ ...w, timeZone: 'Europe/Berlin' }, monday), undefined, 'another zone is not judged');
  assert.equal(goDurationMs('1h30m'), 5_400_000);
  assert.ok(Number.isNaN(goDurationMs('90 minutes')));
  const h = started();
  h.window = { timeZone: 'UTC', recurring: [{ days: all, start: '00:00', duration: '2m' }] };
  assert.deepEqual(rules(h), [], 'every batch starts inside the window');
  h.window.recurring[0]!.duration = '1m';
  assert.match(checkHistory(h).violations[0]!.message, /batch 3 started \(Upgrade, k-up-cp-3\) at 69500 outside the maintenance window/);
  // Closed only 4 s before the start: the step may have read the clock before the closing.
  h.window.recurring[0]!.duration = '65s';
  assert.deepEqual(rules(h), []);
});

test('RollbackNotDelayedByGateOrWindow: a rollback held while the gate fails, or waiting on the window, is flagged; one that goes on is not', () => {
  assert.deepEqual(rules(heldRollback()), ['RollbackNotDelayedByGateOrWindow']);
  assert.match(checkHistory(heldRollback()).violations[0]!.message, /free to begin at 39000 while the gate failed, yet no Rollback call by 59000/);
  const prompt = heldRollback();
  prompt.ops[1] = { ...prompt.ops[1]!, start: 45_000 };
  prompt.callsSeen![1] = { ...prompt.callsSeen![1]!, t: 44_000 };
  assert.deepEqual(rules(prompt), [], 'the first Rollback 5 s after RollingBack, the gate failing throughout');
  const waited = rolledBack({ waiting: 'OutsideWindow' });
  assert.deepEqual(rules(waited), ['RollbackNotDelayedByGateOrWindow'], 'RollingBack never waits on the window');
  // The window closed: the same late rollback flagged as held by it.
  const closed = heldRollback();
  delete closed.gate;
  closed.window = { timeZone: 'UTC', recurring: [{ days: ['Thu'], start: '00:00', duration: '30s' }] };
  assert.match(checkHistory(closed).violations.map((v) => v.message).join(), /the window was closed/);
  // An Upgrade in flight until its batchTimeout: the rollback may begin only then.
  const inFlight = heldRollback();
  inFlight.callsSeen!.push({ t: 30_000, key: 'k-up-cp-2', batch: 2, action: 'Upgrade' });
  assert.ok(!rules(inFlight).includes('RollbackNotDelayedByGateOrWindow'), 'cp-2\'s Requested call counts until 90 s: not judged');
});

test('AcceptedRiskRecorded: the start past an accepted finding needs it in status.acceptedRisks; an unaccepted one or a hard one never lets it start', () => {
  const risks = { accepted: ['ServingCertificateExpiresSoon'], made: ['ServingCertificateExpiresSoon'], hard: [] };
  const ok = started();
  ok.risks = risks;
  ok.statuses[0] = { ...ok.statuses[0]!, acceptedRisks: ['ServingCertificateExpiresSoon'] };
  assert.deepEqual(rules(ok), [], 'recorded before the first call');
  const late = started();
  late.risks = risks;
  late.statuses.splice(1, 0, { t: 9_500 + WATCH_LAG_MS + 1, phase: 'Upgrading', acceptedRisks: ['ServingCertificateExpiresSoon'] });
  assert.deepEqual(rules(late), ['AcceptedRiskRecorded'], 'recorded only after the first call went out');
  const unaccepted = started();
  unaccepted.risks = { ...risks, accepted: [] };
  assert.match(checkHistory(unaccepted).violations[0]!.message, /past the blocking finding ServingCertificateExpiresSoon, which spec.acceptRisks does not name/);
  // A hard finding there from before the creation until 12 s: batch 1's call at 9.5 s is too early; at 12.5 s it is not.
  const hard = started();
  hard.statuses[0] = { ...hard.statuses[0]!, acceptedRisks: ['ServingCertificateExpiresSoon'] };
  hard.risks = { ...risks, hard: [{ from: 500, to: 12_000 }] };
  assert.match(checkHistory(hard).violations[0]!.message, /while a hard finding was there \(from 500 to 12000\)/);
  hard.risks.hard = [{ from: 500, to: 9_000 }];
  assert.deepEqual(rules(hard), []);
  hard.risks.hard = [{ from: 5_000, to: 12_000 }];
  assert.deepEqual(rules(hard), [], 'a finding that came after the upgrade was created: preflight had passed already');
});

/** For each rule, a hand-made history that breaks its promise and no other: without the rule the history is clean. */
const VIOLATING: Record<Rule, () => History> = {
  OncePerKey: () => {
    const h = clean();
    h.ops.push({ ...h.ops[0]!, start: 95_000, end: 96_000 });
    return h;
  },
  OneInFlight: () => {
    const h = clean();
    h.ops.push({ key: 'k-other', server: 'cp-1', action: 'Upgrade', start: 15_000, end: 25_000, landed: true });
    return h;
  },
  RollbackAfterLanding: () => {
    // cp-1 rolled back while cp-2's Upgrade, accepted a moment before the breach, was still in flight.
    const h = rolledBack({});
    h.ops.push({ key: 'k-up-cp-2', server: 'cp-2', action: 'Upgrade', start: 38_000, end: 45_000, landed: false });
    return h;
  },
  TerminalMatchesFleet: () => {
    const h = clean();
    h.servers = h.servers.filter((r) => !(r.server === 'cp-3' && r.version === NEW));
    return h;
  },
  DownWithinBatch: () => {
    const h = clean();
    h.servers.push({ t: 12_000, server: 'cp-2', up: false, version: OLD }, { t: 14_000, server: 'cp-2', up: true, version: OLD });
    h.ops.push({ key: 'k-early', server: 'cp-2', action: 'Upgrade', start: 11_500, end: 14_000, landed: false });
    return h;
  },
  BreachActedOn: () => {
    const h = clean();
    h.breaches = [{ from: 36_000, to: 110_000 }];
    h.statuses[2] = { ...h.statuses[2]!, t: 85_000 };
    return h;
  },
  ComesToRest: () => {
    const h = clean();
    h.statuses = h.statuses.slice(0, 2);
    h.servers = h.servers.filter((r) => r.t < 40_000);
    h.ops = h.ops.slice(0, 1);
    return h;
  },
  ResumeCompletes: () => {
    const h = clean();
    h.statuses = [...h.statuses.slice(0, 2), { t: 60_000, phase: 'Paused', pauseReason: 'AnalysisBreach', pauseMessage: 'error rate 0.4 over 3 checks' }];
    h.ops = h.ops.slice(0, 2);
    h.servers = h.servers.filter((r) => r.server !== 'cp-3' || r.t === 0);
    h.healedAt = 50_000;
    h.resumesAfterHeal = [85_000];
    return h;
  },
  No404AfterConvergence: () => {
    const h = clean();
    h.client.push({ t: 50_000, resource: 'admissionregistration.k8s.io/v1/mutatingadmissionpolicies', code: 404 });
    return h;
  },
  RollbackOnlyWhenSafe: () => rolledBack({ rollbackSafe: 'Unknown' }),
  StoppedSendsNothing: () => {
    const h = clean();
    h.ops.push({ key: 'k-late', server: 'cp-1', action: 'Upgrade', start: 110_000, end: 115_000, landed: true });
    h.servers.push({ t: 111_000, server: 'cp-1', up: false, version: NEW }, { t: 115_000, server: 'cp-1', up: true, version: NEW });
    return h;
  },
  EnableProxyFirst: () => {
    const h = clean();
    h.ops.unshift({ key: 'k-ep-cp-2', server: 'cp-2', action: 'EnableProxy', start: 5_500, end: 12_000, landed: true });
    return h;
  },
  PhaseOneFirst: () => {
    const h = clean();
    h.ops = h.ops.map((o, i) => ({ ...o, emulated: i !== 1 }));
    return h;
  },
  StageNeverBack: () => {
    const h = clean();
    h.statuses = [{ t: 1_000, phase: 'Upgrading', stage: 'API' }, { t: 35_000, phase: 'Upgrading', stage: 'Binaries', finishedBatches: [1] }, { t: 100_000, phase: 'Succeeded', stage: 'API', finishedBatches: [1, 2, 3] }];
    return h;
  },
  NoCallWhileGateFails: () => {
    // Batch 2 starts at 39.5 s while the gauge had failed since 30 s.
    const h = started();
    h.gate = { failing: [{ from: 30_000, to: 45_000 }], unknown: [] };
    return h;
  },
  NoCallOutsideWindow: () => {
    // The window is open for the first minute only: batch 3 starts at 69.5 s.
    const h = started();
    h.window = { timeZone: 'UTC', recurring: [{ days: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'], start: '00:00', duration: '1m' }] };
    return h;
  },
  RollbackNotDelayedByGateOrWindow: () => heldRollback(),
  AcceptedRiskRecorded: () => {
    // An accepted certificate finding, never recorded in status.acceptedRisks, and batch 1 went ahead.
    const h = started();
    h.risks = { accepted: ['ServingCertificateExpiresSoon'], made: ['ServingCertificateExpiresSoon'], hard: [] };
    return h;
  },
  ...VIOLATING_LATE,
};

for (const rule of RULES) {
  test(`rule table: ${rule} alone flags its violating history; without ${rule} that history is clean`, () => {
    const h = VIOLATING[rule]();
    assert.deepEqual(rules(h), [rule], JSON.stringify(checkHistory(h).violations));
    assert.deepEqual(checkHistory(h, new Set(RULES.filter((r) => r !== rule))).violations, []);
  });
}
