// The checker's rules of a held phase two and of the control plane's components (e2e/campaign/rules-late.ts) on
// hand-made histories: what they let pass, and where their bounds lie. Each rule's violating history is in the rule
// table of test/campaign/history-check.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkHistory, type Rule } from '../../e2e/campaign/history-check.ts';
import { COMPONENT_LAG_MS } from '../../e2e/campaign/rules-late.ts';
import { componentClean, heldClean } from './violating-late.ts';

const rules = (h: Parameters<typeof checkHistory>[0]): Rule[] => [...new Set(checkHistory(h).violations.map((v) => v.rule))];

test('a held phase two approved in the hold, or ended by an onDeadline Proceed deadline on time, is clean', () => {
  assert.deepEqual(checkHistory(heldClean()).violations, []);
  const d = heldClean({ p2: 95_000, approvals: [], hold: { deadlineMs: 20_000, onDeadline: 'Proceed' }, endedBy: 'DeadlineProceeded' });
  const v = checkHistory(d);
  assert.deepEqual(v.violations, []);
  assert.deepEqual(v.deadlineReactionMs, [4_000], 'the status ended the hold 1 s before the first call, 4 s after the deadline');
});

test('HoldNeedsApprovalOrDeadline: the hold begins no earlier than phase one\'s last call started, whatever heldSince says', () => {
  const h = heldClean({ approvals: [45_000] });
  for (const s of h.statuses) if (s.heldSince !== undefined) s.heldSince = 40_000;
  assert.deepEqual(rules(h), ['HoldNeedsApprovalOrDeadline'], 'cp-3\'s emulated call started at 50 s: an approval at 45 s came before the hold');
  h.approvals = [51_000];
  assert.deepEqual(rules(h), [], 'the driver\'s record of a call ends after the operator saw its server back: not the bound');
});

test('HoldNeedsApprovalOrDeadline: under onDeadline Rollback the deadline never starts phase two; an approval in the hold does', () => {
  const h = heldClean({ p2: 95_000, approvals: [], hold: { deadlineMs: 20_000, onDeadline: 'Rollback' }, endedBy: 'DeadlineProceeded' });
  assert.ok(rules(h).includes('HoldNeedsApprovalOrDeadline'));
  assert.ok(rules(h).includes('DeadlineActedOn'), 'and the status ended the hold the wrong way');
  h.approvals = [75_000];
  for (const s of h.statuses) if (s.holdEndedBy) s.holdEndedBy = 'Approved';
  assert.deepEqual(rules(h), []);
});

test('HoldNeedsApprovalOrDeadline: phase two with no hold ever recorded is flagged', () => {
  const h = heldClean();
  for (const s of h.statuses) delete s.heldSince;
  assert.deepEqual(rules(h), ['HoldNeedsApprovalOrDeadline']);
});

test('DeadlineActedOn: the bound runs from when a replica leads again; a hold paused at its deadline is not judged', () => {
  const h = heldClean({ p2: 120_000, approvals: [], hold: { deadlineMs: 20_000, onDeadline: 'Proceed' }, endedBy: 'DeadlineProceeded' });
  assert.deepEqual(rules(h), ['DeadlineActedOn']);
  h.operatorBlind = [{ from: 85_000, to: 110_000 }];
  assert.deepEqual(rules(h), [], 'no replica led from 85 s to 110 s: the deadline (90 s) is owed by 125 s');
  const p = heldClean({ p2: 120_000, approvals: [], hold: { deadlineMs: 20_000, onDeadline: 'Proceed' }, endedBy: 'DeadlineProceeded' });
  p.statuses.splice(2, 0, { t: 85_000, phase: 'Paused', pauseReason: 'AnalysisBreach', pauseMessage: 'x', stage: 'Binaries', heldSince: 70_000 }, { t: 110_000, phase: 'Upgrading', stage: 'Binaries', heldSince: 70_000 });
  assert.ok(!rules(p).includes('DeadlineActedOn'), 'a pause holds the deadline (docs/two-phase.md)');
});

test('DeadlineActedOn: onDeadline Rollback is acted on by RollingBack in time', () => {
  const h = heldClean({ p2: 120_000, approvals: [], hold: { deadlineMs: 20_000, onDeadline: 'Rollback' } });
  h.ops = h.ops.filter((o) => o.emulated);
  h.statuses = [...h.statuses.slice(0, 2), { t: 93_000, phase: 'RollingBack', stage: 'Binaries', heldSince: 70_000, holdEndedBy: 'DeadlineRolledBack', rollbackSafe: 'True' }];
  h.servers = h.servers.filter((r) => r.t < 90_000);
  h.endedAt = 100_000;
  const v = checkHistory(h);
  assert.ok(!v.violations.some((x) => x.rule === 'DeadlineActedOn' || x.rule === 'HoldNeedsApprovalOrDeadline'), JSON.stringify(v.violations));
  assert.deepEqual(v.deadlineReactionMs, [3_000]);
  h.statuses[2] = { ...h.statuses[2]!, t: 120_000 };
  h.endedAt = 130_000;
  assert.ok(rules(h).includes('DeadlineActedOn'));
});

test('ComponentSkewHoldsRollback: a Rollback once the component is back, or within the lag of its change, is not flagged', () => {
  assert.deepEqual(checkHistory(componentClean()).violations, []);
  assert.deepEqual(rules(componentClean({ componentBack: 40_000 })), ['ComponentSkewHoldsRollback']);
  // The harness set it newer only COMPONENT_LAG_MS - 1 s before the call: a step that read it before may send it.
  const h = componentClean({ componentBack: 40_000 });
  h.components![1] = { ...h.components![1]!, from: 35_000 - COMPONENT_LAG_MS + 1_000 };
  assert.deepEqual(rules(h), []);
});
