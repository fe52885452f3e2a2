export { plan, RESUME_ANNOTATION, type Plan } from './planner.ts';
export type { Observation, ObservedPeer, ObservedAnalysis } from './observation.ts';
export type { Action, DriverRequest } from './actions.ts';
export type { UpgradeInput } from './context.ts';
export { PROXY_GATE } from './context.ts';
export { idempotencyKey } from './keys.ts';
export { parseVersion, compareVersions, proxyGateOnByDefault } from './version.ts';
