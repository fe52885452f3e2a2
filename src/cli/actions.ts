// pause / resume / abort / retry / approve: what each command changes on the object, or why it refuses. Pure: the
// command reads the object, decides here, and sends the merge patch (guarded by the resourceVersion it read).
import type { ApiServerUpgrade } from '../api/types.generated.ts';
import { ABORT_ANNOTATION, APPROVE_ANNOTATION, RESUME_ANNOTATION, RETRY_ANNOTATION, isTerminal } from '../api/vocabulary.ts';

export const ACTION_COMMANDS = ['pause', 'resume', 'abort', 'retry', 'approve'] as const;
export type ActionCommand = (typeof ACTION_COMMANDS)[number];

export type Decision =
  | { ok: true; patch: Record<string, unknown>; message: string }
  | { ok: false; why: string };

type ObservedField = 'observedResume' | 'observedAbort' | 'observedRetry' | 'observedApprove';

/**
 * A new value for an action annotation: the time, made distinct from the value the annotation has and from
 * the last value the operator acted on (it acts on each new value once, so a repeated value would do nothing).
 */
export function newToken(u: ApiServerUpgrade, annotation: string, observed: ObservedField, now: Date): string {
  const taken = new Set([u.metadata?.annotations?.[annotation], u.status?.[observed]].filter((x): x is string => x !== undefined));
  const base = now.toISOString();
  let token = base;
  for (let i = 1; taken.has(token); i++) token = `${base}-${i}`;
  return token;
}

function annotate(u: ApiServerUpgrade, annotation: string, value: string): Record<string, unknown> {
  return { metadata: { annotations: { [annotation]: value }, ...(u.metadata?.resourceVersion ? { resourceVersion: u.metadata.resourceVersion } : {}) } };
}

function specPatch(u: ApiServerUpgrade, paused: boolean): Record<string, unknown> {
  return { spec: { paused }, ...(u.metadata?.resourceVersion ? { metadata: { resourceVersion: u.metadata.resourceVersion } } : {}) };
}

const GIT_NOTE = 'This is a spec edit: Git tools (Argo CD, Flux) will see it as drift from the manifest in Git unless the manifest says the same.';

export function decide(cmd: ActionCommand, u: ApiServerUpgrade, now: Date): Decision {
  const name = u.metadata?.name ?? '';
  const phase = u.status?.phase ?? 'Pending';
  const reason = u.status?.pause?.reason;
  const specPaused = u.spec?.paused === true;
  const pausedBy = phase === 'Paused' ? ` (${reason ?? 'no reason recorded'})` : '';

  switch (cmd) {
    case 'pause': {
      if (isTerminal(phase)) return { ok: false, why: `cannot pause ${name}: it is ${phase}, finished` };
      if (specPaused) return { ok: false, why: `${name} is already paused by its spec (spec.paused is true); \`kubectl apiserver-upgrade resume ${name}\` resumes it` };
      if (phase === 'Paused') return { ok: false, why: `${name} is already paused${pausedBy}: resume it with \`kubectl apiserver-upgrade resume ${name}\` once the cause is fixed` };
      return {
        ok: true,
        patch: specPatch(u, true),
        message: `${name}: spec.paused set to true. ${GIT_NOTE} The operator starts no new driver call (a call in flight completes); \`kubectl apiserver-upgrade resume ${name}\` sets it back to false.`,
      };
    }
    case 'resume': {
      if (isTerminal(phase)) {
        const hint = phase === 'Failed' ? `; \`kubectl apiserver-upgrade retry ${name}\` re-runs a Failed upgrade from preflight` : '';
        return { ok: false, why: `cannot resume ${name}: it is ${phase}, finished${hint}` };
      }
      if (specPaused) {
        return {
          ok: true,
          patch: specPatch(u, false),
          message: `${name}: spec.paused set to false. ${GIT_NOTE} The operator resumes the upgrade${u.status?.pause?.resumePhase ? ` into ${u.status.pause.resumePhase}` : ''} at its next reconcile.`,
        };
      }
      if (phase !== 'Paused') return { ok: false, why: `${name} is not paused (phase ${phase})` };
      const token = newToken(u, RESUME_ANNOTATION, 'observedResume', now);
      return {
        ok: true,
        patch: annotate(u, RESUME_ANNOTATION, token),
        message: `${name}: annotated ${RESUME_ANNOTATION}=${token} (no spec edit). The operator resumes the ${reason ?? ''} pause once${u.status?.pause?.resumePhase ? `, back into ${u.status.pause.resumePhase}` : ''}: a step that timed out or was refused is tried again under a new key.`,
      };
    }
    case 'abort': {
      if (phase === 'Succeeded') return { ok: false, why: `cannot abort ${name}: it Succeeded, and there is no rollback after Succeeded (a new ApiServerUpgrade to the old version is refused as a Downgrade)` };
      if (isTerminal(phase)) return { ok: false, why: `cannot abort ${name}: it is already ${phase}, finished` };
      if (phase === 'RollingBack') return { ok: false, why: `${name} is already rolling back` };
      const token = newToken(u, ABORT_ANNOTATION, 'observedAbort', now);
      const held = specPaused ? ` spec.paused is true: a rollback that starts is paused again until \`kubectl apiserver-upgrade resume ${name}\`.` : '';
      return {
        ok: true,
        patch: annotate(u, ABORT_ANNOTATION, token),
        message: `${name}: annotated ${ABORT_ANNOTATION}=${token}. The operator rolls back now, through the same safety checks as onBreach Rollback (it pauses with RollbackUnsafe or RollbackSafetyUnknown instead when storage forbids it), or ends RolledBack at once if no server was touched yet.${held}`,
      };
    }
    case 'retry': {
      if (phase === 'Failed') {
        const token = newToken(u, RETRY_ANNOTATION, 'observedRetry', now);
        return { ok: true, patch: annotate(u, RETRY_ANNOTATION, token), message: `${name}: annotated ${RETRY_ANNOTATION}=${token}. The operator re-runs the Failed upgrade from preflight, from what it observes now.` };
      }
      if (phase === 'Paused') {
        if (specPaused) return { ok: false, why: `${name} is paused by its spec (spec.paused is true), which a retry does not override: \`kubectl apiserver-upgrade resume ${name}\` sets it to false` };
        const token = newToken(u, RETRY_ANNOTATION, 'observedRetry', now);
        return {
          ok: true,
          patch: annotate(u, RETRY_ANNOTATION, token),
          message: `${name}: annotated ${RETRY_ANNOTATION}=${token}. The operator resumes the ${reason ?? ''} pause: a step that timed out or was refused is tried again under a new key.`,
        };
      }
      return { ok: false, why: `cannot retry ${name}: it is ${phase}; retry re-runs a Failed upgrade or resumes a paused one` };
    }
    case 'approve': {
      if (isTerminal(phase)) return { ok: false, why: `cannot approve ${name}: it is ${phase}, finished` };
      const hold = u.status?.phaseTwoHold;
      // Only while the hold is on: the operator ignores a value it first sees at any other time (docs/two-phase.md).
      if (hold?.heldSince === undefined || hold.endedBy !== undefined) {
        const why = hold?.endedBy !== undefined ? `its hold ended (${hold.endedBy})` : u.spec?.strategy?.phaseTwo?.start === 'Approval' ? 'phase two is not held yet (the hold starts once phase one and phaseSoakDuration are over; an approval set earlier would not count)' : 'it holds no phase two (spec.strategy.phaseTwo.start is not Approval)';
        return { ok: false, why: `nothing to approve on ${name}: ${why}` };
      }
      if (hold.approvedAt !== undefined) return { ok: false, why: `${name}: phase two was already approved at ${hold.approvedAt} (${hold.approval ?? ''})` };
      const token = newToken(u, APPROVE_ANNOTATION, 'observedApprove', now);
      const paused = phase === 'Paused' ? ` It is paused${pausedBy}: phase two starts once it is resumed.` : '';
      return {
        ok: true,
        patch: annotate(u, APPROVE_ANNOTATION, token),
        message: `${name}: annotated ${APPROVE_ANNOTATION}=${token} (no spec edit). The operator ends the hold and starts phase two (lifting the emulation, batch by batch); from then on a rollback goes back to the old API on the new binary, no longer to the old binaries.${paused}`,
      };
    }
  }
}
