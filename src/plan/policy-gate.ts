/**
 * The operator's policy as the planner applies it (src/plan/planner.ts calls these): a spec outside it is
 * refused at preflight and pauses a run under way. The policy itself (rules, parsing, checkSpec) is
 * src/plan/policy.ts, below the planning context; this file is a phase step above it.
 */
import type { PlanContext } from './context.ts';
import { pause, resume } from './breach.ts';
import { describeViolations, type PolicyViolation } from './policy.ts';

/** The phases whose steps make driver calls. */
const CALLING_PHASES: ReadonlySet<string> = new Set(['EnablingProxy', 'Upgrading', 'RollingBack']);

function conditionNow(ctx: PlanContext, type: string): { status: string; reason: string; message: string } | undefined {
  return ctx.status.conditions?.find((c) => c.type === type);
}

/**
 * Preflight of a spec outside the policy: refused, touching nothing — no driver is built, so no token Secret
 * is read. Not fatal: the policy (or the spec) may change, and the next reconcile checks again.
 */
export function refusePreflight(ctx: PlanContext, vs: readonly PolicyViolation[]): void {
  const message = describeViolations(ctx.policy!, vs);
  const before = conditionNow(ctx, 'PreflightPassed');
  ctx.condition({ type: 'PreflightPassed', status: 'False', reason: 'NotAllowedByPolicy', message });
  if (before?.reason !== 'NotAllowedByPolicy' || before.message !== message) ctx.event('Warning', 'NotAllowedByPolicy', message);
  ctx.progressMessage = `preflight: ${message}`;
  ctx.wait('NotAllowedByPolicy', `preflight: ${message}`);
  ctx.requeue(Math.max(ctx.spec.analysis.intervalMs, 5_000));
}

/**
 * Before the pause handling of a step past preflight: reports the verdict in the Degraded condition, and ends
 * a NotAllowedByPolicy pause once the spec is allowed again (a resume: the soak restarts, the batch needs fresh
 * evidence). Returns true when the step must stop here: paused for the policy and still refused — a resume
 * annotation does not override the policy.
 */
export function policyGate(ctx: PlanContext, vs: readonly PolicyViolation[], resumeToken: string | undefined): boolean {
  // Before preflight has passed, PreflightPassed carries the verdict (refusePreflight).
  if (ctx.phase === 'Pending' || ctx.phase === 'Preflight') return false;
  const degraded = conditionNow(ctx, 'Degraded');
  if (vs.length === 0) {
    if (ctx.phase === 'Paused' && ctx.status.pause?.reason === 'NotAllowedByPolicy') {
      resume(ctx, `the spec is allowed by the operator's policy (${ctx.policy?.source ?? 'none'}) again`);
    } else if (degraded?.status === 'True' && degraded.reason === 'NotAllowedByPolicy') {
      ctx.condition({ type: 'Degraded', status: 'False', reason: 'AllowedByPolicy', message: "the spec is allowed by the operator's policy again" });
    }
    return false;
  }
  const message = describeViolations(ctx.policy!, vs);
  if (degraded?.status !== 'True' || degraded.reason !== 'NotAllowedByPolicy' || degraded.message !== message) {
    ctx.condition({ type: 'Degraded', status: 'True', reason: 'NotAllowedByPolicy', message });
    // Paused for another reason: say it here. In a calling phase the pause below says it (event Paused).
    if (ctx.phase === 'Paused' && ctx.status.pause?.reason !== 'NotAllowedByPolicy') ctx.event('Warning', 'NotAllowedByPolicy', message);
  }
  if (ctx.phase !== 'Paused' || ctx.status.pause?.reason !== 'NotAllowedByPolicy') return false;
  if (ctx.status.pause.message !== message) {
    ctx.status.pause.message = message;
    ctx.condition({ type: 'Paused', status: 'True', reason: 'NotAllowedByPolicy', message });
    ctx.event('Warning', 'Paused', `NotAllowedByPolicy: ${message}`);
  }
  if (resumeToken !== undefined) ctx.event('Warning', 'ResumeRefused', `the resume annotation (${resumeToken}) does not override the operator's policy: ${message}`);
  return true;
}

/**
 * After the pause handling, in a phase that makes calls: a spec outside the policy pauses the run before any
 * new call (calls in flight complete; a Requested call is not re-sent while paused). Returns true when paused.
 */
export function policyPause(ctx: PlanContext, vs: readonly PolicyViolation[]): boolean {
  if (vs.length === 0 || !CALLING_PHASES.has(ctx.phase)) return false;
  pause(ctx, 'NotAllowedByPolicy', describeViolations(ctx.policy!, vs), ctx.phase);
  return true;
}
