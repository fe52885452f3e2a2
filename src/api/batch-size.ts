import { PERCENT_PATTERN, compile } from './patterns.ts';

const PERCENT = compile(PERCENT_PATTERN);

export class BatchSizeError extends Error {
  override readonly name = 'BatchSizeError';
}

/**
 * How many servers one batch replaces, for spec.strategy.batchSize and a fleet of `servers`.
 * A percentage is rounded down (like maxUnavailable) but is never less than one server, so a
 * small fleet still makes progress; the result never exceeds the fleet.
 */
export function resolveBatchSize(batchSize: number | string, servers: number): number {
  if (!Number.isInteger(servers) || servers < 0) throw new BatchSizeError(`invalid server count ${servers}`);
  let n: number;
  if (typeof batchSize === 'number') {
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new BatchSizeError(`batchSize must be an integer of at least 1, got ${batchSize}`);
    n = batchSize;
  } else {
    if (!PERCENT.test(batchSize)) throw new BatchSizeError(`batchSize must be a percentage between 1% and 100%, got ${JSON.stringify(batchSize)}`);
    n = Math.max(1, Math.floor((servers * Number(batchSize.slice(0, -1))) / 100));
  }
  return Math.min(n, Math.max(servers, 1));
}

/** Number of batches needed to replace `servers` servers, `size` at a time. */
export function batchCount(servers: number, size: number): number {
  return servers === 0 ? 0 : Math.ceil(servers / size);
}
