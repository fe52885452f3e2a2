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
 * | Rejected (the driver refused for good) | Failed (the driver reported, after accepting it, that the
 * replacement failed). Abandoned: a Requested call a resume gave up on (never accepted).
 */
export const CALL_RESULTS = ['Requested', 'Accepted', 'Done', 'Rejected', 'Failed', 'TimedOut', 'Abandoned'] as const;
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
  'FlagProofRefused',
  'ComponentSkew',
  'RunningProcessDiffers',
] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];

/** Reasons that end a Paused phase automatically, without a human: everything else pages. */
export const SELF_RESUMING: ReadonlySet<PauseReason> = new Set<PauseReason>(['PausedBySpec']);

/**
 * What a call's server runs, as its own `/flagz` and `/statusz` pages say, against what the call meant
 * (status.peers[].running, docs/version-skew.md "The running process"): Confirmed (both pages agree), NotServed (a page
 * answered 404: the server does not serve it, and the call stands on /version and /metrics as before), Differs (a
 * flag or the version differs: the call is not counted as landed, the upgrade pauses RunningProcessDiffers), Unknown
 * (a page could not be read or parsed: held as Differs).
 */
export const RUNNING_STATES = ['Confirmed', 'NotServed', 'Differs', 'Unknown'] as const;
export type RunningState = (typeof RUNNING_STATES)[number];

/** The rest of the control plane whose version skew against kube-apiserver is checked (docs/version-skew.md). */
export const CONTROL_PLANE_COMPONENTS = ['kube-controller-manager', 'kube-scheduler'] as const;
export type ControlPlaneComponent = (typeof CONTROL_PLANE_COMPONENTS)[number];

/** The annotations a human (kubectl plugin, Argo CD action) sets to act on an upgrade; each new value acts once. */
export const RESUME_ANNOTATION = 'upgrade.apiserver.dev/resume';
export const ABORT_ANNOTATION = 'upgrade.apiserver.dev/abort';
export const RETRY_ANNOTATION = 'upgrade.apiserver.dev/retry';
/**
 * Approves phase two of a TwoPhase upgrade held by spec.strategy.phaseTwo.start Approval. A value counts only when
 * first seen while the hold is on (status.phaseTwoHold.heldSince set, not ended): one set earlier is recorded as
 * seen and approves nothing later (docs/two-phase.md "Holding phase two").
 */
export const APPROVE_ANNOTATION = 'upgrade.apiserver.dev/approve';

/** spec.strategy.phaseTwo.start: Automatic after phaseSoakDuration, or held until the approve annotation. */
export const PHASE_TWO_STARTS = ['Automatic', 'Approval'] as const;
export type PhaseTwoStart = (typeof PHASE_TWO_STARTS)[number];
/** spec.strategy.phaseTwo.onDeadline: what a held phase two does when its deadline passes unapproved. */
export const DEADLINE_ACTIONS = ['Proceed', 'Rollback'] as const;
export type DeadlineAction = (typeof DEADLINE_ACTIONS)[number];
/** status.phaseTwoHold.endedBy: what ended a hold. */
export const HOLD_ENDINGS = ['Approved', 'DeadlineProceeded', 'DeadlineRolledBack', 'RollbackStarted'] as const;
export type HoldEnding = (typeof HOLD_ENDINGS)[number];

/**
 * The Mixed Version Proxy's trust checks, one row per server and check in status.trust (docs/trust.md), and what
 * each row found. Unknown is never Verified: an input the operator could not read is reported as such.
 */
export const TRUST_CHECKS = ['PeerCAFile', 'ProxyClientCert', 'RequestHeaderCA', 'RequestHeaderAllowedNames', 'PeerServingCert', 'PeerReachable'] as const;
export type TrustCheckName = (typeof TRUST_CHECKS)[number];
export const TRUST_RESULTS = ['Verified', 'Finding', 'Unknown'] as const;
export type TrustResult = (typeof TRUST_RESULTS)[number];

/** The kinds of entry of status.coverage: what the Mixed Version Proxy covers while versions are mixed, and what it never touches. */
export const COVERAGE_KINDS = ['BuiltInAdded', 'BuiltInRemoved', 'Aggregated', 'CustomResource'] as const;
export type CoverageKind = (typeof COVERAGE_KINDS)[number];

/** The preflight checks for kubeadm clusters (status.kubeadmPreflight, docs/kubeadm-runbook.md), and a finding's weight. */
export const KUBEADM_CHECKS = ['KubeadmConfig', 'KubeletSkew', 'EtcdHealth', 'ServingCertificate', 'DeprecatedAPI', 'NodeName', 'ApiserverImage'] as const;
export type KubeadmCheckName = (typeof KUBEADM_CHECKS)[number];
export const KUBEADM_SEVERITIES = ['Block', 'Warn'] as const;
export type KubeadmSeverity = (typeof KUBEADM_SEVERITIES)[number];

/**
 * The flag proof (status.flagProof, docs/flag-proof.md): whether it applies and where it stands, and one node's result.
 * NotApplicable: the webhook driver (the platform's hook proves the flags); Proving: a verdict is missing; Passed:
 * every node Accepted; Blocked: a node Refused, Inconclusive or NotRun.
 */
export const FLAG_PROOF_STATES = ['NotApplicable', 'Proving', 'Passed', 'Blocked'] as const;
export type FlagProofState = (typeof FLAG_PROOF_STATES)[number];
export const FLAG_PROOF_RESULTS = ['Pending', 'Accepted', 'Refused', 'Inconclusive', 'NotRun'] as const;
export type FlagProofResult = (typeof FLAG_PROOF_RESULTS)[number];

/**
 * What became of kube-system/kubeadm-config once an upgrade ended (status.kubeadmConfig.result); Pending: the ending is
 * recorded, the edit not yet made; NotWritten: the operator's write is off (the default), the edit is the admin's.
 */
export const KUBEADM_CONFIG_RESULTS = ['Pending', 'Updated', 'Unchanged', 'NotFound', 'Refused', 'NotWritten'] as const;
export type KubeadmConfigResult = (typeof KUBEADM_CONFIG_RESULTS)[number];

/** Days of a maintenance window (spec.window.recurring[].days), Sunday first as Date.getUTCDay() counts them. */
export const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'] as const;
export type WeekdayName = (typeof WEEKDAYS)[number];

/**
 * Why an upgrade waits before its next step without being paused (status.waiting.reason, the Waiting condition):
 * a gate that does not hold or cannot be evaluated, outside its maintenance window, phase two held for an approval
 * (AwaitingApproval) — or a preflight verdict that is not final (its PreflightPassed reason: AlphaGateNotAllowed, NotAllowedByPolicy, UnhealthyFleet, ...). Only
 * OutsideWindow is expected and never pages (charts/.../prometheusrule.yaml ApiServerUpgradeWaiting).
 */
export const WAIT_REASONS = ['GateNotHeld', 'GateUnknown', 'OutsideWindow', 'AwaitingApproval'] as const;
export type WaitReason = (typeof WAIT_REASONS)[number];
export const WINDOW_WAIT: WaitReason = 'OutsideWindow';
/** A TwoPhase upgrade held between the phases until the approve annotation (or its deadline): status.phaseTwoHold. */
export const APPROVAL_WAIT: WaitReason = 'AwaitingApproval';

/**
 * Findings that block preflight and that spec.acceptRisks may accept by name: not a safety rule of the upgrade
 * itself, a fact about the cluster an admin can judge (docs/api.md "Accepted risks").
 */
export const ACCEPTABLE_RISKS = ['DeprecatedAPIRemovedByTarget', 'DeprecatedAPIsUnknown', 'ServingCertificateExpiresSoon', 'ServingCertificateUnknown', 'KubeadmConfigUnreadable'] as const;
export type AcceptableRisk = (typeof ACCEPTABLE_RISKS)[number];

/** Hard safety rules: never acceptable (the CRD refuses them in spec.acceptRisks, naming each). */
export const HARD_RULES: Readonly<Record<string, string>> = {
  SkipsMinor: 'version skew',
  Downgrade: 'version skew',
  MajorVersionChange: 'version skew',
  MixedVersions: 'version skew',
  KubeletTooOld: 'version skew',
  KubeletNewerThanTarget: 'version skew',
  KubeletVersionUnknown: 'version skew',
  ComponentNewerThanTarget: 'version skew',
  ComponentVersionUnknown: 'version skew',
  ComponentSkew: 'version skew',
  RollbackUnsafe: 'rollback safety',
  RollbackSafetyUnknown: 'rollback safety',
  RollbackOrphans: 'rollback safety',
  StorageVersionsUnknown: 'rollback safety',
  FrozenPlan: 'the frozen plan',
  MembershipChanged: 'the frozen plan',
  UnhealthyFleet: 'fleet health',
  EtcdUnhealthy: 'fleet health',
  AlphaGateNotAllowed: 'consent is spec.proxy.allowAlphaGate',
  NotAllowedByPolicy: "the operator's policy",
};
