import type { DriverAction } from '../api/types.generated.ts';

/** The request a driver receives to replace one server. Its key makes a repeated call harmless. */
export interface DriverRequest {
  idempotencyKey: string;
  action: DriverAction;
  upgrade: string;
  batch: number;
  server: { identity: string; hostname: string; address?: string };
  targetVersion: string;
  featureGates: Record<string, boolean>;
}

export type Action =
  | { kind: 'callDriver'; request: DriverRequest }
  | { kind: 'event'; type: 'Normal' | 'Warning'; reason: string; note: string; server?: string };
