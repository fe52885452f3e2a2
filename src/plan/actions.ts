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

/**
 * A flag proof Job to create (src/drivers/flag-proof-job.ts proofJob; docs/flag-proof.md): the node, the target image,
 * the command line (the sentinel last) and its proof key, as the shell built them from the node's mirror Pod.
 */
export interface ProofJobRequest {
  hostname: string;
  key: string;
  image: string;
  command: string[];
  targetVersion: string;
}

export type Action =
  | { kind: 'callDriver'; request: DriverRequest }
  | { kind: 'proveFlags'; proof: ProofJobRequest }
  | { kind: 'event'; type: 'Normal' | 'Warning'; reason: string; note: string; server?: string };
