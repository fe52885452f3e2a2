/**
 * The running process, not only its manifest (docs/version-skew.md "The running process"): after a call's server is
 * back at the call's goal by /version (and /metrics for a gate pass), its own `/flagz` and `/statusz` must say the
 * same — the binary's version and emulated version, the proxy gate in --feature-gates and --emulated-version as the
 * call set them. Pure: the shell reads the pages of the servers with a call in flight (src/controller/running-reads.ts)
 * into `Observation.running`; this file decides.
 *
 * - A page that differs holds the call: it is not counted as landed (and is not timed out), and the upgrade pauses
 *   RunningProcessDiffers naming the server, the flag and both values. A page that could not be read or parsed holds
 *   it the same way (unknown is unsafe). The pause re-checks at every step and lifts once the pages agree.
 * - A page the server does not serve (404: 1.35 without the gates, a server emulating 1.35) is recorded NotServed,
 *   and the call stands on /version and /metrics as before.
 * - While a rollback runs (or an abort asks for one), calls other than Rollback are not held: what they did is
 *   being undone. Rollback calls are.
 * - An observation without `running` (an observer that does not read the pages) holds nothing.
 */
import type { DriverCall, RunningCheck } from '../api/types.generated.ts';
import { ABORT_ANNOTATION, type RunningState } from '../api/vocabulary.ts';
import type { PlanContext } from './context.ts';
import { minorOf, sameRelease } from './version.ts';
import type { ObservedRunning } from './zpages.ts';
import { PROXY_GATE } from '../api/constants.ts';
import { safeMessage } from './redact.ts';

/** What a call meant its server to run. */
export type CallMeant = Pick<DriverCall, 'action' | 'target' | 'gate' | 'emulatedVersion'>;

export interface Difference {
  page: '/flagz' | '/statusz';
  /** The flag (`--feature-gates`, `--emulated-version`) or the field (`binaryVersion`, `emulationVersion`). */
  what: string;
  meant: string;
  running: string;
}

export interface RunningVerdict {
  state: RunningState;
  differences: Difference[];
  /** Why a page could not be read, per page. */
  failures: string[];
  message: string;
}

const PAGE_READ = { read: 'Read', notServed: 'NotServed', failed: 'Failed' } as const;
const gateText = (g: boolean | undefined): string => (g === undefined ? `${PROXY_GATE} not set` : `${PROXY_GATE}=${g}`);

/** The pages of `server` against what `call` meant. `running` undefined: not read this step (Unknown). */
export function judgeRunning(server: string, call: CallMeant, running: ObservedRunning | undefined): RunningVerdict {
  if (running === undefined) return { state: 'Unknown', differences: [], failures: ['its /flagz and /statusz were not read'], message: `${server}: its /flagz and /statusz were not read` };
  const target = call.target ?? '';
  const differences: Difference[] = [];
  const failures: string[] = [];
  const s = running.statusz;
  if (s.kind === 'read') {
    if (!sameRelease(`v${s.value.binaryVersion}`, target)) differences.push({ page: '/statusz', what: 'binaryVersion', meant: target, running: s.value.binaryVersion });
    const emulation = call.emulatedVersion ?? minorOf(target) ?? '';
    if (s.value.emulationVersion !== emulation) differences.push({ page: '/statusz', what: 'emulationVersion', meant: emulation, running: s.value.emulationVersion ?? '(none)' });
  } else if (s.kind === 'failed') failures.push(`/statusz: ${s.message}`);
  const f = running.flagz;
  if (f.kind === 'read') {
    if (call.gate !== undefined && f.value.proxyGate !== call.gate) differences.push({ page: '/flagz', what: '--feature-gates', meant: gateText(call.gate), running: gateText(f.value.proxyGate) });
    if (f.value.emulatedVersion !== call.emulatedVersion) differences.push({ page: '/flagz', what: '--emulated-version', meant: call.emulatedVersion ?? '(none)', running: f.value.emulatedVersion ?? '(none)' });
  } else if (f.kind === 'failed') failures.push(`/flagz: ${f.message}`);
  if (differences.length > 0) {
    const said = differences.map((d) => `${d.page} ${d.what}: the call meant ${d.meant}, the process runs ${d.running}`).join('; ');
    return { state: 'Differs', differences, failures, message: `${server} (${call.action} to ${target}): ${said}` };
  }
  if (failures.length > 0) return { state: 'Unknown', differences, failures, message: `${server} (${call.action} to ${target}): ${failures.join('; ')}: what the process runs is unknown` };
  if (f.kind === 'notServed' && s.kind === 'notServed') return { state: 'NotServed', differences, failures, message: `${server} serves neither /flagz nor /statusz: the call stands on /version and /metrics` };
  const unserved = f.kind === 'notServed' ? ' (/flagz not served)' : s.kind === 'notServed' ? ' (/statusz not served)' : '';
  return { state: 'Confirmed', differences, failures, message: `${server} runs what the call meant${unserved}` };
}

/** Whether the pages hold a call back from landing: Differs, or Unknown. */
export function holds(v: RunningVerdict): boolean {
  return v.state === 'Differs' || v.state === 'Unknown';
}

/** Whether the upgrade is rolling back, or an abort not yet acted on asks it to. */
function rollingBack(ctx: PlanContext): boolean {
  if (ctx.phase === 'RollingBack' || (ctx.phase === 'Paused' && ctx.status.pause?.resumePhase === 'RollingBack')) return true;
  const abort = ctx.upgrade.annotations[ABORT_ANNOTATION];
  return abort !== undefined && abort !== ctx.status.observedAbort;
}

/**
 * The verdict on a call whose server is back at its goal by /version, recorded in the server's status row; undefined
 * when the pages are not judged (an observer that does not read them, a call a rollback undoes). Called by
 * advanceCalls (src/plan/calls.ts) before it counts the call Done.
 */
export function checkRunning(ctx: PlanContext, c: DriverCall): RunningVerdict | undefined {
  if (ctx.obs.running === undefined) return undefined;
  if (c.action !== 'Rollback' && rollingBack(ctx)) return undefined;
  const observed = ctx.obs.running[c.server];
  const v = judgeRunning(c.server, c, observed);
  const row = ctx.peerRow(c.server);
  if (row) {
    const check: RunningCheck = { state: v.state, call: c.key, checkedAt: ctx.now.toISOString(), message: safeMessage(v.message, { maxChars: 4000 }) };
    if (observed) {
      check.flagz = PAGE_READ[observed.flagz.kind];
      check.statusz = PAGE_READ[observed.statusz.kind];
    }
    row.running = check;
  }
  return v;
}

/** A call held by its server's pages this step, with the verdict. */
export interface HeldCall {
  call: DriverCall;
  verdict: RunningVerdict;
}
