// Analysis settings for tests that call FleetObserver.observe() themselves and want each call to be a check.
import type { AnalysisSettings } from '../../src/observe/fleet.ts';

/**
 * Each observe() is a new check (due), and each probe and Prometheus query gets the 5 s that an operator with an
 * interval of 5.5 s or more gives it (src/plan/probe-deadline.ts). An interval of 1 ms left them 1 s, which a loaded
 * machine's 1.5 MB /metrics page missed: that server was left out of the check, as the operator leaves out a slow
 * one. 5.5 s stays below the Prometheus window these tests use (8 s), which a longer interval would widen.
 */
export const EACH_LOOK_A_CHECK: Pick<AnalysisSettings, 'intervalMs' | 'due'> = { intervalMs: 5_500, due: true };
