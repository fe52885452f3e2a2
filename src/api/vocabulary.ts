/**
 * The operator's one vocabulary: phases, call results, peer states, pause reasons. The schema's enums, the
 * planner, the metrics, the demo and the Argo CD check all read them from here, so a word is defined once.
 */

export const PHASES = ['Pending', 'Preflight', 'EnablingProxy', 'Upgrading', 'Paused', 'RollingBack', 'Succeeded', 'RolledBack', 'Failed'] as const;
export type Phase = (typeof PHASES)[number];
export const TERMINAL_PHASES: ReadonlySet<Phase> = new Set<Phase>(['Succeeded', 'RolledBack', 'Failed']);
export const isTerminal = (p: string | undefined): boolean => TERMINAL_PHASES.has(p as Phase);

/**
 * The lifecycle of one driver call (a replacement is asynchronous):
 * Requested (recorded, not yet confirmed delivered) -> Accepted (the driver took it; in flight)
 * -> Done (observed: the server restarted and is up at the goal) | TimedOut (not done within batchTimeout)
 * | Rejected (the driver refused for good). Abandoned: a Requested call a resume gave up on (never accepted).
 */
export const CALL_RESULTS = ['Requested', 'Accepted', 'Done', 'Rejected', 'TimedOut', 'Abandoned'] as const;
export type CallResult = (typeof CALL_RESULTS)[number];
/** A call that may still change a server: nothing else may be sent to that server meanwhile. */
export const IN_FLIGHT_RESULTS: ReadonlySet<CallResult> = new Set<CallResult>(['Requested', 'Accepted']);

export const PEER_STATES = ['Pending', 'EnablingProxy', 'Replacing', 'Converging', 'Upgraded', 'RollingBack', 'RolledBack', 'Failed', 'Unreachable'] as const;
export type PeerStateName = (typeof PEER_STATES)[number];

/** The Mixed Version Proxy gate of one server, as status.peers[].proxyGate reports it. */
export const GATE_STATES = ['Enabled', 'Disabled', 'Unknown'] as const;
export type GateState = (typeof GATE_STATES)[number];

/** Why an upgrade paused (the Paused condition's reason and status.pause.reason). */
export const PAUSE_REASONS = [
  'PausedBySpec',
  'AnalysisBreach',
  'BatchTimeout',
  'DriverFailed',
  'DiscoveryNotConverged',
  'RollbackUnsafe',
  'RollbackSafetyUnknown',
  'MembershipChanged',
  'EmulationIneffective',
  'RollbackOrphans',
  'NotAllowedByPolicy',
] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];

/** Reasons that end a Paused phase automatically, without a human: everything else pages. */
export const SELF_RESUMING: ReadonlySet<PauseReason> = new Set<PauseReason>(['PausedBySpec']);

/** The annotations a human (kubectl plugin, Argo CD action) sets to act on an upgrade; each new value acts once. */
export const RESUME_ANNOTATION = 'upgrade.apiserver.dev/resume';
export const ABORT_ANNOTATION = 'upgrade.apiserver.dev/abort';
export const RETRY_ANNOTATION = 'upgrade.apiserver.dev/retry';
