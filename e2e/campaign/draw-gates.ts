// What a campaign upgrade draws of the start conditions (docs/operations.md "Gates, windows and accepted risks"):
// a PromQL gate whose value the harness flips (`gate-fail`), a maintenance window that closes while the upgrade
// runs and opens again later (`window-close`), with an operator leader kill about the reopening, and an accepted
// risk (a serving certificate expiring soon), with a hard finding at the start (`hard-finding`). Drawn after every
// older draw of drawUpgrade (schedule.ts), so a seed's earlier draws stay as they were.
import type { Fault, FaultKind, Mode, UpgradeSpecDraw } from './schedule.ts';

/** One upgrade in three (process mode: a Prometheus beside the servers) gets a gate. */
export const GATE_ODDS = 0.33;
/** One upgrade in four gets a maintenance window that closes mid-upgrade. */
export const WINDOW_ODDS = 0.25;
/** Of the upgrades with a window, this many get a leader kill about the reopening. */
export const REOPEN_KILL_ODDS = 0.8;
/** Of the upgrades with a gate and Direct analysis, this many get a Prometheus fault (the gate's queries fail). */
export const GATE_PROMETHEUS_FAULT_ODDS = 0.5;
/**
 * One process-mode upgrade in four has a server whose serving certificate expires in 3 days (a kubeadm cluster:
 * preflight's ServingCertificateExpiresSoon blocks) and accepts it by name in spec.acceptRisks.
 */
export const RISK_ODDS = 0.25;
/** Of those, this many also start with a hard finding (a Node whose kubelet is newer than the target) for a while. */
export const HARD_FINDING_ODDS = 0.5;
/** Validity of the drawn server's serving certificate, days: under preflight's 7-day block. */
export const EXPIRING_CERT_DAYS = 3;
/** The acceptable finding the campaign makes real, and names in spec.acceptRisks. */
export const ACCEPTED_RISK = 'ServingCertificateExpiresSoon';

export interface Draws {
  r: () => number;
  int: (lo: number, hi: number) => number;
  pick: <T>(xs: readonly T[]) => T;
}

/**
 * Adds the gate and window draws to `spec` and `faults` (in place), from `activeMs`, the upgrade's active part.
 * The rolls are made in every mode, each kind's after the one before it finished drawing.
 */
export function drawStartConditions(d: Draws, mode: Mode, spec: UpgradeSpecDraw, faults: Fault[], activeMs: number): void {
  const activeS = Math.floor(activeMs / 1000);
  const gateRoll = d.r();
  const windowRoll = d.r();
  if (mode === 'process' && gateRoll < GATE_ODDS) {
    spec.startGate = true;
    // 1-3 flaps, anywhere in the active part: before a batch starts or while one runs.
    const flaps = d.int(1, 3);
    for (let i = 0; i < flaps; i++) faults.push({ kind: 'gate-fail', atMs: d.int(3, activeS) * 1000, durationMs: d.int(3, 25) * 1000 });
    // Without the Prometheus source no Prometheus fault was drawn: the gate's queries meet one here.
    if (!spec.prometheus && d.r() < GATE_PROMETHEUS_FAULT_ODDS) {
      const kind: FaultKind = d.pick(['prometheus-down', 'prometheus-slow'] as const);
      faults.push({ kind, atMs: d.int(3, activeS) * 1000, durationMs: d.int(3, 25) * 1000 });
    }
  }
  if (windowRoll < WINDOW_ODDS) {
    spec.window = true;
    // Closes 20 s in at the earliest (batch 1 under way), at most 60% into the active part; shut for 1 or 2 minutes
    // (the window's granularity is a minute: the harness creates the upgrade so that the closing falls on one).
    const closeAtMs = d.int(20, Math.max(21, Math.floor(activeS * 0.6))) * 1000;
    const closedMs = d.int(1, 2) * 60_000;
    faults.push({ kind: 'window-close', atMs: closeAtMs, durationMs: closedMs });
    if (d.r() < REOPEN_KILL_ODDS) faults.push({ kind: 'operator-leader-kill', atMs: closeAtMs + closedMs + d.int(-3, 4) * 1000, durationMs: d.int(3, 10) * 1000 });
  }
  // Drawn after the gate's and the window's draws: upgrades drawn before it keep those.
  const riskRoll = d.r();
  if (mode === 'process' && riskRoll < RISK_ODDS) {
    spec.expiringCert = d.int(0, 2);
    // The hard finding is there when the upgrade is created and gone when this heals: preflight must wait for it.
    if (d.r() < HARD_FINDING_ODDS) faults.push({ kind: 'hard-finding', atMs: 0, durationMs: d.int(5, 25) * 1000 });
  }
  faults.sort((a, b) => a.atMs - b.atMs);
}
