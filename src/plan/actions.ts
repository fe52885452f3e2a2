import type { DriverAction } from '../api/types.generated.ts';

/** The request a driver receives to replace one server. Its key makes a repeated call harmless. */
export interface DriverRequest {
  idempotencyKey: string;
  action: DriverAction;
  upgrade: string;
  batch: number;
  server: { identity: string; hostname: string; address?: string };
  targetVersion: string;
  /**
   * `--emulated-version` the server must run with ("1.35"), for a two-phase upgrade's first phase and for a
   * rollback that re-applies it; absent: no emulation flag (the binary's own version).
   */
  emulatedVersion?: string;
  featureGates: Record<string, boolean>;
}

export type Action =
  | { kind: 'callDriver'; request: DriverRequest }
  | { kind: 'event'; type: 'Normal' | 'Warning'; reason: string; note: string; server?: string };
