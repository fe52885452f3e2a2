// Hand-made histories for the checker's rules of a held phase two and of the control plane's components
// (e2e/campaign/rules-late.ts): clean ones, and for each rule one that breaks its promise and no other (spread into
// the rule table's VIOLATING of test/campaign/history-check.test.ts).
import type { History } from '../../e2e/campaign/history-check.ts';

const OLD = 'v1.35.4';
const NEW = 'v1.36.3';
const SERVERS = ['cp-1', 'cp-2', 'cp-3'];

/**
 * A clean TwoPhase upgrade with phase two held: phase one (emulating 1.35) from 10 s to 60 s, the hold from 70 s, an
 * approval at 80 s, phase two from `p2` (90 s), Succeeded 60 s later.
 */
export function heldClean(o: { p2?: number; approvals?: number[]; hold?: History['hold']; endedBy?: string } = {}): History {
  const p2 = o.p2 ?? 90_000;
  return {
    spec: { fromVersion: OLD, targetVersion: NEW, batchSize: 1, failureLimit: 3, intervalMs: 3_000, targetOnlyResources: [] },
    ops: [
      ...SERVERS.map((s, i) => ({ key: `k-p1-${s}`, server: s, action: 'Upgrade' as const, start: 10_000 + i * 20_000, end: 20_000 + i * 20_000, landed: true, emulated: true })),
      ...SERVERS.map((s, i) => ({ key: `k-p2-${s}`, server: s, action: 'Upgrade' as const, start: p2 + i * 20_000, end: p2 + 10_000 + i * 20_000, landed: true })),
    ],
    servers: [
      ...SERVERS.map((s) => ({ t: 0, server: s, up: true, version: OLD })),
      ...SERVERS.flatMap((s, i) => [
        { t: 11_000 + i * 20_000, server: s, up: false, version: OLD },
        { t: 20_000 + i * 20_000, server: s, up: true, version: NEW, emulation: '1.35' },
        { t: p2 + 1_000 + i * 20_000, server: s, up: false, version: NEW, emulation: '1.35' },
        { t: p2 + 10_000 + i * 20_000, server: s, up: true, version: NEW },
      ]),
    ],
    statuses: [
      { t: 1_000, phase: 'Upgrading', stage: 'Binaries' },
      { t: 70_000, phase: 'Upgrading', stage: 'Binaries', heldSince: 70_000 },
      { t: p2 - 1_000, phase: 'Upgrading', stage: 'Binaries', heldSince: 70_000, holdEndedBy: o.endedBy ?? 'Approved' },
      { t: p2 + 500, phase: 'Upgrading', stage: 'API', heldSince: 70_000, holdEndedBy: o.endedBy ?? 'Approved' },
      { t: p2 + 60_000, phase: 'Succeeded', stage: 'API', heldSince: 70_000, holdEndedBy: o.endedBy ?? 'Approved' },
    ],
    breaches: [],
    healedAt: 0,
    endedAt: p2 + 80_000,
    client: [],
    hold: o.hold ?? {},
    approvals: o.approvals ?? [80_000],
  };
}

/**
 * A clean OnePhase upgrade aborted after cp-1's Upgrade: RollingBack at 30 s, cp-1's Rollback from `rollback` (35 s),
 * RolledBack 15 s later; cp-1's kube-controller-manager on the target from 12 s until `componentBack` (28 s).
 */
export function componentClean(o: { rollback?: number; componentBack?: number } = {}): History {
  const rb = o.rollback ?? 35_000;
  return {
    spec: { fromVersion: OLD, targetVersion: NEW, batchSize: 1, failureLimit: 3, intervalMs: 3_000, targetOnlyResources: [] },
    ops: [
      { key: 'k-up-cp-1', server: 'cp-1', action: 'Upgrade', start: 10_000, end: 20_000, landed: true },
      { key: 'k-rb-cp-1', server: 'cp-1', action: 'Rollback', start: rb, end: rb + 10_000, landed: true },
    ],
    servers: [
      ...SERVERS.map((s) => ({ t: 0, server: s, up: true, version: OLD })),
      { t: 11_000, server: 'cp-1', up: false, version: OLD },
      { t: 20_000, server: 'cp-1', up: true, version: NEW },
      { t: rb + 1_000, server: 'cp-1', up: false, version: NEW },
      { t: rb + 10_000, server: 'cp-1', up: true, version: OLD },
    ],
    statuses: [
      { t: 1_000, phase: 'Upgrading', rollbackSafe: 'True' },
      { t: 30_000, phase: 'RollingBack', rollbackSafe: 'True' },
      { t: rb + 15_000, phase: 'RolledBack', rollbackSafe: 'True' },
    ],
    breaches: [],
    healedAt: 0,
    endedAt: rb + 30_000,
    client: [],
    components: [
      { component: 'kube-controller-manager', node: 'cp-1', version: OLD, from: 0, to: 12_000 },
      { component: 'kube-controller-manager', node: 'cp-1', version: NEW, from: 12_000, to: o.componentBack ?? 28_000 },
      { component: 'kube-controller-manager', node: 'cp-1', version: OLD, from: o.componentBack ?? 28_000, to: rb + 30_000 },
    ],
  };
}

export const VIOLATING_LATE = {
  // The only approval was set at 65 s, before the hold began (70 s): it approves nothing, yet phase two started.
  HoldNeedsApprovalOrDeadline: (): History => heldClean({ approvals: [65_000] }),
  // A 20 s deadline with onDeadline Proceed passed at 90 s; phase two started only at 120 s (bound 15 s).
  DeadlineActedOn: (): History => heldClean({ p2: 120_000, approvals: [], hold: { deadlineMs: 20_000, onDeadline: 'Proceed' }, endedBy: 'DeadlineProceeded' }),
  // cp-1's kube-controller-manager on the target from 12 s to 40 s; the Rollback to v1.35.4 started at 35 s.
  ComponentSkewHoldsRollback: (): History => componentClean({ componentBack: 40_000 }),
};
