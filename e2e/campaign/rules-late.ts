// The checker's rules for a held phase two and for the control plane's components (docs/two-phase.md "Holding phase
// two", docs/version-skew.md): pure, judged by checkHistory (history-check.ts) with the other rules; each has a
// violating history in test/campaign/violating-late.ts that only it flags.
import type { DriverOp, History, Span, StatusSnapshot, Violation } from './history-check.ts';

/**
 * How long after the harness moved a component a Rollback call may still start: a step that read the components
 * before the change sends its calls after it (a look of up to 8 s was measured at load, docs/reliability.md), and the
 * driver's log sees a call up to CALL_LAG_MS after its status write.
 */
export const COMPONENT_LAG_MS = 8_000;

/** The deadline of a hold is acted on within max(this, 3 intervals) of passing (from when a replica leads again). */
export const DEADLINE_BOUND_MS = 15_000;

const sorted = (h: History): StatusSnapshot[] => [...h.statuses].sort((a, b) => a.t - b.t);

/** Phase two's first call: the first Upgrade without emulation, in an upgrade whose phase one had emulated calls. */
function phaseTwoStart(h: History): DriverOp | undefined {
  const ups = h.ops.filter((o) => o.action === 'Upgrade').sort((a, b) => a.start - b.start);
  if (!ups.some((o) => o.emulated)) return undefined;
  return ups.find((o) => !o.emulated);
}

/**
 * When the hold began: status.phaseTwoHold.heldSince as the watch saw it, but never before phase one's last call
 * started (a hold comes after every server runs the new binary emulating the old one, whatever the status says). Not
 * its end: the operator sees a server back before the driver's record of the call ends (nodes mode: an agent Job
 * completes seconds after its server is ready; seed 11 #110 held at +77.6 s, its last Job ended at +78.4 s).
 */
export function holdBegan(h: History): number | undefined {
  const since = sorted(h).find((s) => s.heldSince !== undefined)?.heldSince;
  if (since === undefined) return undefined;
  const p2 = phaseTwoStart(h);
  const phaseOne = h.ops.filter((o) => o.action === 'Upgrade' && o.emulated && (!p2 || o.start < p2.start)).map((o) => o.start);
  return Math.max(since, ...phaseOne);
}

/**
 * HoldNeedsApprovalOrDeadline: with phase two held (the harness set start Approval), phase two's first call starts
 * only after an approval the harness set after the hold began (holdBegan), or, under onDeadline Proceed, after the deadline. An
 * approval set before the hold approves nothing (docs/two-phase.md); under onDeadline Rollback the deadline starts a
 * rollback, never phase two.
 */
export function holdNeedsApprovalOrDeadline(h: History): Violation[] {
  if (!h.hold) return [];
  const p2 = phaseTwoStart(h);
  if (!p2) return [];
  const began = holdBegan(h);
  if (began === undefined) return [{ rule: 'HoldNeedsApprovalOrDeadline', t: p2.start, message: `phase two's first call (${p2.server}, ${p2.key}) at ${p2.start}, and no hold was ever recorded (status.phaseTwoHold.heldSince)` }];
  const approvals = h.approvals ?? [];
  if (approvals.some((a) => a >= began && a <= p2.start)) return [];
  if (h.hold.deadlineMs !== undefined && h.hold.onDeadline === 'Proceed' && p2.start >= began + h.hold.deadlineMs) return [];
  const before = approvals.filter((a) => a < began);
  const deadline = h.hold.deadlineMs === undefined ? 'no deadline' : `deadline ${began + h.hold.deadlineMs} (onDeadline ${h.hold.onDeadline ?? '?'})`;
  return [{ rule: 'HoldNeedsApprovalOrDeadline', t: p2.start, message: `phase two's first call (${p2.server}, ${p2.key}) at ${p2.start}: the hold began at ${began}, no approval was set after it${before.length ? ` (${before.length} before it, at ${before.join(', ')})` : ''}, ${deadline}` }];
}

/**
 * DeadlineActedOn: a hold still on when its deadline passes (Upgrading, not ended, no approval set in it) is acted on
 * within max(DEADLINE_BOUND_MS, 3 intervals) — from when a replica leads again and a server can take a write, if none
 * could (the spans of `blind`) — and as onDeadline says: Proceed ends the hold DeadlineProceeded or starts phase two,
 * Rollback ends it DeadlineRolledBack, rolls back or pauses on the rollback's safety checks. Any other phase (a pause,
 * a rollback begun otherwise) takes the deadline out of the hold's hands. The reaction is measured.
 */
export function deadlineActedOn(h: History, blind: Span[]): { violations: Violation[]; reactions: number[] } {
  const none = { violations: [], reactions: [] };
  if (h.hold?.deadlineMs === undefined) return none;
  const began = holdBegan(h);
  if (began === undefined) return none;
  const deadlineAt = began + h.hold.deadlineMs;
  const statuses = sorted(h);
  const at = statuses.filter((s) => s.t <= deadlineAt).at(-1);
  if (!at || at.phase !== 'Upgrading' || at.heldSince === undefined || at.holdEndedBy !== undefined) return none;
  if ((h.approvals ?? []).some((a) => a >= began && a <= deadlineAt)) return none;
  const bound = Math.max(DEADLINE_BOUND_MS, 3 * h.spec.intervalMs);
  let from = deadlineAt;
  for (const x of [...blind].sort((a, b) => a.from - b.from)) if (x.from <= from + bound && x.to > from) from = x.to;
  const limit = from + bound;
  const proceed = h.hold.onDeadline === 'Proceed';
  const acted = statuses.find((s) => s.t >= deadlineAt && (s.phase !== 'Upgrading' || s.holdEndedBy !== undefined));
  const call = h.ops.filter((o) => o.start >= deadlineAt && (proceed ? o.action === 'Upgrade' && !o.emulated : o.action === 'Rollback')).sort((a, b) => a.start - b.start)[0];
  const t = Math.min(acted?.t ?? Infinity, call?.start ?? Infinity);
  const wrong = acted && acted.t === t && acted.holdEndedBy === (proceed ? 'DeadlineRolledBack' : 'DeadlineProceeded');
  if (wrong) return { violations: [{ rule: 'DeadlineActedOn', t, message: `the hold's deadline ${deadlineAt} (onDeadline ${h.hold.onDeadline}) ended it ${acted.holdEndedBy}` }], reactions: [] };
  if (t <= limit) return { violations: [], reactions: [t - deadlineAt] };
  if (h.endedAt <= limit) return none;
  return { violations: [{ rule: 'DeadlineActedOn', t: limit, message: `the hold's deadline ${deadlineAt} (onDeadline ${h.hold.onDeadline}) was ${t === Infinity ? 'never acted on' : `acted on only at ${t}`}; bound ${limit}` }], reactions: [] };
}

const release = (v: string): [number, number] | undefined => {
  const m = /^v?(\d+)\.(\d+)/.exec(v);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
};

/**
 * ComponentSkewHoldsRollback: no Rollback call starts while a kube-controller-manager or kube-scheduler the harness set
 * is newer than the from-version (docs/version-skew.md: the rollback pauses ComponentSkew instead), from
 * COMPONENT_LAG_MS after the harness set it until it set it back. A rollback in phase two returns to the from-version's
 * minor (emulated): a component on the target is newer than that too.
 */
export function componentSkewHoldsRollback(h: History): Violation[] {
  const from = release(h.spec.fromVersion);
  if (!from) return [];
  const newer = (v: string): boolean => {
    const r = release(v);
    return r !== undefined && (r[0] > from[0] || (r[0] === from[0] && r[1] > from[1]));
  };
  const out: Violation[] = [];
  for (const rb of h.ops.filter((o) => o.action === 'Rollback').sort((a, b) => a.start - b.start)) {
    const c = (h.components ?? []).find((x) => newer(x.version) && x.from + COMPONENT_LAG_MS <= rb.start && rb.start <= x.to);
    if (c) out.push({ rule: 'ComponentSkewHoldsRollback', t: rb.start, message: `Rollback ${rb.server} (${rb.key}) at ${rb.start} while ${c.component} on ${c.node} ran ${c.version} (set at ${c.from}, until ${c.to}), newer than ${h.spec.fromVersion}` });
  }
  return out;
}
