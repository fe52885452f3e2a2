import type { Schema } from './schema-types.ts';
import { durationField, stringField, timeField } from './schema-builders.ts';
import { DEADLINE_ACTIONS, HOLD_ENDINGS, PHASE_TWO_STARTS } from './vocabulary.ts';

/**
 * spec.strategy.phaseTwo and what status says about it: phase two of a TwoPhase upgrade started automatically after
 * phaseSoakDuration, or held (every server on the new binary emulating the old version, a rollback to the old
 * binaries still safe) until the approve annotation or a deadline (docs/two-phase.md "Holding phase two").
 */

/** The shortest and longest deadline: short enough to test, long enough for a soak of days (EKS allows days). */
export const HOLD_DEADLINE_MIN = '10s';
export const HOLD_DEADLINE_MAX = '720h';

const deadlineAction: Schema = {
  tsType: 'DeadlineAction',
  type: 'string',
  description:
    'What the deadline does, required with it: Proceed starts phase two as an approval would; Rollback rolls back to the old binaries (through the rollback safety checks, ending RolledBack).',
  enum: [...DEADLINE_ACTIONS],
};

export const phaseTwoSchema: Schema = {
  tsType: 'PhaseTwoPolicy',
  type: 'object',
  description:
    'TwoPhase only: how phase two (lifting the emulation) starts once phaseSoakDuration is over. Frozen while the upgrade is under way, like phases.',
  default: {},
  properties: {
    start: {
      tsType: 'PhaseTwoStart',
      type: 'string',
      description:
        'Automatic: phase two starts when phaseSoakDuration ends. Approval: the upgrade holds there — every server on the new binary emulating the old version, so aborting goes back to the old binaries — until the upgrade.apiserver.dev/approve annotation gets a new value while the hold is on (kubectl apiserver-upgrade approve NAME), or the deadline passes.',
      enum: [...PHASE_TWO_STARTS],
      default: 'Automatic',
    },
    deadline: durationField(
      'Approval only: how long the hold lasts, from the moment it starts (the end of phaseSoakDuration); when it passes without an approval, onDeadline applies. Absent: the hold lasts until an approval or an abort.',
      undefined,
      HOLD_DEADLINE_MIN,
      HOLD_DEADLINE_MAX,
    ),
    onDeadline: deadlineAction,
  },
  'x-kubernetes-validations': [
    { rule: 'has(self.deadline) == has(self.onDeadline)', message: 'phaseTwo.deadline and phaseTwo.onDeadline go together: a deadline must say what it does (Proceed or Rollback)' },
    { rule: "!has(self.deadline) || (has(self.start) && self.start == 'Approval')", message: 'phaseTwo.deadline needs start Approval: an automatic phase two has no hold to end', fieldPath: '.deadline' },
  ],
};

/** status.phaseTwoHold: the hold, as every decision about it needs it after a restart or a leader change. */
export const phaseTwoHoldSchema: Schema = {
  tsType: 'PhaseTwoHold',
  type: 'object',
  description:
    'A TwoPhase upgrade held before phase two (spec.strategy.phaseTwo.start Approval): when the hold started, its deadline, the approval seen and how it ended.',
  properties: {
    heldSince: timeField('When the hold started (phaseSoakDuration over, every server on the new binary emulating the old version).'),
    deadline: timeField('When onDeadline applies if no approval came; absent: no deadline.'),
    onDeadline: deadlineAction,
    approval: stringField('The value of the upgrade.apiserver.dev/approve annotation that approved phase two.', 253),
    approvedAt: timeField('When that approval was seen.'),
    endedBy: { tsType: 'HoldEnding', type: 'string', description: 'What ended the hold: Approved, DeadlineProceeded (the deadline passed under onDeadline Proceed), DeadlineRolledBack (under onDeadline Rollback, the rollback started) or RollbackStarted (an abort, or a breach under onBreach Rollback); absent while it is on.', enum: [...HOLD_ENDINGS] },
    endedAt: timeField('When the hold ended.'),
  },
};

/**
 * status.rollbackWindow: whether, and to what, the fleet can go back — while the upgrade runs (what an abort does),
 * in a hold (until its deadline) and after it ended (whether the from-version reads what the target wrote).
 */
export const rollbackWindowSchema: Schema = {
  tsType: 'RollbackWindow',
  type: 'object',
  description:
    'Where a rollback goes and whether it is safe, as of checkedAt. While the upgrade runs: what an abort would bring the fleet to. After it ended: whether the from-version could still read what the target wrote (storage versions), before anyone writes a new object.',
  properties: {
    available: { type: 'boolean', description: 'Whether aborting this upgrade now rolls the fleet back to toVersion (false once it ended, or while it is already rolling back).' },
    toVersion: stringField('The binary a rollback goes to: the from-version.', 64),
    toEmulatedVersion: stringField('Phase two of TwoPhase: the rollback keeps the new binary and re-applies --emulated-version of this minor.', 16),
    until: timeField('In a hold with a deadline: when onDeadline applies (Proceed: phase two starts and the rollback target becomes the old API on the new binary; Rollback: the fleet goes back by itself).'),
    safe: { type: 'string', description: 'The storage verdict of going back to toVersion: True, False or Unknown (unknown is unsafe).', enum: ['True', 'False', 'Unknown'] },
    reason: stringField('The verdict\'s reason, as in the RollbackSafe condition (StorageVersionsReadable, StorageVersionsMoved, StorageVersionsUnknown, WouldOrphanObjects).', 64),
    message: stringField('The verdict in words.', 4096),
    checkedAt: timeField('When it last changed (or, once the upgrade ended, when it ended).'),
  },
};
