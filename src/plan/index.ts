export { plan, RESUME_ANNOTATION, ABORT_ANNOTATION, RETRY_ANNOTATION, type Plan } from './planner.ts';
export type { Observation, ObservedPeer, ObservedAnalysis, ObservedStorage } from './observation.ts';
export type { Action, DriverRequest } from './actions.ts';
export type { UpgradeInput } from './context.ts';
export { PROXY_GATE } from './context.ts';
export { idempotencyKey } from './keys.ts';
export { recordCallOutcome, type CallOutcome } from './call-outcome.ts';
export { parseVersion, compareVersions, sameRelease, classifyUpgrade } from './version.ts';
export { proxyGateOnByDefault } from './version-facts.ts';
