/** The ApiServerUpgrade API: what the rest of the operator imports. */
export * from './constants.ts';
export type * from './types.generated.ts';
export * from './conditions.ts';
export * from './duration.ts';
export * from './batch-size.ts';
export * from './defaults.ts';
export { VERSION_PATTERN, DURATION_PATTERN, PERCENT_PATTERN } from './patterns.ts';
